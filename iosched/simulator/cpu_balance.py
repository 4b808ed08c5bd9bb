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
"""Load balancing and migration for ``iosched.simulator.cpu.Scheduler``.

* idle balance: a pCPU going idle pulls the longest-waiting entity it is
  allowed to run from the busiest run-queue (most runnable entities,
  lowest id on ties);
* periodic balance every ``balance_us``: one waiting entity moves from the
  busiest run-queue to the least busy one when their runnable counts
  differ by 2 or more (deterministic: ties go to the lowest pCPU id);
* migration keeps the entity's lag (clamped as update_entity_lag, scaled
  for the destination load as place_entity does) and its deadline
  relative to its vruntime (PLACE_REL_DEADLINE), and keeps counting its
  wait time;
* affinity changes migrate a queued or running entity at once when its
  pCPU is no longer allowed.
"""

from iosched.simulator import cpu_wakeup
from iosched.simulator import eevdf


class BalanceMixin(cpu_wakeup.WakeupMixin):
    __slots__ = ()

    # -- balancing ------------------------------------------------------------
    def _migrate_waiting(self, src, x, dst, now):
        """Move waiting x from src to dst keeping lag and rel. deadline."""
        for q in (src, dst):
            if q.curr is not None:
                self._update_curr(q, now)
        lag = eevdf.entity_lag(x, src.avg_v(), self.lag_tick_us)
        rel_deadline = x.deadline - x.v
        src.dequeue(x)
        w = dst.totals()[0]
        v_dst = dst.avg_v()
        if w:
            lag = lag * (w + x.lw) // w
        x.v = v_dst - lag
        x.deadline = x.v + rel_deadline
        dst.enqueue(x)
        x.cpu = dst

    @staticmethod
    def _longest_waiting(q, cpu_id):
        best = None
        for x in q.queue:
            if x.allowed is None or cpu_id in x.allowed:
                if best is None or (x.wait_start, x.id) < (best.wait_start,
                                                           best.id):
                    best = x
        return best

    def _idle_pull(self, p, now):
        # Sources must be settled: accounting a curr whose event is due at
        # this same time, without running that event, would leave it
        # running with no work. Settling cannot queue anything on idle p.
        self.settle_all(now)
        src, x, best_nr = None, None, 0
        for q in self.cpus:
            if q is p or not q.queue:
                continue
            nr = q.nr_running
            if nr > best_nr:
                cand = self._longest_waiting(q, p.id)
                if cand is not None:
                    src, x, best_nr = q, cand, nr
        if x is not None:
            self._migrate_waiting(src, x, p, now)
            self._set_next(p, x, now)

    def _on_balance(self, _a, _b):
        now = self.loop.now
        self.loop.at(now + self.balance_us, self._on_balance)
        if not self.nr_waiting:
            return
        self.settle_all(now)            # a due event may pull or block
        busiest = max(self.cpus, key=lambda q: (len(q.queue) > 0,
                                                q.nr_running, -q.id))
        for dst in sorted(self.cpus, key=lambda q: (q.nr_running, q.id)):
            if busiest.nr_running - dst.nr_running < 2:
                break
            x = self._longest_waiting(busiest, dst.id)
            if x is not None:
                self._migrate_waiting(busiest, x, dst, now)
                self._after_arrival(dst, x, now)
                break

    def _after_arrival(self, dst, x, now):
        if dst.curr is None:
            if dst.dl_curr is None:
                self._dispatch(dst, now)
        else:
            self._update_curr(dst, now)
            self._check_preempt(dst, x, now)

    def set_affinity(self, e, allowed, now):
        e.allowed = allowed
        if not e.on_rq or e.cpu is None:    # blocked, deadline, throttled
            return
        self.settle_all(now)
        p = e.cpu
        if not e.on_rq or e.allows(p.id):
            return
        if e.running:
            self._update_curr(p, now)
        dst = self.select_cpu(e)
        if e.running:
            e.running = False
            p.curr = None
            p.gen += 1
            self._enqueue_waiting(p, e, now)
            self._migrate_waiting(p, e, dst, now)
            self._dispatch(p, now)
        else:
            self._migrate_waiting(p, e, dst, now)
        if e.cpu is dst and not e.running:
            self._after_arrival(dst, e, now)
