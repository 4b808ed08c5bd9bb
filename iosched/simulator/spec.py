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
  ``KernelSpec`` and the named ``KERNELS`` of ``iosched.simulator.spec_kernel``);
* ``VmSpec``: a VM, with one workload per vCPU and its guest disk names;
* workloads: ``CpuBound``, ``RequestResponse``, ``DiskClosedLoop``,
  ``Idle``, ``Mixed``, ``Sleeper`` (see each class);
* the papers' workloads (``iosched.simulator.paper_workloads``): I/O sources
  ``Ping`` and ``Stream``, guest tasks ``Lookbusy``, ``Sysbench`` and
  ``DdWriter`` (plus ``CpuBound``), and ``IoVcpu`` to put several of them
  on one vCPU; ``BackendSpec`` the dom0-like backend they go through;
* ``VcpuCounters`` / ``DiskCounters``: cumulative counters as a real host
  exposes them (schedstat-like, libvirt blockstats-like). Times are
  integer microseconds.
"""

import dataclasses
import typing

from iosched.simulator import checks
from iosched.simulator import spec_kernel

KernelSpec = spec_kernel.KernelSpec
KERNELS = spec_kernel.KERNELS
kernel = spec_kernel.kernel
base_slice_us = spec_kernel.base_slice_us


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
    skipped (as ``host_agent.linux.wakeup_sleeper`` does). Lateness = end
    of the work - target - ``work_us`` (the start's lateness when the work
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


# -- the papers' workloads (runtime: iosched.simulator.paper_workloads) --------------
#
# An external client (own pCPU, modelled as a fixed round-trip ``wire_us``,
# split half on the way in, half on the way out) talks to a guest vCPU
# through the host's backend (``BackendSpec``, dom0's netback/blkback).
# Every item the backend hands to a guest is an I/O response event for that
# vCPU (``sched.io_event``) and costs guest CPU at interrupt level: the
# vCPU serves its pending I/O items before its task (``IoVcpu``).

PING_MODES = ('fixed', 'poisson')
STREAM_MODES = ('tcp', 'udp')
ACK_AT = ('irq', 'app')


def _choice(field, value, accepted):
    if value not in accepted:
        raise ValueError('%s: %r is invalid; accepted: %s'
                         % (field, value, ', '.join(accepted)))


@dataclasses.dataclass(frozen=True)
class Ping:
    """ICMP-echo-like request/response from an external client.

    ``mode`` 'fixed': one echo every ``interval_us`` from a random phase
    (the first at a uniform time in [0, interval)), each gap stretched by a
    uniform factor in [1 - jitter, 1 + jitter]; 'poisson': exponential gaps
    of mean ``interval_us``. ``count`` echoes (0 = no limit). Path: client
    -> wire_us/2 -> backend -> guest (``burst_us`` of CPU at interrupt
    level) -> backend -> wire_us/2 -> client; RTT recorded at the client
    (also in ``SimHost.request_latencies_us``).
    """
    interval_us: int
    burst_us: int = 20
    wire_us: int = 100
    mode: str = 'fixed'
    jitter: float = 0.0
    count: int = 0
    nbytes: int = 64

    def __post_init__(self):
        checks.int_range('Ping.interval_us', self.interval_us, 1)
        checks.int_range('Ping.burst_us', self.burst_us, 1)
        checks.int_range('Ping.wire_us', self.wire_us, 0)
        _choice('Ping.mode', self.mode, PING_MODES)
        checks.number_range('Ping.jitter', self.jitter, 0, 1)
        checks.int_range('Ping.count', self.count, 0)
        checks.int_range('Ping.nbytes', self.nbytes, 0)


@dataclasses.dataclass(frozen=True)
class Stream:
    """iperf-like stream from an external sender into a bounded ring.

    The sender emits ``segment_bytes`` segments at most at
    ``rate_bytes_per_s``; each crosses wire_us/2 and the backend, then takes
    one of ``ring_slots`` ring slots (Xen netfront ring / virtio queue)
    until the guest has processed it (``cpu_per_segment_us`` of CPU at
    interrupt level); the bytes then count as received.

    ``mode`` 'tcp': at most ``window`` segments in flight; each processed
    segment sends an ACK back through the backend and wire_us/2, which
    lets the sender send the next one (ACK-clocked); a segment that finds
    the ring full waits in the backend for a slot. 'udp': open loop at the
    link rate; a segment that finds the ring full is dropped (counted).

    ``app_vcpu`` (None = no application stage): index of another vCPU of
    the VM that runs the receiving application; each segment processed at
    interrupt level goes into a socket buffer of ``sockbuf_segments``
    (UDP: dropped when full; TCP: the window bounds it) and the
    application's vCPU copies it out at ``app_cpu_per_segment_us``; the
    bytes count as received then. ``ack_at`` 'irq' sends the TCP ACK at
    interrupt level (vTurbo's early ACK from the backlog), 'app' only once
    the application consumed the segment.
    """
    rate_bytes_per_s: float = 125e6
    segment_bytes: int = 65536
    ring_slots: int = 16
    mode: str = 'tcp'
    window: int = 16
    cpu_per_segment_us: int = 20
    wire_us: int = 100
    app_vcpu: typing.Optional[int] = None
    app_cpu_per_segment_us: int = 10
    sockbuf_segments: int = 64
    ack_at: str = 'irq'

    def __post_init__(self):
        checks.number_range('Stream.rate_bytes_per_s', self.rate_bytes_per_s,
                            0, lo_open=True)
        checks.int_range('Stream.segment_bytes', self.segment_bytes, 1)
        checks.int_range('Stream.ring_slots', self.ring_slots, 1)
        _choice('Stream.mode', self.mode, STREAM_MODES)
        checks.int_range('Stream.window', self.window, 1)
        checks.int_range('Stream.cpu_per_segment_us',
                         self.cpu_per_segment_us, 1)
        checks.int_range('Stream.wire_us', self.wire_us, 0)
        if self.app_vcpu is not None:
            checks.int_range('Stream.app_vcpu', self.app_vcpu, 0)
        checks.int_range('Stream.app_cpu_per_segment_us',
                         self.app_cpu_per_segment_us, 1)
        checks.int_range('Stream.sockbuf_segments', self.sockbuf_segments, 1)
        _choice('Stream.ack_at', self.ack_at, ACK_AT)


@dataclasses.dataclass(frozen=True)
class Lookbusy:
    """lookbusy-like duty cycle: ``fraction`` of every ``period_us``.

    At each period start the task becomes runnable with a budget of
    fraction * period_us of CPU; it runs until the budget is used or the
    period ends (no carry-over), then sleeps to the next period start (a
    timer wake-up, not an I/O event). *Default period 100 ms*: longer than
    Xen's 30 ms credit slice, so a loaded VM stays runnable across whole
    slices as a spin-then-sleep loop does; with 4 such VMs at 40 % on one
    pCPU every VM is runnable almost all the time, which is what the
    vSlicer ping figures (35 ms mean RTT under credit) imply.
    """
    fraction: float
    period_us: int = 100000

    def __post_init__(self):
        checks.number_range('Lookbusy.fraction', self.fraction, 0, 1,
                            lo_open=True)
        checks.int_range('Lookbusy.period_us', self.period_us, 100)


@dataclasses.dataclass(frozen=True)
class Sysbench:
    """sysbench-cpu-like fixed work: ``work_us`` of CPU per run.

    Runs back to back; each run's wall time (start to completion) is
    recorded; stops after ``runs`` runs (0 = no limit).
    """
    work_us: int
    runs: int = 0

    def __post_init__(self):
        checks.int_range('Sysbench.work_us', self.work_us, 1)
        checks.int_range('Sysbench.runs', self.runs, 0)


@dataclasses.dataclass(frozen=True)
class DdWriter:
    """dd-like sequential writer to the VM's ``disk``, with write-behind.

    The guest produces ``block_bytes`` blocks at ``cpu_per_block_us`` of
    CPU each (high for /dev/urandom, low for /dev/zero) and writes them in
    requests of ``request_bytes`` (the page cache merges blocks). A
    request goes through the backend (blkback) to the disk device and its
    completion comes back through the backend as an I/O event
    (``irq_us`` of CPU at interrupt level, 0 = free). Up to
    ``outstanding`` requests in flight; with that many the task blocks
    until a completion. Bandwidth = bytes completed per second.
    ``irq_vcpu`` (None = this vCPU): index of another vCPU of the VM that
    takes the completion events (vTurbo's turbo vCPU); the writer is then
    woken from there without an I/O event of its own.
    """
    cpu_per_block_us: float
    block_bytes: int = 1024
    request_bytes: int = 131072
    outstanding: int = 8
    disk: str = 'vda'
    irq_us: int = 0
    irq_vcpu: typing.Optional[int] = None

    def __post_init__(self):
        checks.number_range('DdWriter.cpu_per_block_us',
                            self.cpu_per_block_us, 0, lo_open=True)
        checks.int_range('DdWriter.block_bytes', self.block_bytes, 1)
        checks.int_range('DdWriter.request_bytes', self.request_bytes,
                         self.block_bytes)
        checks.int_range('DdWriter.outstanding', self.outstanding, 1)
        checks.name('DdWriter.disk', self.disk)
        checks.int_range('DdWriter.irq_us', self.irq_us, 0)
        if self.irq_vcpu is not None:
            checks.int_range('DdWriter.irq_vcpu', self.irq_vcpu, 0)


IO_SOURCES = (Ping, Stream)
TASKS = (CpuBound, Lookbusy, Sysbench, DdWriter)


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


PAPER_WORKLOADS = (Ping, Stream, Lookbusy, Sysbench, DdWriter, IoVcpu)
WORKLOADS = (CpuBound, Idle, RequestResponse, DiskClosedLoop,
             Mixed, Sleeper) + PAPER_WORKLOADS


# -- host and VM -------------------------------------------------------------

SERVICE_DISTS = ('exp', 'fixed')


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
        if self.service_dist not in SERVICE_DISTS:
            raise ValueError('DiskSpec.service_dist: %r is invalid; '
                             'accepted: %s' % (self.service_dist,
                                               ', '.join(SERVICE_DISTS)))


@dataclasses.dataclass(frozen=True)
class BackendSpec:
    """dom0-like I/O backend (netback/blkback) shared by the host's VMs.

    ``cpus`` dom0 vCPUs pinned on their own pCPUs (not the guests'): a
    FIFO queue with that many servers, not scheduled by the guest
    scheduler. An item of b bytes takes ``service_us + b * per_byte_ns /
    1000`` us; ``service_dist`` 'fixed' uses it as is, 'exp' draws an
    exponential time with that mean (seeded). Only the papers' workloads
    (``Ping``, ``Stream``, ``DdWriter``) use it.
    """
    cpus: int = 2
    service_us: int = 10
    per_byte_ns: float = 0.0
    service_dist: str = 'fixed'

    def __post_init__(self):
        checks.int_range('BackendSpec.cpus', self.cpus, 1, 1024)
        checks.int_range('BackendSpec.service_us', self.service_us, 0)
        checks.number_range('BackendSpec.per_byte_ns', self.per_byte_ns, 0)
        _choice('BackendSpec.service_dist', self.service_dist,
                SERVICE_DISTS)


@dataclasses.dataclass(frozen=True)
class HostSpec:
    """One virtualized host.

    ``pcpus`` guest-usable pCPUs (ids 0..pcpus-1); ``default_slice_us`` the
    EEVDF slice of a vCPU without a custom slice; ``switch_cost_us`` time
    lost on each context switch; ``balance_us`` period of the periodic
    load balance (0 = only idle balance). ``scheduler`` None is the Linux
    EEVDF model (``iosched.simulator.cpu``, using the three fields above); else a
    scheduler spec with a ``build(loop, host_spec)`` method, e.g. the Xen
    models of ``iosched.simulator.xen``. ``backend`` the dom0-like backend of the
    papers' workloads (unused by the others). ``kernel`` how the Linux
    kernel treats slice ends and wake-ups (``iosched.simulator.spec_kernel``:
    ``KernelSpec()`` is the historical 6.12/HRTICK model,
    ``kernel('linux-6.18-hz250')`` the one calibrated on a real 6.18
    host); only the EEVDF model reads it, except ``dl_bw_limit``.
    """
    name: str
    pcpus: int
    default_slice_us: int = 3000
    switch_cost_us: int = 2
    disk: DiskSpec = dataclasses.field(default_factory=DiskSpec)
    balance_us: int = 4000
    scheduler: typing.Any = None
    backend: BackendSpec = dataclasses.field(default_factory=BackendSpec)
    kernel: KernelSpec = dataclasses.field(default_factory=KernelSpec)

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
                             'iosched.simulator.xen.Credit2Spec()' % (self.scheduler,))
        if not isinstance(self.backend, BackendSpec):
            raise ValueError('HostSpec.backend: %r is invalid; accepted: a '
                             'BackendSpec' % (self.backend,))
        if not isinstance(self.kernel, KernelSpec):
            raise ValueError('HostSpec.kernel: %r is invalid; accepted: a '
                             'KernelSpec, e.g. spec.kernel(%r)'
                             % (self.kernel, 'linux-6.18-hz250'))


@dataclasses.dataclass(frozen=True)
class VmSpec:
    """A VM: ``vcpus`` is one workload per vCPU, ``disks`` its guest disk
    names (e.g. ('vda', 'vdb'))."""
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
            if isinstance(part, DdWriter) and part.disk not in self.disks:
                raise ValueError(
                    '%s.disk: %r is not a disk of the VM; accepted: one of '
                    '%r' % (name, part.disk, self.disks))
            link = None
            if isinstance(part, Stream):
                link = 'app_vcpu'
            elif isinstance(part, DdWriter):
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
