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
"""HostReport: the versioned payload an agent sends to every scheduler.

Standard library only: nova-scheduler imports this module without importing
the rest of the agent. ``HostReport.from_dict`` rejects a malformed payload
with ``PayloadError`` naming the field, what it got and what is accepted.
``HostReport.head_from_dict`` (the schedulers', which keep no per-vCPU
records nor decisions) does the same for every other field and neither
parses the records (it counts them, for ``lsvm.nlsvm_vcpus``) nor the
decisions: 30-50 us instead of 0.5-3.5 ms for 32 vCPUs and 50 decisions.

Versioning: ``VERSION`` is ``MAJOR.MINOR``. A reader accepts any payload of
its own major version; fields it does not know (a newer minor) are ignored,
and fields added after 1.0 must have defaults.

History: 1.0 the first schema; 1.1 ``decisions``; 1.2 the ``lsvm``
object's vSlicer parameters (``nlsvm_slice_ms`` ... ``nlsvm_vcpus``), for
the Nova ``LsvmFilter``; 1.3 the LSVM mechanism the host uses, its measured
wake-up latency, the deadline admission figures and the self-test table
(``mechanism`` ... ``probes``); 1.4 the SLO loop's state on the disk
(``slo_volumes`` ... ``held_back``).

Field by field (REPORT_DOC, also rendered into docs/architecture.md)::

  version          str    "1.4" (1.0 had no ``decisions``; 1.1 had only
                          the first five ``lsvm`` fields; 1.2 no
                          ``lsvm.mechanism`` ... ``lsvm.probes``; 1.3 no
                          ``disk.slo_volumes`` ... ``disk.held_back``)
  host             str    compute host name, as Nova's HostState.host
  ts               float  seconds since the epoch (agent clock) when measured
  seq              int    per-agent counter, +1 per report; restarts at 0
  report_interval  float  seconds between reports (store TTL is a multiple)
  pcpus            int    guest-usable pCPUs (Nova's cpu_shared_set size)
  vcpus            list   one entry per vCPU on the host:
    instance_uuid  str
    vcpu           int    vCPU index in the guest
    pcpu           int?   pCPU it last ran on (null if unknown)
    io_strength    float  ISACS E_n * I-bar per window, 0..~1 (4.1)
    klass          str    io | cpu | mixed | idle
    run_share      float  fraction of the window spent running, 0..1
  io_vcpus              int    vCPUs of klass io or mixed
  io_strength_total     float  sum of io_strength over vCPUs
  io_strength_per_pcpu  float  io_strength_total / pcpus
  io_strength_max_pcpu  float  max over pCPUs of the io_strength on it
  lsvm                  object
    supported           bool   the host can give LSVMs short slices
    count               int    LSVM vCPUs on the host
    per_pcpu            float  LSVM vCPUs per pCPU
    capacity            int    LSVM vCPUs the host can still take
    latency_bound_ms    float  current worst-case scheduling latency
                               bound for an LSVM vCPU (0 if none)
    (1.2, optional: the agent's vSlicer parameters, so that a scheduler
     can redo the agent's check for one more VM; defaults = the agent's
     defaults)
    nlsvm_slice_ms      float  T_NLSVM, slice of the other vCPUs (3.0)
    min_slice_ms        float  smallest microslice ever set (0.1)
    max_slice_ms        float  largest microslice, lsvm_max_slice (1.0)
    max_per_pcpu        int    LSVM vCPUs one pCPU may serve (3)
    default_latency_ms  float  L of an LSVM flavor without
                               iosched:latency_ms (2.0)
    min_latency_ms      float  strictest L among the host's LSVMs
                               (0 if none)
    wakeup_preemption   bool   worst case W + (k-1)*T_m with W = T_m
                               (true) or W = T_NLSVM (false) (true)
    nlsvm_vcpus         int?   vCPUs of non-LSVM VMs on the host (null:
                               unknown, derive len(vcpus) - count)
    (1.3, optional: how the host serves LSVMs; defaults = a 1.2 host,
     EEVDF slices with no measurement)
    mechanism           str    deadline | weight | slice ("slice")
    wakeup_latency_us   float  p99 wake-up latency measured under the
                               mechanism at agent start (0: not measured)
    deadline_max_share  float  largest reservation of one LSVM vCPU, CPUs
                               (0.5); its share is min(this, pcpus / N)
    dl_bw_limit         float  SCHED_DEADLINE bandwidth the kernel admits
                               on the LSVMs' root domain, CPUs (0: none)
    dl_bw_foreign       float  of which held by threads not the agent's
    dl_bw_reserved      float  held by the agent's LSVM reservations
    dl_runtime_us       int    largest burst term of an LSVM vCPU's
                               runtime (headroom x its CPU per wake-up,
                               rounded up to 500 us); each runtime is
                               Q = max(T_m, its term), and with k LSVM
                               vCPUs per pCPU the others' wait is
                               (k-1)*max(T_m, dl_runtime_us) (0: none)
    probes              list   the start-up self-test, one row per case:
      mechanism         str    stock | deadline | weight | slice
      ok                bool   the kernel accepted it
      p50_us, p99_us    float  wake lateness of a sleeper among busy loops
      error             str    why not ok ("")
  disk                  object
    capacity_iops       float  measured device capacity (0 = unknown)
    reserved_iops       float  sum of attached SLO throughputs B
    latency_p50_ms      float  request latency over all disks
    latency_p99_ms      float
    slo_volumes         int    attached volumes with an SLO
    slo_met             int    of them, meeting it in the last window
    slo_missed          int    missing it (the others were idle)
    held_back           int    disks the SLO loop holds back (iotune)
  health                object
    status              str    ok | degraded | error
    errors              list[str]  the last tick's problems, short
  decisions             list   (1.1, optional) why knobs have their
                               values, newest first, at most
                               [reporter] max_decisions (MAX_DECISIONS):
    kind                str    the knob, e.g. vcpu_slice
    instance_uuid       str
    target              str    vCPU index, disk target, '' (whole VM)
    before              any    value before the write (null: unknown)
    after               any    value the agent chose
    rule                str    policy rule, e.g. vslicer.lsvm_microslice
    reason              str    the inputs that led to it, for humans
    ts                  float  when decided (agent/driver clock)
    applied             bool   (default true) false: dry run or failed
    error               str    (default "") why it could not be applied
"""

import dataclasses
import json
import math

from iosched.contract import lsvm as lsvm_bound

VERSION = '1.4'
# The self-test's rows: no mechanism ('stock'), then each mechanism.
PROBE_CASES = ('stock',) + lsvm_bound.MECHANISMS
# A receiver refuses a report with more decisions (the agent sends at most
# [reporter] max_decisions, default 200).
MAX_DECISIONS = 1000
KLASSES = ('io', 'cpu', 'mixed', 'idle')
HEALTH_STATES = ('ok', 'degraded', 'error')


class PayloadError(ValueError):
    """A payload that does not match this module's schema."""

    def __init__(self, field, problem):
        self.field = field
        self.problem = problem
        super().__init__("invalid HostReport field '%s': %s" % (field, problem))


def _get(data, name, path, kind, default=dataclasses.MISSING, check=None,
         accepted=None):
    """Fetch data[name], check its type (and an optional predicate)."""
    field = path + name
    if name not in data:
        if default is dataclasses.MISSING:
            raise PayloadError(field, 'missing (required)')
        return default
    value = data[name]
    if kind is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        ok = ok and math.isfinite(value)
        value = float(value) if ok else value
        want = 'a finite number'
    elif kind is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
        want = 'an integer'
    elif kind is bool:
        ok = isinstance(value, bool)
        want = 'true or false'
    elif kind is str:
        ok = isinstance(value, str)
        want = 'a string'
    elif kind is dict:
        ok = isinstance(value, dict)
        want = 'an object'
    elif kind is list:
        ok = isinstance(value, (list, tuple))
        want = 'a list'
    else:  # pragma: no cover - programming error
        raise TypeError(kind)
    if value is None and default is None:
        return None
    if not ok:
        raise PayloadError(field, 'expected %s, got %r' % (want, value))
    if check is not None and not check(value):
        raise PayloadError(field, 'got %r, accepted: %s' % (value, accepted))
    return value


def _nonneg(v):
    return v >= 0


@dataclasses.dataclass(frozen=True)
class VcpuEntry:
    instance_uuid: str
    vcpu: int
    pcpu: object           # int or None
    io_strength: float
    klass: str
    run_share: float

    @classmethod
    def from_dict(cls, data, path):
        if not isinstance(data, dict):
            raise PayloadError(path.rstrip('.'), 'expected an object')
        return cls(
            instance_uuid=_get(data, 'instance_uuid', path, str,
                               check=bool, accepted='a non-empty uuid'),
            vcpu=_get(data, 'vcpu', path, int, check=_nonneg,
                      accepted='an integer >= 0'),
            pcpu=_get(data, 'pcpu', path, int, default=None),
            io_strength=_get(data, 'io_strength', path, float,
                             check=_nonneg, accepted='a number >= 0'),
            klass=_get(data, 'klass', path, str,
                       check=lambda v: v in KLASSES,
                       accepted=' | '.join(KLASSES)),
            run_share=_get(data, 'run_share', path, float,
                           check=lambda v: 0 <= v <= 1.0001,
                           accepted='a number in [0, 1]'),
        )


def _positive(v):
    return v > 0


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
        if not isinstance(data, dict):
            raise PayloadError(path.rstrip('.'), 'expected an object, got %r'
                               % (data,))
        return cls(
            mechanism=_get(data, 'mechanism', path, str,
                           check=lambda v: v in PROBE_CASES,
                           accepted=' | '.join(PROBE_CASES)),
            ok=_get(data, 'ok', path, bool),
            p50_us=_get(data, 'p50_us', path, float, default=0.0,
                        check=_nonneg, accepted='microseconds >= 0'),
            p99_us=_get(data, 'p99_us', path, float, default=0.0,
                        check=_nonneg, accepted='microseconds >= 0'),
            error=_get(data, 'error', path, str, default=''))


@dataclasses.dataclass(frozen=True)
class LsvmState:
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
        None: leave it None."""
        d = cls()
        ms = 'a number of milliseconds > 0'
        cpus = 'a number of CPUs >= 0'
        probes = _get(data, 'probes', path, list, default=[])
        if len(probes) > 16:
            raise PayloadError(path + 'probes', 'got %d rows, accepted: at '
                               'most 16' % len(probes))
        kw = dict(
            mechanism=_get(data, 'mechanism', path, str,
                           default=d.mechanism,
                           check=lambda v: v in lsvm_bound.MECHANISMS,
                           accepted=' | '.join(lsvm_bound.MECHANISMS)),
            wakeup_latency_us=_get(data, 'wakeup_latency_us', path, float,
                                   default=0.0, check=_nonneg,
                                   accepted='microseconds >= 0'),
            deadline_max_share=_get(data, 'deadline_max_share', path, float,
                                    default=d.deadline_max_share,
                                    check=lambda v: 0 < v <= 1,
                                    accepted='a share in (0, 1]'),
            dl_bw_limit=_get(data, 'dl_bw_limit', path, float, default=0.0,
                             check=_nonneg, accepted=cpus),
            dl_bw_foreign=_get(data, 'dl_bw_foreign', path, float,
                               default=0.0, check=_nonneg, accepted=cpus),
            dl_bw_reserved=_get(data, 'dl_bw_reserved', path, float,
                                default=0.0, check=_nonneg, accepted=cpus),
            dl_runtime_us=_get(data, 'dl_runtime_us', path, int, default=0,
                               check=_nonneg,
                               accepted='microseconds >= 0 (an integer)'),
            probes=tuple(ProbeEntry.from_dict(r, '%sprobes[%d].' % (path, i))
                         for i, r in enumerate(probes)),
            nlsvm_slice_ms=_get(data, 'nlsvm_slice_ms', path, float,
                                default=d.nlsvm_slice_ms, check=_positive,
                                accepted=ms),
            min_slice_ms=_get(data, 'min_slice_ms', path, float,
                              default=d.min_slice_ms, check=_positive,
                              accepted=ms),
            max_slice_ms=_get(data, 'max_slice_ms', path, float,
                              default=d.max_slice_ms, check=_positive,
                              accepted=ms),
            max_per_pcpu=_get(data, 'max_per_pcpu', path, int,
                              default=d.max_per_pcpu, check=_positive,
                              accepted='an integer > 0'),
            default_latency_ms=_get(data, 'default_latency_ms', path, float,
                                    default=d.default_latency_ms,
                                    check=_positive, accepted=ms),
            min_latency_ms=_get(data, 'min_latency_ms', path, float,
                                default=d.min_latency_ms, check=_nonneg,
                                accepted='a number >= 0 (0: no LSVM)'),
            wakeup_preemption=_get(data, 'wakeup_preemption', path, bool,
                                   default=d.wakeup_preemption),
            nlsvm_vcpus=_get(data, 'nlsvm_vcpus', path, int, default=None,
                             check=_nonneg,
                             accepted='an integer >= 0 or null'),
            supported=_get(data, 'supported', path, bool),
            count=_get(data, 'count', path, int, check=_nonneg,
                       accepted='an integer >= 0'),
            per_pcpu=_get(data, 'per_pcpu', path, float, check=_nonneg,
                          accepted='a number >= 0'),
            capacity=_get(data, 'capacity', path, int, check=_nonneg,
                          accepted='an integer >= 0'),
            latency_bound_ms=_get(data, 'latency_bound_ms', path, float,
                                  check=_nonneg, accepted='a number >= 0'),
        )
        if kw['nlsvm_vcpus'] is None and vcpu_records:
            kw['nlsvm_vcpus'] = max(0, vcpu_records - kw['count'])
        return cls(**kw)


@dataclasses.dataclass(frozen=True)
class DiskState:
    capacity_iops: float = 0.0
    reserved_iops: float = 0.0
    latency_p50_ms: float = 0.0
    latency_p99_ms: float = 0.0
    slo_volumes: int = 0
    slo_met: int = 0
    slo_missed: int = 0
    held_back: int = 0

    @classmethod
    def from_dict(cls, data, path):
        kw = {}
        for name in ('capacity_iops', 'reserved_iops', 'latency_p50_ms',
                     'latency_p99_ms'):
            kw[name] = _get(data, name, path, float, check=_nonneg,
                            accepted='a number >= 0')
        for name in ('slo_volumes', 'slo_met', 'slo_missed', 'held_back'):
            kw[name] = _get(data, name, path, int, default=0, check=_nonneg,
                            accepted='an integer >= 0')
        return cls(**kw)


@dataclasses.dataclass(frozen=True)
class Health:
    status: str = 'ok'
    errors: tuple = ()

    @classmethod
    def from_dict(cls, data, path):
        errors = _get(data, 'errors', path, list, default=[])
        for i, e in enumerate(errors):
            if not isinstance(e, str):
                raise PayloadError('%serrors[%d]' % (path, i),
                                   'expected a string, got %r' % (e,))
        return cls(status=_get(data, 'status', path, str,
                               check=lambda v: v in HEALTH_STATES,
                               accepted=' | '.join(HEALTH_STATES)),
                   errors=tuple(errors))


def is_json_value(value):
    """A knob value as JSON carries it: null, bool, number, string, list
    or object (iotune keys)."""
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, (list, tuple)):
        return all(is_json_value(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and is_json_value(v)
                   for k, v in value.items())
    return value is None or isinstance(value, (bool, int, str))


def _frozen(value):
    """JSON lists back to tuples, as the agent's values are (pins)."""
    if isinstance(value, list):
        return tuple(_frozen(v) for v in value)
    return value


def _plain(value):
    """Tuples to lists, for JSON."""
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
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
        if not isinstance(data, dict):
            raise PayloadError(path.rstrip('.'), 'expected an object, got %r'
                               % (data,))
        values = {}
        for name in ('before', 'after'):
            if name not in data:
                raise PayloadError(path + name, 'missing (required)')
            if not is_json_value(data[name]):
                raise PayloadError(path + name, 'got %r, accepted: null, '
                                   'true/false, a finite number, a string, '
                                   'a list or an object' % (data[name],))
            values[name] = _frozen(data[name])
        return cls(
            kind=_get(data, 'kind', path, str, check=bool,
                      accepted='a non-empty knob kind'),
            instance_uuid=_get(data, 'instance_uuid', path, str,
                               check=bool, accepted='a non-empty uuid'),
            target=_get(data, 'target', path, str),
            rule=_get(data, 'rule', path, str, check=bool,
                      accepted='a non-empty rule name'),
            reason=_get(data, 'reason', path, str),
            ts=_get(data, 'ts', path, float, check=_nonneg,
                    accepted='seconds >= 0'),
            applied=_get(data, 'applied', path, bool, default=True),
            error=_get(data, 'error', path, str, default=''),
            **values)


def _decisions(data):
    entries = _get(data, 'decisions', '', list, default=[])
    if len(entries) > MAX_DECISIONS:
        raise PayloadError('decisions', 'got %d entries, accepted: at most '
                           '%d' % (len(entries), MAX_DECISIONS))
    return tuple(DecisionEntry.from_dict(d, 'decisions[%d].' % i)
                 for i, d in enumerate(entries))


@dataclasses.dataclass(frozen=True)
class HostReport:
    host: str
    ts: float
    seq: int
    report_interval: float
    pcpus: int
    vcpus: tuple = ()
    io_vcpus: int = 0
    io_strength_total: float = 0.0
    io_strength_per_pcpu: float = 0.0
    io_strength_max_pcpu: float = 0.0
    lsvm: LsvmState = LsvmState()
    disk: DiskState = DiskState()
    health: Health = Health()
    decisions: tuple = ()            # tuple[DecisionEntry], 1.1
    version: str = VERSION

    def to_dict(self):
        """A JSON-ready dict (lists, not tuples)."""
        data = dataclasses.asdict(self)
        data['vcpus'] = [dict(v) for v in data['vcpus']]
        data['health']['errors'] = list(data['health']['errors'])
        data['lsvm']['probes'] = [dict(r) for r in data['lsvm']['probes']]
        data['decisions'] = [
            dict(d, before=_plain(d['before']), after=_plain(d['after']))
            for d in data['decisions']]
        return data

    @classmethod
    def from_dict(cls, data):
        """Validate and build; raise PayloadError naming the bad field."""
        head = _head(data, records=True)
        return cls(decisions=_decisions(data), **head)

    @classmethod
    def head_from_dict(cls, data):
        """What a scheduler reads: ``from_dict`` without the per-vCPU
        records and the decisions (nothing it stores reads them).

        The same checks and messages for every other field. ``vcpus``
        must be a list and ``decisions`` (if sent) a list of at most
        MAX_DECISIONS entries, but their entries are not parsed: the
        report comes back with ``vcpus = decisions = ()`` and, when the
        agent did not send it, ``lsvm.nlsvm_vcpus`` set to the count the
        LSVM rule derives from the records (``len(vcpus) - lsvm.count``;
        left None without records, which the rule reads as 0).
        """
        head = _head(data, records=False)
        del head['vcpus']           # counted into lsvm.nlsvm_vcpus
        decisions = _get(data, 'decisions', '', list, default=())
        if len(decisions) > MAX_DECISIONS:
            raise PayloadError('decisions', 'got %d entries, accepted: at '
                               'most %d' % (len(decisions), MAX_DECISIONS))
        return cls(**head)


def _head(data, records):
    """The keyword arguments of a HostReport but ``decisions``, checked in
    ``from_dict``'s order; ``vcpus``: the parsed records (``records``) or
    the list, its entries unchecked."""
    if not isinstance(data, dict):
        raise PayloadError('<root>', 'expected an object, got %s'
                           % type(data).__name__)
    version = _get(data, 'version', '', str)
    major = version.split('.', 1)[0]
    if major != VERSION.split('.', 1)[0]:
        raise PayloadError('version', 'got %r, accepted: %s.x'
                           % (version, VERSION.split('.', 1)[0]))
    vcpus = _get(data, 'vcpus', '', list)
    head = {'lsvm': LsvmState.from_dict(
        _get(data, 'lsvm', '', dict), 'lsvm.',
        vcpu_records=None if records else len(vcpus))}
    for name, klass in (('disk', DiskState), ('health', Health)):
        head[name] = klass.from_dict(_get(data, name, '', dict),
                                     name + '.')
    head.update(
        version=version,
        host=_get(data, 'host', '', str, check=bool,
                  accepted='a non-empty host name'),
        ts=_get(data, 'ts', '', float, check=_nonneg,
                accepted='seconds >= 0'),
        seq=_get(data, 'seq', '', int, check=_nonneg,
                 accepted='an integer >= 0'),
        report_interval=_get(data, 'report_interval', '', float,
                             check=_positive, accepted='seconds > 0'),
        pcpus=_get(data, 'pcpus', '', int, check=_positive,
                   accepted='an integer > 0'),
        vcpus=(tuple(VcpuEntry.from_dict(v, 'vcpus[%d].' % i)
                     for i, v in enumerate(vcpus)) if records else vcpus),
        io_vcpus=_get(data, 'io_vcpus', '', int, check=_nonneg,
                      accepted='an integer >= 0'))
    for name in ('io_strength_total', 'io_strength_per_pcpu',
                 'io_strength_max_pcpu'):
        head[name] = _get(data, name, '', float, check=_nonneg,
                          accepted='a number >= 0')
    return head


def load(path):
    """The HostReport saved as JSON (``to_dict()``) at ``path``.

    Raises OSError when the file cannot be read, PayloadError naming the
    bad field, and ValueError (JSONDecodeError, UnicodeDecodeError) when
    it is not JSON: catch PayloadError first, it is a ValueError too.
    """
    with open(path, encoding='utf-8') as fh:
        data = json.load(fh)
    return HostReport.from_dict(data)
