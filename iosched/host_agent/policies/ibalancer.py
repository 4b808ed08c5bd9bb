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
    Events are the disk requests the VM completed (block stats, shared
    among its vCPUs by wake-ups; ``event_source = wakeups``: the vCPU's
    I/O wake-ups, biased), not virtio kicks (contract.ibalancer); VR
    (runtime of segments with events) is estimated from wake-ups and CPU
    per activation; the window is the agent tick, S-masking is
    prorated within it; rate caps act per VM and per tick, not per event
    and per vCPU; no NIC cap (the snapshot has no interface counters).
    See docs/ibalancer.md.
Spec URL:
    ../shared/seeds/003-ibalancer.md, sections 2.6-2.9, 3 and 6.

Here: the control loop (``plan_ibalancer`` and its named steps) and the
policy; the equations in ``ibalancer_equations``.
"""

import dataclasses
import typing

from iosched.contract import ibalancer as ib_contract
from iosched.contract import knob_kinds
from iosched.host_agent import model
from iosched.host_agent.policies import base
from iosched.host_agent.policies import ibalancer_disks
from iosched.host_agent.policies import ibalancer_equations as eq

RULE_CAP = 'ibalancer.cap'
RULE_HOLD = 'ibalancer.hold'
RULE_RELEASE = 'ibalancer.release'


@dataclasses.dataclass(frozen=True)
class Params:
    """[host_agent_policy.ibalancer] (iosched/host_agent/conf/ibalancer.py)."""
    event_source: str               # contract.ibalancer.EVENT_SOURCES
    mask_slice_ms: float            # S; 0 = no masking (per-second counts)
    alpha: float                    # % VR/PR for I/O-intensive
    alpha_hysteresis: float         # % points: leave the pool below a - h
    beta: float                     # % D/n (mean abs. deviation / mean)
    release_fraction: float         # calm when D/n <= beta * this
    base_delay_us: float
    ei_weight: float                # weight of the newest EI sample
    min_events: int                 # events in a tick to be tracked
    calm_ticks: int                 # calm ticks before caps are given back
    increase: float                 # give-back per calm tick (x cap)
    min_cap_iops: float             # lowest cap, 16 KiB ops
    min_change: float               # smaller cap moves are not written


@dataclasses.dataclass(frozen=True)
class State:
    """What the loop carries from one tick to the next (``Plan.state``)."""
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
    wakeups: int = 0                # the vCPU's I/O wake-ups in the tick


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


@dataclasses.dataclass
class Tick:
    """One tick's disks and the caps being decided (updated in place)."""
    disks: dict                     # (uuid, target) -> (DiskInfo, ops/s)
    per_op: dict                    # (uuid, target) -> requests per op
    caps: dict                      # (uuid, target) -> cap, 16 KiB ops
    free: dict                      # (uuid, target) -> use uncapped
    head: str                       # the pool and D/n, for reasons


def _short(uuid, vcpu):
    return '%s/%s' % (uuid[:8], vcpu)


def _track(snapshot, params, state):
    """TRACK-POOL views (EN, EI, class) and the new EI/class maps. A
    vCPU's events are those of ``params.event_source`` (contract.
    ibalancer); VR/PR (Eq. 1) stays on its wake-ups, the activations
    whose CPU ``burst_us`` measures.
    """
    w = snapshot.window_s
    events = ib_contract.vcpu_events(params.event_source, snapshot.vcpus,
                                     snapshot.disks)
    raw = [(v, events.get((v.instance_uuid, v.vcpu), 0))
           for v in snapshot.vcpus]
    raw = [(v, n) for v, n in raw if n >= params.min_events]
    period_ms = params.mask_slice_ms * len(raw)
    views, ei, io = [], {}, {}
    for v, n in sorted(raw, key=lambda vn: (vn[0].instance_uuid,
                                             vn[0].vcpu)):
        key = (v.instance_uuid, v.vcpu)
        pr = v.run_share * w
        vrpr = eq.vr_pr(v.events or n, pr, v.burst_us)
        is_io = eq.classify(vrpr, state.io.get(key, False), params)
        ei[key] = eq.ewma(state.ei_us.get(key), w * 1e6 / n,
                          params.ei_weight)
        io[key] = is_io
        views.append(VcpuView(
            v.instance_uuid, v.vcpu, n, pr, vrpr, is_io,
            eq.masked_en(n, pr, w, params.mask_slice_ms, period_ms),
            params.mask_slice_ms > 0 and pr * period_ms >= (
                params.mask_slice_ms * w), ei[key], n / w,
            wakeups=v.events))
    return views, period_ms, ei, io


def _describe(v):
    return ('EN %.0f/%s (%d events, %d wake-ups, PR %.0fms), EI %.0fus, '
            'VR/PR %.0f%%' % (v.en, 'S' if v.masked else 'period', v.events,
                              v.wakeups, v.pr_s * 1e3, v.ei_us, v.vr_pr))


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
# Steps: track the vCPUs (_track), then trigger (_trigger: _delays,
# _cap_vm, _release_untargeted), hold (_holds) or calm down (_calm).
def plan_ibalancer(snapshot, params, state=State()):
    """Return a model.Plan[State]; facts 'ibalancer' (IbFacts). Pure."""
    if snapshot.window_s <= 0:
        return model.Plan(policy='ibalancer', facts={
            'ibalancer': IbFacts((), 0, 0.0, 0.0, 'idle')}, state=state)
    views, period_ms, ei, io = _track(snapshot, params, state)
    pool = [v for v in views if v.io]
    d_n = eq.deviation([v.en for v in pool])
    n = len(pool)
    hi, lo = params.beta, params.beta * params.release_fraction
    tick = Tick(disks=ibalancer_disks.disks(snapshot),
                per_op=ibalancer_disks.requests_per_ref_op(snapshot),
                caps=dict(state.caps), free=dict(state.free),
                head=_head(n, views, period_ms, d_n, snapshot, params))
    drv, fractions = 0.0, {}
    if n >= 2 and d_n > hi:
        verdict, calm = 'trigger', 0
        drv, views, actions, fractions = _trigger(pool, views, d_n, tick,
                                                  params)
    elif n >= 2 and d_n > lo and state.triggered:
        verdict, calm = 'hold', 0
        actions = _holds(snapshot, tick.caps, tick.disks, set(),
                         '%s within the hysteresis band' % tick.head)
    else:
        calm = state.calm + 1
        verdict = 'calm' if tick.caps else 'idle'
        actions = _calm(n, calm, tick, snapshot, params)
    free = {k: v for k, v in tick.free.items() if k in tick.caps}
    new_state = State(ei_us=ei, io=io, caps=tick.caps, free=free,
                      triggered=bool(tick.caps) and verdict != 'idle',
                      calm=calm)
    facts = IbFacts(tuple(views), n, period_ms, d_n, verdict, drv,
                    fractions)
    return model.Plan(policy='ibalancer', actions=tuple(actions),
                      facts={'ibalancer': facts}, state=new_state)


def _head(n, views, period_ms, d_n, snapshot, params):
    return ('pool n=%d (tracked %d, S %g ms, period %.0f ms), D/n %.1f%% '
            '(beta %g%%, release <= %.1f%%)' % (
                n, len(views), params.mask_slice_ms,
                max(period_ms, snapshot.window_s * 1e3), d_n, params.beta,
                params.beta * params.release_fraction))


def _trigger(pool, views, d_n, tick, params):
    """D/n > beta: (DRV, views with their delays, actions, {uuid: r'/r}).
    A capped VM that is no longer a target has no delay this period (the
    paper recomputes every delay each period): its cap is removed.
    """
    drv, pool = _delays(pool, params)
    by_key = {(v.instance_uuid, v.vcpu): v for v in pool}
    views = [by_key.get((v.instance_uuid, v.vcpu), v) for v in views]
    actions, fractions = [], {}
    for uuid in sorted({v.instance_uuid for v in views}):
        actions += _cap_vm(uuid, [v for v in views if v.instance_uuid == uuid],
                           d_n, drv, tick, fractions, params)
    actions += _release_untargeted(actions, tick)
    return drv, views, actions, fractions


def _delays(pool, params):
    """(DRV, the pool with each target's delay and pair, Eqs. 4-5)."""
    drv, pairs = eq.delays([v.ei_us for v in pool], params.base_delay_us)
    pool = list(pool)
    for t, r, d in pairs:
        pool[t] = dataclasses.replace(
            pool[t], delay_us=d,
            pair=_short(pool[r].instance_uuid, pool[r].vcpu),
            pair_ei_us=pool[r].ei_us)
    return drv, pool


def _cap_vm(uuid, mine, d_n, drv, tick, fractions, params):
    """The caps of one VM's busy disks when it has a target vCPU: f x F,
    F its use uncapped (recorded in ``tick``, and r'/r in ``fractions``).
    """
    tgts = [v for v in mine if v.delay_us > 0]
    if not tgts:
        return []
    mdisks = [(key, d, used) for key, (d, used) in sorted(
        tick.disks.items()) if key[0] == uuid and used > 0]
    d_vm = eq.vm_delay(mine)
    why_v = '; '.join(
        'vCPU%d %s, pair %s EI %.0fus, delay %.0fus'
        % (v.vcpu, _describe(v), v.pair, v.pair_ei_us, v.delay_us)
        for v in tgts)
    out = []
    for key, disk, used in mdisks:
        held = tick.caps.get(key)
        base_ops = ibalancer_disks.uncapped(key, used, tick.caps,
                                            tick.free)
        tick.free[key] = base_ops
        # r: the disk's natural request rate (uncapped).
        rate = base_ops * tick.per_op.get(key, 1.0)
        f = eq.vm_fraction(rate, d_vm)
        fractions[uuid] = min(f, fractions.get(uuid, 1.0))
        floor = ibalancer_disks.floor(disk, params)
        cap = max(floor, f * base_ops)
        if held is not None and abs(cap - held) < (
                params.min_change * held):
            cap = held
        tick.caps[key] = cap
        out.append(model.Action(
            kind=knob_kinds.DISK_IOTUNE, instance_uuid=uuid,
            target=disk.target, value=ibalancer_disks.iotune(disk, cap),
            rule=RULE_CAP,
            reason='D/n %.1f%% > beta %g%%, DRV %.0fus; %s; VM '
                   'delay %.0fus, r %.0f->%.0f req/s, r\'/r %.3f: cap '
                   '%.0f = max(floor %.0f, %.3f x uncapped %.0f) '
                   'ops/s (16 KiB; used %.0f%s); %s' % (
                       d_n, params.beta, drv, why_v, d_vm, rate,
                       eq.delayed_rate(rate, d_vm), f, cap,
                       floor, f, base_ops, used,
                       '' if held is None else ', held %.0f' % held,
                       tick.head)))
    return out


def _release_untargeted(actions, tick):
    """Original iotune back on every capped disk ``actions`` do not cap."""
    done = {(a.instance_uuid, a.target) for a in actions}
    out = []
    for key in sorted(set(tick.caps) - done):
        used = tick.disks.get(key, (None, 0.0))[1]
        out.append(model.Action(
            kind=knob_kinds.DISK_IOTUNE, instance_uuid=key[0],
            target=key[1], value=knob_kinds.ORIGINAL, rule=RULE_RELEASE,
            reason='%s > beta; not a target this period (no delay): cap '
                   '%.0f ops/s removed (used %.0f), original iotune back'
                   % (tick.head, tick.caps.pop(key), used)))
        tick.free.pop(key, None)
    return out


def _calm(n, calm, tick, snapshot, params):
    """Calm (or a pool under 2): caps held for calm_ticks ticks, then
    given back.
    """
    why = '%s: calm %d/%d tick(s)' % (
        tick.head if n >= 2 else 'pool n=%d < 2' % n, calm,
        params.calm_ticks)
    if calm < params.calm_ticks:
        return _holds(snapshot, tick.caps, tick.disks, set(), why)
    return _give_back(tick.caps, tick.disks, set(), params, why)


def _give_back(caps, disks, done, params, why):
    """Each held cap (not in ``done``) x (1 + increase), or removed
    (ORIGINAL) when its disk used less than 0.9 of it. Updates ``caps``.
    """
    out = []
    for key in sorted(caps):
        if key in done:
            continue
        disk, used = disks.get(key, (None, 0.0))
        held = caps[key]
        if disk is None or used < 0.9 * held:
            del caps[key]
            out.append(model.Action(
                kind=knob_kinds.DISK_IOTUNE, instance_uuid=key[0],
                target=key[1], value=knob_kinds.ORIGINAL, rule=RULE_RELEASE,
                reason='%s; disk used %.0f < 0.9 x cap %.0f ops/s: original '
                       'iotune back' % (why, used, held)))
            continue
        cap = held * (1 + params.increase)
        caps[key] = cap
        out.append(model.Action(
            kind=knob_kinds.DISK_IOTUNE, instance_uuid=key[0],
            target=key[1], value=ibalancer_disks.iotune(disk, cap),
            rule=RULE_HOLD,
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
            kind=knob_kinds.DISK_IOTUNE, instance_uuid=key[0],
            target=key[1], value=ibalancer_disks.iotune(disk, caps[key]),
            rule=RULE_HOLD,
            reason='%s: cap %.0f ops/s held (used %.0f)' % (why, caps[key],
                                                            used)))
    return out


class IBalancerPolicy(base.Policy):
    """Thin wrapper over the pure core; the agent keeps its State."""
    name = 'ibalancer'
    Params = Params

    def decide(self, snapshot, state=None):
        return plan_ibalancer(snapshot, self.params(),
                              State() if state is None else state)
