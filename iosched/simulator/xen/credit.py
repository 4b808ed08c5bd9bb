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
"""Xen's Credit scheduler (Credit1, ``sched_credit.c`` of Xen 4.1) as a model.

What it does, as Xen 4.1 does it:

* one run-queue per pCPU, ordered by priority BOOST > UNDER > OVER and
  FIFO within a priority (``__runq_insert``); the running vCPU is not on
  the queue. ``do_schedule`` puts a still-runnable current vCPU back at
  the tail of its priority, takes the head and runs it for ``tslice_us``
  (30 ms); the same vCPU continues without a context switch;
* credits and priorities (``credit_accounting``): burnt by run time,
  shared out every ``acct_us`` (``csched_acct``) by weight; the priority
  follows the credit (UNDER >= 0 > OVER), BOOST a woken UNDER vCPU until
  its next tick;
* wake-up: an UNDER vCPU becomes BOOST (``boost``), joins the queue of
  its pCPU (``v->processor``) and tickles: it preempts the running vCPU of
  that pCPU when its priority is strictly higher; when that pCPU was busy,
  one idle pCPU it may run on (cycling, ``tickle_one_idle_cpu``) is
  tickled and looks for work to steal;
* where a vCPU runs (``credit_placement``): its assigned pCPU (flat
  topology), work stealing, the idle pCPU a wake-up tickles, affinity
  changes;
* ``ratelimit_us`` (Xen 4.2, 0 = off as in 4.1): a runnable current vCPU
  that has run less than that keeps the pCPU, for ratelimit_us more.

Simplifications (each one a choice):

* credits in microseconds, accounting per vCPU, aligned ticks: see
  ``credit_accounting``; no caps (no parking), no yield, no tasklets, no
  cpupools;
* a tickle (SCHEDULE_SOFTIRQ, an IPI) takes effect at once;
* each switch to another vCPU costs ``host_spec.switch_cost_us`` of lost
  time (charged to nobody); the slice starts after it.

Subclasses (``vslicer``, ``vturbo``) change the run length
(``_slice_us``), where a vCPU goes back on the queue (``_requeue``,
``_enqueue_woken``) and the accounting (``_acct``).
"""

import heapq

from iosched.simulator import sched_base
from iosched.simulator.xen import credit_accounting
from iosched.simulator.xen import credit_placement

NEVER = 1 << 62


class Vcpu(sched_base.Entity):
    """A vCPU: credit (us of CPU), priority, active flag, assigned pCPU."""
    __slots__ = ('credit', 'pri', 'active', 'home')

    def __init__(self, eid, vm, index, weight):
        super().__init__(eid, vm, index, weight)
        self.credit = 0
        self.pri = credit_accounting.UNDER
        self.active = False         # on the accounting list (earns credit)
        self.home = None            # PCpu it is assigned to (v->processor)


class PCpu:
    """One pCPU: its run-queue (``runq``, head first) and running vCPU.

    ``last_update`` is when the running vCPU starts accruing run time
    (after the switch cost), ``slice_end`` when its slice expires,
    ``run_since`` when it was switched in; ``gen`` invalidates a pending
    CPU event; ``in_handler``/``resched`` defer a tickle that a workload
    raises from inside this pCPU's own event.
    """
    __slots__ = ('id', 'curr', 'runq', 'gen', 'ev_time', 'last_update',
                 'slice_end', 'run_since', 'tslice', 'nr_home',
                 'in_handler', 'resched')

    def __init__(self, cpu_id, tslice):
        self.id = cpu_id
        self.curr = None
        self.runq = []
        self.gen = 0
        self.ev_time = -1
        self.last_update = 0
        self.slice_end = 0
        self.run_since = 0
        self.tslice = tslice
        self.nr_home = 0            # vCPUs assigned here (blocked included)
        self.in_handler = False
        self.resched = False


class CreditScheduler(credit_accounting.AccountingMixin,
                      credit_placement.PlacementMixin,
                      sched_base.Scheduler):
    name = 'credit'
    knobs = ('weight', 'affinity')

    def __init__(self, loop, pcpus, switch_cost_us, spec):
        self.loop = loop
        self.cost = switch_cost_us
        self.tslice = spec.tslice_us
        self.tick_us = spec.tick_us
        self.acct_us = spec.acct_us
        self.ratelimit = spec.ratelimit_us
        self.boost = spec.boost
        self.cpus = [PCpu(i, spec.tslice_us) for i in range(pcpus)]
        self.active = []            # accounting list, head first
        self.weight_total = 0       # sum of the active vCPUs' weights
        self.credit_balance = 0
        self.last_tickle = 0
        self.n_steals = 0
        self.n_preempts = 0
        self.n_boosts = 0
        self.n_acct = 0
        self.n_ratelimited = 0
        self.switch_log = None
        self._heap = loop.heap
        self._seq = loop._seq
        self._on_cpu_cb = self._on_cpu
        self.next_tick = loop.now + spec.tick_us
        self.next_acct = loop.now + spec.acct_us
        loop.at(min(self.next_tick, self.next_acct), self._on_timer)

    def record_switches(self):
        """Record every switch-in from now on as (time, pCPU id, VM uuid,
        vCPU index); returns the list, which grows as the host runs.
        """
        self.switch_log = []
        return self.switch_log

    # -- accounting of run time ---------------------------------------------
    def _update_curr(self, p, now):
        """Charge the running vCPU from last_update to now (burn_credits)."""
        d = now - p.last_update
        if d > 0:
            e = p.curr
            p.last_update = now
            e.run_us += d
            e.credit -= d
            e.wl.work_left -= d

    def _settle(self, p, now):
        """Run p's CPU event now if due, then charge its vCPU up to now."""
        if p.curr is not None and p.ev_time <= now:
            self._on_cpu(p, p.gen)
        if p.curr is not None:
            self._update_curr(p, now)

    def _run_since(self, e):
        return e.home.last_update

    # -- run-queue ------------------------------------------------------------
    @staticmethod
    def _insert(p, e):
        """__runq_insert: before the first vCPU of lower priority."""
        q = p.runq
        pri = e.pri
        for i, x in enumerate(q):
            if pri > x.pri:
                q.insert(i, e)
                return
        q.append(e)

    def _requeue(self, p, e, now):
        """The descheduled, still runnable current vCPU goes back."""
        self._insert(p, e)

    def _enqueue_woken(self, p, e, now):
        self._insert(p, e)

    def _descheduled(self, p, e, now):
        """Hook: e stops running on p (slice end, preemption or block)."""

    def _slice_us(self, p, e):
        return p.tslice

    @staticmethod
    def _sort_runq(p):
        """csched_runq_sort: UNDER and BOOST ahead of OVER, order kept."""
        q = p.runq
        if q:
            p.runq = ([x for x in q if x.pri >= credit_accounting.UNDER]
                      + [x for x in q if x.pri < credit_accounting.UNDER])

    # -- the CPU event --------------------------------------------------------
    def _arm(self, p):
        e = p.curr
        d = e.wl.work_left
        t = p.last_update + (d if d > 0 else 0)
        if p.slice_end < t:
            t = p.slice_end
        p.gen += 1
        p.ev_time = t
        heapq.heappush(self._heap,
                       (t, next(self._seq), self._on_cpu_cb, p, p.gen))

    def _on_cpu(self, p, gen):
        if gen != p.gen:
            return
        p.gen += 1
        p.ev_time = NEVER               # no re-entry through _settle
        now = self.loop.now
        e = p.curr
        self._update_curr(p, now)
        wl = e.wl
        if wl.work_left <= 0:
            p.in_handler = True
            wl.complete(now)
            p.in_handler = False
            if wl.work_left <= 0:           # nothing left: block
                p.resched = False
                e.running = False
                e.on_rq = False
                self._descheduled(p, e, now)
                p.curr = None
                self._schedule(p, now)
                return
        if now >= p.slice_end or p.resched:
            p.resched = False
            self._schedule(p, now)
            return
        self._arm(p)

    # -- csched_schedule ------------------------------------------------------
    def _schedule(self, p, now):
        """Pick what p runs next; p.curr is the runnable current or None."""
        prev = p.curr
        if prev is not None:
            if self.ratelimit and now - p.run_since < self.ratelimit:
                self.n_ratelimited += 1
                p.slice_end = now + self.ratelimit
                self._arm(p)
                return
            prev.running = False
            prev.wait_start = now
            self._descheduled(p, prev, now)
            p.curr = None
            self._requeue(p, prev, now)
        q = p.runq
        snext = q[0] if q else None
        if snext is None or snext.pri <= credit_accounting.OVER:
            stolen = self._steal(p, credit_accounting.IDLE if snext is None
                                 else snext.pri)
            if stolen is not None:
                snext = stolen
            elif snext is not None:
                del q[0]
        else:
            del q[0]
        if snext is None:
            p.gen += 1
            p.ev_time = -1
            return
        self._run(p, snext, now, prev)

    def _run(self, p, e, now, prev):
        e.running = True
        e.wait_us += now - e.wait_start
        p.curr = e
        if e is prev:
            start = now                     # continue_running: no switch
        else:
            start = now + self.cost
            e.switches += 1
            e.last_cpu = p.id
            p.run_since = now
            if self.switch_log is not None:
                self.switch_log.append((now, p.id, getattr(e.vm, 'uuid',
                                                           None), e.index))
        p.last_update = start
        p.slice_end = start + self._slice_us(p, e)
        self._arm(p)

    # -- wake-up and tickling ------------------------------------------------
    def wake(self, e, now, initial=False):
        if not initial:
            e.wakeups += 1
        p = e.home
        if p is None:
            p = self._initial_cpu(e)
            self._set_home(e, p)
        self._settle(p, now)
        e.on_rq = True
        e.wait_start = now
        if self.boost and e.pri == credit_accounting.UNDER:
            e.pri = credit_accounting.BOOST
            self.n_boosts += 1
        self._enqueue_woken(p, e, now)
        self._tickle(p, e, now)

    def _tickle(self, p, e, now):
        """__runq_tickle: preempt a lower priority, wake one idle pCPU."""
        cur = p.curr
        if cur is None:
            self._schedule(p, now)
            return
        if e.pri > cur.pri:
            self.n_preempts += 1
            self._preempt(p, now)
        self._tickle_idle(p, e, now)

    def _preempt(self, p, now):
        if p.in_handler:
            p.resched = True
            return
        self._update_curr(p, now)
        self._schedule(p, now)

    # -- knobs ----------------------------------------------------------------
    def new_entity(self, eid, vm, index, weight):
        return Vcpu(eid, vm, index, weight)

    def set_weight(self, e, weight, now):
        if e.active:
            self.weight_total += weight - e.weight
        e.weight = weight

    def remove(self, e, now):
        e.alive = False
        if e.active:
            self._acct_stop(e)
        p = e.home
        if e.on_rq:
            self._settle(p, now)
        if e.on_rq:
            e.on_rq = False
            if e.running:
                self._update_curr(p, now)
                e.running = False
                self._descheduled(p, e, now)
                p.curr = None
                p.gen += 1
                self._set_home(e, None)
                self._schedule(p, now)
                return
            p.runq.remove(e)
        self._set_home(e, None)

    def stats(self):
        return {'steals': self.n_steals, 'tickle_preemptions':
                self.n_preempts, 'boosts': self.n_boosts,
                'accountings': self.n_acct,
                'ratelimited': self.n_ratelimited,
                'credit_balance_us': self.credit_balance}
