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
"""vSlicer's microslice T_m, its latency bound and the per-pCPU plan.

For k LSVM vCPUs per pCPU and an LSVM's latency target L, the microslice
T_m (``microslice``) and the worst-case wait W + (k - 1) T_m it gives
(``bound_us``), with the rules of ``iosched.contract.lsvm`` (shared with the
Nova LsvmFilter) for each mechanism; the per-pCPU plan of pinned LSVMs
(``plan_pcpus``); the note that refuses a bound (``refusal``); the
self-test's wake-up figure (``measured_us``). ``policies.vslicer`` plans
a host with them. Pure; ``params`` is the vSlicer policy's ``Params``.
"""

import dataclasses

from iosched.contract import lsvm
from iosched.host_agent.policies import lsvm_bounds
from iosched.host_agent.policies import lsvm_mechanisms


@dataclasses.dataclass(frozen=True)
class PcpuPlan:
    """vSlicer's per-core view of one pCPU."""
    pcpu: int
    lsvm_vcpus: tuple          # ((uuid, vcpu), ...) planned here
    m: int                     # LSVM vCPUs on this pCPU
    n: float                   # other vCPUs expected here (they float)
    microslice_us: int         # T_m of this pCPU (pinned mode)
    bound_ms: float            # W + (m - 1) * T_m (bound_us)
    holds: bool                # bound <= every L_i here, m <= max


# Worst-case scheduling latency and T_m's budget: iosched.contract.lsvm
# (shared with the Nova LsvmFilter's rule). With the slice mechanism and
# nothing measured: W = T_m (wakeup_preemption) or T_NLSVM (round robin),
# worst(k, T_m) = W + (k - 1) * T_m; vSlicer's T_m <= T_l / (m - 1).
def bound_us(k, t_m_us, params, mechanism=lsvm.MECH_SLICE,
             measured_us=0.0, term_us=None):
    """W + (k - 1) * T_m in microseconds (lsvm.worst_case_us)."""
    return lsvm.worst_case_us(k, t_m_us, lsvm_bounds.slicing(
        params, mechanism, measured_us), term_us)


def microslice(lat_ms, k, params, mechanism=lsvm.MECH_SLICE,
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
def plan_pcpus(instances, pcpus, params, mechanism=lsvm.MECH_SLICE,
               measured_us=0.0):
    """Return a tuple of PcpuPlan, one per pCPU. Pure."""
    ids = tuple(sorted(pcpus)) or (0,)
    lsvms = sorted(((lsvm_mechanisms.latency_ms(i, params), i.uuid, v)
                    for i in instances if i.latency_sensitive
                    for v in range(i.vcpus)))
    placed = {p: [] for p in ids}
    for n, (lat, uuid, v) in enumerate(lsvms):
        # the pCPU with the fewest so far, ties the lowest id: from empty
        # pCPUs in id order, that is round robin
        placed[ids[n % len(ids)]].append((lat, uuid, v))
    others = sum(i.vcpus for i in instances if not i.latency_sensitive)
    out = []
    for p in ids:
        here = placed[p]
        m_p = len(here)
        if not m_p:
            out.append(PcpuPlan(p, (), 0, others / len(ids), 0, 0.0, True))
            continue
        lat = min(x[0] for x in here)
        t_m, _ = microslice(lat, m_p, params, mechanism, measured_us)
        bound = bound_us(m_p, t_m, params, mechanism,
                              measured_us) / 1000.0
        out.append(PcpuPlan(
            p, tuple((u, v) for _, u, v in here), m_p, others / len(ids),
            t_m, bound,
            lsvm.holds(bound * 1000.0, lat)
            and m_p <= params.max_lsvm_per_pcpu))
    return tuple(out)


def finite(us):
    """A microsecond figure for %d (an unbounded budget shows as 100 ms)."""
    return min(us, lsvm.KERNEL_MAX_SLICE_US)


def refusal(inst, lat_ms, want, slice_us, k, params, mechanism,
            measured_us, measured_by=''):
    """The note of an LSVM whose bound cannot hold, and the fix; with the
    measurement W came from (``HostSched.measured_by``) when there is one.
    """
    source = ('; W from the %s' % measured_by
              if measured_by and measured_us > 0 else '')
    return ('refused latency bound for %s: iosched:latency_ms=%.3g with %d '
            'LSVM vCPUs per pCPU needs T_m=%dus (minimum slice %dus); set '
            '%dus, bound %s=%.3gms vs L=%.3gms (mechanism %s, T_NLSVM=%dus, '
            'wakeup_preemption=%s%s). Fix: fewer LSVM vCPUs per pCPU (the '
            'Nova LsvmFilter places by the reported LSVM parameters) or a '
            'larger iosched:latency_ms' % (
                inst.uuid, lat_ms, k, finite(want), params.min_slice_us,
                slice_us,
                lsvm.formula(lsvm_bounds.slicing(params, mechanism,
                                                 measured_us)),
                bound_us(k, slice_us, params, mechanism,
                              measured_us) / 1000.0, lat_ms, mechanism,
                params.nlsvm_slice_us, params.wakeup_preemption, source))


# How a refusal names the seen W (vslicer_seen), by its window.
SEEN_BY = ("LSVM vCPUs' own wake-to-run delays (p99, last %ds)")


def measured_us(sched, mechanism):
    """The self-test's p99 wake-up latency under ``mechanism`` (0: none)."""
    if mechanism == sched.mechanism and sched.wakeup_p99_us > 0:
        return float(sched.wakeup_p99_us)
    for row in sched.probes:
        if row.mechanism == mechanism and row.ok:
            return float(row.p99_us)
    return 0.0
