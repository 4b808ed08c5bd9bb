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
"""vSlicer on EEVDF: short, frequent slices for LSVMs, same CPU share.

Description:
    vSlicer (seed 001, ch. 2) gives a latency-sensitive VM (LSVM) the same
    CPU share as every other VM, but in microslices, so its pending I/O
    waits less. On Linux >= 6.12 the per-thread EEVDF slice
    (``sched_setattr(SCHED_OTHER, sched_runtime=slice)``) does this: a
    shorter request gives an earlier virtual deadline at the same weight,
    and a woken short-slice task preempts a long-slice one (PREEMPT_SHORT).
Requirements:
    Flavor extra specs ``iosched:latency_sensitive=true`` and optionally
    ``iosched:latency_ms``; a driver with the ``vcpu_slice`` and
    ``vcpu_weight`` knobs.
Limitations:
    EEVDF is not vSlicer's strict micro-round: the (m-1)*T_m bound is not
    enforced by the kernel, only made likely (see docs/architecture.md).
    Unless ``pin_lsvms`` is set, vCPUs float over the host's pCPUs, so
    LSVMs per pCPU is the balanced spread the per-pCPU plan assumes.
Spec URL:
    ../shared/seeds/001-vslicer-vturbo-vread.md, sections 2.1 and 3.1.
"""

import dataclasses
import math

from host_agent import model
from host_agent.policies import base

# Same string as host_agent.actuators.linux_knobs.ACTION_EMULATOR_SLICE
# (policies import no actuator); drivers without it skip the action.
ACTION_EMULATOR_SLICE = 'emulator_slice'
KERNEL_MIN_SLICE_US = 100
KERNEL_MAX_SLICE_US = 100000


@dataclasses.dataclass(frozen=True)
class Params:
    nlsvm_slice_us: int = 3000
    lsvm_max_slice_us: int = 1000
    min_slice_us: int = 100
    default_latency_ms: float = 2.0
    max_lsvm_per_pcpu: int = 3
    vcpu_weight: int = 100
    lsvm_io_threads: bool = True
    pin_lsvms: bool = False
    # True: a woken LSVM vCPU preempts the running NLSVM at once (EEVDF
    # PREEMPT_SHORT), wait W = T_m; False: vSlicer's strict round robin,
    # it may just miss its turn and wait one NLSVM slice, W = T_NLSVM.
    wakeup_preemption: bool = True


@dataclasses.dataclass(frozen=True)
class PcpuPlan:
    """vSlicer's per-core view of one pCPU."""
    pcpu: int
    lsvm_vcpus: tuple          # ((uuid, vcpu), ...) planned here
    m: int                     # LSVM vCPUs on this pCPU
    n: float                   # other vCPUs expected here (they float)
    microslice_us: int         # T_m of this pCPU (pinned mode)
    bound_ms: float            # W + (m - 1) * T_m (worst_case_us)
    holds: bool                # bound <= every L_i here, m <= max


@dataclasses.dataclass(frozen=True)
class LsvmState:
    count: int                 # LSVM vCPUs on the host (m)
    per_pcpu: float            # m / P
    capacity: int              # LSVM vCPUs the host can still take
    latency_bound_ms: float    # worst bound over the host's LSVMs
    pcpus: tuple = ()          # tuple[PcpuPlan]
    refused: tuple = ()        # uuids whose bound cannot hold
    min_latency_ms: float = 0.0  # strictest L_i of the host's LSVMs, 0: none
    nlsvm_vcpus: int = 0       # vCPUs of the other VMs (n)
    params: object = None      # the Params planned with (for the report)


def _clamp(v, lo, hi):
    return max(lo, min(hi, v))


def lsvm_vcpus(instances):
    return sum(i.vcpus for i in instances if i.latency_sensitive)


def _dedicated(inst):
    # Nova pins hw:cpu_policy=dedicated vCPUs itself; never re-pin them.
    return str(inst.extra_specs.get('hw:cpu_policy', '')) == 'dedicated'


def _latency_ms(inst, params):
    return inst.latency_ms or params.default_latency_ms


# Worst-case scheduling latency of an LSVM vCPU sharing its pCPU with
# k - 1 other LSVM vCPUs, all with microslice T_m (vSlicer, seed 001 2.1):
#   worst(k, T_m) = W + (k - 1) * T_m
#   W = T_m      with wakeup_preemption (EEVDF: the woken LSVM preempts the
#                running NLSVM at once and waits for the k - 1 others and
#                the end of its own first request), i.e. k * T_m;
#   W = T_NLSVM  without (vSlicer's strict round robin: it may just miss
#                its turn and wait one whole NLSVM slice), vSlicer's crest
#                T_NLSVM + (m - 1) * T_m.
# nova_plugin/lsvm_rule.py applies the same rule from the HostReport
# (tests/unit/nova_plugin/test_lsvm_rule.py checks that both agree).
def worst_case_us(k, t_m_us, params):
    """W + (k - 1) * T_m in microseconds."""
    wait = t_m_us if params.wakeup_preemption else params.nlsvm_slice_us
    return wait + (k - 1) * t_m_us


def bound_formula(params):
    """The worst-case rule in words, for reasons and notes."""
    return 'k*T_m' if params.wakeup_preemption else 'T_NLSVM+(k-1)*T_m'


# Largest T_m keeping worst(k, T_m) <= L (may be below min_slice, or
# negative when T_NLSVM alone exceeds L):
#   wakeup_preemption:  L / k
#   round robin:        (L - T_NLSVM) / (k - 1), unbounded when k = 1
#                       (the LSVM then waits only for T_NLSVM)
def _budget_us(lat_ms, k, params):
    if params.wakeup_preemption:
        return lat_ms * 1000.0 / k
    if k <= 1:
        return float('inf')
    return (lat_ms * 1000.0 - params.nlsvm_slice_us) / (k - 1)


def _microslice(lat_ms, k, params):
    """(T_m, wanted T_m) for latency lat_ms shared by k LSVM vCPUs.

    T_m = clamp(min(lsvm_max_slice, budget(L, k)), min_slice, 100 ms).
    """
    want = min(params.lsvm_max_slice_us, _budget_us(lat_ms, k, params))
    return int(_clamp(want, max(params.min_slice_us, KERNEL_MIN_SLICE_US),
                      KERNEL_MAX_SLICE_US)), want


# Per-pCPU planning (vSlicer's per-core parameters, Eqs. 2.1-2.12, on
# EEVDF). LSVM vCPUs, strictest iosched:latency_ms first (ties: uuid,
# vCPU), each go to the pCPU with the fewest LSVM vCPUs so far (ties: the
# lowest id): m_p per pCPU, max_p m_p = ceil(m / P). The other N vCPUs
# float: n_p = N / P. Per pCPU, one microslice for its LSVMs (vSlicer
# assumes one latency target per core; with mixed targets the strictest
# wins, digest 001 6.1.4):
#   T_m,p = clamp(min(lsvm_max_slice, budget(min_i L_i, m_p)), min_slice,
#                 100 ms)   (budget: L / m_p, or (L - T_NLSVM) / (m_p - 1)
#                            without wakeup_preemption; see _budget_us)
#   bound_p = W + (m_p - 1) * T_m,p  (worst_case_us: W = T_m,p when a woken
#   LSVM vCPU preempts an NLSVM one at once, else T_NLSVM; vSlicer's
#   (m-1) T_m <= T_l counted per core)
#   holds_p = bound_p <= L_i for every LSVM i on p and m_p <= max_lsvm.
# vSlicer's preconditions (>= 1 NLSVM, >= 3 VMs per core) are Xen's
# round-robin needs; EEVDF serves a core of only LSVMs fine, so they are
# not required here.
def plan_pcpus(instances, pcpus, params):
    """Return a tuple of PcpuPlan, one per pCPU. Pure."""
    ids = tuple(sorted(pcpus)) or (0,)
    lsvms = sorted(((_latency_ms(i, params), i.uuid, v)
                    for i in instances if i.latency_sensitive
                    for v in range(i.vcpus)))
    placed = {p: [] for p in ids}
    for lat, uuid, v in lsvms:
        p = min(ids, key=lambda q: (len(placed[q]), q))
        placed[p].append((lat, uuid, v))
    others = sum(i.vcpus for i in instances if not i.latency_sensitive)
    out = []
    for p in ids:
        here = placed[p]
        m_p = len(here)
        if not m_p:
            out.append(PcpuPlan(p, (), 0, others / len(ids), 0, 0.0, True))
            continue
        lat = min(x[0] for x in here)
        t_m, _ = _microslice(lat, m_p, params)
        bound = worst_case_us(m_p, t_m, params) / 1000.0
        out.append(PcpuPlan(
            p, tuple((u, v) for _, u, v in here), m_p, others / len(ids),
            t_m, bound,
            bound <= lat + 1e-9 and m_p <= params.max_lsvm_per_pcpu))
    return tuple(out)


def _finite(us):
    """A microsecond figure for %d (an unbounded budget shows as 100 ms)."""
    return min(us, KERNEL_MAX_SLICE_US)


def _refusal(inst, lat_ms, want, slice_us, k, params):
    return ('refused latency bound for %s: iosched:latency_ms=%.3g with %d '
            'LSVM vCPUs per pCPU needs T_m=%dus (minimum slice %dus); set '
            '%dus, bound %s=%.3gms vs L=%.3gms (T_NLSVM=%dus, '
            'wakeup_preemption=%s). Fix: fewer LSVM vCPUs per pCPU (the Nova '
            'LsvmFilter places by the reported LSVM parameters) or a larger '
            'iosched:latency_ms' % (
                inst.uuid, lat_ms, k, _finite(want), params.min_slice_us,
                slice_us, bound_formula(params),
                worst_case_us(k, slice_us, params) / 1000.0, lat_ms,
                params.nlsvm_slice_us, params.wakeup_preemption))


# Control law (per host, vCPUs float over its P pCPUs):
#   m   = LSVM vCPUs on the host,  k = ceil(m / P) LSVM vCPUs per pCPU
#   L_i = the flavor's iosched:latency_ms (default_latency_ms if unset)
#   T_m,i = clamp(min(lsvm_max_slice, budget(L_i, k)), min_slice, 100 ms)
#   every other vCPU: T_NLSVM = nlsvm_slice;  every vCPU: weight = w
#   bound_i = W + (k - 1) * T_m,i <= L_i            (worst_case_us)
# wakeup_preemption (default): a woken LSVM vCPU preempts a running NLSVM
# one at once (shorter slice, earlier deadline) and waits at most for the
# k-1 other LSVM vCPUs of its pCPU plus the end of its own first request:
# W = T_m, bound k * T_m, budget L / k. Without it (vSlicer's strict round
# robin) it may just miss its turn: W = T_NLSVM, budget
# (L - T_NLSVM) / (k - 1). vSlicer's T_m <= T_l / (m-1) is the same rule
# counted per core. When the budget is below min_slice (or the bound still
# exceeds L) the bound cannot hold: we set the clamped slice and refuse the
# bound in a note (and in facts['lsvm'].refused).
# With pin_lsvms, each LSVM vCPU is pinned to its plan_pcpus() pCPU and
# gets that pCPU's T_m,p: the per-core bound then holds exactly as planned
# instead of on average.
def plan_slices(instances, pcpus, params):
    """Return (actions, notes, LsvmState) for a host. Pure."""
    n_pcpus = max(1, len(pcpus))
    m = lsvm_vcpus(instances)
    k = max(1, math.ceil(m / n_pcpus))
    plan = plan_pcpus(instances, pcpus, params)
    where = {lv: pp for pp in plan for lv in pp.lsvm_vcpus}
    actions = []
    notes = []
    refused = []
    bound = 0.0
    for inst in sorted(instances, key=lambda i: i.uuid):
        vcpu_slices = {}
        if inst.latency_sensitive:
            lat_ms = _latency_ms(inst, params)
            slice_us, want = _microslice(lat_ms, k, params)
            rule = 'vslicer.lsvm_microslice'
            inst_bound = worst_case_us(k, slice_us, params) / 1000.0
            reason = ('LSVM: L=%.3gms, m=%d LSVM vCPUs on %d pCPUs (k=%d): '
                      'T_m=min(%dus, budget=%s)=%dus, bound %s=%.3gms'
                      % (lat_ms, m, n_pcpus, k, params.lsvm_max_slice_us,
                         '%dus' % _finite(_budget_us(lat_ms, k, params)),
                         slice_us, bound_formula(params), inst_bound))
            if params.pin_lsvms and not _dedicated(inst):
                mine = [where[(inst.uuid, v)] for v in range(inst.vcpus)]
                inst_bound = max(pp.bound_ms for pp in mine)
                want = min(_budget_us(lat_ms, pp.m, params) for pp in mine)
                for v, pp in enumerate(mine):
                    vcpu_slices[v] = pp.microslice_us
                    actions.append(model.Action(
                        kind=model.ACTION_VCPU_PIN, instance_uuid=inst.uuid,
                        target=str(v), value=(pp.pcpu,),
                        rule='vslicer.lsvm_pcpu',
                        reason='per-pCPU plan: pCPU%d has m=%d LSVM vCPUs, '
                        'n=%.3g others; T_m=%dus, bound %.3gms%s' % (
                            pp.pcpu, pp.m, pp.n, pp.microslice_us,
                            pp.bound_ms, '' if pp.holds else
                            ' (does not hold)')))
                slice_us = max(vcpu_slices.values())
                reason = ('LSVM pinned per pCPU: L=%.3gms, T_m of its pCPU(s)'
                          ' %s' % (lat_ms, sorted(set(
                              vcpu_slices.values()))))
            if want < params.min_slice_us or inst_bound > lat_ms + 1e-9:
                notes.append(_refusal(inst, lat_ms, want, slice_us, k,
                                      params))
                refused.append(inst.uuid)
            bound = max(bound, inst_bound)
        else:
            slice_us = params.nlsvm_slice_us
            rule = 'vslicer.nlsvm_slice'
            reason = 'not latency-sensitive: T_NLSVM=%dus' % slice_us
        if inst.latency_sensitive and params.lsvm_io_threads:
            # The host half of vTurbo, partly: the LSVM's QEMU main loop
            # (virtio notifications, chardevs) gets the microslice too, so
            # its I/O is not queued behind CPU-bound threads either.
            actions.append(model.Action(
                kind=ACTION_EMULATOR_SLICE, instance_uuid=inst.uuid,
                target='', value=slice_us, rule='vslicer.lsvm_io_thread',
                reason='LSVM I/O thread gets T_m=%dus like its vCPUs'
                % slice_us))
        for vcpu in range(inst.vcpus):
            actions.append(model.Action(
                kind=model.ACTION_VCPU_SLICE, instance_uuid=inst.uuid,
                target=str(vcpu), value=vcpu_slices.get(vcpu, slice_us),
                rule=rule, reason=reason))
            actions.append(model.Action(
                kind=model.ACTION_VCPU_WEIGHT, instance_uuid=inst.uuid,
                target=str(vcpu), value=params.vcpu_weight,
                rule='vslicer.equal_weight',
                reason='equal weights: no VM gets extra share'))
    lats = [_latency_ms(i, params) for i in instances
            if i.latency_sensitive and i.vcpus]
    state = LsvmState(
        count=m, per_pcpu=m / n_pcpus,
        capacity=max(0, params.max_lsvm_per_pcpu * n_pcpus - m),
        latency_bound_ms=bound, pcpus=plan, refused=tuple(refused),
        min_latency_ms=float(min(lats)) if lats else 0.0,
        nlsvm_vcpus=sum(i.vcpus for i in instances
                        if not i.latency_sensitive),
        params=params)
    return tuple(actions), tuple(notes), state


def params_from_conf(conf):
    g = conf['host_agent_policy.vslicer']
    return Params(nlsvm_slice_us=g.nlsvm_slice_us,
                  lsvm_max_slice_us=g.lsvm_max_slice_us,
                  min_slice_us=g.min_slice_us,
                  default_latency_ms=g.default_latency_ms,
                  max_lsvm_per_pcpu=g.max_lsvm_per_pcpu,
                  vcpu_weight=g.vcpu_weight,
                  lsvm_io_threads=g.lsvm_io_threads,
                  pin_lsvms=g.pin_lsvms,
                  wakeup_preemption=g.wakeup_preemption)


class VSlicerPolicy(base.Policy):
    name = 'vslicer'

    def decide(self, snapshot):
        actions, notes, lsvm = plan_slices(
            tuple(snapshot.instances.values()), snapshot.pcpus,
            params_from_conf(self.conf))
        return model.Plan(policy=self.name, actions=actions, notes=notes,
                          facts={'lsvm': lsvm})
