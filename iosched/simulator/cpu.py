# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations
# under the License.
"""The per-pCPU EEVDF scheduler of one host, driven by the event loop.

What it does (simplifications of Linux 6.12+ are marked *). The host's
``KernelSpec`` (``iosched.simulator.spec_kernel``) switches the three rules
marked [kernel]; the default (``linux-6.12-hrtick``) is the first variant:

* [kernel] time: work completion is an event at its exact time; slice
  expiry (and a VM cap's quota end) is exact with ``hrtick`` (HRTICK),
  else acted on at the next tick (every ``1e6 / hz`` us). Without
  HRTICK a wake-up also renews an expired request of the running entity
  and re-picks (6.18 ``update_curr``: resched when the request is used
  up), and an entity re-picked at the end of its request without a switch
  is not protected again;
* wake-up (``iosched.simulator.cpu_wakeup``): which pCPU, placement
  ([kernel] ``place_lag``) and preemption ([kernel] ``preempt_short``);
* idle balance: a pCPU going idle pulls the longest-waiting allowed
  entity from the busiest run-queue; periodic balance every
  ``balance_us`` moves one waiting entity from the busiest to the least
  busy run-queue when they differ by 2 or more. Migration keeps lag
  (clamped) and the relative deadline (PLACE_REL_DEADLINE);
* context switches: every dispatch costs ``switch_cost_us`` of lost time
  (charged to nobody) and counts as a switch of the dispatched vCPU; an
  entity that is re-picked after its slice expires continues for free;
* knobs: weight changes reweight vruntime and deadline around V
  (reweight_eevdf); a new slice applies from the next request (the
  kernel keeps the relative deadline across sched_setattr); an affinity
  change migrates a queued or running entity at once if its pCPU is no
  longer allowed; SCHED_DEADLINE (``cpu_deadline``) and a VM's CFS
  bandwidth cap (``cpu_bandwidth``);
* a wake-up onto an idle pCPU costs ``idle_exit_us`` more (KernelSpec).

The scheduler is one chain of classes, a file each: ``sched_base.Scheduler``
<- ``cpu_wakeup.WakeupMixin`` <- ``cpu_balance.BalanceMixin`` <-
``cpu_deadline.DeadlineMixin`` <- ``cpu_bandwidth.BandwidthMixin`` <- this
``Scheduler`` (single inheritance, so that the compiled build can make each
an extension type: ``iosched/simulator/compiled.py``).
"""

from iosched.simulator import cpu_bandwidth
from iosched.simulator import eevdf
from iosched.simulator import spec_kernel

VSCALE = eevdf.VSCALE              # (a C constant when compiled)


class Scheduler(cpu_bandwidth.BandwidthMixin):
    name = 'eevdf'
    knobs = ('slice', 'weight', 'affinity', 'deadline', 'cap')

    def __init__(self, loop, pcpus, switch_cost_us, balance_us,
                 default_slice_us=3000, kernel=None):
        kernel = kernel if kernel is not None else spec_kernel.KernelSpec()
        self.kernel = kernel
        self.exact = kernel.hrtick
        self.tick_us = kernel.tick_us
        self.place_lag = kernel.place_lag
        self.preempt_short = kernel.preempt_short
        self.parity_min = kernel.protect_min_slice
        self.idle_exit = kernel.idle_exit_us
        # lag clamp floor: TICK_NSEC (the legacy model keeps HZ=1000's)
        self.lag_tick_us = eevdf.TICK_US if kernel.hrtick else kernel.tick_us
        self.dl_waiting = []
        self.dl_bw = 0.0
        self.loop = loop
        self.default_slice_us = default_slice_us
        self.cpus = [eevdf.PCpu(i) for i in range(pcpus)]
        self.cost = switch_cost_us
        self.nr_waiting = 0
        self.balance_us = balance_us
        self._on_cpu_cb = self._on_cpu
        if balance_us and pcpus > 1:
            loop.at(loop.now + balance_us, self._on_balance)

    # -- accounting ----------------------------------------------------------
    def _update_curr(self, p, now):
        d = now - p.last_update
        if d > 0:
            e = p.curr
            p.last_update = now
            e.run_us += d
            e.v += d * VSCALE // e.lw
            e.slice_left -= d
            e.wl.work_left -= d
            g = e.group
            if g is not None:
                g.runtime -= d

    def _settle(self, p, now):
        """Run p's CPU event now if it is due, then account curr to now."""
        if p.curr is not None and p.ev_time <= now:
            self._on_cpu(p, p.gen)
        if p.curr is not None:
            self._update_curr(p, now)

    def settle_all(self, now):
        """Run every due CPU event first, so the queues are stable now."""
        for p in self.cpus:
            if p.curr is not None and p.ev_time <= now:
                self._on_cpu(p, p.gen)

    def _run_since(self, e):
        if e.dl is not None:
            return e.dl.since
        return e.cpu.last_update

    # -- queue transitions ---------------------------------------------------
    def _enqueue_waiting(self, p, e, now):
        p.enqueue(e)
        e.on_rq = True
        e.cpu = p
        e.wait_start = now
        self.nr_waiting += 1

    def _set_next(self, p, e, now, delay=0):
        """Dispatch waiting entity e on p (which has no curr) after
        ``delay`` us (an idle pCPU's exit latency).
        """
        p.dequeue(e)
        self.nr_waiting -= 1
        e.wait_us += now + delay - e.wait_start
        e.running = True
        e.protected = True
        if self.parity_min:
            self._set_protect(p, e)
        e.switches += 1
        e.last_cpu = p.id
        p.curr = e
        start = now + delay + self.cost
        p.last_update = start
        self._arm(p, start)

    def _arm(self, p, start):
        e = p.curr
        d = e.wl.work_left
        s = e.slice_left
        g = e.group
        if g is not None and g.runtime < s:
            s = g.runtime
        if self.parity_min and p.queue:
            # the end of its protection is a resched (update_curr's
            # !protect_slice), at a tick unless exact; unprotected, every
            # tick re-picks
            left = self._protect_left(e)
            if left > 0:
                if left < s:
                    s = left
            elif not self.exact and s > 1:
                s = 1
        if self.exact:
            if s < d:
                d = s
            t = start + d if d > 0 else start
        else:
            t = start + d if d > 0 else start
            if s < d:                   # acted on at the next tick
                tick = self.tick_us
                ts = -(-(start + (s if s > 0 else 0)) // tick) * tick
                if ts < t:
                    t = ts
        p.gen += 1
        p.ev_time = t
        self.loop.at(t, self._on_cpu_cb, p, p.gen)

    def _dispatch(self, p, now, delay=0):
        """p has no curr: run the best waiting entity, else pull one."""
        if p.queue:
            self._set_next(p, p.pick(), now, delay)
            return
        p.ev_time = -1
        if self.nr_waiting:
            self._idle_pull(p, now)

    def _preempt(self, p, e, now):
        c = p.curr
        c.running = False
        p.curr = None
        self._enqueue_waiting(p, c, now)
        self._set_next(p, e, now)

    # -- events ---------------------------------------------------------------
    def _on_cpu(self, p, gen):
        if gen != p.gen:
            return
        p.gen += 1
        now = self.loop.now
        e = p.curr
        self._update_curr(p, now)
        wl = e.wl
        if wl.work_left <= 0:
            wl.complete(now)
            if wl.work_left <= 0:           # nothing left: block
                if self.place_lag:
                    e.vlag = eevdf.entity_lag(e, p.avg_v(),
                                              self.lag_tick_us)
                e.running = False
                e.on_rq = False
                e.cpu = None
                p.curr = None
                if not p.queue:
                    p.idle_v = e.v
                self._dispatch(p, now)
                return
        g = e.group
        if g is not None and g.runtime <= 0:
            self._throttle(g, now)          # the VM's quota is spent
            return
        if e.slice_left <= 0:               # request done: new deadline
            e.new_request()
            e.protected = False
            if p.queue:
                best = p.pick()
                if best is not e:
                    e.running = False
                    p.curr = None
                    self._enqueue_waiting(p, e, now)
                    self._set_next(p, best, now)
                    return
            # re-picked without a switch: protected again only in the
            # legacy model (the kernel sets protection when it switches)
            e.protected = self.exact
        elif self.parity_min and p.queue and self._protect_left(e) <= 0:
            best = p.pick()                 # protection over: re-pick
            if best is not e:
                e.running = False
                p.curr = None
                self._enqueue_waiting(p, e, now)
                self._set_next(p, best, now)
                return
        self._arm(p, now)

    def wake(self, e, now, initial=False):
        """e (blocked) became runnable: place it and maybe preempt."""
        x = e                               # (an eevdf.Entity)
        if x.dl is not None:
            self._dl_wake(x, now, initial)
            return
        if not initial:
            x.wakeups += 1
        self._fair_enqueue(x, now)

    # (wake's fair half, also the way back from throttling and deadline)
    def _fair_enqueue(self, e, now):
        """Place runnable e on a pCPU's fair queue; dispatch or preempt."""
        g = e.group
        if g is not None and g.throttled:
            self._park_throttled(e, now)
            return
        p = self.select_cpu(e)
        self._settle(p, now)
        if self.place_lag:
            self._place(p, e)
        else:
            e.v = p.avg_v()
        e.new_request()
        self._enqueue_waiting(p, e, now)
        if p.curr is None:
            if p.dl_curr is None:
                self._dispatch(p, now, self.idle_exit)
        else:
            self._check_preempt(p, e, now)

    # -- RUN_TO_PARITY protection (6.17+) ------------------------------------
    def _set_protect(self, p, e):
        """set_protect_slice (6.17+): protected until it has run min(its
        slice, the shortest slice still queued on p), at most to the end
        of its request (vprot <= deadline).
        """
        m = e.slice_us
        for x in p.queue:
            if x.slice_us < m:
                m = x.slice_us
        if m == e.slice_us:
            e.vprot = e.deadline
        else:
            v = e.v + m * eevdf.VSCALE // e.lw
            e.vprot = v if v < e.deadline else e.deadline

    @staticmethod
    def _protect_left(e):
        """Run time (us) until e's protection ends; 0 when it has."""
        if not e.protected or e.v >= e.vprot:
            return 0
        return -(-(e.vprot - e.v) * e.lw // eevdf.VSCALE)

    # -- knobs ----------------------------------------------------------------
    def new_entity(self, eid, vm, index, weight):
        return eevdf.Entity(eid, vm, index, weight, self.default_slice_us)

    def set_slice(self, e, slice_us, now):
        # The kernel applies a new sched_runtime from the next request.
        e.set_slice(slice_us)

    def get_slice(self, e):
        return e.slice_us

    def set_weight(self, e, weight, now):
        if not e.on_rq or e.cpu is None:    # blocked, deadline, throttled
            e.set_weight(weight)
            return
        p = e.cpu
        self._settle(p, now)
        if not e.on_rq:
            e.set_weight(weight)
            return
        avg = p.avg_v()
        old_lw = e.lw
        old_v = e.v
        lag = eevdf.entity_lag(e, avg)
        if not e.running:
            p.dequeue(e)
        e.set_weight(weight)
        e.v = avg - lag * old_lw // e.lw
        e.deadline = avg + (e.deadline - avg) * old_lw // e.lw
        if self.parity_min and e.running:   # rel. vprot (reweight_entity)
            e.vprot = e.v + (e.vprot - old_v) * old_lw // e.lw
        if not e.running:
            p.enqueue(e)

    def remove(self, e, now):
        e.alive = False
        self._leave_group(e, now)
        if e.dl is not None:
            self._dl_remove(e, now)
            return
        if not e.on_rq:
            return
        if e.throttled:
            e.throttled = False
            e.on_rq = False
            return
        p = e.cpu
        self._settle(p, now)
        if not e.on_rq:
            return
        e.on_rq = False
        e.cpu = None
        if e.running:
            e.running = False
            p.curr = None
            p.gen += 1
            if not p.queue:
                p.idle_v = e.v
            self._dispatch(p, now)
        else:
            p.dequeue(e)
            self.nr_waiting -= 1
