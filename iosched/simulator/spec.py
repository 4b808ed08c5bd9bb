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
"""Specifications (inputs) and counters (outputs) of the host simulator.

All are frozen dataclasses validated in ``__post_init__``: a bad field
raises ``ValueError`` naming the field, the value and what is accepted.

* ``HostSpec`` / ``DiskSpec``: the host (pCPUs, default EEVDF slice,
  context-switch cost, shared disk device, the kernel's wake-up rules:
  ``KernelSpec`` and the named ``KERNELS`` of
  ``iosched.simulator.spec_kernel``);
* ``VmSpec``: a VM, with one workload per vCPU and its guest disk names;
* workloads: ``CpuBound``, ``RequestResponse``, ``DiskClosedLoop``,
  ``Idle``, ``Mixed``, ``Sleeper`` (see each class);
* the papers' workloads: I/O sources ``Ping`` and ``Stream``, guest tasks
  ``Lookbusy``, ``Sysbench`` and ``DdWriter`` and ``BackendSpec``, the
  dom0-like backend they go through, are in
  ``iosched.simulator.spec_paper``; ``IoVcpu`` (here) puts several of them
  (plus ``CpuBound``) on one vCPU (run time:
  ``iosched.simulator.paper_workloads``);
* ``VcpuCounters`` / ``DiskCounters``: cumulative counters as a real host
  exposes them (schedstat-like, libvirt blockstats-like). Times are
  integer microseconds.
"""

import dataclasses
import typing

from iosched.simulator import checks
from iosched.simulator import spec_kernel
from iosched.simulator import spec_paper

# -- workloads ---------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class CpuBound:
    """Always runnable; the CPU time it gets is its throughput."""


@dataclasses.dataclass(frozen=True)
class Idle:
    """Never runnable."""


@dataclasses.dataclass(frozen=True)
class RequestResponse:
    """Poisson request arrivals, each needing ``burst_us`` of CPU.

    Every arrival is an I/O response event delivered to the vCPU (it wakes
    a blocked vCPU). Requests are served FIFO; latency = completion time -
    arrival time. ``burst_jitter`` in 0..1 mixes a fixed and an
    exponential burst with the same mean: burst = burst_us * (1 - j +
    j * Exp(1)); 0 = fixed, 1 = exponential.
    """
    rate_per_s: float
    burst_us: int
    burst_jitter: float = 0.0

    def __post_init__(self):
        checks.number_range('RequestResponse.rate_per_s', self.rate_per_s, 0)
        checks.int_range('RequestResponse.burst_us', self.burst_us, 1)
        checks.number_range('RequestResponse.burst_jitter',
                            self.burst_jitter, 0, 1)


@dataclasses.dataclass(frozen=True)
class DiskClosedLoop:
    """Keeps ``outstanding`` requests in flight on the VM's ``disk``.

    Each completion is an I/O response event that wakes the vCPU; handling
    it costs ``cpu_per_io_us`` of CPU, then the next request is submitted.
    ``write_ratio`` is the probability that a request is a write.
    """
    outstanding: int
    io_bytes: int = 4096
    cpu_per_io_us: int = 30
    disk: str = 'vda'
    write_ratio: float = 0.0

    def __post_init__(self):
        checks.int_range('DiskClosedLoop.outstanding', self.outstanding, 1)
        checks.int_range('DiskClosedLoop.io_bytes', self.io_bytes, 1)
        checks.int_range('DiskClosedLoop.cpu_per_io_us',
                         self.cpu_per_io_us, 1)
        checks.name('DiskClosedLoop.disk', self.disk)
        checks.number_range('DiskClosedLoop.write_ratio',
                            self.write_ratio, 0, 1)


@dataclasses.dataclass(frozen=True)
class Mixed:
    """A CPU duty cycle plus, optionally, request/response traffic.

    Every ``period_us`` a timer adds ``cpu_fraction * period_us`` of batch
    CPU work (a timer wake-up, not an I/O event; unfinished work carries
    over). Requests arrive as in ``RequestResponse`` (I/O events, latency
    recorded). The guest runs batch work in chunks of at most
    ``MIXED_CHUNK_US`` and serves queued requests first at each chunk
    boundary (a coarse model of guest-side preemption).
    """
    cpu_fraction: float
    period_us: int = 10000
    rate_per_s: float = 0.0
    burst_us: int = 100
    burst_jitter: float = 0.0

    def __post_init__(self):
        checks.number_range('Mixed.cpu_fraction', self.cpu_fraction, 0, 1,
                            lo_open=True)
        checks.int_range('Mixed.period_us', self.period_us, 100)
        checks.number_range('Mixed.rate_per_s', self.rate_per_s, 0)
        checks.int_range('Mixed.burst_us', self.burst_us, 1)
        checks.number_range('Mixed.burst_jitter', self.burst_jitter, 0, 1)


MIXED_CHUNK_US = 1000


@dataclasses.dataclass(frozen=True)
class Sleeper:
    """A periodic timer sleeper: the wake-up probe's measuring thread.

    Sleeps to absolute targets ``period_us`` apart (the first one period
    after the VM starts), then runs ``work_us`` of CPU. Its timer fires
    ``timer_slack_us`` after the target (None: the host kernel's default
    slack of a fair task, ``KernelSpec.timer_slack_us``; a vCPU under
    SCHED_DEADLINE has none). Targets already past when the work ends are
    skipped (as ``iosched.host_agent.linux.wakeup_sleeper`` does). Lateness =
    end of the work - target - ``work_us`` (the start's lateness when the work
    was not preempted), in ``SimHost.request_latencies_us``. Timer
    wake-ups are not I/O events.
    """
    period_us: int = 3000
    work_us: int = 50
    timer_slack_us: typing.Optional[int] = None

    def __post_init__(self):
        checks.int_range('Sleeper.period_us', self.period_us, 10)
        checks.int_range('Sleeper.work_us', self.work_us, 1)
        if self.timer_slack_us is not None:
            checks.int_range('Sleeper.timer_slack_us', self.timer_slack_us,
                             0, 100000)


# -- several of the papers' workloads on one vCPU ----------------------------

IO_SOURCES = (spec_paper.Ping, spec_paper.Stream)
TASKS = (CpuBound, spec_paper.Lookbusy, spec_paper.Sysbench,
         spec_paper.DdWriter)


@dataclasses.dataclass(frozen=True)
class IoVcpu:
    """Several I/O sources plus an optional task on one vCPU.

    ``sources``: ``Ping`` / ``Stream`` specs whose events all go to this
    vCPU; ``task``: None or one of ``CpuBound`` (stress), ``Lookbusy``,
    ``Sysbench``, ``DdWriter``. Pending I/O items are served first (guest
    IRQ/softirq priority): when the vCPU is not on a pCPU they go before
    the task's current work; while it runs the task, the task works in
    chunks of ``irq_chunk_us`` and pending I/O is served at the next
    chunk boundary (a running vCPU's work cannot be cut short under the
    scheduler contract).
    """
    sources: tuple = ()
    task: typing.Any = None
    irq_chunk_us: int = 100

    def __post_init__(self):
        if isinstance(self.sources, (str, bytes)) or not hasattr(
                self.sources, '__iter__'):
            raise ValueError('IoVcpu.sources: %r is invalid; accepted: a '
                             'tuple of Ping/Stream' % (self.sources,))
        object.__setattr__(self, 'sources', tuple(self.sources))
        for i, src in enumerate(self.sources):
            if not isinstance(src, IO_SOURCES):
                raise ValueError(
                    'IoVcpu.sources[%d]: %r is invalid; accepted: one of %s'
                    % (i, src, ', '.join(c.__name__ for c in IO_SOURCES)))
        if self.task is not None and not isinstance(self.task, TASKS):
            raise ValueError('IoVcpu.task: %r is invalid; accepted: None or '
                             'one of %s' % (self.task, ', '.join(
                                 c.__name__ for c in TASKS)))
        checks.int_range('IoVcpu.irq_chunk_us', self.irq_chunk_us, 1)


PAPER_WORKLOADS = (spec_paper.Ping, spec_paper.Stream, spec_paper.Lookbusy,
                   spec_paper.Sysbench, spec_paper.DdWriter, IoVcpu)
WORKLOADS = (CpuBound, Idle, RequestResponse, DiskClosedLoop,
             Mixed, Sleeper) + PAPER_WORKLOADS


# -- host and VM -------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class DiskSpec:
    """The host's shared disk device.

    Up to ``parallelism`` requests are in service at once; the rest wait
    FIFO. A request of b bytes has mean service time ``service_us +
    b * per_byte_ns / 1000``; ``service_dist`` 'exp' draws it from an
    exponential distribution with that mean (seeded), 'fixed' uses it
    as is.
    """
    service_us: int = 100
    parallelism: int = 8
    per_byte_ns: float = 0.0
    service_dist: str = 'exp'

    def __post_init__(self):
        checks.int_range('DiskSpec.service_us', self.service_us, 1)
        checks.int_range('DiskSpec.parallelism', self.parallelism, 1)
        checks.number_range('DiskSpec.per_byte_ns', self.per_byte_ns, 0)
        checks.choice('DiskSpec.service_dist', self.service_dist,
                      spec_paper.SERVICE_DISTS)


@dataclasses.dataclass(frozen=True)
class HostSpec:
    """One virtualized host.

    ``pcpus`` guest-usable pCPUs (ids 0..pcpus-1); ``default_slice_us`` the
    EEVDF slice of a vCPU without a custom slice; ``switch_cost_us`` time
    lost on each context switch; ``balance_us`` period of the periodic
    load balance (0 = only idle balance). ``scheduler`` None is the Linux
    EEVDF model (``iosched.simulator.cpu``, using the three fields above);
    else a scheduler spec with a ``build(loop, host_spec)`` method, e.g. the
    Xen models of ``iosched.simulator.xen``. ``backend`` the dom0-like
    backend of the papers' workloads (``spec_paper.BackendSpec``, unused by
    the others). ``kernel`` how the Linux kernel treats slice ends and
    wake-ups (``iosched.simulator.spec_kernel``: ``KernelSpec()`` is the
    historical 6.12/HRTICK model, ``kernel('linux-6.18-hz250')`` the one
    calibrated on a real 6.18 host); only the EEVDF model reads it, except
    ``dl_bw_limit``.
    """
    name: str
    pcpus: int
    default_slice_us: int = 3000
    switch_cost_us: int = 2
    disk: DiskSpec = dataclasses.field(default_factory=DiskSpec)
    balance_us: int = 4000
    scheduler: typing.Any = None
    backend: spec_paper.BackendSpec = dataclasses.field(
        default_factory=spec_paper.BackendSpec)
    kernel: spec_kernel.KernelSpec = dataclasses.field(
        default_factory=spec_kernel.KernelSpec)

    def __post_init__(self):
        checks.name('HostSpec.name', self.name)
        checks.int_range('HostSpec.pcpus', self.pcpus, 1, 4096)
        checks.slice_us(self.default_slice_us, 'HostSpec.default_slice_us')
        checks.int_range('HostSpec.switch_cost_us', self.switch_cost_us,
                         0, 10000)
        if not isinstance(self.disk, DiskSpec):
            raise ValueError('HostSpec.disk: %r is invalid; accepted: a '
                             'DiskSpec' % (self.disk,))
        checks.int_range('HostSpec.balance_us', self.balance_us, 0)
        if self.scheduler is not None and not callable(
                getattr(self.scheduler, 'build', None)):
            raise ValueError('HostSpec.scheduler: %r is invalid; accepted: '
                             'None (Linux EEVDF) or a scheduler spec such as '
                             'iosched.simulator.xen.Credit2Spec()'
                             % (self.scheduler,))
        if not isinstance(self.backend, spec_paper.BackendSpec):
            raise ValueError('HostSpec.backend: %r is invalid; accepted: a '
                             'BackendSpec' % (self.backend,))
        if not isinstance(self.kernel, spec_kernel.KernelSpec):
            raise ValueError('HostSpec.kernel: %r is invalid; accepted: a '
                             'KernelSpec, e.g. spec_kernel.kernel(%r)'
                             % (self.kernel, 'linux-6.18-hz250'))


@dataclasses.dataclass(frozen=True)
class VmSpec:
    """A VM: ``vcpus`` is one workload per vCPU, ``disks`` its guest disk
    names (e.g. ('vda', 'vdb')).
    """
    uuid: str
    name: str
    vcpus: tuple = (CpuBound(),)
    disks: tuple = ('vda',)

    def __post_init__(self):
        checks.name('VmSpec.uuid', self.uuid)
        checks.name('VmSpec.name', self.name)
        for field in ('vcpus', 'disks'):
            value = getattr(self, field)
            if isinstance(value, (str, bytes)) or not hasattr(
                    value, '__iter__'):
                raise ValueError('VmSpec.%s: %r is invalid; accepted: a '
                                 'tuple' % (field, value))
            object.__setattr__(self, field, tuple(value))
        if not self.vcpus:
            raise ValueError('VmSpec.vcpus: () is invalid; accepted: a '
                             'non-empty tuple of workloads')
        for i, wl in enumerate(self.vcpus):
            if not isinstance(wl, WORKLOADS):
                raise ValueError(
                    'VmSpec.vcpus[%d]: %r is invalid; accepted: one of %s'
                    % (i, wl, ', '.join(w.__name__ for w in WORKLOADS)))
        for i, disk in enumerate(self.disks):
            checks.name('VmSpec.disks[%d]' % i, disk)
        if len(set(self.disks)) != len(self.disks):
            raise ValueError('VmSpec.disks: %r is invalid; accepted: '
                             'unique names' % (self.disks,))
        for i, wl in enumerate(self.vcpus):
            if isinstance(wl, DiskClosedLoop) and wl.disk not in self.disks:
                raise ValueError(
                    'VmSpec.vcpus[%d].disk: %r is not a disk of the VM; '
                    'accepted: one of %r' % (i, wl.disk, self.disks))
            self._check_paper_workload(i, wl)

    def _check_paper_workload(self, i, wl):
        """Cross-field checks of a paper workload (disk, app vCPU)."""
        field = 'VmSpec.vcpus[%d]' % i
        if isinstance(wl, IoVcpu):
            parts = [('%s.sources[%d]' % (field, j), s)
                     for j, s in enumerate(wl.sources)]
            parts.append(('%s.task' % field, wl.task))
        else:
            parts = [(field, wl)]
        for name, part in parts:
            if (isinstance(part, spec_paper.DdWriter)
                    and part.disk not in self.disks):
                raise ValueError(
                    '%s.disk: %r is not a disk of the VM; accepted: one of '
                    '%r' % (name, part.disk, self.disks))
            link = None
            if isinstance(part, spec_paper.Stream):
                link = 'app_vcpu'
            elif isinstance(part, spec_paper.DdWriter):
                link = 'irq_vcpu'
            if link is not None and getattr(part, link) is not None:
                self._check_link('%s.%s' % (name, link),
                                 getattr(part, link), i)

    def _check_link(self, field, other, i):
        """vCPU ``other`` must be another vCPU running a paper workload."""
        if other == i or other >= len(self.vcpus):
            raise ValueError(
                '%s: %r is invalid; accepted: the index of another vCPU of '
                'the VM (0..%d, not %d)'
                % (field, other, len(self.vcpus) - 1, i))
        if not isinstance(self.vcpus[other], PAPER_WORKLOADS):
            raise ValueError(
                '%s: vCPU %d runs %r; accepted: a vCPU whose workload is '
                'IoVcpu (e.g. IoVcpu()) or another paper workload'
                % (field, other, self.vcpus[other]))


# -- counters ----------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class VcpuCounters:
    """Cumulative counters of one vCPU (never reset).

    ``run_us``: time on a pCPU (schedstat field 1); ``wait_us``: runnable
    but not running (schedstat field 2); ``wakeups``: blocked -> runnable
    transitions; ``switches``: times it was put on a pCPU (schedstat
    field 3); ``pcpu``: the pCPU it last ran on (None: never ran).
    """
    run_us: int
    wait_us: int
    wakeups: int
    switches: int
    pcpu: typing.Optional[int] = None


@dataclasses.dataclass(frozen=True)
class DiskCounters:
    """Cumulative counters of one guest disk, counted at completion."""
    rd_reqs: int
    wr_reqs: int
    rd_bytes: int
    wr_bytes: int
    total_time_us: int       # sum of request latencies (incl. throttle)
    # Cumulative latency histogram (counts per bucket, the last above the
    # last bound) once set_disk_latency_histogram was called, else None.
    latency_hist: typing.Optional[tuple] = None
