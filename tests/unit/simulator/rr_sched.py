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
"""A strict round-robin scheduler on one pCPU, for workload tests.

The smallest model of the ``iosched.simulator.sched_base`` contract that is not
EEVDF: one FIFO run-queue, a fixed quantum, no wake-up preemption (a woken
vCPU goes to the tail). It shows the paper workloads work with any model
and gives closed forms (e.g. Credit-like ping RTTs).
"""

import collections
import dataclasses

from iosched.simulator import sched_base


@dataclasses.dataclass(frozen=True)
class RoundRobinSpec:
    quantum_us: int = 30000

    def build(self, loop, host_spec):
        return RoundRobin(loop, self.quantum_us)


class RoundRobin(sched_base.Scheduler):
    name = 'rr'

    def __init__(self, loop, quantum_us):
        self.loop = loop
        self.quantum = quantum_us
        self.rq = collections.deque()
        self.curr = None
        self.last = 0               # curr accounted up to here
        self.slice_end = 0
        self.gen = 0

    def new_entity(self, eid, vm, index, weight):
        return sched_base.Entity(eid, vm, index, weight)

    def wake(self, e, now, initial=False):
        if not initial:
            e.wakeups += 1
        e.on_rq = True
        e.wait_start = now
        self.rq.append(e)
        if self.curr is None:
            self._dispatch(now)

    def _account(self, now):
        d = now - self.last
        if d > 0:
            self.curr.run_us += d
            self.curr.wl.work_left -= d
            self.last = now

    def _dispatch(self, now):
        self.curr = None
        if not self.rq:
            return
        e = self.rq.popleft()
        e.wait_us += now - e.wait_start
        e.running = True
        e.switches += 1
        e.last_cpu = 0
        self.curr = e
        self.last = now
        self.slice_end = now + self.quantum
        self._arm(now)

    def _arm(self, now):
        left = max(self.curr.wl.work_left, 0)
        self.gen += 1
        self.loop.at(min(now + left, self.slice_end), self._on_event,
                     self.gen)

    def _on_event(self, gen, _b):
        if gen != self.gen:
            return
        now = self.loop.now
        self._account(now)
        e = self.curr
        if e.wl.work_left <= 0:
            e.wl.complete(now)
            if e.wl.work_left <= 0:
                e.running = e.on_rq = False
                self._dispatch(now)
                return
        if now >= self.slice_end:
            if self.rq:
                e.running = False
                e.wait_start = now
                self.rq.append(e)
                self._dispatch(now)
                return
            self.slice_end = now + self.quantum
        self._arm(now)

    def remove(self, e, now):
        e.alive = False
        if e is self.curr:
            self._account(now)
            e.running = e.on_rq = False
            self.gen += 1
            self._dispatch(now)
        elif e.on_rq:
            self.rq.remove(e)
            e.on_rq = False

    def counters(self, e, now):
        run, wait = e.run_us, e.wait_us
        if e.running:
            run += max(0, now - self.last)
        elif e.on_rq:
            wait += now - e.wait_start
        return run, wait

    def set_weight(self, e, weight, now):
        e.weight = weight

    def set_affinity(self, e, allowed, now):
        e.allowed = allowed
