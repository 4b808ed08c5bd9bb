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
"""SCHED_DEADLINE for ``iosched.simulator.cpu.Scheduler``: global EDF over
CBSs.

A vCPU with a reservation (``set_deadline``; CBS rules in
``iosched.simulator.deadline``) leaves the fair class:

* class order: a pCPU runs its deadline entity (``PCpu.dl_curr``) before
  any fair entity; a fair entity running there is preempted at once (put
  back in its queue, request kept) and the fair queue waits;
* global EDF across the host's pCPUs (as push/pull of ``deadline.c`` with
  every pCPU in one root domain): a deadline entity that becomes runnable
  goes to a pCPU without deadline work (its previous pCPU if idle, else an
  idle one, else its previous one, else the lowest-id one: it preempts the
  fair entity there), else preempts the pCPU whose deadline entity has the
  latest deadline if that is later than its own, else waits in one global
  queue; a pCPU whose deadline entity stops runs the earliest waiting one,
  else its fair queue;
* runtime: charged while running; the end of the runtime is an event, at
  its exact time with ``KernelSpec.hrtick``, else at the next tick (the
  kernel's HRTICK_DL is off by default, so a reservation overruns by up to
  a tick and pays it back at the replenishment); a throttled entity waits
  (runnable, counted as waiting) until its period ends, with no fallback to
  the fair class;
* admission (``sched_dl_overflow``): the reservations of the host together
  at most ``KernelSpec.dl_bw_limit`` x pCPUs, and a deadline entity's
  affinity must span every pCPU (the kernel's root-domain rule: EPERM for
  ``sched_setattr``, EBUSY for a narrower ``sched_setaffinity``); both
  refusals are ``ValueError``s naming the rule;
* leaving (params None): back to the fair class, placed as a wake-up.

Not modelled: the fair server (dl_server) that gives starved fair tasks 5 %,
GRUB reclaiming, deadline inheritance, per-pCPU root domains (cpusets).
"""

from iosched.simulator import cpu_balance
from iosched.simulator import deadline


class DeadlineMixin(cpu_balance.BalanceMixin):
    __slots__ = ()

    # -- knob ----------------------------------------------------------------
    def set_deadline(self, e, params, now):
        """(Q, D, P) from ``deadline.validate``, or None: SCHED_OTHER."""
        if params is None:
            if e.dl is not None:
                self._dl_leave(e, now)
            return
        ncpus = len(self.cpus)
        if e.allowed is not None and len(e.allowed) < ncpus:
            raise ValueError(
                'deadline: EPERM: the vCPU\'s affinity %r does not span all '
                'pCPUs (0..%d); accepted: a SCHED_DEADLINE vCPU must be '
                'allowed on every pCPU of the host (unpin it first)'
                % (e.allowed, ncpus - 1))
        old = e.dl.bw if e.dl is not None else 0.0
        new = params[0] / params[2]
        limit = self.kernel.dl_bw_limit * ncpus
        if self.dl_bw - old + new > limit + 1e-9:
            raise ValueError(
                'deadline: EBUSY: runtime/period %.3f would bring the host\'s '
                'reservations to %.3f CPUs; accepted: at most %.3f '
                '(dl_bw_limit %.2f x %d pCPUs, %.3f free)'
                % (new, self.dl_bw - old + new, limit,
                   self.kernel.dl_bw_limit, ncpus, limit - self.dl_bw + old))
        self.dl_bw += new - old
        if e.dl is not None:
            e.dl.set_params(params)
            return
        self._dl_enter(e, params, now)

    def get_deadline(self, e):
        if e.dl is None:
            return None
        return e.dl.q, e.dl.d, e.dl.p

    def deadline_bw(self):
        """Bandwidth the reservations hold, in CPUs."""
        return self.dl_bw

    def check_affinity(self, e, allowed):
        """Refuse narrowing a deadline entity's affinity (EBUSY)."""
        ncpus = len(self.cpus)
        if e.dl is not None and allowed is not None and len(allowed) < ncpus:
            raise ValueError(
                'affinity: EBUSY: %r does not span all pCPUs (0..%d) and the '
                'vCPU runs under SCHED_DEADLINE; accepted: None (all pCPUs), '
                'or set deadline None first' % (allowed, ncpus - 1))

    # -- class changes -------------------------------------------------------
    def _dl_enter(self, e, params, now):
        vacated = self._fair_take_off(e, now) if e.on_rq else None
        e.dl = deadline.DlState(params)
        e.dl.new_reservation(now)
        if e.on_rq:
            self._dl_place(e, now)
        if (vacated is not None and vacated.curr is None
                and vacated.dl_curr is None):
            self._dispatch(vacated, now)

    def _fair_take_off(self, e, now):
        """Runnable fair e leaves the fair class (stays runnable); returns
        the pCPU it was running on, now without a curr, or None.
        """
        if e.throttled:
            e.throttled = False
            return None
        p = e.cpu
        self._settle(p, now)
        if not e.on_rq:
            return None
        vacated = None
        if e.running:
            self._update_curr(p, now)
            e.running = False
            p.curr = None
            p.gen += 1
            e.wait_start = now
            if not p.queue:
                p.idle_v = e.v
            vacated = p
        else:
            p.dequeue(e)
            self.nr_waiting -= 1
        e.cpu = None
        return vacated

    def _dl_leave(self, e, now):
        dl = e.dl
        self.dl_bw -= dl.bw
        dl.gen += 1                     # cancel a pending replenishment
        p = dl.cpu
        if dl.running:
            self._dl_account(p, now)
            self._dl_stop(p)
            e.wait_start = now
        elif e in self.dl_waiting:
            self.dl_waiting.remove(e)
        e.dl = None
        if p is not None:
            self._dl_next(p, now)
        if e.on_rq:
            e.wait_us += now - e.wait_start     # waited or throttled
            self._fair_enqueue(e, now)

    def _dl_remove(self, e, now):
        dl = e.dl
        self.dl_bw -= dl.bw
        dl.gen += 1
        e.on_rq = False
        if dl.running:
            p = dl.cpu
            self._dl_account(p, now)
            self._dl_stop(p)
            self._dl_next(p, now)
        elif e in self.dl_waiting:
            self.dl_waiting.remove(e)

    # -- wake-up, placement ---------------------------------------------------
    def _dl_wake(self, e, now, initial):
        if not initial:
            e.wakeups += 1
        e.on_rq = True
        e.wait_start = now
        if e.dl.on_wakeup(now):
            self._dl_throttle(e, now)
        else:
            self._dl_place(e, now)

    def _dl_place(self, e, now):
        """Global EDF: a pCPU without deadline work, else preempt the
        latest deadline if later, else wait.
        """
        cpus = self.cpus
        prev = e.last_cpu
        target = None
        if prev is not None:
            q = cpus[prev]
            if q.dl_curr is None and q.curr is None and not q.queue:
                target = q
        if target is None:
            for q in cpus:
                if q.dl_curr is None and q.curr is None and not q.queue:
                    target = q
                    break
        if target is None and prev is not None and cpus[prev].dl_curr is None:
            target = cpus[prev]
        if target is None:
            for q in cpus:
                if q.dl_curr is None:
                    target = q
                    break
        if target is not None:
            idle = target.curr is None and not target.queue
            self._dl_run(target, e, now, self.idle_exit if idle else 0)
            return
        latest = max(cpus, key=lambda q: (q.dl_curr.dl.abs_dl, -q.id))
        if latest.dl_curr.dl.abs_dl > e.dl.abs_dl:
            old = latest.dl_curr
            self._dl_account(latest, now)
            self._dl_stop(latest)
            old.wait_start = now
            self.dl_waiting.append(old)
            self._dl_run(latest, e, now)
        else:
            self.dl_waiting.append(e)

    def _dl_run(self, p, e, now, delay=0):
        """Run deadline entity e on p now, preempting p's fair curr."""
        self._settle(p, now)
        c = p.curr
        if c is not None:
            self._update_curr(p, now)
            if not self.exact and c.slice_left <= 0:
                c.new_request()
            c.running = False
            p.curr = None
            p.gen += 1
            self._enqueue_waiting(p, c, now)
        dl = e.dl
        e.wait_us += now + delay - e.wait_start
        e.running = True
        e.switches += 1
        e.last_cpu = p.id
        dl.running = True
        dl.cpu = p
        p.dl_curr = e
        start = now + delay + self.cost
        dl.since = start
        self._dl_arm(p, start)

    def _dl_arm(self, p, start):
        e = p.dl_curr
        d = e.wl.work_left
        r = e.dl.left
        t = start + (d if d > 0 else 0)
        if r < d:
            tr = start + (r if r > 0 else 0)
            if not self.exact:
                tick = self.tick_us
                tr = -(-tr // tick) * tick
            if tr < t:
                t = tr
        p.dl_gen += 1
        self.loop.at(t, self._on_dl, p, p.dl_gen)

    def _dl_account(self, p, now):
        e = p.dl_curr
        dl = e.dl
        d = now - dl.since
        if d > 0:
            dl.since = now
            e.run_us += d
            e.wl.work_left -= d
            dl.left -= d

    def _dl_stop(self, p):
        e = p.dl_curr
        e.running = False
        e.dl.running = False
        e.dl.cpu = None
        p.dl_curr = None
        p.dl_gen += 1

    def _dl_next(self, p, now):
        """p has no deadline entity any more: the earliest waiting one,
        else the fair class.
        """
        if p.dl_curr is not None:
            return
        if self.dl_waiting:
            best = min(self.dl_waiting, key=lambda x: (x.dl.abs_dl, x.id))
            self.dl_waiting.remove(best)
            self._dl_run(p, best, now)
        elif p.curr is None:
            self._dispatch(p, now)

    # -- events ---------------------------------------------------------------
    def _on_dl(self, p, gen):
        if gen != p.dl_gen:
            return
        p.dl_gen += 1
        now = self.loop.now
        e = p.dl_curr
        self._dl_account(p, now)
        wl = e.wl
        if wl.work_left <= 0:
            wl.complete(now)
            if wl.work_left <= 0:       # nothing left: block
                if p.dl_curr is e:
                    self._dl_stop(p)
                elif e in self.dl_waiting:
                    self.dl_waiting.remove(e)
                e.on_rq = False
                self._dl_next(p, now)
                return
            if p.dl_curr is not e:      # preempted by a wake-up it caused
                return
        if e.dl.left <= 0:              # runtime spent: throttle
            self._dl_stop(p)
            e.wait_start = now
            self._dl_next(p, now)
            self._dl_throttle(e, now)
            return
        self._dl_arm(p, now)

    def _dl_throttle(self, e, now):
        dl = e.dl
        dl.throttled = True
        dl.gen += 1
        t = dl.period_end()
        if t <= now:
            self._dl_replenish(e, dl.gen)
        else:
            self.loop.at(t, self._dl_replenish, e, dl.gen)

    def _dl_replenish(self, e, gen):
        dl = e.dl
        if dl is None or dl.gen != gen or not e.alive:
            return
        now = self.loop.now
        dl.throttled = False
        dl.replenish(now)
        if e.on_rq:
            self._dl_place(e, now)
