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
"""Pure LSVM feasibility rule of ``LsvmFilter``: the host's check, again.

Description:
    From a host's ``HostReport`` (``lsvm`` object, schema 1.3), the
    placements made there since that report (``scoring.Pending``) and a
    latency-sensitive request (``iosched:latency_sensitive=true``), redo
    the host agent's vSlicer check with the bound both use
    (``iosched.contract.lsvm``) for the host with the request
    added, under the mechanism the host reports (``lsvm.mechanism``) and
    its measured wake-up latency (``lsvm.wakeup_latency_us``): LSVM vCPUs
    per pCPU within ``max_per_pcpu``; the worst-case scheduling latency
    W + (m_p - 1) * T_m within the request's bound and within the strictest
    bound of the LSVMs already there; then per mechanism, ``deadline``:
    every LSVM's SCHED_DEADLINE reservation within the host's reservable
    bandwidth, ``slice``: vSlicer's fairness room, ``weight``: nothing more.

Requirements:
    A report of schema ``iosched.contract.payload`` 1.x (a 1.1 report
    reads with the agent's default parameters, a 1.2 report as the slice
    mechanism with nothing measured: exactly the rule of 1.2).

Limitations:
    Pending LSVM vCPUs (noted by ``ReportStore.note_placement``) count with
    an unknown latency bound: only the reported ``min_latency_ms`` is kept.
    Pending vCPUs this worker only estimated (``iosched.nova_plugin.inflight``)
    count as non-LSVM vCPUs. Requests that are not latency-sensitive always
    pass (see ``check``). A dedicated LSVM (``hw:cpu_policy=dedicated``)
    never goes to a deadline host: Nova pins its vCPUs to single pCPUs,
    which the kernel refuses SCHED_DEADLINE for, and the agent would serve
    it with slices.

Spec URL:
    ../shared/seeds/001-vslicer-vturbo-vread.md section 2.1 (eqs. 2.11,
    2.12, the crest T_NLSVM + (m-1)*T_m); docs/nova.md.

No nova, no I/O, no clock; no host_agent import (tests/unit/test_layering.py):
the bound is ``iosched.contract.lsvm``, which the agent plans with.
"""

import collections
import dataclasses
import math

from iosched.contract import lsvm as lsvm_bound
from iosched.nova_plugin import scoring


def _us(ms):
    return int(round(ms * 1000.0))


@dataclasses.dataclass(frozen=True)
class Figures:
    """The numbers of one check, for the verdict and the reason."""

    pcpus: int
    m_reported: int
    m_pending: int
    m_request: int
    m: int
    m_p: int
    n_reported: int
    n_pending: int
    n: int
    n_p: int
    latency_request_ms: float
    latency_host_ms: float     # strictest reported L, 0: no LSVM there
    latency_ms: float          # L_eff
    budget_us: float
    t_m_us: int
    wait_us: float             # W
    worst_us: float            # W + (m_p - 1) * T_m
    nlsvm_slice_us: int
    max_per_pcpu: int
    wakeup_preemption: bool
    # 1.3: the host's mechanism and what it measured
    mechanism: str = lsvm_bound.MECH_SLICE
    wakeup_measured_us: float = 0.0   # W_meas, 0: not measured
    # deadline: the bandwidth after placement, in CPUs
    vcpus_after: int = 0              # N' = m + n
    deadline_max_share: float = 0.5
    share: float = 0.0                # s' = min(max share, P / N')
    # the (m_p - 1) term: T_m, or the deadline host's largest runtime Q
    term_us: int = 0
    dl_need: float = 0.0              # m * s'
    dl_bw_limit: float = 0.0
    dl_bw_foreign: float = 0.0
    dl_bw_reserved: float = 0.0       # the LSVMs' reservations now
    dl_room: float = 0.0              # limit - foreign


# The report's side of the rule, read once per report (``host_terms``):
#   n_reported = lsvm.nlsvm_vcpus, or len(report.vcpus) - lsvm.count
#   slicing: M = lsvm.mechanism (unknown: slice), W_meas =
#   lsvm.wakeup_latency_us, T_NLSVM, max and min slice in us,
#   room = dl_bw_limit - dl_bw_foreign.
HostTerms = collections.namedtuple('HostTerms', (
    'pcpus supported count n_reported default_latency_ms min_latency_ms '
    'slicing max_per_pcpu dl_runtime_us deadline_max_share '
    'dl_bw_limit dl_bw_foreign dl_bw_reserved dl_room'))


def host_terms(report):
    """The ``HostTerms`` of ``report`` (what ``figures`` reads of it)."""
    lsvm = report.lsvm
    if lsvm.nlsvm_vcpus is not None:
        n_reported = lsvm.nlsvm_vcpus
    else:
        n_reported = max(0, len(report.vcpus) - lsvm.count)
    return HostTerms(
        pcpus=report.pcpus, supported=lsvm.supported, count=lsvm.count,
        n_reported=n_reported, default_latency_ms=lsvm.default_latency_ms,
        min_latency_ms=lsvm.min_latency_ms,
        slicing=lsvm_bound.Slicing(
            mechanism=(lsvm.mechanism if lsvm.mechanism
                       in lsvm_bound.MECHANISMS else lsvm_bound.MECH_SLICE),
            measured_us=float(lsvm.wakeup_latency_us),
            nlsvm_slice_us=_us(lsvm.nlsvm_slice_ms),
            wakeup_preemption=lsvm.wakeup_preemption,
            max_slice_us=_us(lsvm.max_slice_ms),
            min_slice_us=_us(lsvm.min_slice_ms)),
        max_per_pcpu=lsvm.max_per_pcpu, dl_runtime_us=lsvm.dl_runtime_us,
        deadline_max_share=lsvm.deadline_max_share,
        dl_bw_limit=lsvm.dl_bw_limit, dl_bw_foreign=lsvm.dl_bw_foreign,
        dl_bw_reserved=lsvm.dl_bw_reserved,
        dl_room=lsvm.dl_bw_limit - lsvm.dl_bw_foreign)


# n_pending(p) := max(0, all_vcpus(p) - p.lsvm_vcpus): pending vCPUs that
# are not LSVM vCPUs (estimated ones included).
def pending_terms(pending):
    """``(m_pending, n_pending)`` of a ``scoring.Pending``."""
    pending = pending or scoring.NO_PENDING
    return (pending.lsvm_vcpus,
            max(0, scoring.pending_vcpus(pending) - pending.lsvm_vcpus))


# After placing the request (P = report.pcpus):
#   m   = reported LSVM vCPUs + pending LSVM vCPUs + request vCPUs
#   n   = reported non-LSVM vCPUs + pending non-LSVM vCPUs
#   m_p = max(1, ceil(m / P)),  n_p = ceil(n / P)
#   L   = min(request L (or the host's default_latency_ms),
#             host min_latency_ms if > 0)
#   M   = lsvm.mechanism, W_meas = lsvm.wakeup_latency_us (1.2: slice, 0)
#   T_m = lsvm.microslice_us(L, m_p): clamp(min(max_slice,
#         budget_M(L, m_p)), max(min_slice, 100 us), 100 ms), as the agent
#         chooses it
#   worst = lsvm.worst_case_us: W_M(T_m) + (m_p - 1) * T
#   T   = T_m; deadline: max(T_m, dl_runtime_us): the agent sizes each
#         runtime Q = max(T_m, burst term) to the vCPU's measured bursts,
#         and the other LSVMs of a pCPU may each use theirs before this
#         one runs (dl_runtime_us = the host's largest burst term)
#   deadline: N' = m + n,  s' = min(deadline_max_share, P / N'),
#             need = m * s' (every LSVM's share shrinks as N' grows, so
#             all of them are counted), room = dl_bw_limit - dl_bw_foreign
#             (lsvm.deadline_share, lsvm.admits: the agent's admission)
def _core(h, m_pending, n_pending, request):
    """(m, n, m_p, n_p, L_request, L, budget, T_m, W, T, s') of the rule
    above; ``figures`` and ``passes`` both use it.
    """
    pcpus = h.pcpus
    m = h.count + m_pending + request.vcpus
    n = h.n_reported + n_pending
    m_p = lsvm_bound.per_pcpu(m, pcpus)
    n_p = math.ceil(n / float(pcpus))
    lat_req = float(request.latency_ms or h.default_latency_ms)
    lat = lat_req
    if h.min_latency_ms > 0:
        lat = min(lat, h.min_latency_ms)
    sl = h.slicing
    budget = lsvm_bound.budget_us(lat, m_p, sl)
    t_m, _ = lsvm_bound.microslice_us(lat, m_p, sl)
    wait = lsvm_bound.wait_us(t_m, sl)
    term = (max(t_m, h.dl_runtime_us)
            if sl.mechanism == lsvm_bound.MECH_DEADLINE else t_m)
    share = lsvm_bound.deadline_share(pcpus, m + n, h.deadline_max_share)
    return m, n, m_p, n_p, lat_req, lat, budget, t_m, wait, term, share


def figures(report, pending, request):
    """The figures of the host after placing ``request``."""
    h = host_terms(report)
    pending = pending or scoring.NO_PENDING
    m_pending, n_pending = pending_terms(pending)
    (m, n, m_p, n_p, lat_req, lat, budget, t_m, wait, term,
     share) = _core(h, m_pending, n_pending, request)
    return Figures(
        pcpus=h.pcpus, m_reported=h.count, m_pending=m_pending,
        m_request=request.vcpus, m=m, m_p=m_p, n_reported=h.n_reported,
        n_pending=n_pending, n=n, n_p=n_p, latency_request_ms=lat_req,
        latency_host_ms=h.min_latency_ms, latency_ms=lat, budget_us=budget,
        t_m_us=t_m, wait_us=wait,
        worst_us=lsvm_bound.worst_case_us(m_p, t_m, h.slicing, term),
        term_us=term, nlsvm_slice_us=h.slicing.nlsvm_slice_us,
        max_per_pcpu=h.max_per_pcpu,
        wakeup_preemption=h.slicing.wakeup_preemption,
        mechanism=h.slicing.mechanism,
        wakeup_measured_us=h.slicing.measured_us, vcpus_after=m + n,
        deadline_max_share=h.deadline_max_share, share=share,
        dl_need=m * share, dl_bw_limit=h.dl_bw_limit,
        dl_bw_foreign=h.dl_bw_foreign, dl_bw_reserved=h.dl_bw_reserved,
        dl_room=h.dl_room)


def _ms(us):
    return '%.3gms' % (us / 1000.0)


def _wait_words(f):
    """W's rule for the reason, e.g. 'W=max(T_m, measured 4000us)'."""
    if f.mechanism == lsvm_bound.MECH_SLICE:
        base, how = (('T_m', 'wakeup_preemption') if f.wakeup_preemption
                     else ('T_NLSVM', 'round robin'))
        if f.wakeup_measured_us > 0:
            return 'W=max(%s, measured p99 %.4gus) (%s)' % (
                base, f.wakeup_measured_us, how)
        return 'W=%s (%s)' % (base, how)
    if f.wakeup_measured_us > 0:
        return 'W=measured p99 %.4gus' % f.wakeup_measured_us
    return 'W=T_m (not measured)'


def bandwidth_words(f):
    """The deadline admission's terms: s', need, room."""
    return ("s'=min(max share %.3g, %d pCPUs/N' %d vCPUs)=%.3g, "
            "need m*s'=%d*%.3g=%.3g CPUs vs limit %.3g - foreign %.3g = "
            "%.3g CPUs (LSVMs reserve %.3g now)" % (
                f.deadline_max_share, f.pcpus, f.vcpus_after, f.share, f.m,
                f.share, f.dl_need, f.dl_bw_limit, f.dl_bw_foreign,
                f.dl_room, f.dl_bw_reserved))


def describe(f):
    """The figures as one line: every term of every formula."""
    host_l = ('host strictest %.3gms' % f.latency_host_ms
              if f.latency_host_ms > 0 else 'no LSVM on the host')
    budget = ('inf' if f.budget_us == float('inf')
              else _ms(max(f.budget_us, 0)) if f.budget_us >= 0
              else '<0')
    text = ('mechanism %s, m_p=ceil((reported %d + pending %d + request %d)'
            '/%d pCPUs)=%d, n_p=ceil((reported %d + pending %d)/%d)=%d, '
            'L=min(request %.3gms, %s)=%.3gms, '
            'T_m=clamp(min(max slice, budget %s))=%s, %s, '
            'worst W+(m_p-1)*%s=%s+%d*%s=%s' % (
                f.mechanism, f.m_reported, f.m_pending, f.m_request,
                f.pcpus, f.m_p, f.n_reported, f.n_pending, f.pcpus, f.n_p,
                f.latency_request_ms, host_l, f.latency_ms, budget,
                _ms(f.t_m_us), _wait_words(f),
                'max(T_m,Q)' if f.mechanism == lsvm_bound.MECH_DEADLINE
                else 'T_m',
                _ms(f.wait_us), f.m_p - 1, _ms(f.term_us or f.t_m_us),
                _ms(f.worst_us)))
    if f.mechanism == lsvm_bound.MECH_DEADLINE:
        text += ', ' + bandwidth_words(f)
    return text


# check(h, p, r):
#   r not latency-sensitive          -> pass (see below)
#   not h.lsvm.supported             -> reject (no vSlicer on the host)
#   m_p > max_per_pcpu               -> reject
#   deadline: need > room            -> reject (the agent admits LSVMs,
#                                       strictest first, while their
#                                       reservations fit; with the request
#                                       added one of them would fall back
#                                       to slices)
#   slice: n_p * T_m > T_NLSVM       -> reject (vSlicer eq. 2.12: with
#                                       r * T_m = T_NLSVM / n and r >= 1,
#                                       each NLSVM turn must leave a whole
#                                       microslice to every LSVM)
#   worst > L (L includes the host's strictest reported bound, so the
#             LSVMs already there keep theirs)  -> reject
#   else pass
# No fairness room for deadline (a reservation is the VM's fair share by
# construction) nor weight (the boost is capped by a CFS quota at the fair
# share). Requests that are not latency-sensitive pass: their vCPUs do not
# change m_p, T_m or worst (W is T_m, T_NLSVM or measured, not a function
# of n), and on EEVDF equal weights keep every VM's CPU share whatever n
# is, so eq. 2.12's room is vSlicer's round-structure precondition, checked
# when an LSVM is admitted, not a reason to turn ordinary VMs away. On a
# deadline host they shrink s' and so every reservation: the agent keeps
# them at the fair share, never above the kernel's limit.
def check(report, pending, request):
    """Return ``(passes, reason, figures or None)``."""
    if not request.latency_sensitive:
        return True, 'request is not latency-sensitive', None
    lsvm = report.lsvm
    if not lsvm.supported:
        return (False, 'host does not support LSVM slicing '
                '(lsvm.supported=false: no vSlicer policy in its agent)',
                None)
    f = figures(report, pending, request)
    numbers = describe(f) + scoring.pending_note(pending)
    if f.m_p > f.max_per_pcpu:
        return (False, 'LSVM vCPUs per pCPU m_p=%d > max_per_pcpu %d; %s' % (
            f.m_p, f.max_per_pcpu, numbers), f)
    deadline = f.mechanism == lsvm_bound.MECH_DEADLINE
    if deadline and request.dedicated:
        return (False, 'hw:cpu_policy=dedicated: Nova pins its vCPUs to '
                'single pCPUs, and SCHED_DEADLINE needs an affinity over the '
                'root domain (the agent would serve it with slices); %s'
                % numbers, f)
    if deadline and not lsvm_bound.admits(f.dl_need, f.dl_room):
        return (False, 'no SCHED_DEADLINE bandwidth: need %.3g CPUs > '
                'reservable %.3g (limit %.3g - foreign %.3g); %s' % (
                    f.dl_need, f.dl_room, f.dl_bw_limit, f.dl_bw_foreign,
                    numbers), f)
    room = f.n_p * f.t_m_us
    if f.mechanism == lsvm_bound.MECH_SLICE and room > f.nlsvm_slice_us:
        return (False, 'no fairness room: n_p*T_m=%d*%s=%s > T_NLSVM %s '
                '(vSlicer eq. 2.12); %s' % (
                    f.n_p, _ms(f.t_m_us), _ms(room), _ms(f.nlsvm_slice_us),
                    numbers), f)
    if not lsvm_bound.holds(f.worst_us, f.latency_ms):
        return (False, 'worst-case latency %s > L %.3gms (mechanism %s); '
                '%s' % (_ms(f.worst_us), f.latency_ms, f.mechanism,
                        numbers), f)
    if f.mechanism == lsvm_bound.MECH_SLICE:
        extra = 'n_p*T_m=%s <= T_NLSVM %s' % (_ms(room),
                                               _ms(f.nlsvm_slice_us))
    elif deadline:
        extra = 'deadline bandwidth %.3g <= %.3g CPUs' % (f.dl_need,
                                                          f.dl_room)
    else:
        extra = 'weight capped at the fair share'
    return (True, 'LSVM fits (%s): worst-case latency %s <= L %.3gms, '
            'm_p=%d <= %d, %s; %s' % (
                f.mechanism, _ms(f.worst_us), f.latency_ms, f.m_p,
                f.max_per_pcpu, extra, numbers), f)


# passes(h, m_pending, n_pending, r) := check(h, p, r)'s verdict for a
# latency-sensitive r, the same tests in the same order, without the
# reason (for the filter's hot path; the reason is ``check``'s, written
# only when read). h = host_terms(report), (m_pending, n_pending) =
# pending_terms(p).
def passes(h, m_pending, n_pending, request):
    """Whether ``check`` passes a latency-sensitive ``request``."""
    if not h.supported:
        return False
    (m, n, m_p, n_p, lat_req, lat, budget, t_m, wait, term,
     share) = _core(h, m_pending, n_pending, request)
    if m_p > h.max_per_pcpu:
        return False
    mech = h.slicing.mechanism
    if mech == lsvm_bound.MECH_DEADLINE:
        if request.dedicated or not lsvm_bound.admits(m * share, h.dl_room):
            return False
    elif (mech == lsvm_bound.MECH_SLICE
          and n_p * t_m > h.slicing.nlsvm_slice_us):
        return False
    return lsvm_bound.holds(
        lsvm_bound.worst_case_us(m_p, t_m, h.slicing, term), lat)
