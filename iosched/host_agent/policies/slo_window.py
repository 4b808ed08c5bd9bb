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
"""One disk's window as the SLO policy judges it: Ind, verdict, floor.

The SLO policy (``policies.slo``) judges every disk of the host over the
tick's window: an SLO volume's Flubber indicator Ind and its verdict (met,
missed, idle), whether its own static QoS ceiling is what holds it, and
the lowest cap it may be given as a donor. ``SloFacts`` is what the report
and the metrics carry of the judgement. Pure; ``params`` is the SLO
policy's ``Params``.
"""

import dataclasses
import typing

from iosched.contract import qos_keys
from iosched.contract import slo as slo_contract

# Verdicts of one SLO volume's window.
MET = 'met'
MISSED = 'missed'
IDLE = 'idle'          # no completed request: not judged


@dataclasses.dataclass(frozen=True)
class Volume:
    """One disk over the window, as the policy saw it."""
    instance_uuid: str
    target: str
    slo: typing.Optional[slo_contract.SLO]
    ops: float = 0.0               # b: ops of the SLO's ref size (or 16 KiB)
    ref_ops: float = 0.0           # the same in 16 KiB ops (capacity unit)
    latency_ms: typing.Optional[float] = None   # l: the SLO's statistic
    stat: str = qos_keys.STAT_MEAN    # the statistic l is (mean as fallback)
    outstanding: float = 0.0
    mean_latency_ms: float = 0.0
    ind: typing.Optional[float] = None
    verdict: str = IDLE            # MET | MISSED | IDLE ('' for no SLO)
    role: str = ''                 # 'protected' | 'donor'
    cap: typing.Optional[float] = None          # ref ops, None: original

    @property
    def key(self):
        return (self.instance_uuid, self.target)


@dataclasses.dataclass(frozen=True)
class SloFacts:
    volumes: tuple                 # tuple[Volume], SLO volumes and donors
    allowance: typing.Optional[float]
    capacity_iops: float
    need_iops: float

    @property
    def slo_volumes(self):
        return sum(1 for v in self.volumes if v.slo is not None)

    @property
    def met(self):
        return sum(1 for v in self.volumes if v.verdict == MET)

    @property
    def missed(self):
        return sum(1 for v in self.volumes if v.verdict == MISSED)

    @property
    def held_back(self):
        return sum(1 for v in self.volumes if v.cap is not None)


# Eq. 2 of Flubber on one window, with two decisions of ours (digest 002
# section 7, items 2 and 8; docs/slo.md):
#   Ind = max(tp, lat),  tp = (B - b) / B,  lat = (l - L) / L
#   tp counts a shortfall (b < B) only while the volume is backlogged
#   (mean in flight N >= min_outstanding): a guest that asks for less
#   than B is not missing anything the host could give. lat needs
#   min_reqs completions. Neither term: not judged (IDLE).
def indicator(slo, ops, latency_ms, outstanding, reqs, params):
    """Flubber's Ind for one window, or None when not judged. Pure."""
    if reqs <= 0:
        return None
    terms = []
    if ops >= slo.min_iops or outstanding >= params.min_outstanding:
        terms.append((slo.min_iops - ops) / slo.min_iops)
    if latency_ms is not None and reqs >= params.min_reqs:
        terms.append((latency_ms - slo.latency_ms) / slo.latency_ms)
    return max(terms) if terms else None


def judge_all(snapshot, params):
    """A Volume per disk of the host, instances by uuid."""
    rates = {(d.instance_uuid, d.target): d for d in snapshot.disks}
    return [judge(inst, disk, rates, params)
            for inst in sorted(snapshot.instances.values(),
                               key=lambda i: i.uuid)
            for disk in inst.disks]


def judge(inst, disk, rates, params):
    """One disk's Volume; an SLO volume's latency statistic falls back to
    the mean when the window has no histogram.
    """
    slo = disk.slo
    r = rates.get((inst.uuid, disk.target))
    if r is None:
        return Volume(inst.uuid, disk.target, slo,
                      verdict=IDLE if slo else '')
    ref_ops = r.ref_ops_per_s()
    if slo is None:
        return Volume(inst.uuid, disk.target, None, ops=ref_ops,
                      ref_ops=ref_ops, latency_ms=r.mean_latency_ms,
                      outstanding=r.outstanding, verdict='')
    stat = slo.latency_stat
    lat = r.latency_ms(stat)
    if lat is None and r.reqs:
        stat, lat = qos_keys.STAT_MEAN, r.mean_latency_ms
    ops = r.ref_ops_per_s(slo.ref_io_bytes)
    ind = indicator(slo, ops, lat, r.outstanding, r.reqs, params)
    verdict = IDLE if ind is None else (MISSED if ind > 0 else MET)
    return Volume(inst.uuid, disk.target, slo, ops=ops, ref_ops=ref_ops,
                  latency_ms=lat, stat=stat, outstanding=r.outstanding,
                  mean_latency_ms=r.mean_latency_ms, ind=ind,
                  verdict=verdict)


def floor(v, params):
    """Lowest cap of a donor (ref ops): a neighbour's min_cap_iops; an SLO
    volume's own need max(B, N * r / L) plus the margin, where r is the
    window's ratio of its latency statistic to its mean (>= 1): a cap X
    makes a guest with N in flight wait N / X on average (Little), so its
    statistic stays below L only while X >= N * r / L (digest 002
    section 4.2).
    """
    if v.slo is None:
        return params.min_cap_iops
    scale = v.slo.ref_io_bytes / float(slo_contract.DEFAULT_REF_IO_BYTES)
    r = 1.0
    if v.latency_ms and v.mean_latency_ms > 0:
        r = max(1.0, v.latency_ms / v.mean_latency_ms)
    need = max(v.slo.min_iops, v.outstanding * r / (v.slo.latency_ms / 1e3))
    # A percentile moves more than the mean when the cap changes the
    # arrival pattern: twice the margin for it.
    safety = 1 + params.margin * (1 if v.stat == qos_keys.STAT_MEAN else 2)
    return max(params.min_cap_iops, need * scale * safety)


def qos(snapshot, v):
    """The disk's static QoS spec ({} when none)."""
    inst = snapshot.instances.get(v.instance_uuid)
    for disk in (inst.disks if inst else ()):
        if disk.target == v.target:
            return disk.qos or {}
    return {}


def self_limited(snapshot, v):
    """Its own static ceiling binds (b >= 0.95 x total_iops_sec) and
    explains its latency: with N in flight a cap X alone makes it wait
    N / X on average, N * r / X for its statistic (r: statistic / mean,
    as in floor); holding others back cannot bring that below L.
    """
    static = qos_int(qos(snapshot, v).get('total_iops_sec'))
    if not static or v.ops < 0.95 * static:
        return False
    r = 1.0
    if v.latency_ms and v.mean_latency_ms > 0:
        r = max(1.0, v.latency_ms / v.mean_latency_ms)
    return v.outstanding * r / static * 1e3 >= v.slo.latency_ms


def qos_int(raw):
    """A QoS spec value as an int (0 when unset or not a number)."""
    try:
        return int(float(raw)) if raw not in (None, '') else 0
    except (TypeError, ValueError):
        return 0


def describe(v):
    """The window of a judged SLO volume, for a reason."""
    if v.ind is None:
        return 'idle'
    lat = '?' if v.latency_ms is None else '%.1f' % v.latency_ms
    return ('b %.0f/%g, %s %s/%gms, N %.1f, Ind %+.2f' % (
        v.ops, v.slo.min_iops, v.stat, lat, v.slo.latency_ms,
        v.outstanding, v.ind))
