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
"""Run-time state of the workload that drives each vCPU.

A workload object exposes ``work_left`` (microseconds of CPU the current
work item still needs; 0 = nothing to do, the vCPU is blocked),
``start(now)`` (called once when the VM is added) and ``complete(now)``
(called by the scheduler when ``work_left`` reaches 0 on a pCPU: finish
the item, load the next one or leave ``work_left`` at 0 to block). When
new work arrives for a blocked vCPU (``not entity.on_rq``) the workload
loads it and calls ``sched.wake(entity, now)``; otherwise it queues it.

I/O response events (request arrivals, disk completions) go to
``sched.io_event(entity, now)`` (see ``iosched.simulator.sched_base``).
"""

import collections

from iosched.simulator import events
from iosched.simulator import spec as specs

FOREVER_US = 1 << 60


class _Base:
    __slots__ = ('work_left', 'ent', 'sched', 'loop', 'vm', 'rng', '_random')

    def __init__(self, ent, sched, loop, vm, rng):
        self.work_left = 0
        self.ent = ent
        self.sched = sched
        self.loop = loop
        self.vm = vm
        self.rng = rng
        self._random = rng.random       # (bound once: a draw per request)

    def start(self, now):
        pass

    def complete(self, now):
        self.work_left = 0


class IdleW(_Base):
    __slots__ = ()


class CpuBoundW(_Base):
    __slots__ = ()

    def start(self, now):
        self.work_left = FOREVER_US
        self.sched.wake(self.ent, now, initial=True)

    def complete(self, now):
        self.work_left = FOREVER_US


class _Requests(_Base):
    """Poisson request arrivals (shared by RequestResponse and Mixed)."""
    __slots__ = ('rate', 'burst', 'jitter', 'queue', 'cur_arrival',
                 '_arrive_cb')

    def __init__(self, ent, sched, loop, vm, rng, wl):
        super().__init__(ent, sched, loop, vm, rng)
        self.rate = float(wl.rate_per_s)
        self.burst = wl.burst_us
        self.jitter = wl.burst_jitter
        self.queue = collections.deque()
        self.cur_arrival = None
        self._arrive_cb = self._on_arrival

    def start(self, now):
        if self.rate > 0:
            self._schedule_arrival(now)

    def _schedule_arrival(self, now):
        gap = events.expovariate(self._random, self.rate) * 1e6 + 0.5
        if gap < FOREVER_US:            # a tiny rate may never arrive
            self.loop.at(now + int(gap), self._arrive_cb)

    def _draw_burst(self):
        j = self.jitter
        if not j:
            return self.burst
        e = events.expovariate(self._random, 1.0)
        b = int(self.burst * (1 - j + j * e) + 0.5)
        return b if b > 0 else 1

    def _on_arrival(self, _a, _b):
        e = self.ent
        if not e.alive:
            return
        now = self.loop.now
        self.sched.io_event(e, now)
        burst = self._draw_burst()
        if not e.on_rq:
            self.cur_arrival = now
            self.work_left = burst
            self.sched.wake(e, now)
        else:
            self.queue.append((now, burst))
        self._schedule_arrival(now)


class RequestResponseW(_Requests):
    __slots__ = ()

    def complete(self, now):
        self.vm.record_latency(now, now - self.cur_arrival)
        if self.queue:
            self.cur_arrival, self.work_left = self.queue.popleft()
        else:
            self.work_left = 0


class MixedW(_Requests):
    """Duty-cycle batch work plus requests (served first at boundaries)."""
    __slots__ = ('period', 'batch_add', 'batch_left', '_period_cb')

    def __init__(self, ent, sched, loop, vm, rng, wl):
        super().__init__(ent, sched, loop, vm, rng, wl)
        self.period = wl.period_us
        self.batch_add = max(1, int(wl.cpu_fraction * wl.period_us + 0.5))
        self.batch_left = 0
        self._period_cb = self._on_period

    def start(self, now):
        super().start(now)
        self.loop.at(now, self._period_cb)

    def _on_period(self, _a, _b):
        e = self.ent
        if not e.alive:
            return
        now = self.loop.now
        self.batch_left += self.batch_add
        if not e.on_rq:
            self._next_item()
            self.sched.wake(e, now)
        self.loop.at(now + self.period, self._period_cb)

    def _next_item(self):
        if self.queue:
            self.cur_arrival, self.work_left = self.queue.popleft()
        elif self.batch_left > 0:
            chunk = min(self.batch_left, specs.MIXED_CHUNK_US)
            self.batch_left -= chunk
            self.cur_arrival = None
            self.work_left = chunk
        else:
            self.work_left = 0

    def complete(self, now):
        if self.cur_arrival is not None:
            self.vm.record_latency(now, now - self.cur_arrival)
        self._next_item()


class DiskClosedLoopW(_Base):
    __slots__ = ('gdisk', 'nbytes', 'outstanding', 'cpu_per_io',
                 'write_ratio', 'pending', '_done_cb')

    def __init__(self, ent, sched, loop, vm, rng, wl, gdisk):
        super().__init__(ent, sched, loop, vm, rng)
        self.gdisk = gdisk
        self.nbytes = wl.io_bytes
        self.outstanding = wl.outstanding
        self.cpu_per_io = wl.cpu_per_io_us
        self.write_ratio = wl.write_ratio
        self.pending = 0            # completions not yet handled
        self._done_cb = self._on_done

    def start(self, now):
        for _ in range(self.outstanding):
            self._submit()

    def _submit(self):
        write = bool(self.write_ratio) and (
            self._random() < self.write_ratio)
        self.gdisk.submit(self.nbytes, write, self._done_cb)

    def _on_done(self, now):
        e = self.ent
        if not e.alive:
            return
        self.sched.io_event(e, now)
        self.pending += 1
        if not e.on_rq:
            self.work_left = self.cpu_per_io
            self.sched.wake(e, now)

    def complete(self, now):
        self.pending -= 1
        self._submit()
        self.work_left = self.cpu_per_io if self.pending else 0


class SleeperW(_Base):
    """Periodic absolute-time sleeper (see ``spec.Sleeper``)."""
    __slots__ = ('period', 'work', 'slack', 'target', '_timer_cb')

    def __init__(self, ent, sched, loop, vm, rng, wl):
        super().__init__(ent, sched, loop, vm, rng)
        self.period = wl.period_us
        self.work = wl.work_us
        slack = wl.timer_slack_us
        if slack is None:
            kernel = getattr(sched, 'kernel', None)
            slack = kernel.timer_slack_us if kernel is not None else 0
        self.slack = slack
        self.target = 0
        self._timer_cb = self._on_timer

    def start(self, now):
        self.target = now + self.period
        self._arm()

    def _arm(self):
        self.loop.at(self.target, self._timer_cb)

    def _on_timer(self, slack_done, _b):
        e = self.ent
        if not e.alive or e.on_rq:
            return
        now = self.loop.now
        # the slack is the class's when the timer expires (none for a
        # SCHED_DEADLINE task)
        if (not slack_done and self.slack
                and getattr(e, 'dl', None) is None):
            self.loop.at(now + self.slack, self._timer_cb, True)
            return
        self.work_left = self.work
        self.sched.wake(e, now)

    def complete(self, now):
        self.vm.record_latency(now, now - self.target - self.work)
        self.target += self.period
        while self.target <= now:       # overran a period: skip it
            self.target += self.period
        self.work_left = 0
        self._arm()


def build(wl, ent, sched, loop, vm, rng, gdisks):
    """The run-time object for workload spec ``wl`` on entity ``ent``."""
    if isinstance(wl, specs.CpuBound):
        return CpuBoundW(ent, sched, loop, vm, rng)
    if isinstance(wl, specs.Idle):
        return IdleW(ent, sched, loop, vm, rng)
    if isinstance(wl, specs.RequestResponse):
        return RequestResponseW(ent, sched, loop, vm, rng, wl)
    if isinstance(wl, specs.Mixed):
        return MixedW(ent, sched, loop, vm, rng, wl)
    if isinstance(wl, specs.Sleeper):
        return SleeperW(ent, sched, loop, vm, rng, wl)
    if isinstance(wl, specs.DiskClosedLoop):
        return DiskClosedLoopW(ent, sched, loop, vm, rng, wl,
                               gdisks[wl.disk])
    raise ValueError('workload %r is invalid; accepted: one of %s'
                     % (wl, ', '.join(w.__name__ for w in specs.WORKLOADS)))
