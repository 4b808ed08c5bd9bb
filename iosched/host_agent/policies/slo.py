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

Here: the loop (``plan_slo``, its control law and named steps) and the
policy; the judgement of each disk's window in ``slo_window``, the split
of the allowance into caps and their iotune in ``slo_caps``.
"""

import dataclasses
import typing

from iosched.contract import knob_kinds
from iosched.contract import slo as slo_contract
from iosched.host_agent import model
from iosched.host_agent.policies import base
from iosched.host_agent.policies import slo_caps
from iosched.host_agent.policies import slo_window

RULE_HOLD = 'slo.hold_back'
RULE_RELEASE = 'slo.release'
INF = float('inf')


@dataclasses.dataclass(frozen=True)
class Params:
    """[host_agent_policy.slo] (iosched/host_agent/conf/slo.py)."""
    margin: float                  # beaten by this much: a donor; hysteresis
    decrease: float                # gamma: cut = 1 - gamma * min(Ind, 1)
    min_decrease: float            # ... but at least this much per miss
    increase: float                # delta: give-back step, share of C
    calm_ticks: int                # met windows before giving back
    min_cap_iops: float            # a held-back neighbour's floor (ref ops)
    min_change: float              # smaller relative moves are not written
    min_outstanding: float         # b < B counts only when backlogged
    min_reqs: int                  # fewer completions: latency not judged
    knee_ticks: int                # how long the allowance of a miss caps


@dataclasses.dataclass(frozen=True)
class State:
    """What the loop carries from one window to the next (``Plan.state``)."""
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
class Pool:
    """One window's donors and needs (the control law's terms)."""
    neighbours: tuple              # Volumes without an SLO
    givers: tuple                  # SLO volumes that give (held at floor)
    floors: typing.Mapping[tuple, float]   # giver key -> its floor
    d: float                       # the neighbours' use, ref ops
    need: float                    # the other SLO volumes' + givers' floors
    room: float                    # C - need (inf: C unknown)
    capacity: float                # C (0: unknown)
    floor_total: float             # |neighbours| * min_cap


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
# Steps: judge every disk (slo_window), set the donors and needs (_pool),
# move A (_on_miss or _on_met), then cap the donors at their share of A
# (_hold_back) or give every cap back (_release_all).
def plan_slo(snapshot, params, state=State()):
    """Return a model.Plan[State] with facts 'slo' (SloFacts). Pure."""
    vols = slo_window.judge_all(snapshot, params)
    if not any(v.slo is not None for v in vols):
        return _release_all(vols, state, 'no SLO volume here')
    notes, judged = _judged(snapshot, vols)
    sticky = _sticky(vols, state, params)
    pool = _pool(vols, state, sticky, snapshot.disk_capacity_iops, params)
    if not pool.neighbours and not pool.givers:
        return _release_all(vols, state,
                            'no donor: every disk here needs its SLO',
                            notes, pool, sticky=sticky)
    ind_star = max((v.ind for v in judged), default=None)
    if ind_star is not None and ind_star > 0:
        loop, why = _on_miss(state, judged, ind_star, pool, params)
    else:
        loop, why, release = _on_met(state, ind_star, pool, params)
        if release:
            return _release_all(vols, state, why, notes, pool,
                                calm=loop.calm, sticky=sticky)
    return _hold_back(snapshot, vols, state, loop, sticky, pool, why, notes,
                      params)


def _judged(snapshot, vols):
    """(notes, the SLO volumes Ind* is taken over). A volume held by its
    own static QoS ceiling is not helped by holding back others: said, and
    left out of Ind*.
    """
    notes = tuple(
        'slo: %s/%s has a %s SLO but no latency histogram: judged on the '
        'mean' % (v.instance_uuid, v.target, v.slo.latency_stat)
        for v in vols if v.slo is not None and v.ind is not None
        and v.stat != v.slo.latency_stat)
    limited = [v for v in vols if v.verdict == slo_window.MISSED
               and slo_window.self_limited(snapshot, v)]
    notes += tuple('slo: %s/%s misses its SLO at its own QoS ceiling '
                   '(total_iops_sec): the ceiling, not its neighbours, '
                   'holds it' % (v.instance_uuid, v.target) for v in limited)
    return notes, [v for v in vols if v.ind is not None and v not in limited]


def _sticky(vols, state, params):
    """{key: windows left} of the SLO volumes that may not give: one that
    missed while giving, or that runs at the cap it was given (it wants
    more: the host cannot see what waits inside the guest), stops giving
    for knee_ticks windows.
    """
    sticky = {k: n - 1 for k, n in state.sticky.items() if n > 1}
    for v in vols:
        held = state.caps.get(v.key)
        if v.slo is not None and held is not None and (
                v.verdict == slo_window.MISSED or v.ref_ops >= 0.95 * held):
            sticky[v.key] = params.knee_ticks
    return sticky


def _pool(vols, state, sticky, cap_c, params):
    """The window's Pool. An SLO volume beating its SLO by the margin
    gives; once giving, it keeps giving while it meets its SLO (no
    flapping at the margin).
    """
    neighbours = [v for v in vols if v.slo is None]
    givers = [v for v in vols if v.slo is not None and v.ind is not None
              and v.key not in sticky
              and (v.ind <= -params.margin or (
                  v.ind <= 0 and v.key in state.caps))]
    giver_keys = {v.key for v in givers}
    protected = [v for v in vols if v.slo is not None
                 and v.key not in giver_keys]
    floors = {v.key: slo_window.floor(v, params) for v in givers}
    ref = slo_contract.DEFAULT_REF_IO_BYTES
    need = sum(max(v.slo.min_iops * v.slo.ref_io_bytes / ref, v.ref_ops)
               for v in protected
               if v.verdict != slo_window.IDLE)
    need += sum(floors.values())
    return Pool(neighbours=tuple(neighbours), givers=tuple(givers),
                floors=floors, d=sum(v.ref_ops for v in neighbours),
                need=need,
                room=max(0.0, cap_c - need) if cap_c > 0 else INF,
                capacity=cap_c,
                floor_total=params.min_cap_iops * len(neighbours))


def _on_miss(state, judged, ind_star, pool, params):
    """(the loop's next State, why) after a window with a miss: wait for
    the queue to drain right after a cut, else cut A (a knee when the
    loop was giving back).
    """
    worst = max(judged, key=lambda v: v.ind)
    a = state.allowance
    if state.settle and ind_star < state.settle_ind:
        why = ('%s/%s missed (%s), less than at the cut (Ind %+.2f): '
               'allowance held at %s while the queue drains' % (
                   worst.instance_uuid[:8], worst.target,
                   slo_window.describe(worst), state.settle_ind, _fmt(a)))
        return dataclasses.replace(state, calm=0, settle=False,
                                   settle_ind=None), why
    base_a = min(a if a is not None else INF, pool.d, pool.room)
    cut = 1 - max(params.min_decrease, params.decrease * min(ind_star, 1.0))
    new_a = max(pool.floor_total, base_a * cut)
    why = ('%s/%s missed (%s): allowance %s -> %.0f = min(held, use '
           '%.0f, C %.0f - need %.0f) x %.2f' % (
               worst.instance_uuid[:8], worst.target,
               slo_window.describe(worst), _fmt(a), new_a, pool.d,
               pool.capacity, pool.need, cut))
    knee, knee_age = state.knee, state.knee_age
    if a is not None and state.calm >= params.calm_ticks:
        knee, knee_age = base_a, 0
    return dataclasses.replace(state, allowance=new_a, calm=0, knee=knee,
                               knee_age=knee_age, settle=True,
                               settle_ind=ind_star), why


def _on_met(state, ind_star, pool, params):
    """(the loop's next State, why, release) after a window with every SLO
    met or idle: hold A for calm_ticks windows, then release (why is the
    reason) or give back additively up to the knee.
    """
    calm = state.calm + 1
    knee, knee_age = state.knee, state.knee_age
    if knee is not None:
        knee_age += 1
        if knee_age >= params.knee_ticks:
            knee, knee_age = None, 0
    a = state.allowance
    loop = dataclasses.replace(state, calm=calm, knee=knee,
                               knee_age=knee_age, settle=False,
                               settle_ind=None)
    if a is None:
        return loop, 'every SLO met', True
    if calm < params.calm_ticks:
        return loop, ('all SLOs met %d window(s): allowance held at %.0f'
                      % (calm, a)), False
    if ind_star is None or (
            pool.d < a * (1 - params.margin) and all(
                v.outstanding < params.min_outstanding
                for v in pool.neighbours)):
        # Released when the SLO volumes are idle, or when the neighbours
        # ask for less than they may (not backlogged): a closed-loop
        # neighbour under its cap still wants more, and freed it would
        # fill the device queue at once (measured).
        return loop, ('every SLO met (or idle) for %d windows and the '
                      'neighbours use %.0f of %.0f allowed, none '
                      'backlogged' % (calm, pool.d, a)), True
    step = params.increase * (pool.capacity if pool.capacity > 0
                              else max(pool.d, a))
    top = min(pool.room, knee * (1 - params.margin)
              if knee is not None else INF)
    new_a = max(a, min(a + step, top))
    why = ('all SLOs met %d windows: allowance %.0f -> %.0f (+%.0f, at '
           'most %s)' % (calm, a, new_a, step, _fmt(top)))
    return dataclasses.replace(loop, allowance=new_a), why, False


def _hold_back(snapshot, vols, state, loop, sticky, pool, why, notes,
               params):
    """The plan that caps every donor at its share of A (a giver at its
    floor) and gives the others' caps back.
    """
    caps = slo_caps.split(loop.allowance, pool.neighbours, state.caps,
                          params)
    caps.update(pool.floors)
    actions, held, out = [], {}, []
    for v in vols:
        if v.key in caps:
            # Hysteresis may keep the previous cap, never one below a
            # giver's floor (its own SLO).
            cap = max(pool.floors.get(v.key, 0.0), slo_caps.hysteresis(
                caps[v.key], state.caps.get(v.key), params))
            held[v.key] = cap
            actions.append(_cap_action(snapshot, v, cap, loop.allowance,
                                       len(pool.neighbours), why))
            out.append(dataclasses.replace(v, role='donor', cap=cap))
        else:
            if v.key in state.caps:
                actions.append(_restore(v, 'protected: %s'
                                        % slo_window.describe(v)))
            out.append(dataclasses.replace(
                v, role='protected' if v.slo is not None else ''))
    facts = slo_window.SloFacts(tuple(out), loop.allowance, pool.capacity,
                                pool.need)
    return model.Plan(policy='slo', actions=tuple(actions), notes=notes,
                      facts={'slo': facts},
                      state=dataclasses.replace(loop, caps=held,
                                                sticky=sticky))


def _cap_action(snapshot, v, cap, allowance, n, why):
    if v.slo is None:
        who = 'no SLO: cap %.0f ref IOPS (used %.0f) of allowance %s / %d' % (
            cap, v.ref_ops, _fmt(allowance), n)
    else:
        who = 'beats its SLO (%s): cap %.0f = its floor' % (
            slo_window.describe(v), cap)
    return model.Action(
        kind=knob_kinds.DISK_IOTUNE, instance_uuid=v.instance_uuid,
        target=v.target, value=slo_caps.iotune(snapshot, v, cap),
        rule=RULE_HOLD, reason='%s; %s' % (who, why))


def _restore(v, why):
    return model.Action(
        kind=knob_kinds.DISK_IOTUNE, instance_uuid=v.instance_uuid,
        target=v.target, value=knob_kinds.ORIGINAL, rule=RULE_RELEASE,
        reason='original iotune back: %s' % why)


def _release_all(vols, state, why, notes=(), pool=None, calm=0,
                 sticky=None):
    """The plan that gives every held cap back: A free, the knee kept as
    it was (it does not age while free).
    """
    actions = tuple(_restore(v, why) for v in vols if v.key in state.caps)
    out = tuple(dataclasses.replace(
        v, role='protected' if v.slo is not None else '') for v in vols)
    facts = slo_window.SloFacts(out, None,
                                pool.capacity if pool else 0.0,
                                pool.need if pool else 0.0)
    return model.Plan(
        policy='slo', actions=actions, notes=notes, facts={'slo': facts},
        state=State(None, calm, state.knee, state.knee_age,
                    sticky=state.sticky if sticky is None else sticky))


def _fmt(x):
    return 'free' if x is None else ('inf' if x == INF else '%.0f' % x)


class SloPolicy(base.Policy):
    """Thin wrapper over the pure core; the agent keeps its State."""
    name = 'slo'
    Params = Params

    def decide(self, snapshot, state=None):
        return plan_slo(snapshot, self.params(),
                        State() if state is None else state)
