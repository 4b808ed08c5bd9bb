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
"""vSlicer on Linux: prompt turns for LSVMs, same CPU share.

Description:
    vSlicer (seed 001, ch. 2) gives a latency-sensitive VM (LSVM) the same
    CPU share as every other VM, but in microslices, so its pending I/O
    waits less. Which kernel lever delivers "a shorter wait, no extra
    share" depends on the kernel (``[host_agent_policy.vslicer]
    mechanism``, resolved at agent start by the wake-up self-test into
    ``snapshot.sched``):

    * ``slice``: the per-thread EEVDF slice (``sched_setattr(SCHED_OTHER,
      sched_runtime)``, Linux >= 6.12): a shorter request, an earlier
      virtual deadline at the same weight, and PREEMPT_SHORT;
    * ``deadline``: SCHED_DEADLINE reservations for the LSVM's vCPU and
      I/O-path threads, runtime T_m, at the VM's fair share (vSlicer's
      differentiated frequency), admitted within the host's limit;
    * ``weight``: a boosted VM-level cgroup weight, capped by a CFS quota
      at the VM's fair share.
Requirements:
    Flavor extra specs ``iosched:latency_sensitive=true`` and optionally
    ``iosched:latency_ms``; a driver with the mechanism's knobs.
Limitations:
    Measured on a 6.18 PREEMPT_NONE HZ=250 kernel: the EEVDF custom slice
    does not change wake-up latency (docs/status.md); ``deadline`` widens
    an LSVM's affinity to its root domain (the kernel refuses narrower),
    so LSVMs float and ``pin_lsvms`` does not apply to them. The (k-1)*T_m
    term assumes slices cut turns short, which the same kernel does only
    on the tick.
Spec URL:
    ../shared/seeds/001-vslicer-vturbo-vread.md, sections 2.1 and 3.1.
"""

import dataclasses

from host_agent import model
from host_agent.policies import base
from host_agent.policies import lsvm_bounds
from host_agent.policies import lsvm_mechanisms
from iosched.contract import lsvm

# Same string as host_agent.actuators.linux_knobs.ACTION_EMULATOR_SLICE
# (policies import no actuator); drivers without it skip the action.
ACTION_EMULATOR_SLICE = 'emulator_slice'


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
    lsvm_weight: int = 10000
    deadline_max_share: float = 0.5
    io_thread_runtime_us: int = 1000
    deadline_burst_headroom: float = 4.0
    deadline_max_runtime_us: int = 10000


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
    mechanism: str = model.MECH_SLICE
    wakeup_us: float = 0.0     # measured wake-up term W under it (0: none)
    dl_bw_limit: float = 0.0   # deadline: the kernel's limit, CPUs
    dl_bw_foreign: float = 0.0  # held by threads that are not VMs'
    dl_bw_reserved: float = 0.0  # the LSVM reservations planned, CPUs
    dl_runtime_us: int = 0     # largest burst term of a vCPU runtime
                               # (Q = max(T_m, it); 0: none measured)
    probes: tuple = ()         # the self-test rows (model.WakeupProbe)


def lsvm_vcpus(instances):
    return sum(i.vcpus for i in instances if i.latency_sensitive)


_dedicated = lsvm_mechanisms.dedicated
_latency_ms = lsvm_mechanisms.latency_ms


# Worst-case scheduling latency and T_m's budget: iosched.contract.lsvm
# (shared with the Nova LsvmFilter's rule). With the slice mechanism and
# nothing measured: W = T_m (wakeup_preemption) or T_NLSVM (round robin),
# worst(k, T_m) = W + (k - 1) * T_m; vSlicer's T_m <= T_l / (m - 1).
def worst_case_us(k, t_m_us, params, mechanism=model.MECH_SLICE,
                  measured_us=0.0, term_us=None):
    """W + (k - 1) * T_m in microseconds (lsvm.worst_case_us)."""
    return lsvm.worst_case_us(k, t_m_us, lsvm_bounds.slicing(
        params, mechanism, measured_us), term_us)


def _microslice(lat_ms, k, params, mechanism=model.MECH_SLICE,
                measured_us=0.0):
    """(T_m, wanted T_m) for latency lat_ms shared by k LSVM vCPUs.

    T_m = clamp(min(lsvm_max_slice, budget(L, k)), min_slice, 100 ms)
    (lsvm.microslice_us).
    """
    return lsvm.microslice_us(lat_ms, k, lsvm_bounds.slicing(
        params, mechanism, measured_us))


# Per-pCPU planning (vSlicer's per-core parameters, Eqs. 2.1-2.12, on
# EEVDF). LSVM vCPUs, strictest iosched:latency_ms first (ties: uuid,
# vCPU), each go to the pCPU with the fewest LSVM vCPUs so far (ties: the
# lowest id): m_p per pCPU, max_p m_p = ceil(m / P). The other N vCPUs
# float: n_p = N / P. Per pCPU, one microslice for its LSVMs (vSlicer
# assumes one latency target per core; with mixed targets the strictest
# wins, digest 001 6.1.4):
#   T_m,p = clamp(min(lsvm_max_slice, budget(min_i L_i, m_p)), min_slice,
#                 100 ms)   (lsvm.budget_us for the mechanism)
#   bound_p = W + (m_p - 1) * T_m,p  (lsvm.worst_case_us; vSlicer's
#   (m-1) T_m <= T_l counted per core)
#   holds_p = bound_p <= L_i for every LSVM i on p and m_p <= max_lsvm.
# vSlicer's preconditions (>= 1 NLSVM, >= 3 VMs per core) are Xen's
# round-robin needs; EEVDF serves a core of only LSVMs fine, so they are
# not required here.
def plan_pcpus(instances, pcpus, params, mechanism=model.MECH_SLICE,
               measured_us=0.0):
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
        t_m, _ = _microslice(lat, m_p, params, mechanism, measured_us)
        bound = worst_case_us(m_p, t_m, params, mechanism,
                              measured_us) / 1000.0
        out.append(PcpuPlan(
            p, tuple((u, v) for _, u, v in here), m_p, others / len(ids),
            t_m, bound,
            lsvm.holds(bound * 1000.0, lat)
            and m_p <= params.max_lsvm_per_pcpu))
    return tuple(out)


def _finite(us):
    """A microsecond figure for %d (an unbounded budget shows as 100 ms)."""
    return min(us, lsvm.KERNEL_MAX_SLICE_US)


def _refusal(inst, lat_ms, want, slice_us, k, params, mechanism,
             measured_us):
    return ('refused latency bound for %s: iosched:latency_ms=%.3g with %d '
            'LSVM vCPUs per pCPU needs T_m=%dus (minimum slice %dus); set '
            '%dus, bound %s=%.3gms vs L=%.3gms (mechanism %s, T_NLSVM=%dus, '
            'wakeup_preemption=%s). Fix: fewer LSVM vCPUs per pCPU (the Nova '
            'LsvmFilter places by the reported LSVM parameters) or a larger '
            'iosched:latency_ms' % (
                inst.uuid, lat_ms, k, _finite(want), params.min_slice_us,
                slice_us,
                lsvm.formula(lsvm_bounds.slicing(params, mechanism,
                                                 measured_us)),
                worst_case_us(k, slice_us, params, mechanism,
                              measured_us) / 1000.0, lat_ms, mechanism,
                params.nlsvm_slice_us, params.wakeup_preemption))


def measured_us(sched, mechanism):
    """The self-test's p99 wake-up latency under ``mechanism`` (0: none)."""
    if mechanism == sched.mechanism and sched.wakeup_p99_us > 0:
        return float(sched.wakeup_p99_us)
    for row in sched.probes:
        if row.mechanism == mechanism and row.ok:
            return float(row.p99_us)
    return 0.0


# Control law (per host, vCPUs float over its P pCPUs):
#   m   = LSVM vCPUs on the host,  k = ceil(m / P) LSVM vCPUs per pCPU
#   N   = all vCPUs on the host
#   L_i = the flavor's iosched:latency_ms (default_latency_ms if unset)
#   M   = the mechanism in force (snapshot.sched: the self-test's choice),
#         W_M its measured p99 wake-up latency (0: not measured)
#   T_m,i = clamp(min(lsvm_max_slice, budget_M(L_i, k)), min_slice, 100 ms)
#   bound_i = W_M(T_m,i) + (k - 1) * T_m,i <= L_i    (iosched.contract.lsvm)
#   slice:    LSVM vCPUs and main loop get T_m,i, other vCPUs T_NLSVM
#   deadline: LSVMs admitted (admit_deadline) get SCHED_DEADLINE: vCPUs
#             runtime T_m,i, I/O threads io_thread_runtime, period so that
#             the VM holds v_i * s, s = min(deadline_max_share, P / N),
#             deadline L_i, affinity = the root domain; refused ones fall
#             back to slices; other vCPUs untouched
#   weight:   LSVM VM-level weight = lsvm_weight, cap = v_i * min(1, P/N)
#             CPUs (its fair share), LSVM slices T_m,i; others untouched
#   every vCPU: weight = w (equal)
# wakeup_preemption (default) is the slice mechanism's W = T_m: a woken
# LSVM vCPU preempts a running NLSVM one at once; without it (vSlicer's
# strict round robin) W = T_NLSVM. When the budget is below min_slice (or
# the bound still exceeds L) the bound cannot hold: we set the clamped
# slice and refuse the bound in a note (and in facts['lsvm'].refused).
# With pin_lsvms (slice, weight), each LSVM vCPU is pinned to its
# plan_pcpus() pCPU and gets that pCPU's T_m,p.
def plan_slices(instances, pcpus, params, sched=None, bursts=None):
    """Return (actions, notes, LsvmState) for a host. Pure.

    ``bursts``: {instance uuid: CPU us per activation of its busiest vCPU}
    (``VcpuIoStrength.burst_us``), which sizes deadline runtimes."""
    sched = sched or model.HostSched()
    bursts = bursts or {}
    mech = (sched.mechanism if sched.mechanism in model.MECHANISMS
            else model.MECH_SLICE)
    n_pcpus = max(1, len(pcpus))
    m = lsvm_vcpus(instances)
    n_all = sum(i.vcpus for i in instances)
    k = lsvm.per_pcpu(m, n_pcpus)
    share = lsvm.deadline_share(n_pcpus, n_all, params.deadline_max_share)
    admitted, dl_refused, _ = (lsvm_mechanisms.admit_deadline(instances, share, sched,
                                              params)
                               if mech == model.MECH_DEADLINE
                               else (set(), {}, 0.0))
    # Deadline: one T_m for every reservation, from the strictest admitted
    # LSVM; runtimes Q_i = max(T_m, burst term_i); dl_term = max_i Q_i.
    dl_t_m = dl_want = dl_term = dl_runtime = 0
    if admitted:
        w_dl = measured_us(sched, model.MECH_DEADLINE)
        strictest = min(_latency_ms(i, params) for i in instances
                        if i.uuid in admitted)
        dl_t_m, dl_want = _microslice(strictest, k, params,
                                      model.MECH_DEADLINE, w_dl)
        dl_runtime = max(lsvm_bounds.burst_runtime_us(
            bursts.get(u, 0.0), params.deadline_burst_headroom,
            params.deadline_max_runtime_us) for u in admitted)
        dl_term = max(dl_t_m, dl_runtime)
    pin_mech = model.MECH_SLICE if mech == model.MECH_DEADLINE else mech
    plan = plan_pcpus(instances, pcpus, params, pin_mech,
                      measured_us(sched, pin_mech))
    where = {lv: pp for pp in plan for lv in pp.lsvm_vcpus}
    actions = []
    notes = []
    refused = []
    bound = 0.0
    reserved = 0.0
    for inst in sorted(instances, key=lambda i: i.uuid):
        vcpu_slices = {}
        set_slices = True
        if inst.latency_sensitive:
            lat_ms = _latency_ms(inst, params)
            inst_mech = mech
            if mech == model.MECH_DEADLINE and inst.uuid not in admitted:
                inst_mech = model.MECH_SLICE
            w_us = measured_us(sched, inst_mech)
            sl = lsvm_bounds.slicing(params, inst_mech, w_us)
            slice_us, want = _microslice(lat_ms, k, params, inst_mech, w_us)
            term_us = slice_us         # the (k - 1) term: T_m, or Q
            rule = 'vslicer.lsvm_microslice'
            inst_bound = worst_case_us(k, slice_us, params, inst_mech,
                                       w_us) / 1000.0
            reason = ('LSVM (%s): L=%.3gms, m=%d LSVM vCPUs on %d pCPUs '
                      '(k=%d): T_m=min(%dus, budget=%s)=%dus, bound %s='
                      '%.3gms' % (
                          inst_mech, lat_ms, m, n_pcpus, k,
                          params.lsvm_max_slice_us, '%dus' % _finite(
                              lsvm.budget_us(lat_ms, k, sl)),
                          slice_us, lsvm.formula(sl),
                          inst_bound))
            if inst_mech == model.MECH_DEADLINE:
                # one microslice for the host's reservations, the
                # strictest LSVM's (vSlicer: one T_m per core), and the
                # wait for the others' runtimes (dl_term)
                slice_us, want = dl_t_m, dl_want
                burst = bursts.get(inst.uuid, 0.0)
                runtime = lsvm_bounds.deadline_runtime_us(
                    dl_t_m, burst, params.deadline_burst_headroom,
                    params.deadline_max_runtime_us)
                inst_bound = worst_case_us(k, dl_t_m, params, inst_mech,
                                           w_us, dl_term) / 1000.0
                reason = ('LSVM (deadline): L=%.3gms, m=%d LSVM vCPUs on '
                          '%d pCPUs (k=%d): T_m of the strictest LSVM %dus, '
                          'runtime Q=max(T_m, %.3g x burst %dus)=%dus, '
                          'bound W+(k-1)*max Q=%dus+%dx%dus=%.3gms' % (
                              lat_ms, m, n_pcpus, k, dl_t_m,
                              params.deadline_burst_headroom, burst, runtime,
                              lsvm.wait_us(dl_t_m, sl),
                              k - 1, dl_term, inst_bound))
                term_us = dl_term
                dl_actions, used = lsvm_mechanisms.deadline_actions(
                    inst, runtime, lat_ms, share, sched, params, reason)
                actions.extend(dl_actions)
                reserved += used
                set_slices = False
            else:
                if mech == model.MECH_DEADLINE:
                    why = dl_refused.get(inst.uuid, 'not admitted')
                    notes.append('LSVM %s gets no SCHED_DEADLINE reservation:'
                                 ' %s; slices instead' % (inst.uuid, why))
                    actions.extend(lsvm_mechanisms.release_deadline(inst, why))
                if inst_mech == model.MECH_WEIGHT:
                    actions.extend(lsvm_mechanisms.weight_actions(inst, n_pcpus, n_all,
                                                   params))
                if params.pin_lsvms and not _dedicated(inst):
                    mine = [where[(inst.uuid, v)] for v in range(inst.vcpus)]
                    inst_bound = max(pp.bound_ms for pp in mine)
                    want = min(lsvm.budget_us(lat_ms, pp.m, sl)
                               for pp in mine)
                    for v, pp in enumerate(mine):
                        vcpu_slices[v] = pp.microslice_us
                        actions.append(model.Action(
                            kind=model.ACTION_VCPU_PIN,
                            instance_uuid=inst.uuid, target=str(v),
                            value=(pp.pcpu,), rule='vslicer.lsvm_pcpu',
                            reason='per-pCPU plan: pCPU%d has m=%d LSVM '
                            'vCPUs, n=%.3g others; T_m=%dus, bound %.3gms%s'
                            % (pp.pcpu, pp.m, pp.n, pp.microslice_us,
                               pp.bound_ms, '' if pp.holds else
                               ' (does not hold)')))
                    slice_us = max(vcpu_slices.values())
                    reason = ('LSVM pinned per pCPU: L=%.3gms, T_m of its '
                              'pCPU(s) %s' % (lat_ms, sorted(set(
                                  vcpu_slices.values()))))
            if (want < params.min_slice_us
                    or not lsvm.holds(inst_bound * 1000.0, lat_ms)):
                notes.append(_refusal(inst, lat_ms, want, term_us, k,
                                      params, inst_mech, w_us))
                refused.append(inst.uuid)
            bound = max(bound, inst_bound)
        else:
            slice_us = params.nlsvm_slice_us
            rule = 'vslicer.nlsvm_slice'
            reason = 'not latency-sensitive: T_NLSVM=%dus' % slice_us
            set_slices = mech == model.MECH_SLICE
        if (inst.latency_sensitive and params.lsvm_io_threads
                and set_slices):
            # The host half of vTurbo, partly: the LSVM's QEMU main loop
            # (virtio notifications, chardevs) gets the microslice too, so
            # its I/O is not queued behind CPU-bound threads either.
            actions.append(model.Action(
                kind=ACTION_EMULATOR_SLICE, instance_uuid=inst.uuid,
                target='', value=slice_us, rule='vslicer.lsvm_io_thread',
                reason='LSVM I/O thread gets T_m=%dus like its vCPUs'
                % slice_us))
        for vcpu in range(inst.vcpus):
            if set_slices:
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
        params=params, mechanism=mech,
        wakeup_us=measured_us(sched, mech),
        dl_bw_limit=sched.dl_bw_limit if mech == model.MECH_DEADLINE
        else 0.0,
        dl_bw_foreign=sched.dl_bw_foreign
        if mech == model.MECH_DEADLINE else 0.0,
        dl_bw_reserved=round(reserved, 6), dl_runtime_us=dl_runtime,
        probes=tuple(sched.probes))
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
                  wakeup_preemption=g.wakeup_preemption,
                  lsvm_weight=g.lsvm_weight,
                  deadline_max_share=g.deadline_max_share,
                  io_thread_runtime_us=g.io_thread_runtime_us,
                  deadline_burst_headroom=g.deadline_burst_headroom,
                  deadline_max_runtime_us=g.deadline_max_runtime_us)


class VSlicerPolicy(base.Policy):
    name = 'vslicer'

    def decide(self, snapshot):
        bursts = {}
        for v in snapshot.vcpus:
            bursts[v.instance_uuid] = max(bursts.get(v.instance_uuid, 0.0),
                                          v.burst_us)
        actions, notes, lsvm = plan_slices(
            tuple(snapshot.instances.values()), snapshot.pcpus,
            params_from_conf(self.conf), snapshot.sched, bursts)
        return model.Plan(policy=self.name, actions=actions, notes=notes,
                          facts={'lsvm': lsvm})
