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
"""Where a vCPU runs under Credit1 (``credit``): placement and stealing.

As Xen 4.1 does it:

* work stealing (``csched_load_balance``): a pCPU whose best local choice
  is OVER or idle takes, from the other busy pCPUs in cyclic order from
  its own id, the first waiting vCPU of strictly higher priority that its
  hard affinity allows; it runs when a pCPU schedules, e.g. the idle
  pCPU a wake-up tickles (``_tickle_idle``, see ``credit``'s wake-up).

Simplifications (each one a choice):

* flat topology (no SMT siblings): Xen's ``csched_cpu_pick`` then keeps a
  vCPU on its pCPU, so running vCPUs never migrate at the tick and a
  woken vCPU joins the queue of the pCPU it last ran on; vCPUs move only
  by stealing and by affinity changes (to the next allowed pCPU id after
  the old one, as ``cycle_cpu``); ``vcpu_migration_delay`` is 0;
* a never-run vCPU starts on the allowed pCPU with the fewest vCPUs
  assigned (the toolstack's placement), lowest id on ties.
"""


class PlacementMixin:
    """The placement half of ``credit.CreditScheduler``."""
    __slots__ = ()

    # -- the assigned pCPU ---------------------------------------------------
    def _set_home(self, e, p):
        old = e.home
        if old is p:
            return
        if old is not None:
            old.nr_home -= 1
        e.home = p
        if p is not None:
            p.nr_home += 1
        self._home_changed(e, old, p)

    def _home_changed(self, e, old, new):
        """Hook: the set of vCPUs assigned to old and new changed."""

    def _allowed_ids(self, e):
        return range(len(self.cpus)) if e.allowed is None else e.allowed

    def _initial_cpu(self, e):
        return min((self.cpus[i] for i in self._allowed_ids(e)),
                   key=lambda q: (q.nr_home, q.id))

    def _next_allowed(self, e, after):
        """cycle_cpu: the first allowed pCPU id after ``after``, wrapping."""
        ids = sorted(self._allowed_ids(e))
        for i in ids:
            if i > after:
                return self.cpus[i]
        return self.cpus[ids[0]]

    # -- work stealing and idle pCPUs -----------------------------------------
    def _steal(self, p, pri):
        """csched_load_balance: a waiting vCPU of higher priority, or None."""
        n = len(self.cpus)
        for k in range(1, n):
            peer = self.cpus[(p.id + k) % n]
            if peer.curr is None:           # idle: it takes its own work
                continue
            for x in peer.runq:
                if x.pri <= pri:
                    break
                if x.allowed is None or p.id in x.allowed:
                    peer.runq.remove(x)
                    self._set_home(x, p)
                    self.n_steals += 1
                    return x
        return None

    def _tickle_idle(self, p, e, now):
        n = len(self.cpus)
        if n == 1:
            return
        start = self.last_tickle
        for k in range(1, n + 1):
            q = self.cpus[(start + k) % n]
            if q is p or q.curr is not None or not (
                    e.allowed is None or q.id in e.allowed):
                continue
            self.last_tickle = q.id
            self._schedule(q, now)
            return

    # -- affinity -------------------------------------------------------------
    def set_affinity(self, e, allowed, now):
        e.allowed = allowed
        p = e.home
        if p is None or e.allows(p.id):
            return
        dst = self._next_allowed(e, p.id)
        if not e.on_rq:
            self._set_home(e, dst)
            return
        self._settle(p, now)
        if e.running:
            self._update_curr(p, now)
            e.running = False
            e.wait_start = now
            self._descheduled(p, e, now)
            p.curr = None
            self._set_home(e, dst)
            self._schedule(p, now)
        else:
            p.runq.remove(e)
            self._set_home(e, dst)
        self._enqueue_woken(dst, e, now)
        self._tickle(dst, e, now)
