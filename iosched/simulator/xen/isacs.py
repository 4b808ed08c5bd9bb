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
"""ISACS (seed 000: Lee & Yu, Electronics 2020) on the Credit2 model.

What it adds to ``iosched.simulator.xen.credit2`` (the math is in
``isacs_math``):

* EVENT CHECKER: ``io_event`` (every I/O response event delivered to a
  vCPU; still recorded for the agent) updates E_n and the Eq. 1 EMA of
  the intervals; the data are read and re-initialised at each
  reallocation of the vCPU's run-queue (one credit round);
* the reallocation at the end of each round and Algorithm 2:
  ``isacs_realloc``;
* NORMAL state: the vCPU with the highest credit runs and burns credit;
* CPU-BOOST state: group members run, highest CVCredit first, and burn
  CVCredit; when no runnable member has CVCredit > 0 the run-queue
  reallocates.

Choices for the gaps of the digest (section 6), each tested:

* Gap 1: Algorithm 1 line 4 is "credit <= endcredit" and line 12 "the
  next member's CVCredit <= 0" (the prose says "<"; "<=" as Credit2's
  reset test credit <= 0, so without I/O vCPUs a round ends exactly when
  Credit2's would);
* Gap 9, ``trigger='head'`` (default, Algorithm 1 as printed): the
  CPU-BOOST state starts when the vCPU picked by Credit2's rule (highest
  credit) has credit <= its endcredit. Because the order includes the
  IVCredit offsets, a high-IVCredit head can end the normal phase while
  CPU-bound vCPUs still have default credit left, which the reallocation
  then drops: concealing keeps the order but not exactly the shares (I/O
  vCPUs that are CPU-hungry get more). ``trigger='all'`` is the strict
  reading: a vCPU at or below its endcredit waits, and the phase starts
  when no runnable vCPU has credit above its endcredit (every vCPU gets
  exactly the default credit per round; a CPU-hungry I/O vCPU then runs
  its whole round first and waits for the rest: see claim 8's rows);
* Gap 7, ``boost_wake='preempt'`` (default): during the CPU-BOOST state
  a vCPU that WAKES UP (an I/O completion), member or not, runs before
  the members if it has credit above its endcredit, and may preempt one;
  vCPUs that were runnable when the phase began wait for it to end
  (members run by CVCredit). ``'wait'`` is the literal reading: only
  members run, every other vCPU waits for the reallocation. The literal
  reading contradicts the paper's own latencies: each member dispatched
  in the phase runs at least the 1 ms ratelimit, so with tens of
  members the phase lasts several ms of wall time during which an I/O
  vCPU could not run (the ablation rows show it). One state flag per
  run-queue, read by each pCPU at its next decision; running vCPUs are
  not preempted when it flips. All members blocked (or out of CVCredit)
  while others are runnable: the phase ends (reallocation); nothing
  runnable: the pCPU idles and the state stays. CVCredit burns with
  Credit2's weighted rule; Algorithm 1 line 6's "vCPU_c" is read as
  "the next vCPU is the top member"; no migrate resist inside the
  CPU-BOOST state;
* runtime per dispatch: NORMAL, until credit reaches max(endcredit, the
  credit of the first waiting vCPU with usable credit); CPU-BOOST, until
  CVCredit reaches the next waiting member's (or 0); both clamped as
  Credit2's [max(500 us, ratelimit rest), 10 ms];
* wake-up tickles compare (state tier, then credit or CVCredit): a vCPU
  that may run in the current state preempts one of a lower tier
  (a NORMAL-tier vCPU preempts a CPU-BOOST member), else one with less
  credit (less CVCredit among members), as Credit2's score;
* Gaps 4, 5 and 12 (IVCredit cap, consumed credit, Algorithm 2): see
  ``isacs_realloc``;
* ``event_tickle`` (off by default; issue 30): an I/O response event
  reaching a waiting vCPU tickles as a wake-up does (``_tickle``: an
  idle pCPU, else preempt the best-scored running vCPU), so a vCPU that
  never blocks (a mixed one) could preempt on its events. The paper
  does not say EVENT CHECKER does this, and Xen's vcpu_kick does not.
"""

from iosched.contract import isacs as isacs_eqs
from iosched.simulator.xen import credit2
from iosched.simulator.xen import credit2_placement
from iosched.simulator.xen import isacs_realloc

NORMAL_TIER = 2
BOOST_TIER = 1
DEFAULT_IVCREDIT_CAP_US = 2000


class IsacsEntity(credit2.C2Entity):
    """ISACS_vCPU_INFO: event data, credits and group membership."""
    __slots__ = ('ev_n', 'ev_last', 'ev_ibar', 'consumed', 'endcredit',
                 'ivcredit', 'cvcredit', 'member', 'boosting',
                 'last_events', 'boost_woke')

    def __init__(self, eid, vm, index, weight):
        super().__init__(eid, vm, index, weight)
        self.ev_n = 0               # E_n this round
        self.ev_last = None         # t_{e-1}
        self.ev_ibar = None         # Ibar (Eq. 1); None: no interval yet
        self.consumed = 0           # credit burnt this round
        self.endcredit = 0
        self.ivcredit = 0
        self.cvcredit = 0
        self.member = False         # in the CPU-BOOST group
        self.boosting = False       # dispatched in the CPU-BOOST tier
        self.last_events = 0        # E_n of the last completed round
        self.boost_woke = False     # woke during the current CPU-BOOST


class IsacsRunQueue(credit2.RunQueue):
    __slots__ = ('boost', 'io_load', 'io_event', 'group_size',
                 'reallocs', 'boosts', 'round_start', 'round_us')

    def __init__(self, rq_id, cpus):
        super().__init__(rq_id, cpus)
        self.boost = False          # CPU-BOOST STATE
        self.io_load = 0            # sum of IVCredit (last reallocation)
        self.io_event = 0           # sum of E_n (last reallocation)
        self.group_size = 0
        self.reallocs = 0
        self.boosts = 0
        self.round_start = 0
        self.round_us = 0           # total length of completed rounds


class Isacs(isacs_realloc.ReallocationMixin, credit2.Credit2):
    name = 'isacs'
    entity_cls = IsacsEntity
    rq_cls = IsacsRunQueue

    def __init__(self, loop, pcpus, switch_cost_us, spec):
        super().__init__(loop, pcpus, switch_cost_us,
                         runqueue=spec.runqueue,
                         ratelimit_us=spec.ratelimit_us,
                         migrate_resist_us=spec.migrate_resist_us,
                         balance=spec.balance)
        self.ema_weight = spec.ema_weight
        self.cutoff = spec.cutoff_us
        self.cap = spec.ivcredit_cap_us
        self.head_trigger = spec.trigger == 'head'
        self.preempt = spec.boost_wake == 'preempt'
        self.conceal = spec.conceal
        self.event_tickle = spec.event_tickle
        self.event_tickles = 0
        self.io_balance = spec.io_balance and len(self.rqs) > 1
        self.io_moves = 0
        self.io_rounds = 0          # vCPU-rounds with IVCredit > 0
        self.ivcredit_sum = 0
        self.cvcredit_sum = 0

    # -- EVENT CHECKER --------------------------------------------------------
    def io_event(self, e, now):
        super().io_event(e, now)
        e.ev_n, e.ev_last, e.ev_ibar = isacs_eqs.observe(
            e.ev_n, e.ev_last, e.ev_ibar, now, self.ema_weight, self.cutoff)
        if self.event_tickle and e.on_rq and not e.running and (
                not self._deferred(e, None)):
            self.event_tickles += 1
            self._tickle(e, now)

    # -- accounting -----------------------------------------------------------
    def _burn(self, e, d):
        """Weighted burn of credit (NORMAL) or CVCredit (CPU-BOOST)."""
        mw = e.rq.max_weight
        if e.xw == mw:
            c = d
        else:
            c, e.residual = divmod(d * mw + e.residual, e.xw)
        e.consumed += c
        if e.boosting:
            e.cvcredit -= c
        else:
            e.credit -= c

    # -- CPU-BOOST wake-ups (boost_wake='preempt') ----------------------------
    def wake(self, e, now, initial=False):
        e.boost_woke = self.preempt and e.rq.boost
        super().wake(e, now, initial)

    def _block(self, e, now):
        e.boost_woke = False
        super()._block(e, now)

    # -- Algorithm 1 ----------------------------------------------------------
    def _epoch(self, p, snext, skipped, now):
        pass                        # rounds end inside _pick

    def _pick(self, p, scurr, now):
        if scurr is not None and self.ratelimit and (
                now - scurr.run_start < self.ratelimit):
            return scurr, 0
        rq = p.rq
        for _ in range(3):
            if not rq.boost:
                snext, skipped, spent = self._pick_normal(p, scurr)
                if not spent:
                    return snext, skipped
                rq.boost = True             # Alg. 1 line 5
                rq.boosts += 1
            snext, skipped, over = self._pick_boost(p, scurr)
            if not over:
                return snext, skipped
            self._reallocate(rq, now)       # Alg. 1 lines 13-21
            if scurr is not None and scurr.migrate_to is not None:
                scurr = None
        return None, 0

    def _pick_normal(self, p, scurr):
        """(snext, skipped, spent): spent = enter the CPU-BOOST state."""
        if self.head_trigger:
            snext, skipped = self._candidate(p, scurr)
            if snext is None:
                return None, skipped, False
            if skipped == 0 and snext.credit <= snext.endcredit:
                return None, 0, True
            snext.boosting = False
            return snext, skipped, False
        usable = scurr is not None and scurr.credit > scurr.endcredit
        snext = scurr if usable else None
        sc = snext.credit if usable else credit2.IDLE_CREDIT
        any_spent = scurr is not None and not usable
        skipped = 0
        for svc in p.rq.runq:
            if svc.credit <= svc.endcredit:
                any_spent = True
                continue
            if self._skip(svc, p, sc):
                skipped += 1
                continue
            if svc.credit > sc:
                snext = svc
            break
        if snext is not None:
            snext.boosting = False
            return snext, skipped, False
        if skipped:                 # usable vCPUs left for other pCPUs
            return scurr, skipped, False
        return None, 0, any_spent

    def _deferred(self, x, p):
        """x is left for another tickled pCPU (p None: for any)."""
        t = x.tickled_cpu
        return t is not None and (p is None or t != p.id) and (
            self.cpus[t].tickled)

    def _pick_boost(self, p, scurr):
        """(snext, skipped, over): over = reallocate now."""
        best1 = best2 = None
        skipped = 0
        runnable = scurr is not None
        cands = p.rq.runq if scurr is None else [scurr] + p.rq.runq
        for x in cands:
            runnable = True
            normal = x.boost_woke and x.credit > x.endcredit
            boost = x.member and x.cvcredit > 0
            if not (normal or boost):
                continue
            if x is not scurr and (not x.allows(p.id)
                                   or self._deferred(x, p)):
                skipped += 1
                continue
            if normal:
                if best1 is None or x.credit > best1.credit:
                    best1 = x
            elif best2 is None or x.cvcredit > best2.cvcredit:
                best2 = x
        if best1 is not None:
            best1.boosting = False
            return best1, skipped, False
        if best2 is not None:
            best2.boosting = True
            return best2, skipped, False
        if skipped:
            return scurr, skipped, False
        return None, 0, runnable

    def _runtime(self, p, snext, now):
        min_time = credit2.MIN_TIMER
        if self.ratelimit:
            rl = snext.run_start + self.ratelimit - now
            if rl > min_time:
                min_time = rl
        runq = p.rq.runq
        if snext.boosting:
            rt = snext.cvcredit
            nxt = 0
            for w in runq:
                if w.member and w.cvcredit > nxt:
                    nxt = w.cvcredit
            rt -= nxt
        else:
            stop = snext.endcredit
            for w in runq:
                if w.credit > w.endcredit:
                    if w.credit > stop:
                        stop = w.credit
                    break
                if self.head_trigger:
                    break
            rt = snext.credit - stop
        time = rt * snext.xw // p.rq.max_weight if rt > 0 else 0
        if time < min_time:
            return min_time
        return credit2.MAX_TIMER if time > credit2.MAX_TIMER else time

    # -- tickling -------------------------------------------------------------
    def _tier(self, e):
        """The tier a waiting e may run in now (0: it must wait)."""
        rq = e.rq
        usable = e.credit > e.endcredit
        if not rq.boost:
            return NORMAL_TIER if usable or self.head_trigger else 0
        if e.boost_woke and usable:
            return NORMAL_TIER
        return BOOST_TIER if e.member and e.cvcredit > 0 else 0

    def _score(self, new, q, now):
        cur = q.curr
        rl = self.ratelimit
        tolerance = credit2_placement.RATELIMIT_TOLERANCE
        if rl > tolerance and now - cur.run_start <= rl - tolerance:
            return -1
        tn = self._tier(new)
        tc = BOOST_TIER if cur.boosting else NORMAL_TIER
        if tn == 0 or tn < tc:
            return -1
        self._account(q, now)
        if tn > tc:
            return 4 * credit2.CREDIT_INIT - cur.cvcredit
        if tn == BOOST_TIER:
            return new.cvcredit - cur.cvcredit
        s = new.credit - cur.credit
        if new.proc != q.id:
            s -= self.resist
        return s

    def stats(self):
        out = super().stats()
        reallocs = sum(rq.reallocs for rq in self.rqs)
        out.update({
            'reallocations': reallocs,
            'boost_phases': sum(rq.boosts for rq in self.rqs),
            'io_migrations': self.io_moves,
            'event_tickles': self.event_tickles,
            'io_vcpu_rounds': self.io_rounds,
            'mean_ivcredit_us': (self.ivcredit_sum / self.io_rounds
                                 if self.io_rounds else 0.0),
            'ivcredit_sum_us': self.ivcredit_sum,
            'cvcredit_sum_us': self.cvcredit_sum,
            'mean_round_us': (sum(rq.round_us for rq in self.rqs) / reallocs
                              if reallocs else 0.0),
            'io_load': [rq.io_load for rq in self.rqs],
            'io_event': [rq.io_event for rq in self.rqs],
        })
        return out
