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
"""The guest tasks of the papers' workloads, run by an ``IoVcpuW``.

A task is what a vCPU of ``iosched.simulator.paper_workloads`` runs when it
has no interrupt-level or application item to serve: ``Hog`` (stress:
always wants CPU), ``LookbusyTask`` (a budget per period, no carry-over),
``SysbenchTask`` (fixed work per run, wall time of each run recorded) and
``DdTask`` (produce write requests, keep up to N in flight through the
backend and the disk). The owner asks ``want(now)`` for the next chunk and
reports the CPU it used with ``ran(now, us)``; ``stats()`` is what
``SimHost`` reports. Their specifications: ``iosched.simulator.spec_paper``.
"""

import array

from iosched.simulator import workloads


class Hog:
    """stress-like: always wants CPU."""
    __slots__ = ('owner',)
    kind = 'cpu_hog'

    def __init__(self, owner):
        self.owner = owner

    def start(self, now):
        pass

    def want(self, now):
        return workloads.FOREVER_US

    def ran(self, now, us):
        pass

    def stats(self):
        return {'kind': self.kind}


class LookbusyTask:
    """fraction * period of CPU per period, no carry-over (see Lookbusy)."""
    __slots__ = ('owner', 'period', 'budget', 'left', 'periods', 'used_us',
                 '_tick_cb')
    kind = 'lookbusy'

    def __init__(self, owner, wl):
        self.owner = owner
        self.period = wl.period_us
        self.budget = max(1, int(wl.fraction * wl.period_us + 0.5))
        self.left = 0
        self.periods = 0
        self.used_us = 0
        self._tick_cb = self._on_period

    def start(self, now):
        # Random phase: the first period ends at a uniform time in
        # (0, period]; its budget is the fraction of that first part.
        first = self.owner.rng.randrange(1, self.period + 1)
        self.left = max(1, self.budget * first // self.period)
        self.owner.loop.at(now + first, self._tick_cb)

    def want(self, now):
        return self.left if self.left > 0 else 0

    def ran(self, now, us):
        self.left -= us
        self.used_us += us

    def _on_period(self, _a, _b):
        owner = self.owner
        if not owner.ent.alive:
            return
        now = owner.loop.now
        owner.settle_task(now)
        self.periods += 1
        self.left = self.budget
        owner.kick(now)
        owner.loop.at(now + self.period, self._tick_cb)

    def stats(self):
        return {'kind': self.kind, 'periods': self.periods,
                'used_us': self.used_us}


class SysbenchTask:
    """work_us of CPU per run, back to back; records each run's wall time."""
    __slots__ = ('owner', 'work', 'runs', 'left', 't_start', 'run_t',
                 'run_v')
    kind = 'sysbench'

    def __init__(self, owner, wl):
        self.owner = owner
        self.work = wl.work_us
        self.runs = wl.runs
        self.left = wl.work_us
        self.t_start = 0
        self.run_t = array.array('q')     # completion times
        self.run_v = array.array('q')     # wall time of each run

    def start(self, now):
        self.t_start = now

    def want(self, now):
        return self.left if self.left > 0 else 0

    def ran(self, now, us):
        if self.left <= 0:
            return
        self.left -= us
        if self.left <= 0:
            self.run_t.append(now)
            self.run_v.append(now - self.t_start)
            if not self.runs or len(self.run_v) < self.runs:
                self.left = self.work
                self.t_start = now

    def stats(self):
        return {'kind': self.kind, 'run_times_us': list(self.run_v),
                'run_ends_us': list(self.run_t)}


class DdTask:
    """Produce requests (CPU), keep up to N in flight (see DdWriter)."""
    __slots__ = ('owner', 'backend', 'gdisk', 'nbytes', 'cpu', 'limit',
                 'irq_us', 'irq_index', 'irq_owner', 'left', 'inflight',
                 'held', 'submitted',
                 'completed', 'bytes_done', '_to_disk_cb', '_disk_done_cb',
                 '_resp_cb', '_irq_done_cb')
    kind = 'dd'

    def __init__(self, owner, wl, backend, gdisk):
        self.owner = owner
        self.backend = backend
        self.gdisk = gdisk
        self.nbytes = wl.request_bytes
        # CPU per request: blocks per request * cpu per block, rounded.
        self.cpu = max(1, int(wl.cpu_per_block_us * wl.request_bytes
                              / wl.block_bytes + 0.5))
        self.limit = wl.outstanding
        self.irq_us = wl.irq_us
        self.irq_index = wl.irq_vcpu
        self.irq_owner = owner
        self.left = self.cpu
        self.inflight = 0
        self.held = False           # a produced request waits for a slot
        self.submitted = 0
        self.completed = 0
        self.bytes_done = 0
        self._to_disk_cb = self._to_disk
        self._disk_done_cb = self._disk_done
        self._resp_cb = self._response
        self._irq_done_cb = self._completion_handled

    def start(self, now):
        if self.irq_index is not None:
            self.irq_owner = self.owner.vm.ents[self.irq_index].wl

    def want(self, now):
        return 0 if self.held else self.left

    def ran(self, now, us):
        self.left -= us
        if self.left <= 0 and not self.held:
            if self.inflight < self.limit:
                self._submit()
                self.left = self.cpu
            else:
                self.held = True

    def _submit(self):
        self.inflight += 1
        self.submitted += 1
        self.backend.submit(self.nbytes, self._to_disk_cb, None)

    def _to_disk(self, _arg, now):
        if self.owner.ent.alive:
            self.gdisk.submit(self.nbytes, True, self._disk_done_cb)

    def _disk_done(self, now):
        self.backend.submit(0, self._resp_cb, None)

    def _response(self, _arg, now):
        target = self.irq_owner
        if not (target.ent.alive and self.owner.ent.alive):
            return
        target.sched.io_event(target.ent, now)
        target.deliver_irq(self.irq_us, self._irq_done_cb, None, now)

    def _completion_handled(self, _arg, now):
        self.inflight -= 1
        self.completed += 1
        self.bytes_done += self.nbytes
        if self.held:
            self.held = False
            self._submit()
            self.left = self.cpu
            self.owner.kick(now)        # no-op unless the writer sleeps

    def stats(self):
        return {'kind': self.kind, 'submitted': self.submitted,
                'completed': self.completed, 'bytes_done': self.bytes_done,
                'inflight': self.inflight}
