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
"""Wake-up in ``iosched.simulator.cpu``: which pCPU, placement, preemption.

What a woken entity goes through after ``Scheduler.wake`` (the hot path,
in ``cpu``) has settled its pCPU; the host's ``KernelSpec`` switches the
two rules marked [kernel]:

* which pCPU on wake-up (select_idle_sibling-like): the previous pCPU if
  idle, else the lowest-id idle allowed pCPU, else the previous pCPU if
  allowed, else the first allowed one; an entity that never ran goes to
  the least loaded allowed pCPU;
* [kernel] wake-up placement: ``place_lag`` False: zero lag, vruntime = V
  (*: sleeping forgets lag); True: the lag the entity slept with (clamped
  to max(2 slices, 1 tick)), inflated by (W + w) / W as place_entity does;
  a negative lag is kept only while V has not caught up with the
  entity's vruntime (DELAY_DEQUEUE) and on the same pCPU. Either way a
  fresh request (deadline = v + vslice);
* [kernel] wake-up preemption: with ``preempt_short``, PREEMPT_SHORT
  clears the current entity's RUN_TO_PARITY protection when the woken
  entity is eligible, has a shorter slice and an earlier deadline (or the
  current one is not eligible); then the woken entity preempts if it is
  what pick_eevdf returns (as check_preempt_wakeup_fair). A protected
  current entity (eligible, still in the request it was picked with) keeps
  the pCPU.

RUN_TO_PARITY's protection itself (``_set_protect``, ``_protect_left``)
stays in ``cpu``, next to the dispatch and CPU-event paths that read it.
"""

from iosched.simulator import eevdf
from iosched.simulator import sched_base


def _least_loaded(cpus, ids):
    """The pCPU of ``ids`` with the fewest runnable entities (lowest id on
    ties).
    """
    best = None
    for i in ids:
        q = cpus[i]
        if best is None or (q.nr_running, q.id) < (best.nr_running, best.id):
            best = q
    return best


class WakeupMixin(sched_base.Scheduler):
    __slots__ = ()

    # -- which pCPU -----------------------------------------------------------
    def select_cpu(self, e):
        cpus = self.cpus
        allowed = e.allowed
        prev = e.last_cpu
        prev_ok = prev is not None and (allowed is None or prev in allowed)
        if prev_ok:
            p = cpus[prev]
            if p.curr is None and not p.queue and p.dl_curr is None:
                return p
        if allowed is None:
            for p in cpus:
                if p.curr is None and not p.queue and p.dl_curr is None:
                    return p
        else:
            for i in allowed:
                p = cpus[i]
                if p.curr is None and not p.queue and p.dl_curr is None:
                    return p
        if prev_ok:
            return cpus[prev]
        ids = range(len(cpus)) if allowed is None else allowed
        if prev is None:
            return _least_loaded(cpus, ids)
        return cpus[ids[0]]

    # -- placement and preemption ---------------------------------------------
    def _place(self, p, e):
        """place_entity with PLACE_LAG (and DELAY_DEQUEUE's decay)."""
        avg = p.avg_v()
        lag = e.vlag
        if lag > 0:
            w = p.totals()[0]
            e.v = avg - lag * (w + e.lw) // w if w else avg
        elif lag < 0 and e.last_cpu == p.id and e.v > avg:
            pass                        # still delayed: keeps its vruntime
        else:
            e.v = avg

    def _check_preempt(self, p, e, now):
        """check_preempt_wakeup_fair with PREEMPT_SHORT and RUN_TO_PARITY."""
        c = p.curr
        if not self.exact and c.slice_left <= 0:
            c.new_request()             # update_curr: the request is used
            c.protected = False
        if self.parity_min:
            self._check_preempt_617(p, e, c, now)
            return
        w, s = p.totals()
        if (self.preempt_short and e.slice_us < c.slice_us
                and e.v * w <= s
                and (e.deadline < c.deadline or c.v * w > s)):
            c.protected = False
        best = p.pick()
        if best is e:
            self._preempt(p, e, now)
        elif not self.exact and best is not c and best is not None:
            self._preempt(p, best, now)     # resched picks another one

    def _check_preempt_617(self, p, e, c, now):
        """The 6.17+ rule: a woken entity with a shorter slice is picked
        against curr without curr's protection (__pick_eevdf(protect=
        false)); if it does not win, curr's protection shrinks to the
        shortest queued slice from now (update_protect_slice). Without
        HRTICK, update_curr's resched (request used up, or protection
        over) then lets schedule() pick another entity.
        """
        short = self.preempt_short and e.slice_us < c.slice_us
        best = p.pick(not short)
        if best is e:
            self._preempt(p, e, now)
            return
        if short:
            m = c.slice_us
            for x in p.queue:
                if x.slice_us < m:
                    m = x.slice_us
            v = c.v + m * eevdf.VSCALE // c.lw
            if v < c.vprot:
                c.vprot = v
        if not self.exact and (not c.protected or c.v >= c.vprot):
            best = p.pick()
            if best is not c and best is not None:
                self._preempt(p, best, now)
                return
        self._arm(p, max(now, p.last_update))  # its protection may end
