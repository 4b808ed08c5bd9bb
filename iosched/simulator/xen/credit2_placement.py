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
"""Credit2's run-queue membership, migration and runq_tickle (``credit2``).

Where a vCPU waits and which pCPU is told to reschedule for it, as Xen 4.12
does it:

* assigned to a run-queue, a vCPU joins ``rq.svc`` and its ``v->processor``
  is the next allowed pCPU of the run-queue after ``pick_bias`` (cyclic);
  a waiting vCPU is inserted in ``rq.runq`` after every one with at least
  its credit (runq_insert);
* wake-up: sleepers keep their credit; the vCPU is inserted and
  runq_tickle picks an idle, not yet tickled pCPU (its own first, then
  the next one in id order), else the busy pCPU with the best score
  ``new.credit - cur.credit`` (minus migrate resist on another pCPU;
  running vCPUs within the ratelimit are not preemptable; its own pCPU
  wins with any positive score). A tickle runs that pCPU's schedule as
  an event at the same time (the softirq), so no reentrancy;
* migration (balance_load, ``credit2_balance``, and affinity changes): a
  waiting vCPU moves at once and tickles there, a running one once it is
  off its pCPU (``migrate_to``).

Simplifications (each one a choice):

* wake-up never changes a vCPU's run-queue (as Xen 4.12: only
  balance_load, affinity changes and removal do); a new vCPU goes to
  the run-queue with the fewest assigned vCPUs and its pCPUs in turn
  (``pick_bias``) instead of csched2_cpu_pick's load averages;
* an affinity change that leaves the vCPU's run-queue without an allowed
  pCPU moves it to the allowed run-queue with the fewest vCPUs; one that
  only excludes its current pCPU reschedules that pCPU.
"""

from iosched.simulator.xen import credit2_balance

RATELIMIT_TOLERANCE = 50        # CSCHED2_RATELIMIT_TICKLE_TOLERANCE


class PlacementMixin:
    """The run-queue and tickle half of ``credit2.Credit2``."""
    __slots__ = ()

    # -- load (for balance_load) ----------------------------------------------
    def _load_change(self, e, change, now):
        if self.balance:
            credit2_balance.update_rq_load(e.rq, now, change)
            credit2_balance.update_svc_load(e, now, 1 if change < 0 else 0)
        else:
            e.rq.load += change

    # -- run-queue membership -------------------------------------------------
    def _assign(self, e, rq):
        e.rq = rq
        rq.svc.append(e)
        if e.xw > rq.max_weight:
            rq.max_weight = e.xw
        e.proc = self._pick_proc(e, rq)
        e.residual = 0
        if self.balance:
            credit2_balance.assign_load(e, rq)

    def _deassign(self, e):
        rq = e.rq
        rq.svc.remove(e)
        rq.max_weight = max([x.xw for x in rq.svc] or [1])
        if self.balance:
            credit2_balance.deassign_load(e, rq)
        e.rq = None

    @staticmethod
    def _pick_proc(e, rq):
        """The next allowed pCPU of rq after its pick_bias (cyclic)."""
        ids = [p.id for p in rq.cpus if e.allows(p.id)] or [rq.cpus[0].id]
        later = [i for i in ids if i > rq.pick_bias]
        rq.pick_bias = later[0] if later else ids[0]
        return rq.pick_bias

    def _allowed_rq(self, e):
        """The run-queue with an allowed pCPU and the fewest vCPUs."""
        best = None
        for rq in self.rqs:
            if any(e.allows(p.id) for p in rq.cpus):
                if best is None or len(rq.svc) < len(best.svc):
                    best = rq
        return best

    def _insert(self, e):
        """runq_insert: after every waiting vCPU with credit >= e's."""
        q = e.rq.runq
        c = e.credit
        i = 0
        for x in q:
            if c > x.credit:
                break
            i += 1
        q.insert(i, e)

    def _move(self, e, trq, now):
        """migrate() for a vCPU that is not running."""
        e.migrate_to = None
        waiting = e.on_rq
        if waiting:
            if e in e.rq.runq:      # else just off its pCPU
                e.rq.runq.remove(e)
            self._load_change(e, -1, now)
        self._deassign(e)
        self._assign(e, trq)
        self.balance_moves += 1
        if waiting:
            self._load_change(e, 1, now)
            self._insert(e)
            self._tickle(e, now)

    def migrate(self, e, trq, now):
        """Move e to run-queue trq now, or once it leaves its pCPU."""
        if e.running:
            e.migrate_to = trq
            self._tickle_cpu(e.cpu, e, now)
        else:
            self._move(e, trq, now)

    # -- tickling -------------------------------------------------------------
    def _tickle_cpu(self, q, e, now):
        q.tickled = True
        e.tickled_cpu = q.id
        self.loop.at(now, self._tickle_cb, q)

    def _score(self, new, q, now):
        """tickle_score: > 0 if new may preempt q's current vCPU."""
        cur = q.curr
        rl = self.ratelimit
        if rl > RATELIMIT_TOLERANCE and (
                now - cur.run_start <= rl - RATELIMIT_TOLERANCE):
            return -1
        self._account(q, now)
        s = new.credit - cur.credit
        if new.proc != q.id:
            s -= self.resist
        return s

    def _tickle(self, new, now):
        """runq_tickle: an idle pCPU, else preempt the best-scored one."""
        rq = new.rq
        cpu = new.proc
        idle = None
        for q in rq.cpus:
            if q.curr is None and not q.tickled and new.allows(q.id):
                if q.id == cpu:
                    idle = q
                    break
                if idle is None or (idle.id < cpu < q.id):
                    idle = q
        if idle is not None:
            self._tickle_cpu(idle, new, now)
            return
        best, best_s = None, 0
        own = None
        for q in rq.cpus:
            if q.curr is not None and not q.tickled and new.allows(q.id):
                if q.id == cpu:
                    own = q
                    break
        if own is not None:
            s = self._score(new, own, now)
            if s > 0:
                self._tickle_cpu(own, new, now)
                return
        for q in rq.cpus:
            if (q is not own and q.curr is not None and not q.tickled
                    and new.allows(q.id)):
                s = self._score(new, q, now)
                if s > best_s:
                    best, best_s = q, s
        if best is not None:
            self._tickle_cpu(best, new, now)
