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
3. its task (``Hog``, ``LookbusyTask``, ``SysbenchTask``, ``DdTask``, in
   ``iosched.simulator.paper_tasks``), in chunks of ``irq_chunk_us`` when
   items can arrive, else whole.

A vCPU that is not on a pCPU puts a newly delivered item before its
current task chunk at once (the chunk's rest goes back to the task); a
running vCPU's work cannot be cut short under the scheduler contract, so
an item waits for the end of the running chunk or item. Task CPU time is
measured with ``sched.counters`` (live run time), so a chunk that spans a
Lookbusy period boundary is charged to the right period.

The I/O sources (``Ping``, ``Stream``) live in
``iosched.simulator.paper_workloads_net``.
"""

import collections

from iosched.simulator import paper_tasks
from iosched.simulator import paper_workloads_net as net
from iosched.simulator import spec as specs
from iosched.simulator import spec_paper
from iosched.simulator import workloads

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


# -- building -----------------------------------------------------------------

def _fed_from_elsewhere(vm_spec, index):
    """True when another vCPU hands work here (Stream.app_vcpu,
    DdWriter.irq_vcpu).
    """
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
        chunk = workloads.FOREVER_US    # nothing can interrupt: no chunking
    w = IoVcpuW(ent, sched, loop, vm, rng, chunk)
    if isinstance(task, specs.CpuBound):
        w.task = paper_tasks.Hog(w)
    elif isinstance(task, spec_paper.Lookbusy):
        w.task = paper_tasks.LookbusyTask(w, task)
    elif isinstance(task, spec_paper.Sysbench):
        w.task = paper_tasks.SysbenchTask(w, task)
    elif isinstance(task, spec_paper.DdWriter):
        w.task = paper_tasks.DdTask(w, task, backend, gdisks[task.disk])
    for src in sources:
        if isinstance(src, spec_paper.Ping):
            w.sources.append(net.PingSource(w, src, backend))
        else:
            w.sources.append(net.StreamSource(w, src, backend))
    return w
