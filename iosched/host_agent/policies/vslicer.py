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

Here: the host plan (``plan_slices``, its control law and named steps) and
the policy; T_m, the bound and the per-pCPU plan in ``vslicer_bound``, the
deadline and weight mechanisms' actions in ``lsvm_mechanisms``.
"""

import dataclasses

from iosched.contract import knob_kinds
from iosched.contract import lsvm
from iosched.host_agent import model
from iosched.host_agent.policies import base
from iosched.host_agent.policies import lsvm_bounds
from iosched.host_agent.policies import lsvm_mechanisms
from iosched.host_agent.policies import vslicer_bound
from iosched.host_agent.policies import vslicer_records
from iosched.host_agent.policies import vslicer_seen


@dataclasses.dataclass(frozen=True)
class Params:
    """[host_agent_policy.vslicer] (iosched/host_agent/conf/vslicer.py); its
    options mechanism and selftest_* are read at agent start
    (iosched.host_agent.lsvm_mechanism), not here.
    """
    nlsvm_slice_us: int
    lsvm_max_slice_us: int
    min_slice_us: int
    default_latency_ms: float
    max_lsvm_per_pcpu: int
    vcpu_weight: int
    lsvm_io_threads: bool
    pin_lsvms: bool
    # True: a woken LSVM vCPU preempts the running NLSVM at once (EEVDF
    # PREEMPT_SHORT), wait W = T_m; False: vSlicer's strict round robin,
    # it may just miss its turn and wait one NLSVM slice, W = T_NLSVM.
    wakeup_preemption: bool
    lsvm_weight: int
    deadline_max_share: float
    io_thread_runtime_us: int
    deadline_burst_headroom: float
    deadline_max_runtime_us: int
    seen_window_s: int


@dataclasses.dataclass(frozen=True)
class LsvmState:
    count: int                 # LSVM vCPUs on the host (m)
    per_pcpu: float            # m / P
    capacity: int              # LSVM vCPUs the host can still take
    latency_bound_ms: float    # worst bound over the host's LSVMs
    pcpus: tuple = ()          # tuple[vslicer_bound.PcpuPlan]
    refused: tuple = ()        # uuids whose bound cannot hold
    min_latency_ms: float = 0.0  # strictest L_i of the host's LSVMs, 0: none
    nlsvm_vcpus: int = 0       # vCPUs of the other VMs (n)
    params: object = None      # the Params planned with (for the report)
    mechanism: str = lsvm.MECH_SLICE
    wakeup_us: float = 0.0     # measured wake-up term W under it (0: none)
    dl_bw_limit: float = 0.0   # deadline: the kernel's limit, CPUs
    dl_bw_foreign: float = 0.0  # held by threads that are not VMs'
    dl_bw_reserved: float = 0.0  # the LSVM reservations planned, CPUs
    # largest burst term of a vCPU runtime (Q = max(T_m, it); 0: none measured)
    dl_runtime_us: int = 0
    probes: tuple = ()         # the self-test rows (model.WakeupProbe)
    # the LSVM vCPUs' own wake-to-run p99 now and how many delays it is
    # of (vslicer_seen; 0: fewer than lsvm.SEEN_MIN_WAKES); wakeup_us is
    # the W in use (this, held, or the self-test's)
    seen_us: float = 0.0
    seen_wakes: int = 0


# Control law (per host, vCPUs float over its P pCPUs):
#   m   = LSVM vCPUs on the host,  k = ceil(m / P) LSVM vCPUs per pCPU
#   N   = all vCPUs on the host
#   L_i = the flavor's iosched:latency_ms (default_latency_ms if unset)
#   M   = the mechanism in force (snapshot.sched: the self-test's choice),
#         W_M its measured p99 wake-up latency (0: not measured; below)
#   T_m,i = clamp(min(lsvm_max_slice, budget_M(L_i, k)), min_slice, 100 ms)
#   bound_i = W_M(T_m,i) + (k - 1) * T_m,i <= L_i    (iosched.contract.lsvm)
#   W_M is the p99 of the LSVM vCPUs' own wake-to-run delays under M
#         once enough were seen (vslicer_seen: the real threads beat the
#         self-test's probe), else the self-test's figure
#   slice:    LSVM vCPUs and main loop get T_m,i, other vCPUs T_NLSVM
#   deadline: LSVMs admitted (admit_deadline) get SCHED_DEADLINE: vCPUs
#             runtime T_m,i, I/O threads io_thread_runtime, period so that
#             the VM holds v_i * s, s = min(deadline_max_share, P / N),
#             deadline L_i, affinity = the root domain; refused ones fall
#             back to slices; other vCPUs untouched
#   weight:   LSVM VM-level weight = lsvm_weight, cap = v_i * min(1, P/N)
#             CPUs (its fair share), LSVM slices T_m,i; others untouched;
#             with a top-level group (sched.weight_group) the weight and
#             cap are those of the LSVM's own group there, holding its
#             vCPU and I/O-path threads (knob lsvm_group)
#   every vCPU: weight = w (equal)
# wakeup_preemption (default) is the slice mechanism's W = T_m: a woken
# LSVM vCPU preempts a running NLSVM one at once; without it (vSlicer's
# strict round robin) W = T_NLSVM. When the budget is below min_slice (or
# the bound still exceeds L) the bound cannot hold: we set the clamped
# slice and refuse the bound in a note (and in facts['lsvm'].refused).
# With pin_lsvms (slice, weight), each LSVM vCPU is pinned to its
# plan_pcpus() pCPU and gets that pCPU's T_m,p.
# Steps: the host's figures (_host, with the deadline admission), one
# Turn per instance (_lsvm_turn, via _deadline_turn or _pinned_turn; an
# NLSVM's T_NLSVM), its actions (_turn_actions), the report (_lsvm_state).
def plan_slices(instances, pcpus, params, sched=None, bursts=None,
                seen=None):
    """Return (actions, notes, LsvmState) for a host. Pure.

    ``bursts``: {instance uuid: CPU us per activation of its busiest vCPU}
    (``VcpuIoStrength.burst_us``), which sizes deadline runtimes.
    ``seen``: the LSVM vCPUs' own wake-to-run p99 (``vslicer_seen.Seen``).
    """
    host = _host(instances, pcpus, params, sched or model.HostSched(),
                 bursts or {}, seen or vslicer_seen.Seen())
    actions, notes, refused, bound, reserved = [], [], [], 0.0, 0.0
    for inst in sorted(instances, key=lambda i: i.uuid):
        if inst.latency_sensitive:
            turn = _lsvm_turn(inst, host, params)
            bound = max(bound, turn.bound_ms)
            if turn.refused:
                refused.append(inst.uuid)
            reserved += turn.reserved
        else:
            turn = vslicer_records.Turn(slice_us=params.nlsvm_slice_us,
                        rule='vslicer.nlsvm_slice',
                        reason='not latency-sensitive: T_NLSVM=%dus'
                        % params.nlsvm_slice_us,
                        set_slices=host.mech == lsvm.MECH_SLICE)
        actions.extend(_turn_actions(inst, turn, params))
        notes.extend(turn.notes)
    return tuple(actions), tuple(notes), _lsvm_state(
        instances, host, params, bound, refused, reserved)


def _host(instances, pcpus, params, sched, bursts, seen):
    """The Host: mechanism, m, k, the deadline admission (one T_m for
    every reservation, from the strictest admitted LSVM; runtimes Q_i =
    max(T_m, burst term_i); dl_term = max_i Q_i) and the per-pCPU plan.
    """
    mech = (sched.mechanism if sched.mechanism in lsvm.MECHANISMS
            else lsvm.MECH_SLICE)
    n_pcpus = max(1, len(pcpus))
    m = sum(i.vcpus for i in instances if i.latency_sensitive)
    n_all = sum(i.vcpus for i in instances)
    host = vslicer_records.Host(
        sched=sched, bursts=bursts, seen=seen, mech=mech,
        n_pcpus=n_pcpus, m=m,
        n_all=n_all, k=lsvm.per_pcpu(m, n_pcpus),
        share=lsvm.deadline_share(n_pcpus, n_all,
                                  params.deadline_max_share))
    if mech == lsvm.MECH_DEADLINE:
        admitted, dl_refused, _ = lsvm_mechanisms.admit_deadline(
            instances, host.share, sched, params)
        host = dataclasses.replace(host, admitted=frozenset(admitted),
                                   dl_refused=dl_refused)
    if host.admitted:
        w_dl = vslicer_seen.w_us(sched, lsvm.MECH_DEADLINE, seen, mech)
        strictest = min(lsvm_mechanisms.latency_ms(i, params)
                        for i in instances if i.uuid in host.admitted)
        dl_t_m, dl_want = vslicer_bound.microslice(
            strictest, host.k, params, lsvm.MECH_DEADLINE, w_dl)
        dl_runtime = max(lsvm_bounds.burst_runtime_us(
            bursts.get(u, 0.0), params.deadline_burst_headroom,
            params.deadline_max_runtime_us) for u in host.admitted)
        host = dataclasses.replace(host, dl_t_m=dl_t_m, dl_want=dl_want,
                                   dl_runtime=dl_runtime,
                                   dl_term=max(dl_t_m, dl_runtime))
    pin_mech = lsvm.MECH_SLICE if mech == lsvm.MECH_DEADLINE else mech
    return dataclasses.replace(host, pcpus=vslicer_bound.plan_pcpus(
        instances, pcpus, params, pin_mech,
        vslicer_seen.w_us(sched, pin_mech, seen, mech)))


def _lsvm_turn(inst, host, params):
    """An LSVM's Turn under its mechanism (deadline when admitted, else
    slices; weight adds the VM weight and cap), pinned per pCPU with
    pin_lsvms; its bound refused when it cannot hold.
    """
    lat_ms = lsvm_mechanisms.latency_ms(inst, params)
    mech = host.mech
    if mech == lsvm.MECH_DEADLINE and inst.uuid not in host.admitted:
        mech = lsvm.MECH_SLICE
    w_us = vslicer_seen.w_us(host.sched, mech, host.seen, host.mech)
    slice_us, want = vslicer_bound.microslice(lat_ms, host.k, params, mech,
                                              w_us)
    term_us = slice_us         # the (k - 1) term: T_m, or Q
    bound = vslicer_bound.bound_us(host.k, slice_us, params, mech,
                                   w_us) / 1000.0
    sl = lsvm_bounds.slicing(params, mech, w_us)
    turn = vslicer_records.Turn(
                slice_us=slice_us, rule='vslicer.lsvm_microslice',
                bound_ms=bound, reason=(
                    'LSVM (%s): L=%.3gms, m=%d LSVM vCPUs on %d pCPUs '
                    '(k=%d): T_m=min(%dus, budget=%s)=%dus, bound %s='
                    '%.3gms' % (
                        mech, lat_ms, host.m, host.n_pcpus, host.k,
                        params.lsvm_max_slice_us, '%dus' % vslicer_bound
                        .finite(lsvm.budget_us(lat_ms, host.k, sl)),
                        slice_us, lsvm.formula(sl),
                        bound)))
    if mech == lsvm.MECH_DEADLINE:
        want, term_us = _deadline_turn(turn, inst, lat_ms, w_us, host,
                                       params)
    else:
        if host.mech == lsvm.MECH_DEADLINE:
            why = host.dl_refused.get(inst.uuid, 'not admitted')
            turn.notes.append('LSVM %s gets no SCHED_DEADLINE reservation:'
                              ' %s; slices instead' % (inst.uuid, why))
            turn.actions.extend(lsvm_mechanisms.release_deadline(inst, why))
        if mech == lsvm.MECH_WEIGHT:
            turn.actions.extend(lsvm_mechanisms.weight_actions(
                inst, host.n_pcpus, host.n_all, params,
                host.sched.weight_group))
        if params.pin_lsvms and not lsvm_mechanisms.dedicated(inst):
            want = _pinned_turn(turn, inst, lat_ms, w_us, mech, host, params)
    seen = mech == host.mech and host.seen.w_us > 0
    if seen:
        turn.reason += ('; W=%dus seen on the LSVM vCPUs (p99 of %d '
                        'wake-to-run delays, last %ds)' % (
                            w_us, host.seen.wakes, host.seen.window_s))
    if (want < params.min_slice_us
            or not lsvm.holds(turn.bound_ms * 1000.0, lat_ms)):
        turn.notes.append(vslicer_bound.refusal(
            inst, lat_ms, want, term_us, host.k, params, mech, w_us,
            vslicer_bound.SEEN_BY % host.seen.window_s if seen
            else host.sched.measured_by))
        turn.refused = True
    return turn


def _deadline_turn(turn, inst, lat_ms, w_us, host, params):
    """An admitted LSVM: the host's one microslice (the strictest LSVM's;
    vSlicer: one T_m per core), its runtime, and the wait for the others'
    runtimes (dl_term) in its bound; reservations instead of slices.
    Updates ``turn``; returns (wanted T_m, the (k - 1) term).
    """
    turn.slice_us = host.dl_t_m
    burst = host.bursts.get(inst.uuid, 0.0)
    runtime = lsvm_bounds.deadline_runtime_us(
        host.dl_t_m, burst, params.deadline_burst_headroom,
        params.deadline_max_runtime_us)
    turn.bound_ms = vslicer_bound.bound_us(
        host.k, host.dl_t_m, params, lsvm.MECH_DEADLINE, w_us,
        host.dl_term) / 1000.0
    turn.reason = (
        'LSVM (deadline): L=%.3gms, m=%d LSVM vCPUs on %d pCPUs (k=%d): '
        'T_m of the strictest LSVM %dus, runtime Q=max(T_m, %.3g x burst '
        '%dus)=%dus, bound W+(k-1)*max Q=%dus+%dx%dus=%.3gms' % (
            lat_ms, host.m, host.n_pcpus, host.k, host.dl_t_m,
            params.deadline_burst_headroom, burst, runtime,
            lsvm.wait_us(host.dl_t_m, lsvm_bounds.slicing(
                params, lsvm.MECH_DEADLINE, w_us)),
            host.k - 1, host.dl_term, turn.bound_ms))
    dl_actions, used = lsvm_mechanisms.deadline_actions(
        inst, runtime, lat_ms, host.share, host.sched, params, turn.reason)
    turn.actions.extend(dl_actions)
    turn.reserved = used
    turn.set_slices = False
    return host.dl_want, host.dl_term


def _pinned_turn(turn, inst, lat_ms, w_us, mech, host, params):
    """pin_lsvms: each vCPU pinned to its plan_pcpus() pCPU with that
    pCPU's T_m, the bound the worst of them. Updates ``turn``; returns
    the wanted T_m (the smallest budget).
    """
    where = {lv: pp for pp in host.pcpus for lv in pp.lsvm_vcpus}
    mine = [where[(inst.uuid, v)] for v in range(inst.vcpus)]
    turn.bound_ms = max(pp.bound_ms for pp in mine)
    sl = lsvm_bounds.slicing(params, mech, w_us)
    want = min(lsvm.budget_us(lat_ms, pp.m, sl) for pp in mine)
    for v, pp in enumerate(mine):
        turn.vcpu_slices[v] = pp.microslice_us
        turn.actions.append(model.Action(
            kind=knob_kinds.VCPU_PIN, instance_uuid=inst.uuid,
            target=str(v), value=(pp.pcpu,), rule='vslicer.lsvm_pcpu',
            reason='per-pCPU plan: pCPU%d has m=%d LSVM vCPUs, n=%.3g '
            'others; T_m=%dus, bound %.3gms%s' % (
                pp.pcpu, pp.m, pp.n, pp.microslice_us, pp.bound_ms,
                '' if pp.holds else ' (does not hold)')))
    turn.slice_us = max(turn.vcpu_slices.values())
    turn.reason = ('LSVM pinned per pCPU: L=%.3gms, T_m of its pCPU(s) %s'
                   % (lat_ms, sorted(set(turn.vcpu_slices.values()))))
    return want


def _turn_actions(inst, turn, params):
    """The Turn's mechanism actions, then its slices and equal weights."""
    return tuple(turn.actions) + lsvm_mechanisms.slice_actions(
        inst.uuid, inst.vcpus,
        inst.latency_sensitive and params.lsvm_io_threads,
        turn.set_slices, turn.slice_us,
        tuple(sorted(turn.vcpu_slices.items())), turn.rule, turn.reason,
        params.vcpu_weight)


def _lsvm_state(instances, host, params, bound, refused, reserved):
    """The LsvmState the report carries."""
    sched, mech, deadline = host.sched, host.mech, (
        host.mech == lsvm.MECH_DEADLINE)
    lats = [lsvm_mechanisms.latency_ms(i, params) for i in instances
            if i.latency_sensitive and i.vcpus]
    return LsvmState(
        count=host.m, per_pcpu=host.m / host.n_pcpus,
        capacity=max(0, params.max_lsvm_per_pcpu * host.n_pcpus - host.m),
        latency_bound_ms=bound, pcpus=host.pcpus, refused=tuple(refused),
        min_latency_ms=float(min(lats)) if lats else 0.0,
        nlsvm_vcpus=sum(i.vcpus for i in instances
                        if not i.latency_sensitive),
        params=params, mechanism=mech,
        wakeup_us=vslicer_seen.w_us(sched, mech, host.seen, mech),
        dl_bw_limit=sched.dl_bw_limit if deadline else 0.0,
        dl_bw_foreign=sched.dl_bw_foreign if deadline else 0.0,
        dl_bw_reserved=round(reserved, 6), dl_runtime_us=host.dl_runtime,
        probes=tuple(sched.probes), seen_us=host.seen.p99_us,
        seen_wakes=host.seen.wakes)


class VSlicerPolicy(base.Policy):
    """Its State: the LSVM vCPUs' seen wake-to-run delays (vslicer_seen);
    its LsvmState goes to the facts ('lsvm', the report).
    """
    name = 'vslicer'
    Params = Params
    State = vslicer_seen.State

    def decide(self, snapshot, state=None):
        params = self.params()
        bursts = {}
        for v in snapshot.vcpus:
            bursts[v.instance_uuid] = max(bursts.get(v.instance_uuid, 0.0),
                                          v.burst_us)
        state = vslicer_seen.update(state, snapshot, params.seen_window_s)
        actions, notes, lsvm = plan_slices(
            tuple(snapshot.instances.values()), snapshot.pcpus,
            params, snapshot.sched, bursts,
            vslicer_seen.seen(state, params.seen_window_s))
        return model.Plan(policy=self.name, actions=actions, notes=notes,
                          facts={'lsvm': lsvm}, state=state)
