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
"""Data types that flow through the host agent: measure -> decide -> act.

Standard library and ``iosched.contract`` only. Every stage exchanges these
frozen dataclasses, so a stage can be tested with literal values and no
other stage's code (the per-vCPU records a tick makes by the hundred, and
the changes, with ``records.quick_init``'s cheaper constructor):

* drivers return ``InstanceInfo``, ``VcpuSample`` and ``DiskSample``
  (cumulative raw counters, like the kernel and libvirt expose them);
* collectors turn two samples into a ``HostSnapshot`` of rates
  (``VcpuIoStrength``, ``DiskRates``);
* policies turn a snapshot (and their previous state) into a ``Plan`` of
  ``Action``s (and their next state);
* actuators apply actions, journal ``Change``s and keep the latest
  ``Decision`` (the explanation) of every knob.

Units are in the field names: ``_ns`` nanoseconds, ``_s`` seconds,
``_us`` microseconds. Timestamps (``ts``) are seconds on the driver's clock.
"""

import dataclasses
import functools
import math
import typing

from iosched.contract import flavor as flavor_contract
from iosched.contract import flavor_warnings
from iosched.contract import payload_sections
from iosched.contract import qos_keys
from iosched.contract import slo as slo_mod
from iosched.host_agent import model_host
from iosched.host_agent import model_lsvm
from iosched.host_agent import records

# The host's block devices and the VMs' I/O-path threads, defined in
# model_host.
BlockDevice = model_host.BlockDevice
IoThreadSample = model_host.IoThreadSample
IoThreadRates = model_host.IoThreadRates
# The cheaper constructor of the records a tick makes by the hundred.
quick_init = records.quick_init
# The LSVM mechanism types, defined in model_lsvm.
WakeupProbe = model_lsvm.WakeupProbe
DeadlineState = model_lsvm.DeadlineState
HostSched = model_lsvm.HostSched

# A disk's SLO is an ``iosched.contract.slo.SLO`` (read from the volume
# type's QoS spec ``iosched:*`` keys by ``iosched.host_agent.volume_slo``); its
# statistics are ``iosched.contract.qos_keys.STAT_QUANTILES``, its latency
# histogram bounds ``slo.LATENCY_HIST_BOUNDS_NS``, the reference request
# size ``slo.DEFAULT_REF_IO_BYTES``.


@dataclasses.dataclass(frozen=True)
class DiskInfo:
    target: str                      # guest device name, e.g. 'vda'
    serial: str = ''                 # Cinder volume id for volumes
    qos: typing.Mapping[str, str] = dataclasses.field(default_factory=dict)
    slo: typing.Optional[slo_mod.SLO] = None   # from qos, None: no SLO
    # The live <iotune> the driver read ({qos_keys.FRONTEND_KEYS key: int
    # > 0}), as Nova wrote it from the volume's front-end QoS spec.
    iotune: typing.Mapping[str, int] = dataclasses.field(
        default_factory=dict)
    # Where ``qos`` came from (payload_sections.SLO_SOURCE_*): cinder,
    # file, driver; iotune when none of them knew the volume and its
    # <iotune> carries cinder_qos's keys (``iotune_ceiling``); '' none.
    slo_source: str = ''

    @property
    def reserved_iops(self):
        """This disk's share of the host's ``disk.reserved_iops``: B of
        its SLO, else (slo_source iotune) its ceiling total_iops_sec, an
        upper bound of B; 0.0 for a disk without either.
        """
        b = _finite(self.qos.get(qos_keys.MIN_IOPS))
        if b:
            return b
        if self.slo_source == payload_sections.SLO_SOURCE_IOTUNE:
            return float(iotune_ceiling(self.iotune) or 0.0)
        return 0.0


def _finite(value):
    """A positive finite float of ``value``, else 0.0."""
    try:
        v = float(value or 0)
    except (TypeError, ValueError):
        return 0.0
    return v if math.isfinite(v) and v > 0 else 0.0


# iotune_ceiling(iotune) := total_iops_sec if the disk's <iotune> has both
# total_iops_sec and size_iops_sec (the keys iosched.cinder_qos.translate
# always writes: total_iops_sec = ceil(h * max(B, N / L)), h >= 1), else
# None. B itself is not in <iotune> (headroom h and queue depth N are
# unknown there); B <= total_iops_sec / h <= total_iops_sec, so counting
# the ceiling over-reserves but never under-reserves.
def iotune_ceiling(iotune):
    """The ceiling an SLO disk's <iotune> implies (IOPS), or None."""
    if not iotune or qos_keys.SIZE_IOPS_SEC not in iotune:
        return None
    total = _finite(iotune.get('total_iops_sec'))
    return total or None


@dataclasses.dataclass(frozen=True)
class InstanceInfo:
    uuid: str                        # Nova instance uuid
    name: str                        # libvirt domain name
    flavor: str = ''
    vcpus: int = 1
    extra_specs: typing.Mapping[str, str] = dataclasses.field(
        default_factory=dict)        # flavor extra specs (iosched:* keys)
    disks: tuple = ()                # tuple[DiskInfo]
    # Which run of the instance this is (libvirt: the domain id): a new
    # value is a new QEMU process whose knobs start from their defaults,
    # so what the agent held on the old one is retired. 0: not tracked.
    generation: int = 0
    # Threads on the VM's I/O path, each given the I/O-path deadline
    # reservation (knob_kinds.IO_DEADLINE): the QEMU main loop, the
    # iothreads (Nova's <iothreads>), vhost workers. 1 (the main loop)
    # when the driver does not count them (simulator, simdriver).
    io_threads: int = 1

    # What the flavor's extra specs mean (iosched.contract.flavor.read, as
    # for the scheduler and Placement sizing): a value the Nova API would
    # refuse is unset, warned about once when a driver lists the instance.
    def __post_init__(self):
        flavor_warnings.warn_ignored(
            self.flavor or 'of instance %s' % self.uuid, self.flavor_specs)

    @functools.cached_property
    def flavor_specs(self):         # iosched.contract.flavor.FlavorSpecs
        return flavor_contract.read(self.extra_specs)

    @property
    def latency_sensitive(self):
        return self.flavor_specs.latency_sensitive

    @property
    def latency_ms(self):           # int, None: unset
        return self.flavor_specs.latency_ms

    @property
    def dedicated(self):            # hw:cpu_policy=dedicated: Nova pins
        return self.flavor_specs.dedicated


@records.quick_init
@dataclasses.dataclass(frozen=True)
class VcpuSample:
    """Cumulative counters of one vCPU thread at time ``ts``."""
    instance_uuid: str
    vcpu: int
    ts: float
    pcpu: typing.Optional[int]       # where it last ran
    run_ns: int                      # schedstat field 1: time on a CPU
    wait_ns: int                     # schedstat field 2: runnable, waiting
    wakeups: int                     # wake-ups (I/O events, estimate)
    # Exact I/O response event timestamps (driver clock, in units of
    # ``io_events_unit_ns``) since the previous sample, when the driver
    # has them (tracepoints: ns, the simulator: us); None when only
    # counters exist. Any sequence (the driver's own list, not copied nor
    # converted per event: a busy host has ~80,000 a second); read only.
    io_events: typing.Optional[typing.Sequence] = None
    io_events_unit_ns: int = 1
    # E_n of those events (each that differs from the one before it) when
    # the driver counted it as they came (the simulator); None: the
    # collector counts (iosched.contract.isacs.ema_gap).
    io_event_count: typing.Optional[int] = None
    # Wake-to-run delay (ns) of each of those wake-ups that got a CPU in
    # the window (tracing.run_delays); the libvirt driver traces LSVM
    # vCPUs' switch-ins only (others: ()); None when not traced.
    run_delays_ns: typing.Optional[tuple] = None
    # Cumulative completed I/O requests of the whole VM (disks, NICs,
    # other virtio devices: the same figure on each of its vCPUs); None
    # when the driver has none (collectors.rates.request_events).
    io_requests: typing.Optional[int] = None


@dataclasses.dataclass(frozen=True)
class DiskSample:
    """Cumulative counters of one guest disk at time ``ts``."""
    instance_uuid: str
    target: str
    ts: float
    rd_reqs: int
    wr_reqs: int
    rd_bytes: int
    wr_bytes: int
    total_time_ns: int               # sum of request latencies
    # Cumulative latency histogram, when the driver keeps one: counts per
    # bucket, len(slo.LATENCY_HIST_BOUNDS_NS) + 1 (the last: overflow).
    latency_hist: typing.Optional[tuple] = None


@records.quick_init
@dataclasses.dataclass(frozen=True)
class VcpuIoStrength:
    """One vCPU over one window (blueprint 4.1)."""
    instance_uuid: str
    vcpu: int
    pcpu: typing.Optional[int]
    events: int                      # E_n
    mean_gap_ns: float               # I-bar: EMA of gaps <= 10 ms
    io_strength: float               # E_n * I-bar / window, 0..~1
    ivcredit: float                  # io_strength * consumed / mean consumed
    run_share: float                 # run time / window, 0..1
    wait_share: float                # runnable-but-waiting / window
    klass: str                       # payload_sections.KLASSES
    exact: bool                      # True: from event timestamps
    # The counter-based estimate for the same window (equal to io_strength
    # when not exact): kept to measure how far the estimator is off.
    io_strength_estimate: float = 0.0
    # CPU time per activation (run time / wake-ups), us, smoothed over
    # ticks (EMA): what a SCHED_DEADLINE runtime must cover so that a burst
    # is not throttled half-way (0: no wake-up seen yet).
    burst_us: float = 0.0
    # This window's wake-to-run delays (ns) of the vCPU thread
    # (VcpuSample.run_delays_ns; () when not traced): vSlicer's measured W.
    run_delays_ns: tuple = ()
    # Which count gave E_n: 'wakeups' (the thread's wake-ups or traced
    # wake-up times) or 'requests' (the VM's completed I/O requests per
    # vCPU, when the vCPU wakes less than MIN_WAKEUPS_PER_REQUEST times
    # per request: it takes its I/O without sleeping).
    io_source: str = 'wakeups'
    # The VM's completed requests in the window per vCPU (0: none/unknown).
    io_requests: float = 0.0


@dataclasses.dataclass(frozen=True)
class DiskRates:
    instance_uuid: str
    target: str
    iops: float
    bytes_per_s: float
    mean_latency_ms: float
    window_s: float = 0.0
    reqs: int = 0                    # requests completed in the window
    # Mean requests in flight (Little: summed latency / window).
    outstanding: float = 0.0
    # Windowed latency percentiles (ms) by qos_keys.STAT_QUANTILES key,
    # from the histogram; empty when the driver keeps none.
    latency_pcts_ms: typing.Mapping[str, float] = dataclasses.field(
        default_factory=dict)

    def latency_ms(self, stat):
        """The window's ``stat`` latency, ms; None when not measured."""
        if stat == qos_keys.STAT_MEAN:
            return self.mean_latency_ms if self.reqs else None
        return self.latency_pcts_ms.get(stat)

    def ref_ops_per_s(self, ref_io_bytes=slo_mod.DEFAULT_REF_IO_BYTES):
        """Throughput in operations of ``ref_io_bytes`` (a request of x
        bytes counts max(1, x / ref) ops, as QEMU's size_iops_sec; from the
        window's totals, exact when requests are all >= or all <= ref).
        """
        return max(self.iops, self.bytes_per_s / float(ref_io_bytes))


# [host_agent_policy.vslicer] mechanism = auto: chosen at agent start by
# the wake-up self-test among contract.lsvm.MECHANISMS (docs/architecture.md
# section 4).
MECH_AUTO = 'auto'


@dataclasses.dataclass(frozen=True)
class HostSnapshot:
    host: str
    ts: float
    window_s: float
    pcpus: tuple                     # guest-usable pCPU ids
    instances: typing.Mapping[str, InstanceInfo]
    vcpus: tuple                     # tuple[VcpuIoStrength]
    disks: tuple = ()                # tuple[DiskRates]
    sched: HostSched = HostSched()   # the LSVM mechanism in force
    # The shared device's measured capacity, IOPS of slo.DEFAULT_REF_IO_BYTES
    # ([host_agent] disk_capacity_iops or the driver's; 0 = unknown).
    disk_capacity_iops: float = 0.0
    # Host block devices under the guests' disks (tuple[BlockDevice]);
    # empty when the driver does not resolve them.
    block_devices: tuple = ()
    # Per VM, the CPU of its I/O-path threads (tuple[IoThreadRates]);
    # empty when the driver cannot read them (vTurbo's Algorithm 3).
    io_threads: tuple = ()


# Action kinds, their targets and values: iosched.contract.knob_kinds.


@dataclasses.dataclass(frozen=True)
class Action:
    kind: str
    instance_uuid: str
    target: str                      # vCPU index as str, or disk target
    value: typing.Any
    rule: str                        # the policy rule that chose it
    reason: str                      # inputs that led to it, for humans

    @property
    def key(self):
        return (self.kind, self.instance_uuid, self.target)


# A policy's own state type (its frozen ``State`` dataclass).
PolicyState = typing.TypeVar('PolicyState')


@dataclasses.dataclass(frozen=True)
class Plan(typing.Generic[PolicyState]):
    policy: str
    actions: tuple = ()              # tuple[Action]
    notes: tuple = ()                # tuple[str]: refusals, warnings
    # What the report, the metrics and the explanation carry, by name,
    # e.g. {'lsvm': vslicer.LsvmState, 'slo': slo_window.SloFacts} (in
    # iosched.host_agent.policies); never a policy's own state.
    facts: typing.Mapping[str, typing.Any] = dataclasses.field(
        default_factory=dict)
    # The policy's next state (``Plan[slo.State]`` for the SLO policy;
    # None for a stateless one): the agent keeps it under the policy's
    # name and gives it back to that policy's next ``decide``.
    state: typing.Optional[PolicyState] = None


@records.quick_init
@dataclasses.dataclass(frozen=True)
class Change:
    """A journaled write: what it was before and what we set."""
    kind: str
    instance_uuid: str
    target: str
    before: typing.Any
    after: typing.Any
    rule: str
    ts: float
    reason: str = ''                 # the action's reason (inputs)


# Decision.status values (derived from applied / error).
DECISION_APPLIED = 'applied'         # the knob holds ``after``
DECISION_FAILED = 'failed'           # the write (or the knob) failed
DECISION_DRY_RUN = 'dry-run'         # noop actuator: nothing written


@dataclasses.dataclass(frozen=True)
class Decision:
    """Why a knob has (or would have) its value: one action, explained.

    ``before`` is the value the knob had before the write that set
    ``after`` (equal to ``after`` when it already had it; None when
    unknown: dry run, unreadable knob). ``ts`` is when this explanation
    was decided: the write, or the tick the rule or reason last changed.
    ``policy`` is the policy whose rule chose it. ``applied`` is False
    for a dry run and for a failure, which has ``error``.
    """
    kind: str
    instance_uuid: str
    target: str
    before: typing.Any
    after: typing.Any
    rule: str
    reason: str
    ts: float
    policy: str = ''
    applied: bool = True
    error: str = ''

    @property
    def key(self):
        return (self.kind, self.instance_uuid, self.target)

    @property
    def status(self):
        if self.error:
            return DECISION_FAILED
        return DECISION_APPLIED if self.applied else DECISION_DRY_RUN
