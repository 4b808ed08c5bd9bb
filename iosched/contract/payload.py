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
The sections (``VcpuEntry``, ``LsvmState`` ... ``DecisionEntry``) are in
``iosched.contract.payload_sections``; ``PayloadError`` and the field
checks in ``iosched.contract.payload_check``; the bounds on what a report
may claim (``report_interval``, pCPUs, vCPUs per pCPU, the host name's
length), checked first, in ``iosched.contract.payload_bounds``.

On the wire to the schedulers (RPC 1.3, ``iosched.contract.rpc``) the
report travels as its head: ``vcpus`` and ``decisions`` left out, their
lengths in ``tail_counts`` (``head_from_dict(head, counts)``); the whole
report goes to a reader that asks for it (``iosched-status``).

Versioning: ``VERSION`` is ``MAJOR.MINOR``. A reader accepts any payload of
its own major version; fields it does not know (a newer minor) are ignored,
and fields added after 1.0 must have defaults.

History: 1.0 the first schema; 1.1 ``decisions``; 1.2 the ``lsvm``
object's vSlicer parameters (``nlsvm_slice_ms`` ... ``nlsvm_vcpus``), for
the Nova ``LsvmFilter``; 1.3 the LSVM mechanism the host uses, its measured
wake-up latency, the deadline admission figures and the self-test table
(``mechanism`` ... ``probes``); 1.4 the SLO loop's state on the disk
(``slo_volumes`` ... ``held_back``); 1.5 where the agent reads the SLOs
(``disk.slo_source``).

Field by field (REPORT_DOC, also rendered into docs/architecture.md)::

  version          str    "1.5" (1.0 had no ``decisions``; 1.1 had only
                          the first five ``lsvm`` fields; 1.2 no
                          ``lsvm.mechanism`` ... ``lsvm.probes``; 1.3 no
                          ``disk.slo_volumes`` ... ``disk.held_back``;
                          1.4 no ``disk.slo_source``)
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
    slo_source          str    (1.5, optional) where reserved_iops comes
                               from: cinder | file | driver | iotune
                               (B unknown: each SLO disk's ceiling
                               total_iops_sec, an upper bound) | none
                               (cannot know); "" (absent, or a value this
                               reader does not know): unknown
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

from iosched.contract import payload_bounds
from iosched.contract import payload_check
from iosched.contract import payload_sections

VERSION = '1.5'
# A receiver refuses a report with more decisions (the agent sends at most
# [reporter] max_decisions, default 200).
MAX_DECISIONS = 1000


def _decision_count(entries):
    if len(entries) > MAX_DECISIONS:
        raise payload_check.PayloadError(
            'decisions', 'got %d entries, accepted: at most %d'
            % (len(entries), MAX_DECISIONS))


def _decisions(data):
    entries = payload_check.field(data, 'decisions', '', list, default=[])
    _decision_count(entries)
    return tuple(payload_sections.DecisionEntry.from_dict(
        d, 'decisions[%d].' % i) for i, d in enumerate(entries))


@dataclasses.dataclass(frozen=True)
class HostReport:
    host: str
    ts: float
    seq: int
    report_interval: float
    pcpus: int
    vcpus: tuple = ()                # tuple[payload_sections.VcpuEntry]
    io_vcpus: int = 0
    io_strength_total: float = 0.0
    io_strength_per_pcpu: float = 0.0
    io_strength_max_pcpu: float = 0.0
    lsvm: payload_sections.LsvmState = payload_sections.LsvmState()
    disk: payload_sections.DiskState = payload_sections.DiskState()
    health: payload_sections.Health = payload_sections.Health()
    decisions: tuple = ()            # tuple[DecisionEntry], 1.1
    version: str = VERSION

    def to_dict(self):
        """A JSON-ready dict (lists, not tuples)."""
        plain = payload_sections.plain_value
        data = dataclasses.asdict(self)
        data['vcpus'] = [dict(v) for v in data['vcpus']]
        data['health']['errors'] = list(data['health']['errors'])
        data['lsvm']['probes'] = [dict(r) for r in data['lsvm']['probes']]
        data['decisions'] = [
            dict(d, before=plain(d['before']), after=plain(d['after']))
            for d in data['decisions']]
        return data

    @classmethod
    def from_dict(cls, data):
        """Validate and build; raise PayloadError naming the bad field."""
        head = _head(data, records=True)
        return cls(decisions=_decisions(data), **head)

    @classmethod
    def head_from_dict(cls, data, counts=None):
        """What a scheduler reads: ``from_dict`` without the per-vCPU
        records and the decisions (nothing it stores reads them).

        The same checks and messages for every other field. ``vcpus``
        must be a list and ``decisions`` (if sent) a list of at most
        MAX_DECISIONS entries, but their entries are not parsed: the
        report comes back with ``vcpus = decisions = ()`` and, when the
        agent did not send it, ``lsvm.nlsvm_vcpus`` set to the count the
        LSVM rule derives from the records (``len(vcpus) - lsvm.count``;
        left None without records, which the rule reads as 0).

        ``counts`` (RPC 1.3's ``tail_counts``): ``data`` is a head-only
        message, without ``vcpus`` and ``decisions``; ``counts`` gives
        their lengths (``check_counts``), read as the lists' would be.
        """
        if counts is not None:
            counts = check_counts(data, counts)
        head = _head(data, records=False, counts=counts)
        del head['vcpus']           # counted into lsvm.nlsvm_vcpus
        if counts is None:
            _decision_count(payload_check.field(data, 'decisions', '', list,
                                                default=()))
        return cls(**head)


def check_counts(data, counts):
    """The tail counts of a head-only message, checked: a dict with
    ``vcpus`` (required) and ``decisions`` (optional, at most
    MAX_DECISIONS), integers >= 0; ``data`` (the head) must not carry the
    fields they count. Raises PayloadError naming ``tail_counts.<field>``.
    """
    if not isinstance(counts, dict):
        raise payload_check.PayloadError(
            'tail_counts', 'expected an object, got %s'
            % type(counts).__name__)
    for name in ('vcpus', 'decisions'):
        if isinstance(data, dict) and name in data:
            raise payload_check.PayloadError(
                name, 'present in a head-only report (tail_counts given), '
                'accepted: the head without it, or a whole report without '
                'tail_counts')
    get = payload_check.field
    get(counts, 'vcpus', 'tail_counts.', int, check=payload_check.nonneg,
        accepted='an integer >= 0')
    decisions = get(counts, 'decisions', 'tail_counts.', int, default=0,
                    check=payload_check.nonneg, accepted='an integer >= 0')
    if decisions > MAX_DECISIONS:
        raise payload_check.PayloadError(
            'tail_counts.decisions', 'got %d, accepted: at most %d'
            % (decisions, MAX_DECISIONS))
    return counts


def _head(data, records, counts=None):
    """The keyword arguments of a HostReport but ``decisions``, checked in
    ``from_dict``'s order; ``vcpus``: the parsed records (``records``) or
    the list, its entries unchecked (with ``counts``: an empty tuple, the
    records counted by ``counts['vcpus']``).
    """
    if not isinstance(data, dict):
        raise payload_check.PayloadError(
            '<root>', 'expected an object, got %s' % type(data).__name__)
    payload_bounds.check(data, counts)
    get = payload_check.field
    nonneg = payload_check.nonneg
    positive = payload_check.positive
    version = get(data, 'version', '', str)
    major = version.split('.', 1)[0]
    if major != VERSION.split('.', 1)[0]:
        raise payload_check.PayloadError(
            'version', 'got %r, accepted: %s.x'
            % (version, VERSION.split('.', 1)[0]))
    vcpus = get(data, 'vcpus', '', list) if counts is None else ()
    head = {'lsvm': payload_sections.LsvmState.from_dict(
        get(data, 'lsvm', '', dict), 'lsvm.',
        vcpu_records=None if records else (
            len(vcpus) if counts is None else counts['vcpus']))}
    for name, klass in (('disk', payload_sections.DiskState),
                        ('health', payload_sections.Health)):
        head[name] = klass.from_dict(get(data, name, '', dict), name + '.')
    head.update(
        version=version,
        host=get(data, 'host', '', str, check=bool,
                 accepted='a non-empty host name'),
        ts=get(data, 'ts', '', float, check=nonneg,
               accepted='seconds >= 0'),
        seq=get(data, 'seq', '', int, check=nonneg,
                accepted='an integer >= 0'),
        report_interval=get(data, 'report_interval', '', float,
                            check=positive, accepted='seconds > 0'),
        pcpus=get(data, 'pcpus', '', int, check=positive,
                  accepted='an integer > 0'),
        vcpus=(tuple(payload_sections.VcpuEntry.from_dict(
            v, 'vcpus[%d].' % i) for i, v in enumerate(vcpus))
            if records else vcpus),
        io_vcpus=get(data, 'io_vcpus', '', int, check=nonneg,
                     accepted='an integer >= 0'))
    for name in ('io_strength_total', 'io_strength_per_pcpu',
                 'io_strength_max_pcpu'):
        head[name] = get(data, name, '', float, check=nonneg,
                         accepted='a number >= 0')
    return head


def load(path):
    """The HostReport saved as JSON (``to_dict()``) at ``path``.

    Raises OSError when the file cannot be read,
    ``payload_check.PayloadError`` naming the bad field, and ValueError
    (JSONDecodeError, UnicodeDecodeError) when it is not JSON: catch
    PayloadError first, it is a ValueError too.
    """
    with open(path, encoding='utf-8') as fh:
        data = json.load(fh)
    return HostReport.from_dict(data)
