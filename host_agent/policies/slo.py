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
"""SLO volumes defended: Flubber's VBC as a closed loop over live iotune.

Description:
    Flubber (seed 002) gives each VM a ``<B, L>`` SLO and shares the disk
    in credit rounds whose split is corrected by feedback on
    Ind = max((B - b) / B, (l - L) / L) (Eq. 2). On KVM the lever is a
    QEMU throttle per disk (live ``iotune``), which shapes arrivals only.
    So every tick this policy judges each SLO volume's window (throughput
    b, latency statistic l, Ind), and when a volume misses it holds back
    the *donors* (disks without an SLO, and SLO volumes beating theirs by
    ``margin``) to an allowance within the device's measured capacity;
    when every SLO is met again it gives the allowance back step by step
    and finally restores the donors' original iotune (VBC's
    work-conserving rounds, emulated by the loop).
Requirements:
    SLOs on the disks (``DiskInfo.slo``, from the volume type's QoS spec),
    the ``disk_iotune`` knob (libvirt, the simulator), block counters per
    window; a latency histogram for percentile SLOs (else they are judged
    on the mean, with a note); the device capacity (``[host_agent]
    disk_capacity_iops``) for the first cut (else the loop only cuts
    multiplicatively).
Limitations:
    A throttle cannot reorder requests: latency is defended in aggregate by
    holding back competitors, not per request (VLC/BD-EDF has no stock
    Linux equivalent; docs/slo.md). All disks of the host are taken to
    share one device. Each iotune change resets QEMU's buckets, so a cap
    is rewritten only when it moves by ``min_change``.
Spec URL:
    ../shared/seeds/002-flubber.md, sections 2.3 and 4.4.
"""

import dataclasses
import math
import typing

from host_agent import model
from host_agent.policies import base
from iosched.contract import qos_keys
from iosched.contract import slo as slo_contract

RULE_HOLD = 'slo.hold_back'
RULE_RELEASE = 'slo.release'
INF = float('inf')

# Verdicts of one SLO volume's window.
MET = 'met'
MISSED = 'missed'
IDLE = 'idle'          # no completed request: not judged


@dataclasses.dataclass(frozen=True)
class Params:
    margin: float = 0.1            # beaten by this much: a donor; hysteresis
    decrease: float = 0.5          # gamma: cut = 1 - gamma * min(Ind, 1)
    min_decrease: float = 0.2      # ... but at least this much per miss
    increase: float = 0.05         # delta: give-back step, share of C
    calm_ticks: int = 2            # met windows before giving back
    min_cap_iops: float = 10.0     # a held-back neighbour's floor (ref ops)
    min_change: float = 0.1        # smaller relative moves are not written
    min_outstanding: float = 0.5   # b < B counts only when backlogged
    min_reqs: int = 5              # fewer completions: latency not judged
    knee_ticks: int = 300          # how long the allowance of a miss caps


@dataclasses.dataclass(frozen=True)
class State:
    allowance: typing.Optional[float] = None   # donors' total; None: free
    calm: int = 0                  # consecutive windows with every SLO met
    knee: typing.Optional[float] = None        # allowance at the last miss
    knee_age: int = 0
    caps: typing.Mapping[tuple, float] = dataclasses.field(
        default_factory=dict)      # (uuid, target) -> cap held (ref ops)
    # SLO volumes that missed while held back as donors: never donors
    # again for knee_ticks windows (key -> windows left).
    sticky: typing.Mapping[tuple, int] = dataclasses.field(
        default_factory=dict)
    settle: bool = False           # the last window cut the allowance
    settle_ind: typing.Optional[float] = None   # Ind* at that cut


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


def _judge(inst, disk, rates, params):
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


def _floor(v, params):
    """Lowest cap of a donor (ref ops): a neighbour's min_cap_iops; an SLO
    volume's own need max(B, N * r / L) plus the margin, where r is the
    window's ratio of its latency statistic to its mean (>= 1): a cap X
    makes a guest with N in flight wait N / X on average (Little), so its
    statistic stays below L only while X >= N * r / L (digest 002
    section 4.2)."""
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


# Split of the allowance A over the neighbours (disks without an SLO),
# water-filling: one below 90 % of its cap asks for what it used plus the
# margin, one at its cap (or new and busy) for everything; max-min fair up
# to A; what nobody asks for is spread evenly, so caps leave room to grow;
# no cap below min_cap_iops.
def split(allowance, neighbours, held, params):
    """{key: cap (ref ops)} for the neighbours. Pure."""
    asks = {}
    for v in neighbours:
        key = (v.instance_uuid, v.target)
        cap = held.get(key)
        if cap is not None and v.ref_ops < 0.9 * cap:
            asks[key] = v.ref_ops * (1 + params.margin)
        elif cap is None and v.ref_ops == 0:
            asks[key] = params.min_cap_iops
        else:
            asks[key] = INF
    shares = {}
    left = allowance
    pending = sorted(asks, key=lambda k: asks[k])
    while pending:
        fair = left / len(pending)
        key = pending[0]
        if asks[key] > fair:
            for k in pending:
                shares[k] = fair
            left = 0.0
            break
        shares[key] = asks[key]
        left -= asks[key]
        pending.pop(0)
    if left > 0 and shares:
        extra = left / len(shares)
        shares = {k: v + extra for k, v in shares.items()}
    return {k: max(params.min_cap_iops, v) for k, v in shares.items()}


# Control law (one device; every tick; ref ops = 16 KiB operations;
# C = measured capacity, 0 = unknown; Ind* = max Ind over judged SLO
# volumes; neighbours = disks without an SLO, d = their ref ops; givers =
# SLO volumes with Ind <= -margin (then while Ind <= 0), capped at their
# floor while the loop holds; need = the other active SLO volumes'
# max(B, b) + the givers' floors; A = the neighbours' allowance):
#   Ind* > 0 (a miss):
#       the window right after a cut, Ind* lower than at the cut: wait
#       (the queue the cut stopped is still draining)
#       else base = min(A or inf, d, C - need if C)
#            knee = base, if the loop was giving back (a level it reached
#                   and found too high); calm = 0
#            A    = max(|neighbours| * min_cap, base * (1 - max(
#                   min_decrease, gamma * min(Ind*, 1))))  (multiplicative)
#   every SLO met (or idle) for calm_ticks windows, A held:
#       if the SLO volumes are idle, or d < A * (1 - margin) and no
#           neighbour keeps min_outstanding requests in flight (they ask
#           for less than they may): release: every held disk's original
#           iotune back, A = None
#       else A = min(A + delta * (C or d), C - need, knee * (1 - margin))
#                                                         (additive)
#   the knee is forgotten after knee_ticks calm windows.
#   Caps: a neighbour's max-min fair share of A (split), a giver's floor;
#   written as total_iops_sec (size_iops_sec = the disk's ref size), never
#   above the disk's static QoS ceiling, only when it moves by min_change.
# Flubber's Eq. 3 raises a violator's credits by Ind * beta and lowers the
# over-served (negative Ind); here the violator is never throttled by the
# agent and the over-served give down to what keeps their own SLO, which
# is the same direction with caps instead of credits (docs/slo.md: what is
# kept and what is lost).
def plan_slo(snapshot, params=Params(), state=State()):
    """Return a model.Plan with facts 'slo' (SloFacts), 'slo_state'. Pure."""
    rates = {(d.instance_uuid, d.target): d for d in snapshot.disks}
    vols = [_judge(inst, disk, rates, params)
            for inst in sorted(snapshot.instances.values(),
                               key=lambda i: i.uuid)
            for disk in inst.disks]
    if not any(v.slo is not None for v in vols):
        return _release_all(vols, state, snapshot, 'no SLO volume here')
    notes = tuple(
        'slo: %s/%s has a %s SLO but no latency histogram: judged on the '
        'mean' % (v.instance_uuid, v.target, v.slo.latency_stat)
        for v in vols if v.slo is not None and v.ind is not None
        and v.stat != v.slo.latency_stat)
    cap_c = snapshot.disk_capacity_iops
    # A volume held by its own static QoS ceiling is not helped by holding
    # back others: said, and left out of Ind*.
    limited = [v for v in vols if v.verdict == MISSED and _self_limited(
        snapshot, v)]
    notes += tuple('slo: %s/%s misses its SLO at its own QoS ceiling '
                   '(total_iops_sec): the ceiling, not its neighbours, '
                   'holds it' % (v.instance_uuid, v.target) for v in limited)
    judged = [v for v in vols if v.ind is not None and v not in limited]
    ind_star = max((v.ind for v in judged), default=None)
    # An SLO volume beating its SLO by the margin gives; once giving, it
    # keeps giving while it meets its SLO (no flapping at the margin). One
    # that missed while giving, or that runs at the cap it was given (it
    # wants more: the host cannot see what waits inside the guest), stops
    # giving for knee_ticks windows.
    sticky = {k: n - 1 for k, n in state.sticky.items() if n > 1}
    for v in vols:
        key = (v.instance_uuid, v.target)
        held = state.caps.get(key)
        if v.slo is not None and held is not None and (
                v.verdict == MISSED or v.ref_ops >= 0.95 * held):
            sticky[key] = params.knee_ticks
    neighbours = [v for v in vols if v.slo is None]
    givers = [v for v in vols if v.slo is not None and v.ind is not None
              and (v.instance_uuid, v.target) not in sticky
              and (v.ind <= -params.margin or (
                  v.ind <= 0 and (v.instance_uuid, v.target) in state.caps))]
    giver_keys = {(v.instance_uuid, v.target) for v in givers}
    protected = [v for v in vols if v.slo is not None
                 and (v.instance_uuid, v.target) not in giver_keys]
    floors = {(v.instance_uuid, v.target): _floor(v, params) for v in givers}
    d = sum(v.ref_ops for v in neighbours)
    need = sum(max(v.slo.min_iops * v.slo.ref_io_bytes
                   / slo_contract.DEFAULT_REF_IO_BYTES, v.ref_ops)
               for v in protected if v.verdict != IDLE)
    need += sum(floors.values())
    room = max(0.0, cap_c - need) if cap_c > 0 else INF
    floor_total = params.min_cap_iops * len(neighbours)
    a, calm, knee, knee_age = (state.allowance, state.calm, state.knee,
                               state.knee_age)
    settle, settle_ind = False, None
    if not neighbours and not givers:
        return _release_all(vols, state, snapshot,
                            'no donor: every disk here needs its SLO',
                            notes, cap_c, need, sticky=sticky)
    if ind_star is not None and ind_star > 0:
        worst = max(judged, key=lambda v: v.ind)
        if state.settle and ind_star < state.settle_ind:
            why = ('%s/%s missed (%s), less than at the cut (Ind %+.2f): '
                   'allowance held at %s while the queue drains' % (
                       worst.instance_uuid[:8], worst.target,
                       _describe(worst), state.settle_ind, _fmt(a)))
            calm = 0
        else:
            base_a = min(a if a is not None else INF, d, room)
            cut = 1 - max(params.min_decrease,
                          params.decrease * min(ind_star, 1.0))
            new_a = max(floor_total, base_a * cut)
            why = ('%s/%s missed (%s): allowance %s -> %.0f = min(held, use '
                   '%.0f, C %.0f - need %.0f) x %.2f' % (
                       worst.instance_uuid[:8], worst.target,
                       _describe(worst), _fmt(a), new_a, d, cap_c, need, cut))
            if a is not None and calm >= params.calm_ticks:
                knee, knee_age = base_a, 0
            a, calm, settle, settle_ind = new_a, 0, True, ind_star
    else:
        calm += 1
        if knee is not None:
            knee_age += 1
            if knee_age >= params.knee_ticks:
                knee, knee_age = None, 0
        if a is None:
            return _release_all(vols, state, snapshot, 'every SLO met',
                                notes, cap_c, need, calm=calm, sticky=sticky)
        if calm < params.calm_ticks:
            why = 'all SLOs met %d window(s): allowance held at %.0f' % (
                calm, a)
        elif ind_star is None or (
                d < a * (1 - params.margin) and all(
                    v.outstanding < params.min_outstanding
                    for v in neighbours)):
            # Released when the SLO volumes are idle, or when the
            # neighbours ask for less than they may (not backlogged): a
            # closed-loop neighbour under its cap still wants more, and
            # freed it would fill the device queue at once (measured).
            return _release_all(
                vols, state, snapshot, 'every SLO met (or idle) for %d '
                'windows and the neighbours use %.0f of %.0f allowed, none '
                'backlogged' % (calm, d, a), notes, cap_c, need, calm=calm,
                sticky=sticky)
        else:
            step = params.increase * (cap_c if cap_c > 0 else max(d, a))
            top = min(room, knee * (1 - params.margin)
                      if knee is not None else INF)
            new_a = max(a, min(a + step, top))
            why = ('all SLOs met %d windows: allowance %.0f -> %.0f (+%.0f, '
                   'at most %s)' % (calm, a, new_a, step, _fmt(top)))
            a = new_a
    caps = split(a, neighbours, state.caps, params)
    caps.update(floors)
    actions, held, out = [], {}, []
    for v in vols:
        key = (v.instance_uuid, v.target)
        if key in caps:
            # Hysteresis may keep the previous cap, never one below a
            # giver's floor (its own SLO).
            cap = max(floors.get(key, 0.0),
                      _hysteresis(caps[key], state.caps.get(key), params))
            held[key] = cap
            actions.append(_cap_action(snapshot, v, cap, a, len(neighbours),
                                       why))
            out.append(dataclasses.replace(v, role='donor', cap=cap))
        else:
            if key in state.caps:
                actions.append(_restore(v, 'protected: %s' % _describe(v)))
            out.append(dataclasses.replace(
                v, role='protected' if v.slo is not None else ''))
    facts = SloFacts(tuple(out), a, cap_c, need)
    new_state = State(a, calm, knee, knee_age, held, sticky, settle,
                      settle_ind)
    return model.Plan(policy='slo', actions=tuple(actions), notes=notes,
                      facts={'slo': facts, 'slo_state': new_state})


def _hysteresis(cap, prev, params):
    if prev is not None and abs(cap - prev) < params.min_change * prev:
        return prev
    return cap


def _qos(snapshot, v):
    inst = snapshot.instances.get(v.instance_uuid)
    for disk in (inst.disks if inst else ()):
        if disk.target == v.target:
            return disk.qos or {}
    return {}


def _self_limited(snapshot, v):
    """Its own static ceiling binds (b >= 0.95 x total_iops_sec) and
    explains its latency: with N in flight a cap X alone makes it wait
    N / X on average, N * r / X for its statistic (r: statistic / mean,
    as in _floor); holding others back cannot bring that below L."""
    static = _int(_qos(snapshot, v).get('total_iops_sec'))
    if not static or v.ops < 0.95 * static:
        return False
    r = 1.0
    if v.latency_ms and v.mean_latency_ms > 0:
        r = max(1.0, v.latency_ms / v.mean_latency_ms)
    return v.outstanding * r / static * 1e3 >= v.slo.latency_ms


def _iotune(snapshot, v, cap):
    """The iotune dict for a cap in ref ops: total_iops_sec in ops of the
    disk's size (its SLO's ref size, else 16 KiB), never above the static
    ceiling of its QoS spec; the spec's bandwidth ceilings kept; no burst
    keys (QEMU's default bucket, avg / 10)."""
    size = (v.slo.ref_io_bytes if v.slo is not None
            else slo_contract.DEFAULT_REF_IO_BYTES)
    iops = cap * slo_contract.DEFAULT_REF_IO_BYTES / float(size)
    qos = _qos(snapshot, v)
    static = _int(qos.get('total_iops_sec'))
    if static:
        iops = min(iops, static)
    value = {'total_iops_sec': max(1, int(math.ceil(iops - 1e-6))),
             'size_iops_sec': int(size)}
    for key in ('total_bytes_sec', 'read_bytes_sec', 'write_bytes_sec'):
        if _int(qos.get(key)):
            value[key] = _int(qos.get(key))
    if 'total_bytes_sec' in value:
        value.pop('read_bytes_sec', None)
        value.pop('write_bytes_sec', None)
    return value


def _cap_action(snapshot, v, cap, allowance, n, why):
    if v.slo is None:
        who = 'no SLO: cap %.0f ref IOPS (used %.0f) of allowance %s / %d' % (
            cap, v.ref_ops, _fmt(allowance), n)
    else:
        who = 'beats its SLO (%s): cap %.0f = its floor' % (_describe(v),
                                                           cap)
    return model.Action(
        kind=model.ACTION_DISK_IOTUNE, instance_uuid=v.instance_uuid,
        target=v.target, value=_iotune(snapshot, v, cap), rule=RULE_HOLD,
        reason='%s; %s' % (who, why))


def _restore(v, why):
    return model.Action(
        kind=model.ACTION_DISK_IOTUNE, instance_uuid=v.instance_uuid,
        target=v.target, value=model.ORIGINAL, rule=RULE_RELEASE,
        reason='original iotune back: %s' % why)


def _release_all(vols, state, snapshot, why, notes=(), cap_c=0.0, need=0.0,
                 calm=0, sticky=None):
    actions = tuple(_restore(v, why) for v in vols
                    if (v.instance_uuid, v.target) in state.caps)
    out = tuple(dataclasses.replace(
        v, role='protected' if v.slo is not None else '') for v in vols)
    return model.Plan(
        policy='slo', actions=actions, notes=notes,
        facts={'slo': SloFacts(out, None, cap_c, need),
               'slo_state': State(None, calm, state.knee, state.knee_age,
                                  sticky=state.sticky if sticky is None
                                  else sticky)})


def _describe(v):
    if v.ind is None:
        return 'idle'
    lat = '?' if v.latency_ms is None else '%.1f' % v.latency_ms
    return ('b %.0f/%g, %s %s/%gms, N %.1f, Ind %+.2f' % (
        v.ops, v.slo.min_iops, v.stat, lat, v.slo.latency_ms,
        v.outstanding, v.ind))


def _fmt(x):
    return 'free' if x is None else ('inf' if x == INF else '%.0f' % x)


def _int(raw):
    try:
        return int(float(raw)) if raw not in (None, '') else 0
    except (TypeError, ValueError):
        return 0


def params_from_conf(conf):
    g = conf['host_agent_policy.slo']
    return Params(**{f.name: getattr(g, f.name)
                     for f in dataclasses.fields(Params)})


class SloPolicy(base.Policy):
    """Thin wrapper: keeps the State between calls; the core is pure."""
    name = 'slo'

    def __init__(self, conf):
        super().__init__(conf)
        self.state = State()

    def decide(self, snapshot):
        plan = plan_slo(snapshot, params_from_conf(self.conf), self.state)
        self.state = plan.facts['slo_state']
        return plan
