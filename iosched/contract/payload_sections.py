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
"""The sections of a HostReport, each parsed from its JSON object.

``VcpuEntry`` (one per vCPU), ``LsvmState`` (with the self-test rows,
``ProbeEntry``), ``DiskState``, ``Health`` and ``DecisionEntry`` (why a
knob has its value). Each ``from_dict(data, path)`` checks every field
with ``payload_check.field`` and raises ``payload_check.PayloadError``
naming it (``path`` is the section's dotted path in the report). What each
field means: the field-by-field doc of ``iosched.contract.payload``, which
assembles them into the ``HostReport``. Standard library only.
"""

import dataclasses

from iosched.contract import lsvm as lsvm_bound
from iosched.contract import payload_check

# A vCPU's class by its I/O strength and run share over the window
# (iosched.host_agent.collectors.rates.classify); io and mixed vCPUs count as
# I/O-intensive (the report's io_vcpus, the scheduler's density).
KLASS_IO = 'io'
KLASS_CPU = 'cpu'
KLASS_MIXED = 'mixed'
KLASS_IDLE = 'idle'
KLASSES = (KLASS_IO, KLASS_CPU, KLASS_MIXED, KLASS_IDLE)
IO_KLASSES = (KLASS_IO, KLASS_MIXED)
HEALTH_STATES = ('ok', 'degraded', 'error')


def _expect_object(data, path):
    if not isinstance(data, dict):
        raise payload_check.PayloadError(
            path.rstrip('.'), 'expected an object, got %r' % (data,))


@dataclasses.dataclass(frozen=True)
class VcpuEntry:
    """One vCPU of the host (``vcpus[i]``)."""
    instance_uuid: str
    vcpu: int
    pcpu: object           # int or None
    io_strength: float
    klass: str
    run_share: float

    @classmethod
    def from_dict(cls, data, path):
        if not isinstance(data, dict):
            raise payload_check.PayloadError(path.rstrip('.'),
                                             'expected an object')
        get = payload_check.field
        nonneg = payload_check.nonneg
        return cls(
            instance_uuid=get(data, 'instance_uuid', path, str,
                              check=bool, accepted='a non-empty uuid'),
            vcpu=get(data, 'vcpu', path, int, check=nonneg,
                     accepted='an integer >= 0'),
            pcpu=get(data, 'pcpu', path, int, default=None),
            io_strength=get(data, 'io_strength', path, float,
                            check=nonneg, accepted='a number >= 0'),
            klass=get(data, 'klass', path, str,
                      check=lambda v: v in KLASSES,
                      accepted=' | '.join(KLASSES)),
            run_share=get(data, 'run_share', path, float,
                          check=lambda v: 0 <= v <= 1.0001,
                          accepted='a number in [0, 1]'),
        )


@dataclasses.dataclass(frozen=True)
class ProbeEntry:
    """One row of the agent's wake-up self-test (1.3)."""
    mechanism: str
    ok: bool
    p50_us: float = 0.0
    p99_us: float = 0.0
    error: str = ''

    @classmethod
    def from_dict(cls, data, path):
        _expect_object(data, path)
        get = payload_check.field
        nonneg = payload_check.nonneg
        return cls(
            mechanism=get(data, 'mechanism', path, str,
                          check=lambda v: v in lsvm_bound.PROBE_CASES,
                          accepted=' | '.join(lsvm_bound.PROBE_CASES)),
            ok=get(data, 'ok', path, bool),
            p50_us=get(data, 'p50_us', path, float, default=0.0,
                       check=nonneg, accepted='microseconds >= 0'),
            p99_us=get(data, 'p99_us', path, float, default=0.0,
                       check=nonneg, accepted='microseconds >= 0'),
            error=get(data, 'error', path, str, default=''))


@dataclasses.dataclass(frozen=True)
class LsvmState:
    """How the host serves latency-sensitive VMs (``lsvm``)."""
    supported: bool = True
    count: int = 0
    per_pcpu: float = 0.0
    capacity: int = 0
    latency_bound_ms: float = 0.0
    # 1.2: the agent's vSlicer parameters (defaults: the agent's defaults)
    nlsvm_slice_ms: float = 3.0
    min_slice_ms: float = 0.1
    max_slice_ms: float = 1.0
    max_per_pcpu: int = 3
    default_latency_ms: float = 2.0
    min_latency_ms: float = 0.0
    wakeup_preemption: bool = True
    nlsvm_vcpus: object = None       # int, or None: unknown
    # 1.3: the mechanism and what the host measured
    mechanism: str = 'slice'
    wakeup_latency_us: float = 0.0
    deadline_max_share: float = 0.5
    dl_bw_limit: float = 0.0
    dl_bw_foreign: float = 0.0
    dl_bw_reserved: float = 0.0
    dl_runtime_us: int = 0
    probes: tuple = ()               # tuple[ProbeEntry]

    @classmethod
    def from_dict(cls, data, path, vcpu_records=None):
        """``vcpu_records``: how many per-vCPU records the report has, to
        derive ``nlsvm_vcpus`` from when the agent did not send it
        (``HostReport.head_from_dict``, which does not keep the records);
        None: leave it None.
        """
        d = cls()
        get = payload_check.field
        nonneg = payload_check.nonneg
        positive = payload_check.positive
        ms = 'a number of milliseconds > 0'
        cpus = 'a number of CPUs >= 0'
        probes = get(data, 'probes', path, list, default=[])
        if len(probes) > 16:
            raise payload_check.PayloadError(
                path + 'probes', 'got %d rows, accepted: at most 16'
                % len(probes))
        kw = dict(
            mechanism=get(data, 'mechanism', path, str,
                          default=d.mechanism,
                          check=lambda v: v in lsvm_bound.MECHANISMS,
                          accepted=' | '.join(lsvm_bound.MECHANISMS)),
            wakeup_latency_us=get(data, 'wakeup_latency_us', path, float,
                                  default=0.0, check=nonneg,
                                  accepted='microseconds >= 0'),
            deadline_max_share=get(data, 'deadline_max_share', path, float,
                                   default=d.deadline_max_share,
                                   check=lambda v: 0 < v <= 1,
                                   accepted='a share in (0, 1]'),
            dl_bw_limit=get(data, 'dl_bw_limit', path, float, default=0.0,
                            check=nonneg, accepted=cpus),
            dl_bw_foreign=get(data, 'dl_bw_foreign', path, float,
                              default=0.0, check=nonneg, accepted=cpus),
            dl_bw_reserved=get(data, 'dl_bw_reserved', path, float,
                               default=0.0, check=nonneg, accepted=cpus),
            dl_runtime_us=get(data, 'dl_runtime_us', path, int, default=0,
                              check=nonneg,
                              accepted='microseconds >= 0 (an integer)'),
            probes=tuple(ProbeEntry.from_dict(r, '%sprobes[%d].' % (path, i))
                         for i, r in enumerate(probes)),
            nlsvm_slice_ms=get(data, 'nlsvm_slice_ms', path, float,
                               default=d.nlsvm_slice_ms, check=positive,
                               accepted=ms),
            min_slice_ms=get(data, 'min_slice_ms', path, float,
                             default=d.min_slice_ms, check=positive,
                             accepted=ms),
            max_slice_ms=get(data, 'max_slice_ms', path, float,
                             default=d.max_slice_ms, check=positive,
                             accepted=ms),
            max_per_pcpu=get(data, 'max_per_pcpu', path, int,
                             default=d.max_per_pcpu, check=positive,
                             accepted='an integer > 0'),
            default_latency_ms=get(data, 'default_latency_ms', path, float,
                                   default=d.default_latency_ms,
                                   check=positive, accepted=ms),
            min_latency_ms=get(data, 'min_latency_ms', path, float,
                               default=d.min_latency_ms, check=nonneg,
                               accepted='a number >= 0 (0: no LSVM)'),
            wakeup_preemption=get(data, 'wakeup_preemption', path, bool,
                                  default=d.wakeup_preemption),
            nlsvm_vcpus=get(data, 'nlsvm_vcpus', path, int, default=None,
                            check=nonneg,
                            accepted='an integer >= 0 or null'),
            supported=get(data, 'supported', path, bool),
            count=get(data, 'count', path, int, check=nonneg,
                      accepted='an integer >= 0'),
            per_pcpu=get(data, 'per_pcpu', path, float, check=nonneg,
                         accepted='a number >= 0'),
            capacity=get(data, 'capacity', path, int, check=nonneg,
                         accepted='an integer >= 0'),
            latency_bound_ms=get(data, 'latency_bound_ms', path, float,
                                 check=nonneg, accepted='a number >= 0'),
        )
        if kw['nlsvm_vcpus'] is None and vcpu_records:
            kw['nlsvm_vcpus'] = max(0, vcpu_records - kw['count'])
        return cls(**kw)


# Where an agent reads attached volumes' SLOs (``disk.slo_source``, 1.5),
# so that a scheduler can tell "no SLO volumes" (reserved_iops 0 from a
# source that knows) from "cannot know":
SLO_SOURCE_CINDER = 'cinder'    # each volume's QoS spec from the Cinder API
SLO_SOURCE_FILE = 'file'        # [host_agent] volume_qos_file
SLO_SOURCE_DRIVER = 'driver'    # the driver gives the specs (simulated hosts)
# Only the disks' live <iotune>: B is not in it (Nova copies only the 13
# front-end keys), so reserved_iops counts the ceiling total_iops_sec of
# each disk that carries cinder_qos's keys, an upper bound of its B.
SLO_SOURCE_IOTUNE = 'iotune'
SLO_SOURCE_NONE = 'none'        # none of these: reserved_iops means nothing
SLO_SOURCE_UNKNOWN = ''         # a report older than 1.5
SLO_SOURCES = (SLO_SOURCE_CINDER, SLO_SOURCE_FILE, SLO_SOURCE_DRIVER,
               SLO_SOURCE_IOTUNE, SLO_SOURCE_NONE)
# The sources under which reserved_iops is not known to cover every SLO
# volume's B (the scheduler's [iosched] unknown_slo_source_policy).
SLO_SOURCES_UNKNOWING = (SLO_SOURCE_NONE, SLO_SOURCE_UNKNOWN)


@dataclasses.dataclass(frozen=True)
class DiskState:
    """The host's disk figures and the SLO loop's state (``disk``)."""
    capacity_iops: float = 0.0
    reserved_iops: float = 0.0
    latency_p50_ms: float = 0.0
    latency_p99_ms: float = 0.0
    slo_volumes: int = 0
    slo_met: int = 0
    slo_missed: int = 0
    held_back: int = 0
    slo_source: str = SLO_SOURCE_UNKNOWN

    @classmethod
    def from_dict(cls, data, path):
        kw = {}
        for name in ('capacity_iops', 'reserved_iops', 'latency_p50_ms',
                     'latency_p99_ms'):
            kw[name] = payload_check.field(
                data, name, path, float, check=payload_check.nonneg,
                accepted='a number >= 0')
        for name in ('slo_volumes', 'slo_met', 'slo_missed', 'held_back'):
            kw[name] = payload_check.field(
                data, name, path, int, default=0,
                check=payload_check.nonneg, accepted='an integer >= 0')
        source = payload_check.field(
            data, 'slo_source', path, str, default=SLO_SOURCE_UNKNOWN)
        # A source a newer agent names reads as unknown, not as an error.
        kw['slo_source'] = (source if source in SLO_SOURCES
                            else SLO_SOURCE_UNKNOWN)
        return cls(**kw)


@dataclasses.dataclass(frozen=True)
class Health:
    """The agent's own state (``health``)."""
    status: str = 'ok'
    errors: tuple = ()

    @classmethod
    def from_dict(cls, data, path):
        errors = payload_check.field(data, 'errors', path, list, default=[])
        for i, e in enumerate(errors):
            if not isinstance(e, str):
                raise payload_check.PayloadError(
                    '%serrors[%d]' % (path, i),
                    'expected a string, got %r' % (e,))
        return cls(status=payload_check.field(
                       data, 'status', path, str,
                       check=lambda v: v in HEALTH_STATES,
                       accepted=' | '.join(HEALTH_STATES)),
                   errors=tuple(errors))


def frozen_value(value):
    """JSON lists back to tuples, as the agent's values are (pins)."""
    if isinstance(value, list):
        return tuple(frozen_value(v) for v in value)
    return value


def plain_value(value):
    """Tuples to lists, for JSON."""
    if isinstance(value, tuple):
        return [plain_value(v) for v in value]
    return value


@dataclasses.dataclass(frozen=True)
class DecisionEntry:
    """Why one knob has its value (1.1): see ``model.Decision``."""
    kind: str
    instance_uuid: str
    target: str
    before: object
    after: object
    rule: str
    reason: str
    ts: float
    applied: bool = True
    error: str = ''

    @classmethod
    def from_dict(cls, data, path):
        _expect_object(data, path)
        values = {}
        for name in ('before', 'after'):
            if name not in data:
                raise payload_check.PayloadError(path + name,
                                                 'missing (required)')
            if not payload_check.is_json_value(data[name]):
                raise payload_check.PayloadError(
                    path + name, 'got %r, accepted: null, true/false, a '
                    'finite number, a string, a list or an object'
                    % (data[name],))
            values[name] = frozen_value(data[name])
        get = payload_check.field
        return cls(
            kind=get(data, 'kind', path, str, check=bool,
                     accepted='a non-empty knob kind'),
            instance_uuid=get(data, 'instance_uuid', path, str,
                              check=bool, accepted='a non-empty uuid'),
            target=get(data, 'target', path, str),
            rule=get(data, 'rule', path, str, check=bool,
                     accepted='a non-empty rule name'),
            reason=get(data, 'reason', path, str),
            ts=get(data, 'ts', path, float, check=payload_check.nonneg,
                   accepted='seconds >= 0'),
            applied=get(data, 'applied', path, bool, default=True),
            error=get(data, 'error', path, str, default=''),
            **values)
