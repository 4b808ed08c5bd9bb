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
"""I-Balancer on KVM: per-event delays become per-VM live iotune caps.

Description:
    I-Balancer (seed 003) counts each vCPU's I/O events in a window of S
    of its own runtime (masking), keeps the I/O-intensive ones (VR/PR >=
    alpha), and when their event counts deviate by more than beta (Eq. 2)
    pairs the heaviest with the lightest and delays every I/O event of the
    heavy half (Eqs. 4-5, 200 us on average). No user-space hook delays
    one virtio kick, so here each target vCPU's delay d becomes a rate:
    a closed-loop sender of r events/s slowed by d per event sends
    r' = r / (1 + r d); the VM's rate falls by the events-weighted mean of
    r'/r over its vCPUs, and that fraction of its measured disk throughput
    is written as a live iotune cap (total_iops_sec in 16 KiB operations).
Requirements:
    Per-vCPU events, run share and window from the collector; the
    ``disk_iotune`` knob (libvirt, the simulator); block counters.
Limitations:
    Events are the vCPU's I/O wake-ups (the collector's E_n), not virtio
    kicks; VR (runtime of segments with events) is estimated from events
    and CPU per activation; the window is the agent tick, S-masking is
    prorated within it; rate caps act per VM and per tick, not per event
    and per vCPU; no NIC cap (the snapshot has no interface counters).
    See docs/ibalancer.md.
Spec URL:
    ../shared/seeds/003-ibalancer.md, sections 2.6-2.9, 3 and 6.
"""

import dataclasses
import math
import typing

from host_agent import model
from host_agent.policies import base
from iosched.contract import slo

RULE_CAP = 'ibalancer.cap'
RULE_HOLD = 'ibalancer.hold'
RULE_RELEASE = 'ibalancer.release'


@dataclasses.dataclass(frozen=True)
class Params:
    mask_slice_ms: float = 30.0     # S; 0 = no masking (per-second counts)
    alpha: float = 30.0             # % VR/PR for I/O-intensive
    alpha_hysteresis: float = 5.0   # % points: leave the pool below a - h
    beta: float = 10.0              # % D/n (mean abs. deviation / mean)
    release_fraction: float = 0.7   # calm when D/n <= beta * this
    base_delay_us: float = 200.0
    ei_weight: float = 0.25         # weight of the newest EI sample
    min_events: int = 10            # events in a tick to be tracked
    calm_ticks: int = 2             # calm ticks before caps are given back
    increase: float = 0.1           # give-back per calm tick (x cap)
    min_cap_iops: float = 10.0      # lowest cap, 16 KiB ops
    min_change: float = 0.05        # smaller cap moves are not written


@dataclasses.dataclass(frozen=True)
class State:
    ei_us: typing.Mapping[tuple, float] = dataclasses.field(
        default_factory=dict)       # (uuid, vcpu) -> EWMA inter-event us
    io: typing.Mapping[tuple, bool] = dataclasses.field(
        default_factory=dict)       # (uuid, vcpu) -> classed I/O last tick
    caps: typing.Mapping[tuple, float] = dataclasses.field(
        default_factory=dict)       # (uuid, disk target) -> cap, 16 KiB ops
    free: typing.Mapping[tuple, float] = dataclasses.field(
        default_factory=dict)       # (uuid, disk target) -> use uncapped
    triggered: bool = False         # Eq. 2 held and not yet calm
    calm: int = 0                   # consecutive calm ticks


@dataclasses.dataclass(frozen=True)
class VcpuView:
    """One tracked vCPU in one control period, as the policy saw it."""
    instance_uuid: str
    vcpu: int
    events: int                     # in the tick
    pr_s: float                     # own runtime in the tick (PR)
    vr_pr: float                    # % of PR in segments with events
    io: bool                        # in CONTROL-POOL
    en: float                       # EN per masked window
    masked: bool                    # ran >= S per period
    ei_us: float                    # EWMA inter-event interval
    rate: float                     # events/s (r)
    delay_us: float = 0.0           # Eq. 5; 0: not a target
    pair: str = ''                  # 'uuid8/vcpu' of the reference
    pair_ei_us: float = 0.0         # the reference's EI


@dataclasses.dataclass(frozen=True)
class IbFacts:
    vcpus: tuple                    # tuple[VcpuView], TRACK-POOL
    n: int                          # |CONTROL-POOL|
    period_ms: float                # S x |TRACK-POOL|
    d_n: float                      # Eq. 2 / n, %
    verdict: str                    # 'trigger' | 'hold' | 'calm' | 'idle'
    drv_us: float = 0.0
    vm_fraction: typing.Mapping[str, float] = dataclasses.field(
        default_factory=dict)       # uuid -> r'/r of the VM


# Eq. 1 (VR/PR, %) on KVM: VR is the runtime of run segments in which the
# vCPU handled an I/O event. Reading: each event takes one average run
# segment (CPU per activation, the collector's burst_us), so
# VR ~= min(PR, events x burst); without a burst figure a vCPU with events
# counts VR = PR. A pure I/O vCPU is ~100 %, a CPU burner with no events 0.
def vr_pr(events, pr_s, burst_us):
    if pr_s <= 0 or events <= 0:
        return 0.0
    if burst_us <= 0:
        return 100.0
    return min(100.0, 100.0 * events * burst_us * 1e-6 / pr_s)


# Eq. 1 with hysteresis: in the pool iff VR/PR >= alpha, and a vCPU
# already in it stays while VR/PR >= alpha - h (no flapping at alpha).
def classify(vrpr, was_io, params):
    limit = params.alpha - (params.alpha_hysteresis if was_io else 0.0)
    return vrpr >= limit


# Masking on KVM (window = the agent tick W, period P = S x n): the paper
# counts a vCPU's events until it has run S in the period. Reading
# (events spread evenly over its runtime): EN = events x min(S / PR,
# P / W), i.e. the events of min(S, its runtime in one period). S = 0:
# no masking, EN = events per second.
def masked_en(events, pr_s, window_s, s_ms, period_ms):
    if window_s <= 0:
        return 0.0
    if s_ms <= 0 or pr_s <= 0:
        return events / window_s
    return events * min(s_ms / 1e3 / pr_s, period_ms / 1e3 / window_s)


# EI: EWMA of the inter-event interval (us); a tick's sample is its mean
# interval W / events; the first sample seeds the average.
def ewma(prev, sample, weight):
    return sample if prev is None else weight * sample + (1 - weight) * prev


# Eq. 2, per-vCPU normalised (digest gap 1): D/n = 100 x sum|EN_i - m| /
# (m n) = the relative mean absolute deviation in %, so beta does not
# depend on the pool size. Fewer than 2 vCPUs or m = 0: 0.
def deviation(ens):
    n = len(ens)
    if n < 2:
        return 0.0
    m = sum(ens) / n
    if m <= 0:
        return 0.0
    return 100.0 * sum(abs(e - m) for e in ens) / (m * n)


# Eqs. 4-5, difference reading (digest 2.8): sort by ascending EI (most
# frequent first); targets = the first floor(n/2), references = the last
# floor(n/2) (odd n: the median is untouched); target i is paired with
# reference n-1-i;
#   DRV = mean(EI references) - mean(EI targets)
#   delay_i = base x (EI_(n-1-i) - EI_i) / DRV     (mean over targets = base)
# DRV <= 0 (no heavier group): no delays. Returns (DRV, [(i, j, delay)]).
def delays(eis, base_us):
    order = sorted(range(len(eis)), key=lambda k: (eis[k], k))
    half = len(eis) // 2
    if half == 0:
        return 0.0, []
    tgt = order[:half]
    ref = list(reversed(order))[:half]
    drv = (sum(eis[k] for k in ref) - sum(eis[k] for k in tgt)) / half
    if drv <= 0:
        return drv, []
    return drv, [(t, r, base_us * (eis[r] - eis[t]) / drv)
                 for t, r in zip(tgt, ref)]


# Delay to rate (digest 3): a closed-loop sender of r events/s whose every
# event waits d more sends r' = r / (1 + r d).
def delayed_rate(rate, delay_us):
    return rate / (1.0 + rate * delay_us * 1e-6)


# A VM's delay: its vCPUs' delays weighted by their events (a
# non-target's is 0), i.e. the mean delay of one of the VM's events.
def vm_delay(views):
    total = sum(v.events for v in views)
    if total <= 0:
        return 0.0
    return sum(v.events * v.delay_us for v in views) / total


# The VM's rate fraction for a disk whose natural request rate is r
# (digest 3, "iops x 1/(1 + iops d) for disk"): r'/r = 1 / (1 + r d).
def vm_fraction(rate, delay_us):
    if rate <= 0:
        return 1.0
    return delayed_rate(rate, delay_us) / rate


def _short(uuid, vcpu):
    return '%s/%s' % (uuid[:8], vcpu)


def _track(snapshot, params, state):
    """TRACK-POOL views (EN, EI, class) and the new EI/class maps."""
    w = snapshot.window_s
    raw = [v for v in snapshot.vcpus if v.events >= params.min_events]
    period_ms = params.mask_slice_ms * len(raw)
    views, ei, io = [], {}, {}
    for v in sorted(raw, key=lambda v: (v.instance_uuid, v.vcpu)):
        key = (v.instance_uuid, v.vcpu)
        pr = v.run_share * w
        vrpr = vr_pr(v.events, pr, v.burst_us)
        is_io = classify(vrpr, state.io.get(key, False), params)
        ei[key] = ewma(state.ei_us.get(key), w * 1e6 / v.events,
                       params.ei_weight)
        io[key] = is_io
        views.append(VcpuView(
            v.instance_uuid, v.vcpu, v.events, pr, vrpr, is_io,
            masked_en(v.events, pr, w, params.mask_slice_ms, period_ms),
            params.mask_slice_ms > 0 and pr * period_ms >= (
                params.mask_slice_ms * w), ei[key], v.events / w))
    return views, period_ms, ei, io


def _disks(snapshot):
    """(uuid, target) -> (DiskInfo, measured 16 KiB ops/s)."""
    rates = {(d.instance_uuid, d.target): d.ref_ops_per_s()
             for d in snapshot.disks}
    out = {}
    for inst in snapshot.instances.values():
        for disk in inst.disks:
            key = (inst.uuid, disk.target)
            out[key] = (disk, rates.get(key, 0.0))
    return out


def _requests_per_ref_op(snapshot):
    """(uuid, target) -> requests per 16 KiB op in the window (1 for
    requests of 16 KiB or less)."""
    out = {}
    for d in snapshot.disks:
        ref = d.ref_ops_per_s()
        out[(d.instance_uuid, d.target)] = d.iops / ref if ref > 0 else 1.0
    return out


def _static_iops(disk):
    try:
        return int(float(disk.qos.get('total_iops_sec') or 0))
    except (TypeError, ValueError):
        return 0


def _floor(disk, params):
    """A cap never goes below min_cap_iops, nor below an SLO volume's
    floor B (in 16 KiB ops), which the SLO policy defends."""
    floor = params.min_cap_iops
    if disk.slo is not None:
        floor = max(floor, disk.slo.min_iops * disk.slo.ref_io_bytes /
                    float(slo.DEFAULT_REF_IO_BYTES))
    return floor


def iotune(disk, cap):
    """The iotune written for a cap (16 KiB ops): total_iops_sec with
    size_iops_sec 16 KiB, never above the disk's static QoS ceiling."""
    iops = int(math.ceil(cap - 1e-6))
    static = _static_iops(disk)
    if static:
        iops = min(iops, static)
    return {'total_iops_sec': max(1, iops),
            'size_iops_sec': slo.DEFAULT_REF_IO_BYTES}


def _describe(v):
    return ('EN %.0f/%s (%d events, PR %.0fms), EI %.0fus, VR/PR %.0f%%'
            % (v.en, 'S' if v.masked else 'period', v.events, v.pr_s * 1e3,
               v.ei_us, v.vr_pr))


# Control law (once per tick; the control period is S x n but never
# shorter than the tick; pool = I/O-intensive tracked vCPUs):
#   D/n > beta (trigger):
#       targets get delay_i (Eqs. 4-5); a VM with a target:
#         d = its vCPUs' delays weighted by their events (non-targets 0)
#         per busy disk: F = its use before it was capped (16 KiB ops/s;
#             raised, never lowered, while capped), r = F in requests/s
#         f = r'/r = 1 / (1 + r d)    (digest 3: iops / (1 + iops d))
#         cap = max(floor, f x F)                          ibalancer.cap
#       a capped VM with no target vCPU: no delay, cap removed
#                                                      ibalancer.release
#   beta x release_fraction < D/n <= beta, after a trigger: caps held
#                                                         ibalancer.hold
#   D/n <= beta x release_fraction (calm), or pool < 2: held for
#       calm_ticks ticks, then each cap x (1 + increase) per tick
#       (ibalancer.hold), removed once its disk uses < 0.9 of it
#       (ibalancer.release); no cap left = termination (the paper's
#       delays back to 0).
# The cap is the delayed rate of the natural one, not a cut of the
# current use, so it does not compound tick after tick (the average delay
# is base_delay_us whatever the gap, Eq. 5). floor: min_cap_iops, an SLO
# volume's B. Written only when a cap moves by min_change (each iotune
# write resets QEMU's buckets).
def plan_ibalancer(snapshot, params=Params(), state=State()):
    """Return a model.Plan; facts 'ibalancer' and 'ibalancer_state'."""
    if snapshot.window_s <= 0:
        return model.Plan(policy='ibalancer', facts={
            'ibalancer': IbFacts((), 0, 0.0, 0.0, 'idle'),
            'ibalancer_state': state})
    views, period_ms, ei, io = _track(snapshot, params, state)
    pool = [v for v in views if v.io]
    d_n = deviation([v.en for v in pool])
    n = len(pool)
    hi, lo = params.beta, params.beta * params.release_fraction
    head = ('pool n=%d (tracked %d, S %g ms, period %.0f ms), D/n %.1f%% '
            '(beta %g%%, release <= %.1f%%)' % (n, len(views),
                                                params.mask_slice_ms,
                                                max(period_ms,
                                                    snapshot.window_s * 1e3),
                                                d_n, hi, lo))
    disks = _disks(snapshot)
    per_op = _requests_per_ref_op(snapshot)
    caps = dict(state.caps)
    free = dict(state.free)
    actions = []
    drv = 0.0
    fractions = {}
    if n >= 2 and d_n > hi:
        verdict, calm = 'trigger', 0
        drv, pairs = delays([v.ei_us for v in pool], params.base_delay_us)
        pool = list(pool)
        for t, r, d in pairs:
            pool[t] = dataclasses.replace(
                pool[t], delay_us=d,
                pair=_short(pool[r].instance_uuid, pool[r].vcpu),
                pair_ei_us=pool[r].ei_us)
        by_key = {(v.instance_uuid, v.vcpu): v for v in pool}
        views = [by_key.get((v.instance_uuid, v.vcpu), v) for v in views]
        for uuid in sorted({v.instance_uuid for v in views}):
            mine = [v for v in views if v.instance_uuid == uuid]
            tgts = [v for v in mine if v.delay_us > 0]
            if not tgts:
                continue
            mdisks = [(key, d, used) for key, (d, used) in sorted(
                disks.items()) if key[0] == uuid and used > 0]
            d_vm = vm_delay(mine)
            why_v = '; '.join(
                'vCPU%d %s, pair %s EI %.0fus, delay %.0fus'
                % (v.vcpu, _describe(v), v.pair, v.pair_ei_us, v.delay_us)
                for v in tgts)
            for key, disk, used in mdisks:
                held = caps.get(key)
                base_ops = _free(key, used, caps, free)
                free[key] = base_ops
                # r: the disk's natural request rate (uncapped).
                rate = base_ops * per_op.get(key, 1.0)
                f = vm_fraction(rate, d_vm)
                fractions[uuid] = min(f, fractions.get(uuid, 1.0))
                cap = max(_floor(disk, params), f * base_ops)
                if held is not None and abs(cap - held) < (
                        params.min_change * held):
                    cap = held
                caps[key] = cap
                actions.append(model.Action(
                    kind=model.ACTION_DISK_IOTUNE, instance_uuid=uuid,
                    target=disk.target, value=iotune(disk, cap),
                    rule=RULE_CAP,
                    reason='D/n %.1f%% > beta %g%%, DRV %.0fus; %s; VM '
                           'delay %.0fus, r %.0f->%.0f req/s, r\'/r %.3f: cap '
                           '%.0f = max(floor %.0f, %.3f x uncapped %.0f) '
                           'ops/s (16 KiB; used %.0f%s); %s' % (
                               d_n, hi, drv, why_v, d_vm, rate,
                               delayed_rate(rate, d_vm), f, cap,
                               _floor(disk, params), f, base_ops, used,
                               '' if held is None else ', held %.0f' % held,
                               head)))
        # A capped VM that is no longer a target has no delay this period
        # (the paper recomputes every delay each period): cap removed.
        done = {(a.instance_uuid, a.target) for a in actions}
        for key in sorted(set(caps) - done):
            used = disks.get(key, (None, 0.0))[1]
            actions.append(model.Action(
                kind=model.ACTION_DISK_IOTUNE, instance_uuid=key[0],
                target=key[1], value=model.ORIGINAL, rule=RULE_RELEASE,
                reason='%s > beta; not a target this period (no delay): cap '
                       '%.0f ops/s removed (used %.0f), original iotune back'
                       % (head, caps.pop(key), used)))
            free.pop(key, None)
    elif n >= 2 and d_n > lo and state.triggered:
        verdict, calm = 'hold', 0
        actions += _holds(snapshot, caps, disks, set(),
                          '%s within the hysteresis band' % head)
    else:
        calm = state.calm + 1
        verdict = 'calm' if caps else 'idle'
        why = '%s: calm %d/%d tick(s)' % (
            head if n >= 2 else 'pool n=%d < 2' % n, calm,
            params.calm_ticks)
        if calm < params.calm_ticks:
            actions += _holds(snapshot, caps, disks, set(), why)
        else:
            actions += _give_back(caps, disks, set(), params, why)
    free = {k: v for k, v in free.items() if k in caps}
    new_state = State(ei_us=ei, io=io, caps=caps, free=free,
                      triggered=bool(caps) and verdict != 'idle', calm=calm)
    facts = IbFacts(tuple(views), n, period_ms, d_n, verdict, drv,
                    fractions)
    return model.Plan(policy='ibalancer', actions=tuple(actions),
                      facts={'ibalancer': facts,
                             'ibalancer_state': new_state})


def _free(key, used, caps, free):
    """The disk's use before it was capped (16 KiB ops/s): the use at the
    first cap, raised (never lowered) while capped. A window below the
    cap (an iotune write resets QEMU's buckets; a guest pauses) must not
    lower it: the cap would follow the dip down, tick after tick."""
    if caps.get(key) is None or key not in free:
        return used
    return max(free[key], used)


def _give_back(caps, disks, done, params, why):
    """Each held cap (not in ``done``) x (1 + increase), or removed
    (ORIGINAL) when its disk used less than 0.9 of it. Updates ``caps``."""
    out = []
    for key in sorted(caps):
        if key in done:
            continue
        disk, used = disks.get(key, (None, 0.0))
        held = caps[key]
        if disk is None or used < 0.9 * held:
            del caps[key]
            out.append(model.Action(
                kind=model.ACTION_DISK_IOTUNE, instance_uuid=key[0],
                target=key[1], value=model.ORIGINAL, rule=RULE_RELEASE,
                reason='%s; disk used %.0f < 0.9 x cap %.0f ops/s: original '
                       'iotune back' % (why, used, held)))
            continue
        cap = held * (1 + params.increase)
        caps[key] = cap
        out.append(model.Action(
            kind=model.ACTION_DISK_IOTUNE, instance_uuid=key[0],
            target=key[1], value=iotune(disk, cap), rule=RULE_HOLD,
            reason='%s; give back: cap %.0f -> %.0f ops/s (x%.2f), used %.0f'
                   % (why, held, cap, 1 + params.increase, used)))
    return out


def _holds(snapshot, caps, disks, done, why):
    out = []
    for key in sorted(caps):
        if key in done or key not in disks:
            continue
        disk, used = disks[key]
        out.append(model.Action(
            kind=model.ACTION_DISK_IOTUNE, instance_uuid=key[0],
            target=key[1], value=iotune(disk, caps[key]), rule=RULE_HOLD,
            reason='%s: cap %.0f ops/s held (used %.0f)' % (why, caps[key],
                                                            used)))
    return out


def params_from_conf(conf):
    g = conf['host_agent_policy.ibalancer']
    return Params(**{f.name: getattr(g, f.name)
                     for f in dataclasses.fields(Params)})


class IBalancerPolicy(base.Policy):
    """Thin wrapper: keeps the State between calls; the core is pure."""
    name = 'ibalancer'

    def __init__(self, conf):
        super().__init__(conf)
        self.state = State()

    def decide(self, snapshot):
        plan = plan_ibalancer(snapshot, params_from_conf(self.conf),
                              self.state)
        self.state = plan.facts['ibalancer_state']
        return plan
