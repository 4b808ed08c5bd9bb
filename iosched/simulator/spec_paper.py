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
"""Specifications of the papers' I/O path: backend, I/O sources, guest tasks.

An external client (own pCPU, modelled as a fixed round-trip ``wire_us``,
split half on the way in, half on the way out) talks to a guest vCPU
through the host's backend (``BackendSpec``, dom0's netback/blkback; a
field of ``spec.HostSpec``). Every item the backend hands to a guest is an
I/O response event for that vCPU (``sched.io_event``) and costs guest CPU
at interrupt level: the vCPU serves its pending I/O items before its task
(``spec.IoVcpu``).

* I/O sources: ``Ping`` (ICMP-echo-like), ``Stream`` (iperf-like);
* guest tasks: ``Lookbusy`` (duty cycle), ``Sysbench`` (fixed work per
  run), ``DdWriter`` (sequential writes with write-behind), plus
  ``spec.CpuBound`` (stress).

A vCPU runs one of them alone, or several at once in ``spec.IoVcpu``; the
run-time side is ``iosched.simulator.paper_workloads`` (and ``_net``).
Frozen dataclasses validated in ``__post_init__`` as ``spec``'s are.
"""

import dataclasses
import typing

from iosched.simulator import checks

SERVICE_DISTS = ('exp', 'fixed')       # also spec.DiskSpec's
PING_MODES = ('fixed', 'poisson')
STREAM_MODES = ('tcp', 'udp')
ACK_AT = ('irq', 'app')


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
        checks.choice('BackendSpec.service_dist', self.service_dist,
                      SERVICE_DISTS)


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
        checks.choice('Ping.mode', self.mode, PING_MODES)
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
        checks.choice('Stream.mode', self.mode, STREAM_MODES)
        checks.int_range('Stream.window', self.window, 1)
        checks.int_range('Stream.cpu_per_segment_us',
                         self.cpu_per_segment_us, 1)
        checks.int_range('Stream.wire_us', self.wire_us, 0)
        if self.app_vcpu is not None:
            checks.int_range('Stream.app_vcpu', self.app_vcpu, 0)
        checks.int_range('Stream.app_cpu_per_segment_us',
                         self.app_cpu_per_segment_us, 1)
        checks.int_range('Stream.sockbuf_segments', self.sockbuf_segments, 1)
        checks.choice('Stream.ack_at', self.ack_at, ACK_AT)


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
