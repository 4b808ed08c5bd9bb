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
"""Credit1's priorities and its credit accounting (tick, ``csched_acct``).

A vCPU's priority follows its credit, as Xen 4.1 sets it:

* credits are burnt by exact run time; a per-pCPU tick every ``tick_us``
  (10 ms) burns the running vCPU's credit, demotes it from BOOST to UNDER
  (it is consuming CPU) and puts it on the active list if it was not;
* accounting every ``acct_us`` (30 ms, ``csched_acct``): the credit of
  one period on every pCPU (acct_us x pCPUs) is shared among the active
  vCPUs by weight, with Xen's peak/extra redistribution and its
  negative-balance catch-up; a vCPU's credit is bounded below by minus one
  slice; a vCPU above one slice leaves the active list (stops earning) and
  its credit is halved; priority becomes UNDER (credit >= 0) or OVER; the
  run-queues are then re-sorted (UNDER and BOOST ahead of OVER, order
  kept);
* a woken UNDER vCPU becomes BOOST (``credit``'s wake-up) until its next
  tick.

Simplifications (each one a choice):

* credits are microseconds of CPU (Xen: 10 credits per ms, burnt with
  0.1 ms rounding); one accounting unit per vCPU with the vCPU's own
  weight (Xen: per domain, split evenly among its active vCPUs: the same
  when all vCPUs of a VM have the same weight);
* the ticks of all pCPUs are aligned; at an instant with both a tick and
  accounting the ticks run first, and the queues are re-sorted right after
  the accounting (Xen sorts at each pCPU's next tick: the same instant
  with aligned ticks).

Subclasses (``vturbo``) replace the accounting (``_acct``).
"""

BOOST, UNDER, OVER, IDLE = 0, -1, -2, -64
PRI_NAMES = {BOOST: 'boost', UNDER: 'under', OVER: 'over', IDLE: 'idle'}


class AccountingMixin:
    """The tick and the accounting of ``credit.CreditScheduler``."""
    __slots__ = ()

    def _on_timer(self, _a, _b):
        now = self.loop.now
        if now >= self.next_tick:
            self._tick(now)
            self.next_tick += self.tick_us
        if now >= self.next_acct:
            self._settle_all(now)
            self._acct(now)
            for p in self.cpus:
                self._sort_runq(p)
            self.next_acct += self.acct_us
        self.loop.at(min(self.next_tick, self.next_acct), self._on_timer)

    def _settle_all(self, now):
        for p in self.cpus:
            self._settle(p, now)

    def _tick(self, now):
        """csched_tick / csched_vcpu_acct on every pCPU."""
        for p in self.cpus:
            self._settle(p, now)
            e = p.curr
            if e is None:
                continue
            if e.pri == BOOST:
                e.pri = UNDER
            if not e.active:
                self._acct_start(e)

    def _acct_start(self, e):
        e.active = True
        self.active.insert(0, e)
        self.weight_total += e.weight

    def _acct_stop(self, e):
        e.active = False
        self.active.remove(e)
        self.weight_total -= e.weight

    def _acct(self, now):
        """csched_acct: share acct_us x pCPUs of credit among active vCPUs."""
        self.n_acct += 1
        wt = self.weight_total
        total = self.acct_us * len(self.cpus)
        balance = self.credit_balance
        if balance < 0:
            total -= balance
        if wt == 0:
            self.credit_balance = 0
            return
        w_left = wt
        xtra = False
        new_balance = 0
        tslice = self.tslice
        for e in list(self.active):
            w = e.weight
            w_left -= w
            # At most one period of credit, more only while the system-wide
            # balance is negative (catch-up); ceil divisions as in Xen.
            peak = self.acct_us
            if balance < 0:
                peak += (-balance * w + wt - 1) // wt
            fair = (total * w + wt - 1) // wt
            if fair < peak:
                xtra = True
            else:
                if w_left:
                    # Give the others a chance at the unused credit.
                    total += ((fair - peak) * wt + w_left - 1) // w_left
                if xtra:
                    self.active.remove(e)
                    self.active.insert(0, e)
                fair = peak
            e.credit += fair
            c = e.credit
            if c < 0:
                e.pri = OVER
                if c < -tslice:
                    c = e.credit = -tslice
            else:
                e.pri = UNDER
                if c > tslice:
                    # Stops earning; halved, so it restarts a little ahead.
                    self._acct_stop(e)
                    c = e.credit = c // 2
            new_balance += c
        self.credit_balance = new_balance
