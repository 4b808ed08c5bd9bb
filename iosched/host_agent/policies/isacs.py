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
"""ISACS on EEVDF: I/O-intensive vCPUs get earlier turns, not more share.

Description:
    ISACS (seed 000) gives each I/O vCPU an IVCredit that moves it up the
    Credit2 run-queue, conceals it so no share is gained, gives CPU-bound
    vCPUs a CPU-BOOST phase, and moves one I/O vCPU per round between
    run-queues. On KVM the per-thread EEVDF slice does the ordering: a
    shorter request gives an earlier virtual deadline at the same weight.
    IVCredit shortens the slice, CPU-bound vCPUs get a longer one, and
    (opt-in) Algorithm 2 pins one I/O vCPU to the least I/O-loaded pCPU.
Requirements:
    IVCredit per vCPU from the collector (docs/architecture.md 3.2); a
    driver with the ``vcpu_slice``, ``vcpu_weight`` (and ``vcpu_pin``)
    knobs.
Limitations:
    No per-round credit reset or CPU-BOOST phase: the window is the agent
    tick and the boost is a longer slice. The host is one run-queue for
    Eqs. 3-4. Per-pCPU load uses where a vCPU last ran, which is noisy for
    unpinned vCPUs. See docs/isacs.md.
Spec URL:
    ../shared/seeds/000-isacs.md, sections 2.2-2.8, 3 and 6.
"""

import dataclasses
import functools

from iosched.contract import isacs as isacs_eqs
from iosched.contract import knob_kinds
from iosched.contract import lsvm as lsvm_bound
from iosched.host_agent import model
from iosched.host_agent.policies import base

MOVE_WINDOW_S = 60.0


@dataclasses.dataclass(frozen=True)
class Params:
    """[host_agent_policy.isacs] (iosched/host_agent/conf/isacs.py)."""
    base_slice_us: int
    min_io_slice_us: int
    cpu_slice_us: int
    alpha: float
    ivcredit_floor: float
    vcpu_weight: int
    balance: bool
    balance_hysteresis_abs: float
    balance_hysteresis_rel: float
    max_moves_per_minute: int
    leave_lsvms: bool


@dataclasses.dataclass(frozen=True)
class State:
    """What ISACS carries from one tick to the next (``Plan.state``)."""
    recent_moves: tuple = ()   # snapshot.ts of past moves, oldest first


@model.quick_init
@dataclasses.dataclass(frozen=True)
class VcpuCredits:
    instance_uuid: str
    vcpu: int
    pcpu: object
    ivcredit: float
    cvcredit: float
    boost_group: bool
    slice_us: int
    # The collector's I/O signal for this vCPU (VcpuIoStrength.io_source):
    # 'wakeups' or 'requests' (the VM's completed requests per vCPU).
    io_source: str = 'wakeups'


@dataclasses.dataclass(frozen=True)
class IsacsFacts:
    vcpus: tuple               # tuple[VcpuCredits]
    k: int                     # vCPUs with IVCredit > 0
    group_size: int            # j
    default_credit: float      # fair share of a window: min(1, P / n)
    io_load: tuple             # ((pcpu, sum of IVCredit), ...)
    balance: str               # what Algorithm 2 did, for humans


def _clamp(v, lo, hi):
    return max(lo, min(hi, v))


# Control law (ISACS on KVM; host = one run-queue, window = agent tick):
#   IVCredit' = IVCredit if IVCredit > floor else 0;  m = mean positive IVC'
#   I/O vCPU (IVC' > 0):  slice = clamp(base / (1 + alpha * IVC' / m),
#                                       min_io_slice, base)
#   CPU-bound (IVC' = 0, Eq. 3 member, CVCredit > 0):  slice = cpu_slice
#   otherwise (no I/O vCPU on the host, or idle):      slice = base
#   every vCPU: weight = w (credit concealing: order, never share).
# IVC'/m is the quantity Eq. 3 compares; scale-free, so independent of the
# window, the unit and the wake-up estimator's bias. The slice cut,
# base - slice, is EEVDF's head start of the virtual deadline, the analogue
# of the IVCredit offset; it grows with IVCredit and saturates below base
# (the cap on IVCredit the paper lacks, Gap 4). Equal weights keep shares.
def io_slice_us(ivc, mean_positive, params, bounds=None):
    """``bounds``: ``io_slice_bounds(params)``, when already taken."""
    if ivc <= 0 or mean_positive <= 0:
        return params.base_slice_us
    base, lo = bounds or io_slice_bounds(params)
    return int(_clamp(base / (1.0 + params.alpha * ivc / mean_positive),
                      lo, base))


def io_slice_bounds(params):
    """(base, lo) of ``io_slice_us``, within the kernel's slice range."""
    base = _clamp(params.base_slice_us, lsvm_bound.KERNEL_MIN_SLICE_US,
                  lsvm_bound.KERNEL_MAX_SLICE_US)
    return base, _clamp(params.min_io_slice_us,
                        lsvm_bound.KERNEL_MIN_SLICE_US, base)


def credits(vcpus, n_pcpus, params, cpu_slice_us=None):
    """Eqs. 3-4 and the slice for every vCPU. Return (tuple, k, j, dc)."""
    cpu_slice = params.cpu_slice_us if cpu_slice_us is None else cpu_slice_us
    ivcs = [v.ivcredit if v.ivcredit > params.ivcredit_floor else 0.0
            for v in vcpus]
    k = sum(1 for x in ivcs if x > 0)
    mean_pos = sum(ivcs) / k if k else 0.0
    dc = min(1.0, n_pcpus / len(vcpus)) if vcpus else 1.0
    # Eqs. 3-4 (iosched.contract.isacs): the host is one run-queue, the
    # default credit a vCPU's fair share of the window.
    guard = isacs_eqs.GUARD_PER_DEFAULT_CREDIT * dc
    member = isacs_eqs.boost_members(ivcs, guard)
    j = sum(member)
    total = sum(ivcs)       # once per tick: Eq. 4 for every member
    bounds = io_slice_bounds(params)
    out = []
    for v, x, m in zip(vcpus, ivcs, member):
        cvc = (isacs_eqs.cvcredit(ivcs, j, v.run_share, dc, total=total)
               if m else 0.0)
        if x > 0:
            slice_us = io_slice_us(x, mean_pos, params, bounds)
        elif m and cvc > 0:
            slice_us = cpu_slice
        else:
            slice_us = params.base_slice_us
        out.append(VcpuCredits(v.instance_uuid, v.vcpu, v.pcpu, x, cvc, m,
                               slice_us,
                               getattr(v, 'io_source', 'wakeups')))
    return tuple(out), k, j, dc


def io_loads(entries, pcpus):
    """Per-pCPU sum of IVCredit of the vCPUs that last ran there."""
    load = {p: 0.0 for p in pcpus}
    for e in entries:
        if e.pcpu in load:
            load[e.pcpu] += e.ivcredit
    return tuple(sorted(load.items()))


# Algorithm 2 (2.8) on KVM, once per snapshot, at most one move:
#   s = pCPU with the most I/O load, d = the least (ties: lowest id);
#   act only if gap = load_s - load_d > abs and > rel * load_s (hysteresis)
#   and fewer than max_moves moves happened in the last 60 s (snapshot ts);
#   candidates: I/O-intensive vCPUs (IVC' > 0) on s with IVC < gap / 2
#   (the paper's load_d + IVC < load_s - IVC: d stays lighter, no ping-pong);
#   pick the largest IVC (best fit: |gap - 2 IVC| smallest; ties: uuid, vcpu)
#   instead of the paper's "last qualifying"; never a CPU-bound vCPU, never
#   a vCPU of a flavor with hw:cpu_policy=dedicated (Nova owns its pinning).
def balance_move(entries, pcpus, instances, ts, recent_moves, params,
                 exclude=frozenset()):
    """Return (action or None, new recent_moves, decision text). Pure."""
    recent = tuple(t for t in recent_moves if ts - MOVE_WINDOW_S < t <= ts)
    loads = io_loads(entries, pcpus)
    if len(loads) < 2:
        return None, recent, 'fewer than 2 pCPUs'
    s, load_s = max(loads, key=lambda pl: (pl[1], -pl[0]))
    d, load_d = min(loads, key=lambda pl: (pl[1], pl[0]))
    gap = load_s - load_d
    need = max(params.balance_hysteresis_abs,
               params.balance_hysteresis_rel * load_s)
    head = ('IOload pCPU%s=%.3g, pCPU%s=%.3g, gap %.3g' % (s, load_s, d,
                                                           load_d, gap))
    if gap <= need:
        return None, recent, '%s <= hysteresis %.3g: no move' % (head, need)
    if len(recent) >= params.max_moves_per_minute:
        return None, recent, '%s: %d moves in the last 60 s (max %d)' % (
            head, len(recent), params.max_moves_per_minute)
    cands = [e for e in entries if e.pcpu == s and 0 < e.ivcredit < gap / 2
             and e.instance_uuid not in exclude
             and not getattr(instances.get(e.instance_uuid), 'dedicated',
                             False)]
    if not cands:
        return None, recent, '%s: no I/O vCPU with IVCredit < %.3g' % (
            head, gap / 2)
    m = sorted(cands, key=lambda e: (-e.ivcredit, e.instance_uuid,
                                     e.vcpu))[0]
    reason = ('%s > hysteresis max(%.3g, %.3g*%.3g)=%.3g; vCPU IVCredit '
              '%.3g < gap/2 %.3g: pin pCPU%s -> pCPU%s, after %.3g / %.3g; '
              'moves in 60 s %d/%d' % (
                  head, params.balance_hysteresis_abs,
                  params.balance_hysteresis_rel, load_s, need, m.ivcredit,
                  gap / 2, s, d, load_s - m.ivcredit, load_d + m.ivcredit,
                  len(recent) + 1, params.max_moves_per_minute))
    action = model.Action(kind=knob_kinds.VCPU_PIN,
                          instance_uuid=m.instance_uuid, target=str(m.vcpu),
                          value=(d,), rule='isacs.io_balance', reason=reason)
    return action, recent + (ts,), reason


# The same weight every tick: the very same Action object, which the
# actuator skips at once (``DriverActuator.apply``). Bounded: a large host.
@functools.lru_cache(maxsize=8192)
def _weight_action(uuid, vcpu, weight):
    return model.Action(
        kind=knob_kinds.VCPU_WEIGHT, instance_uuid=uuid, target=str(vcpu),
        value=weight, rule='isacs.equal_weight',
        reason='credit concealing: equal weight %d, order not share'
        % weight)


def plan_isacs(snapshot, params, state=State()):
    """Return a model.Plan[State]; facts 'isacs'. Pure."""
    vcpus = tuple(sorted(snapshot.vcpus,
                         key=lambda v: (v.instance_uuid, v.vcpu)))
    # With vSlicer in the same agent, LSVMs are vSlicer's: their vCPUs
    # count in Eqs. 2-4 (they share the run-queue) but get no ISACS action.
    lsvm = {u for u, i in snapshot.instances.items()
            if params.leave_lsvms and getattr(i, 'latency_sensitive', False)}
    # CPU-BOOST slices never exceed the base slice while LSVMs share the
    # host: an LSVM that overran its microslice waits for whole requests of
    # the CPU-bound vCPUs (measured on the embedded default: LSVM p99 4.7 ms
    # with 6 ms CPU slices, 3.2 ms with 3 ms).
    cpu_slice = (min(params.cpu_slice_us, params.base_slice_us) if lsvm
                 else params.cpu_slice_us)
    entries, k, j, dc = credits(vcpus, max(1, len(snapshot.pcpus)), params,
                                cpu_slice)
    mean_pos = (sum(e.ivcredit for e in entries) / k) if k else 0.0
    # the reason of an I/O slice, the host's figures filled in once
    io_why = ('IVCredit %%.3g (I/O events from %%s), host mean positive '
              '%.3g (k=%d): slice=clamp(%dus/(1+%.3g*%%.3g), %dus, %dus)='
              '%%dus' % (mean_pos, k, params.base_slice_us, params.alpha,
                         params.min_io_slice_us, params.base_slice_us))
    actions = []
    for e in entries:
        if e.instance_uuid in lsvm:
            continue
        if e.ivcredit > 0:
            rule = 'isacs.io_slice'
            reason = io_why % (e.ivcredit, e.io_source,
                               e.ivcredit / mean_pos, e.slice_us)
        elif e.boost_group and e.cvcredit > 0:
            rule = 'isacs.cpu_boost_slice'
            reason = ('IVCredit 0, CPU-BOOST group (j=%d, k=%d), CVCredit '
                      '%.3g: cpu slice %dus%s' % (
                          j, k, e.cvcredit, e.slice_us,
                          ' (<= base slice: LSVMs on the host)' if lsvm
                          else ''))
        else:
            rule = 'isacs.base_slice'
            reason = ('IVCredit 0, %s: base slice %dus' % (
                'no I/O vCPU on the host' if not k else
                'CVCredit 0 (no CPU used)' if e.boost_group else
                'not in the CPU-BOOST group', e.slice_us))
        actions.append(model.Action(
            kind=knob_kinds.VCPU_SLICE, instance_uuid=e.instance_uuid,
            target=str(e.vcpu), value=e.slice_us, rule=rule, reason=reason))
        actions.append(_weight_action(e.instance_uuid, e.vcpu,
                                      params.vcpu_weight))
    recent = state.recent_moves
    decision = 'balance off'
    if params.balance:
        move, recent, decision = balance_move(
            entries, tuple(sorted(snapshot.pcpus)), snapshot.instances,
            snapshot.ts, recent, params, exclude=lsvm)
        if move is not None:
            actions.append(move)
    facts = IsacsFacts(vcpus=entries, k=k, group_size=j, default_credit=dc,
                       io_load=io_loads(entries, snapshot.pcpus),
                       balance=decision)
    return model.Plan(policy='isacs', actions=tuple(actions),
                      facts={'isacs': facts}, state=State(tuple(recent)))


class IsacsPolicy(base.Policy):
    """Thin wrapper over the pure core; the agent keeps its State."""
    name = 'isacs'
    Params = Params

    def decide(self, snapshot, state=None):
        return plan_isacs(snapshot, self.params(),
                          State() if state is None else state)
