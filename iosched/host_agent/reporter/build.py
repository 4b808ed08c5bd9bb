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
"""Pure: a HostReport from a snapshot, the policies' facts, health and the
actuator's latest decisions (the newest ``[reporter] max_decisions``).
"""

from iosched.contract import lsvm as lsvm_bound
from iosched.contract import payload
from iosched.contract import payload_check
from iosched.contract import payload_sections

MAX_REASON_CHARS = 300


def newest_decisions(decisions, limit):
    """At most ``limit`` model.Decision, newest first (ties by knob)."""
    ordered = sorted(decisions, key=lambda d: (-d.ts, d.key))
    return ordered[:max(0, limit)]


def report_decisions(conf, actuator):
    """The actuator's decisions a report carries ([reporter] max_decisions)."""
    return newest_decisions(actuator.decisions().values(),
                            conf.reporter.max_decisions)


def _value(value):
    """A knob value as the payload accepts it; anything else as text."""
    return value if payload_check.is_json_value(value) else repr(value)


def decision_entry(d):
    """A payload_sections.DecisionEntry from a model.Decision."""
    reason = d.reason
    if len(reason) > MAX_REASON_CHARS:
        reason = reason[:MAX_REASON_CHARS - 3] + '...'
    return payload_sections.DecisionEntry(
        kind=d.kind, instance_uuid=d.instance_uuid, target=d.target,
        before=_value(d.before), after=_value(d.after),
        rule=d.rule or 'unnamed', reason=reason, ts=d.ts,
        applied=d.applied, error=d.error[:200])


def reserved_iops(instances):
    """Sum of the SLO throughputs B of attached volumes (iosched:min_iops;
    a disk known only by its <iotune>: its ceiling, ``DiskInfo``).
    """
    return sum(disk.reserved_iops for inst in instances
               for disk in inst.disks)


def lsvm_payload(lsvm):
    """payload_sections.LsvmState (1.3) from vSlicer's facts
    (policies.vslicer LsvmState): the state plus the parameters and the
    mechanism the Nova LsvmFilter needs.
    """
    extra = {}
    params = getattr(lsvm, 'params', None)
    if params is not None:
        extra = dict(
            nlsvm_slice_ms=params.nlsvm_slice_us / 1000.0,
            min_slice_ms=params.min_slice_us / 1000.0,
            max_slice_ms=params.lsvm_max_slice_us / 1000.0,
            max_per_pcpu=params.max_lsvm_per_pcpu,
            default_latency_ms=float(params.default_latency_ms),
            wakeup_preemption=bool(params.wakeup_preemption),
            deadline_max_share=float(params.deadline_max_share))
    return payload_sections.LsvmState(
        supported=True, count=lsvm.count, per_pcpu=lsvm.per_pcpu,
        capacity=lsvm.capacity, latency_bound_ms=lsvm.latency_bound_ms,
        min_latency_ms=float(getattr(lsvm, 'min_latency_ms', 0.0)),
        nlsvm_vcpus=getattr(lsvm, 'nlsvm_vcpus', None),
        mechanism=getattr(lsvm, 'mechanism', lsvm_bound.MECH_SLICE),
        wakeup_latency_us=float(getattr(lsvm, 'wakeup_us', 0.0)),
        dl_bw_limit=float(getattr(lsvm, 'dl_bw_limit', 0.0)),
        dl_bw_foreign=float(getattr(lsvm, 'dl_bw_foreign', 0.0)),
        dl_bw_reserved=float(getattr(lsvm, 'dl_bw_reserved', 0.0)),
        dl_runtime_us=int(getattr(lsvm, 'dl_runtime_us', 0)),
        probes=tuple(payload_sections.ProbeEntry(
            mechanism=r.mechanism, ok=bool(r.ok),
            p50_us=round(float(r.p50_us), 1),
            p99_us=round(float(r.p99_us), 1), error=r.error[:200])
            for r in getattr(lsvm, 'probes', ())), **extra)


# capacity(option, driver) := option if option > 0, else driver's if > 0,
# else 0 (unknown). The operator's fio measurement wins over a model.
def choose_disk_capacity(configured, from_driver=None):
    """The disk capacity a report carries, in IOPS (0.0 = unknown)."""
    for value in (configured, from_driver):
        if value is not None and value > 0:
            return float(value)
    return 0.0


def build_report(snapshot, seq, report_interval, lsvm=None,
                 disk_latency_p50_ms=0.0, disk_latency_p99_ms=0.0,
                 errors=(), decisions=(), disk_capacity_iops=0.0,
                 slo=None, slo_source=payload_sections.SLO_SOURCE_UNKNOWN):
    """Aggregate a HostSnapshot into the payload the schedulers read.

    ``decisions``: model.Decision to carry, as given (see
    ``report_decisions`` for the newest N). ``slo``: the SLO policy's
    facts (``policies.slo_window.SloFacts``) of the last tick, or None.
    ``slo_source``: where the agent reads SLOs (``volume_slo.host_source``).
    """
    n_pcpus = max(1, len(snapshot.pcpus))
    entries = []
    per_pcpu = {}
    for v in snapshot.vcpus:
        entries.append(payload_sections.VcpuEntry(
            instance_uuid=v.instance_uuid, vcpu=v.vcpu, pcpu=v.pcpu,
            io_strength=round(v.io_strength, 6), klass=v.klass,
            run_share=round(min(1.0, v.run_share), 6)))
        if v.pcpu is not None:
            per_pcpu[v.pcpu] = per_pcpu.get(v.pcpu, 0.0) + v.io_strength
    total = sum(v.io_strength for v in snapshot.vcpus)
    if lsvm is not None:
        lsvm_state = lsvm_payload(lsvm)
    else:
        lsvm_state = payload_sections.LsvmState(supported=False)
    status = 'ok' if not errors else 'degraded'
    return payload.HostReport(
        host=snapshot.host, ts=snapshot.ts, seq=seq,
        report_interval=report_interval, pcpus=n_pcpus,
        vcpus=tuple(entries),
        io_vcpus=sum(1 for v in snapshot.vcpus
                     if v.klass in payload_sections.IO_KLASSES),
        io_strength_total=total, io_strength_per_pcpu=total / n_pcpus,
        io_strength_max_pcpu=max(per_pcpu.values(), default=0.0),
        lsvm=lsvm_state,
        disk=payload_sections.DiskState(
            capacity_iops=float(disk_capacity_iops),
            reserved_iops=reserved_iops(snapshot.instances.values()),
            latency_p50_ms=disk_latency_p50_ms,
            latency_p99_ms=disk_latency_p99_ms,
            slo_volumes=slo.slo_volumes if slo is not None else sum(
                1 for i in snapshot.instances.values() for d in i.disks
                if d.slo is not None),
            slo_met=slo.met if slo is not None else 0,
            slo_missed=slo.missed if slo is not None else 0,
            held_back=slo.held_back if slo is not None else 0,
            slo_source=slo_source),
        health=payload_sections.Health(
            status=status, errors=tuple(e[:200] for e in errors[:10])),
        decisions=tuple(decision_entry(d) for d in decisions))
