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
"""Xen Credit2 (4.12, ``xen/common/sched_credit2.c``) as a scheduler model.

Modelled as in Xen (credit in microseconds of pCPU time here, ns in Xen):

* credit-ordered run-queues (highest first; a vCPU is inserted after
  every vCPU with at least its credit); ``rq.svc`` holds every vCPU
  assigned to the run-queue, blocked ones included;
* burn = runtime * max_weight / weight with a residual (t2c_update);
  weights map the cgroup v2 scale proportionally: 100 -> 256 (Xen's
  default), ``xen_weight``;
* csched2_schedule: burn the current vCPU; runq_candidate keeps it while
  it ran less than ``ratelimit_us`` (1 ms), else picks the first vCPU of
  the run-queue it may run (hard affinity; not left for another tickled
  pCPU; from another pCPU only with 500 us more credit: migrate resist)
  if its credit is higher than the current one's; a reset follows when
  nothing was skipped and the chosen vCPU's credit is <= 0;
* reset_credit: every vCPU of ``rq.svc`` gets credit += m * 10 ms
  (m = 1 + deficit // 10 ms when the head is below -10 ms) clipped to
  10 ms + 500 us carry-over; running vCPUs are burnt first;
* csched2_runtime: run until the credit reaches the next waiting vCPU's
  (if that one's credit is > 0), else until 0, clamped to
  [max(500 us, rest of the ratelimit), 10 ms];
* wake-up: sleepers keep their credit; the vCPU is inserted in its
  run-queue and tickles a pCPU (``credit2_placement``);
* a preempted vCPU is reinserted and tickles (context_saved);
* a pCPU switching to another vCPU loses ``switch_cost_us`` (charged to
  nobody); moving to another pCPU adds 50 us of credit
  (MIGRATE_COMPENSATION).

Simplifications (documented choices):

* run-queue topology ``runqueue='all'`` (one run-queue: Xen 4.12's
  per-socket default on a one-socket box) or ``'cpu'`` (one per pCPU,
  = per-core without SMT); no SMT or soft affinity, no caps/budgets,
  no yield, no tasklets;
* ``balance_load`` (in ``credit2_balance``) runs after each reset as in
  Xen, with Xen's decaying load averages in floating point over a 2^20 us
  window, the same push / pull / swap search and thresholds (move only
  if the gap is >= 1 vCPU under capacity, >= 1/8 over); it never fails
  on a lock (Xen's trylock) so it always considers every run-queue;
* run-queue assignment and migration: see ``credit2_placement``.
"""

from iosched.simulator import sched_base
from iosched.simulator.xen import credit2_balance
from iosched.simulator.xen import credit2_placement

CREDIT_INIT = 10000             # us, CSCHED2_CREDIT_INIT
CARRYOVER_MAX = 500             # CSCHED2_CARRYOVER_MAX
MIN_TIMER = 500                 # CSCHED2_MIN_TIMER
MAX_TIMER = CREDIT_INIT         # CSCHED2_MAX_TIMER
MIGRATE_COMPENSATION = 50
IDLE_CREDIT = -(1 << 30)
DEFAULT_WEIGHT = 256
RUNQUEUES = ('all', 'cpu')


def xen_weight(weight):
    """cgroup v2 weight (default 100) -> Credit2 weight (default 256)."""
    return max(1, (weight * DEFAULT_WEIGHT + 50) // 100)


class C2Entity(sched_base.Entity):
    """One vCPU: Credit2 state on top of the shared fields."""
    __slots__ = ('credit', 'residual', 'xw', 'rq', 'proc', 'cpu',
                 'run_start', 'tickled_cpu', 'migrate_to', 'avgload',
                 'load_t')

    def __init__(self, eid, vm, index, weight):
        super().__init__(eid, vm, index, weight)
        self.credit = CREDIT_INIT
        self.residual = 0
        self.xw = xen_weight(weight)
        self.rq = None              # the run-queue it is assigned to
        self.proc = 0               # v->processor
        self.cpu = None             # PCpu while running
        self.run_start = 0          # runstate entry time (ratelimit)
        self.tickled_cpu = None
        self.migrate_to = None      # run-queue to move to once off-CPU
        self.avgload = 0.5          # balance_load: runnable fraction
        self.load_t = 0


class RunQueue:
    """One Credit2 run-queue: waiting vCPUs by credit, all assigned."""
    __slots__ = ('id', 'cpus', 'runq', 'svc', 'max_weight', 'load',
                 'avgload', 'load_t', 'pick_bias', 'resets')

    def __init__(self, rq_id, cpus):
        self.id = rq_id
        self.cpus = cpus
        self.runq = []              # waiting vCPUs, highest credit first
        self.svc = []               # every assigned vCPU (blocked too)
        self.max_weight = 1
        self.load = 0               # runnable vCPUs (incl. running)
        self.avgload = 0.0
        self.load_t = 0
        self.pick_bias = cpus[0].id
        self.resets = 0


class PCpu:
    __slots__ = ('id', 'rq', 'curr', 'gen', 'ev_time', 'last', 'tickled')

    def __init__(self, cpu_id):
        self.id = cpu_id
        self.rq = None
        self.curr = None
        self.gen = 0
        self.ev_time = -1           # time of the pending timer event
        self.last = 0               # curr is accounted up to here
        self.tickled = False


class Credit2(credit2_placement.PlacementMixin, sched_base.Scheduler):
    name = 'credit2'
    knobs = ('weight', 'affinity')
    entity_cls = C2Entity
    rq_cls = RunQueue

    def __init__(self, loop, pcpus, switch_cost_us, runqueue='all',
                 ratelimit_us=1000, migrate_resist_us=500, balance=True):
        self.loop = loop
        self.cost = switch_cost_us
        self.ratelimit = ratelimit_us
        self.resist = migrate_resist_us
        self.cpus = [PCpu(i) for i in range(pcpus)]
        groups = ([self.cpus] if runqueue == 'all'
                  else [[p] for p in self.cpus])
        self.rqs = [self.rq_cls(i, g) for i, g in enumerate(groups)]
        for rq in self.rqs:
            for p in rq.cpus:
                p.rq = rq
        self.balance = balance and len(self.rqs) > 1
        self.balance_moves = 0
        self._timer_cb = self._on_timer
        self._tickle_cb = self._on_tickle

    # -- accounting -----------------------------------------------------------
    def _burn(self, e, d):
        """t2c_update: credit -= d * max_weight / weight (with residual)."""
        mw = e.rq.max_weight
        if e.xw == mw:
            e.credit -= d
        else:
            q, e.residual = divmod(d * mw + e.residual, e.xw)
            e.credit -= q

    def _account(self, p, now):
        """burn_credits: charge p's current vCPU up to now."""
        d = now - p.last
        if d > 0:
            e = p.curr
            p.last = now
            e.run_us += d
            e.wl.work_left -= d
            self._burn(e, d)

    def _run_since(self, e):
        return e.cpu.last

    # -- scheduling -----------------------------------------------------------
    def _on_timer(self, p, gen):
        if gen == p.gen:
            self._schedule(p, self.loop.now)

    def _on_tickle(self, p, _b):
        if p.tickled:
            self._schedule(p, self.loop.now)

    def _block(self, e, now):
        e.on_rq = False
        self._load_change(e, -1, now)

    def _skip(self, svc, p, snext_credit):
        """runq_candidate's reasons to leave svc for another pCPU."""
        if not svc.allows(p.id):
            return True
        t = svc.tickled_cpu
        if t is not None and t != p.id and self.cpus[t].tickled:
            return True
        return svc.proc != p.id and snext_credit + self.resist > svc.credit

    def _pick(self, p, scurr, now):
        """runq_candidate, then the reset check. Return (snext, skipped).

        ``scurr`` is the current vCPU if it can go on running here.
        """
        if scurr is not None and self.ratelimit and (
                now - scurr.run_start < self.ratelimit):
            return scurr, 0
        return self._candidate(p, scurr)

    def _candidate(self, p, scurr):
        """The run-queue scan of runq_candidate (after the ratelimit)."""
        snext = scurr
        sc = scurr.credit if scurr is not None else IDLE_CREDIT
        skipped = 0
        for svc in p.rq.runq:
            if self._skip(svc, p, sc):
                skipped += 1
                continue
            if svc.credit > sc:
                snext = svc
            break
        return snext, skipped

    def _epoch(self, p, snext, skipped, now):
        """Reset when the chosen vCPU is out of credit (and none skipped)."""
        if skipped == 0 and snext.credit <= 0:
            self._reset(p.rq, snext, now)
            if self.balance:
                credit2_balance.balance_load(self, p.rq, now)

    def _reset(self, rq, snext, now):
        """reset_credit: += m * 10 ms, clipped to 10 ms + carry-over."""
        m = 1
        if snext.credit < -CREDIT_INIT:
            m += (-snext.credit) // CREDIT_INIT
        add = m * CREDIT_INIT
        cap = CREDIT_INIT + CARRYOVER_MAX
        for e in rq.svc:
            if e.running and e.cpu.curr is e:
                self._account(e.cpu, now)
            c = e.credit + add
            e.credit = cap if c > cap else c
        rq.resets += 1

    def _runtime(self, p, snext, now):
        """csched2_runtime: credit gap to the next waiter, clamped."""
        min_time = MIN_TIMER
        if self.ratelimit:
            rl = snext.run_start + self.ratelimit - now
            if rl > min_time:
                min_time = rl
        rt = snext.credit
        runq = p.rq.runq
        if runq and runq[0].credit > 0:
            rt = snext.credit - runq[0].credit
        time = rt * snext.xw // p.rq.max_weight if rt > 0 else 0
        if time < min_time:
            return min_time
        return MAX_TIMER if time > MAX_TIMER else time

    def _take(self, p, e, now):
        """Put waiting e on p (it leaves the run-queue)."""
        e.rq.runq.remove(e)
        e.wait_us += now - e.wait_start
        e.running = True
        e.cpu = p
        e.switches += 1
        e.last_cpu = p.id
        e.run_start = now
        p.curr = e
        p.last = now

    def _schedule(self, p, now):
        """csched2_schedule on pCPU p (timer, tickle or block)."""
        p.tickled = False
        p.gen += 1
        c = p.curr
        keep = None
        if c is not None:
            self._account(p, now)
            wl = c.wl
            if wl.work_left <= 0:
                wl.complete(now)
                if wl.work_left <= 0 and c.on_rq:
                    self._block(c, now)
            if c.on_rq and c.migrate_to is None and c.allows(p.id):
                keep = c
        snext, skipped = self._pick(p, keep, now)
        if snext is not c:
            # c stays "running" (Xen: CSFLAG_scheduled) until it is
            # requeued below, so a reset or balance_load in between only
            # flags it for migration.
            p.curr = None
            if snext is not None:
                self._take(p, snext, now)
        if snext is not None:
            self._epoch(p, snext, skipped, now)
            if snext.proc != p.id:
                snext.credit += MIGRATE_COMPENSATION
                snext.proc = p.id
            snext.tickled_cpu = None
            if snext is not c:
                p.last = now + self.cost
            self._arm(p, self._runtime(p, snext, now))
        else:
            p.ev_time = -1
        if c is not None and c is not snext:
            c.running = False
            c.cpu = None
            if c.on_rq:
                self._requeue(c, now)

    def _requeue(self, c, now):
        """context_saved: a preempted vCPU goes back and tickles."""
        c.wait_start = now
        if c.migrate_to is not None:
            self._move(c, c.migrate_to, now)
        else:
            self._insert(c)
            self._tickle(c, now)

    def _arm(self, p, runtime):
        d = p.curr.wl.work_left
        if runtime < d:
            d = runtime
        if d < 0:
            d = 0
        t = p.last + d
        p.ev_time = t
        self.loop.at(t, self._timer_cb, p, p.gen)

    # -- the contract ---------------------------------------------------------
    def new_entity(self, eid, vm, index, weight):
        e = self.entity_cls(eid, vm, index, weight)
        self._assign(e, min(self.rqs, key=lambda r: (len(r.svc), r.id)))
        return e

    def wake(self, e, now, initial=False):
        if not initial:
            e.wakeups += 1
        e.on_rq = True
        e.wait_start = now
        self._load_change(e, 1, now)
        self._insert(e)
        self._tickle(e, now)

    def remove(self, e, now):
        e.alive = False
        if e.running:
            p = e.cpu
            self._account(p, now)
            e.running = False
            e.cpu = None
            p.curr = None
            self._block(e, now)
            self._schedule(p, now)
        elif e.on_rq:
            e.rq.runq.remove(e)
            self._block(e, now)
        self._deassign(e)

    def set_weight(self, e, weight, now):
        if e.running:
            self._account(e.cpu, now)
        e.weight = weight
        e.xw = xen_weight(weight)
        e.residual = 0
        rq = e.rq
        rq.max_weight = max(x.xw for x in rq.svc)

    def set_affinity(self, e, allowed, now):
        e.allowed = allowed
        if not any(e.allows(q.id) for q in e.rq.cpus):
            self.migrate(e, self._allowed_rq(e), now)
        elif e.running and not e.allows(e.cpu.id):
            self._tickle_cpu(e.cpu, e, now)
        elif not e.allows(e.proc):
            e.proc = self._pick_proc(e, e.rq)

    def stats(self):
        return {'resets': sum(rq.resets for rq in self.rqs),
                'resets_per_runqueue': [rq.resets for rq in self.rqs],
                'runqueues': len(self.rqs),
                'balance_moves': self.balance_moves}
