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
"""Run-time vCPU of the papers' workloads: a tiny guest kernel.

``IoVcpuW`` drives one vCPU under the workload protocol of
``iosched.simulator.sched_base``. It keeps three kinds of work, served in this
order whenever the vCPU runs:

1. interrupt-level items (``deliver_irq``): the guest's handling of an
   I/O response event (a ping echo, a received segment, a disk
   completion), FIFO;
2. application items (``deliver_app``): a receiving application fed by
   another vCPU of the VM (``Stream.app_vcpu``), FIFO;
3. its task (``Hog``, ``LookbusyTask``, ``SysbenchTask``, ``DdTask``), in
   chunks of ``irq_chunk_us`` when items can arrive, else whole.

A vCPU that is not on a pCPU puts a newly delivered item before its
current task chunk at once (the chunk's rest goes back to the task); a
running vCPU's work cannot be cut short under the scheduler contract, so
an item waits for the end of the running chunk or item. Task CPU time is
measured with ``sched.counters`` (live run time), so a chunk that spans a
Lookbusy period boundary is charged to the right period.

The I/O sources (``Ping``, ``Stream``) live in
``iosched.simulator.paper_workloads_net``.
"""

import array
import collections

from iosched.simulator import paper_workloads_net as net
from iosched.simulator import spec as specs
from iosched.simulator import spec_paper
from iosched.simulator import workloads

FOREVER_US = workloads.FOREVER_US
# What the vCPU is working on (``IoVcpuW.cur_kind``).
_NONE, _IRQ, _APP, _TASK = range(4)


class IoVcpuW(workloads._Base):
    __slots__ = ('irq', 'app', 'task', 'sources', 'chunk', 'cur_kind',
                 'cur', 'cur_arg', 'load_run', 'chunk_rest', 'irq_items',
                 'app_items')

    def __init__(self, ent, sched, loop, vm, rng, chunk):
        super().__init__(ent, sched, loop, vm, rng)
        self.irq = collections.deque()
        self.app = collections.deque()
        self.task = None
        self.sources = []
        self.chunk = chunk
        self.cur_kind = _NONE
        self.cur = None             # callback of the current item
        self.cur_arg = None
        self.load_run = 0           # entity run time at the last charge
        self.chunk_rest = 0         # loaded chunk not yet charged
        self.irq_items = 0
        self.app_items = 0

    def _run_us(self, now):
        return self.sched.counters(self.ent, now)[0]

    # -- life cycle -----------------------------------------------------------
    def start(self, now):
        if self.task is not None:
            self.task.start(now)
        for src in self.sources:
            src.start(now)
        if not self.ent.on_rq:
            self._load_next(now)
            if self.work_left > 0:
                self.sched.wake(self.ent, now, initial=True)

    def complete(self, now):
        kind = self.cur_kind
        if kind == _TASK:
            # The chunk is done: charge its rest, or more if the model
            # overran it (work_left < 0).
            r = self._run_us(now)
            used = r - self.load_run
            self.task.ran(now, used if used > self.chunk_rest
                          else self.chunk_rest)
            self.load_run = r
        elif kind != _NONE:
            if kind == _IRQ:
                self.irq_items += 1
            else:
                self.app_items += 1
            self.cur(self.cur_arg, now)
        self._load_next(now)

    def _load_next(self, now):
        if self.irq:
            self.work_left, self.cur, self.cur_arg = self.irq.popleft()
            self.cur_kind = _IRQ
            return
        if self.app:
            self.work_left, self.cur, self.cur_arg = self.app.popleft()
            self.cur_kind = _APP
            return
        self.cur = self.cur_arg = None
        task = self.task
        want = task.want(now) if task is not None else 0
        if want > 0:
            self.work_left = want if want < self.chunk else self.chunk
            self.chunk_rest = self.work_left
            self.cur_kind = _TASK
            self.load_run = self._run_us(now)
        else:
            self.work_left = 0
            self.cur_kind = _NONE

    # -- work arriving --------------------------------------------------------
    def deliver_irq(self, cost, callback, arg, now):
        """Interrupt-level work: ``callback(arg, now)`` after ``cost`` us.

        The caller has already called ``sched.io_event`` for the event.
        ``cost`` 0 runs the callback at once.
        """
        if cost <= 0:
            callback(arg, now)
            self.kick(now)
            return
        self.irq.append((cost, callback, arg))
        self._arrived(now)

    def deliver_app(self, cost, callback, arg, now):
        """Application work (no I/O event): served after interrupt work."""
        self.app.append((cost, callback, arg))
        self._arrived(now)

    def _arrived(self, now):
        e = self.ent
        if not e.alive:
            return
        if not e.on_rq:
            self._load_next(now)
            self.sched.wake(e, now)
        elif not e.running:
            # Not on a pCPU: pending items go before lower-level work; the
            # rest of that work (work_left is exact while not running) goes
            # back to the task or to the front of the application queue.
            kind = self.cur_kind
            if kind == _TASK:
                self.settle_task(now)
                self._load_next(now)
            elif kind == _APP and self.irq:
                self.app.appendleft((self.work_left, self.cur, self.cur_arg))
                self._load_next(now)

    def kick(self, now):
        """The task may have work now (a timer, a completion): run it."""
        e = self.ent
        if e.alive and not e.on_rq:
            self._load_next(now)
            if self.work_left > 0:
                self.sched.wake(e, now)

    def settle_task(self, now):
        """Charge the current task chunk's CPU use so far to the task.

        Off a pCPU ``work_left`` is exact; on one, the live run time from
        ``sched.counters`` says how much of the chunk has run.
        """
        if self.cur_kind != _TASK:
            return
        r = self._run_us(now)
        if self.ent.running:
            used = r - self.load_run
        else:
            used = self.chunk_rest - self.work_left
        if used > 0:
            self.task.ran(now, used)
            self.chunk_rest = max(0, self.chunk_rest - used)
        self.load_run = r

    def stats(self):
        return {'kind': 'io_vcpu', 'irq_items': self.irq_items,
                'app_items': self.app_items,
                'sources': [s.stats() for s in self.sources],
                'task': self.task.stats() if self.task is not None else None}


# -- tasks --------------------------------------------------------------------

class Hog:
    """stress-like: always wants CPU."""
    __slots__ = ('owner',)
    kind = 'cpu_hog'

    def __init__(self, owner):
        self.owner = owner

    def start(self, now):
        pass

    def want(self, now):
        return FOREVER_US

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


# -- building -----------------------------------------------------------------

def _fed_from_elsewhere(vm_spec, index):
    """True when another vCPU hands work here (Stream.app_vcpu,
    DdWriter.irq_vcpu)."""
    for wl in vm_spec.vcpus:
        parts = (wl.sources + (wl.task,) if isinstance(wl, specs.IoVcpu)
                 else (wl,))
        for p in parts:
            if ((isinstance(p, spec_paper.Stream) and p.app_vcpu == index)
                    or (isinstance(p, spec_paper.DdWriter)
                        and p.irq_vcpu == index)):
                return True
    return False


def build(wl, ent, sched, loop, vm, rng, gdisks, backend):
    """The run-time object of a paper workload spec on entity ``ent``."""
    if isinstance(wl, specs.IoVcpu):
        sources, task, chunk = wl.sources, wl.task, wl.irq_chunk_us
    elif isinstance(wl, specs.IO_SOURCES):
        sources, task, chunk = (wl,), None, specs.IoVcpu().irq_chunk_us
    else:
        sources, task, chunk = (), wl, specs.IoVcpu().irq_chunk_us
    if not (sources or isinstance(task, spec_paper.DdWriter)
            or _fed_from_elsewhere(vm.spec, ent.index)):
        chunk = FOREVER_US          # nothing can interrupt: no chunking
    w = IoVcpuW(ent, sched, loop, vm, rng, chunk)
    if isinstance(task, specs.CpuBound):
        w.task = Hog(w)
    elif isinstance(task, spec_paper.Lookbusy):
        w.task = LookbusyTask(w, task)
    elif isinstance(task, spec_paper.Sysbench):
        w.task = SysbenchTask(w, task)
    elif isinstance(task, spec_paper.DdWriter):
        w.task = DdTask(w, task, backend, gdisks[task.disk])
    for src in sources:
        if isinstance(src, spec_paper.Ping):
            w.sources.append(net.PingSource(w, src, backend))
        else:
            w.sources.append(net.StreamSource(w, src, backend))
    return w
