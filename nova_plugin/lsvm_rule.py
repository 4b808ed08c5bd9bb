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
"""Pure LSVM feasibility rule of ``LsvmFilter``: vSlicer's check, once more.

Description:
    From a host's ``HostReport`` (``lsvm`` object, schema 1.2), the
    placements made there since that report (``scoring.Pending``) and a
    latency-sensitive request (``iosched:latency_sensitive=true``), redo
    the host agent's vSlicer check (``host_agent/policies/vslicer.py``) for
    the host with the request added: LSVM vCPUs per pCPU within
    ``max_per_pcpu``, vSlicer's fairness room, and the worst-case
    scheduling latency within the request's bound and within the
    strictest bound of the LSVMs already there.

Requirements:
    A report of schema ``host_agent.reporter.payload`` 1.x (a 1.1 report
    reads with the agent's default parameters).

Limitations:
    Pending LSVM vCPUs (noted by ``ReportStore.note_placement``) count with
    an unknown latency bound: only the reported ``min_latency_ms`` is kept.
    Pending vCPUs this worker only estimated (``nova_plugin.inflight``)
    count as non-LSVM vCPUs. Requests that are not latency-sensitive always
    pass (see ``check``).

Spec URL:
    ../shared/seeds/001-vslicer-vturbo-vread.md section 2.1 (eqs. 2.11,
    2.12, the crest T_NLSVM + (m-1)*T_m); docs/nova.md.

No nova, no I/O, no clock.
"""

import dataclasses
import math

from nova_plugin import scoring

# The kernel's slice clamp, as the agent applies it (vslicer.py).
KERNEL_MIN_SLICE_US = 100
KERNEL_MAX_SLICE_US = 100000


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
    wait_us: int               # W
    worst_us: int              # W + (m_p - 1) * T_m
    nlsvm_slice_us: int
    max_per_pcpu: int
    wakeup_preemption: bool


def _clamp(v, lo, hi):
    return max(lo, min(hi, v))


# After placing the request (P = report.pcpus):
#   m   = reported LSVM vCPUs + pending LSVM vCPUs + request vCPUs
#   n   = reported non-LSVM vCPUs + pending non-LSVM vCPUs
#   m_p = ceil(m / P),  n_p = ceil(n / P)
#   L   = min(request L (or the host's default_latency_ms),
#             host min_latency_ms if > 0)
#   budget = L / m_p                          with wakeup_preemption
#          = (L - T_NLSVM) / (m_p - 1)        without (inf when m_p = 1)
#   T_m = clamp(min(max_slice, budget), max(min_slice, 100 us), 100 ms),
#         truncated to whole microseconds, as the agent chooses it
#   W   = T_m if wakeup_preemption else T_NLSVM
#   worst = W + (m_p - 1) * T_m
# (the same rule as host_agent.policies.vslicer.worst_case_us; the table
# test tests/unit/nova_plugin/test_lsvm_rule.py checks they agree).
def figures(report, pending, request):
    """The figures of the host after placing ``request``."""
    lsvm = report.lsvm
    pending = pending or scoring.NO_PENDING
    pcpus = report.pcpus
    if lsvm.nlsvm_vcpus is not None:
        n_reported = lsvm.nlsvm_vcpus
    else:
        n_reported = max(0, len(report.vcpus) - lsvm.count)
    n_pending = max(0, scoring.pending_vcpus(pending) - pending.lsvm_vcpus)
    m = lsvm.count + pending.lsvm_vcpus + request.vcpus
    n = n_reported + n_pending
    m_p = max(1, math.ceil(m / float(pcpus)))
    n_p = math.ceil(n / float(pcpus))
    lat_req = float(request.latency_ms or lsvm.default_latency_ms)
    lat = lat_req
    if lsvm.min_latency_ms > 0:
        lat = min(lat, lsvm.min_latency_ms)
    t_nlsvm = _us(lsvm.nlsvm_slice_ms)
    if lsvm.wakeup_preemption:
        budget = lat * 1000.0 / m_p
    elif m_p <= 1:
        budget = float('inf')
    else:
        budget = (lat * 1000.0 - t_nlsvm) / (m_p - 1)
    want = min(_us(lsvm.max_slice_ms), budget)
    t_m = int(_clamp(want, max(_us(lsvm.min_slice_ms), KERNEL_MIN_SLICE_US),
                     KERNEL_MAX_SLICE_US))
    wait = t_m if lsvm.wakeup_preemption else t_nlsvm
    return Figures(
        pcpus=pcpus, m_reported=lsvm.count, m_pending=pending.lsvm_vcpus,
        m_request=request.vcpus, m=m, m_p=m_p, n_reported=n_reported,
        n_pending=n_pending, n=n, n_p=n_p, latency_request_ms=lat_req,
        latency_host_ms=lsvm.min_latency_ms, latency_ms=lat, budget_us=budget,
        t_m_us=t_m, wait_us=wait, worst_us=wait + (m_p - 1) * t_m,
        nlsvm_slice_us=t_nlsvm, max_per_pcpu=lsvm.max_per_pcpu,
        wakeup_preemption=lsvm.wakeup_preemption)


def _ms(us):
    return '%.3gms' % (us / 1000.0)


def describe(f):
    """The figures as one line: every term of every formula."""
    rule = ('W=T_m (wakeup_preemption)' if f.wakeup_preemption
            else 'W=T_NLSVM (round robin)')
    host_l = ('host strictest %.3gms' % f.latency_host_ms
              if f.latency_host_ms > 0 else 'no LSVM on the host')
    budget = ('inf' if f.budget_us == float('inf')
              else _ms(max(f.budget_us, 0)) if f.budget_us >= 0
              else '<0')
    return ('m_p=ceil((reported %d + pending %d + request %d)/%d pCPUs)=%d, '
            'n_p=ceil((reported %d + pending %d)/%d)=%d, '
            'L=min(request %.3gms, %s)=%.3gms, '
            'T_m=clamp(min(max slice, budget %s))=%s, %s, '
            'worst W+(m_p-1)*T_m=%s+%d*%s=%s' % (
                f.m_reported, f.m_pending, f.m_request, f.pcpus, f.m_p,
                f.n_reported, f.n_pending, f.pcpus, f.n_p,
                f.latency_request_ms, host_l, f.latency_ms, budget,
                _ms(f.t_m_us), rule, _ms(f.wait_us), f.m_p - 1,
                _ms(f.t_m_us), _ms(f.worst_us)))


# check(h, p, r):
#   r not latency-sensitive          -> pass (see below)
#   not h.lsvm.supported             -> reject (no vSlicer on the host)
#   m_p > max_per_pcpu               -> reject
#   n_p * T_m > T_NLSVM              -> reject (vSlicer eq. 2.12: with
#                                       r * T_m = T_NLSVM / n and r >= 1,
#                                       each NLSVM turn must leave a whole
#                                       microslice to every LSVM)
#   worst > L (L includes the host's strictest reported bound, so the
#             LSVMs already there keep theirs)  -> reject
#   else pass
# Requests that are not latency-sensitive pass: their vCPUs do not change
# m_p, T_m or worst (W is T_m or T_NLSVM, not a function of n), and on
# EEVDF equal weights keep every VM's CPU share whatever n is, so eq.
# 2.12's room is vSlicer's round-structure precondition, checked when an
# LSVM is admitted, not a reason to turn ordinary VMs away from a host.
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
    room = f.n_p * f.t_m_us
    if room > f.nlsvm_slice_us:
        return (False, 'no fairness room: n_p*T_m=%d*%s=%s > T_NLSVM %s '
                '(vSlicer eq. 2.12); %s' % (
                    f.n_p, _ms(f.t_m_us), _ms(room), _ms(f.nlsvm_slice_us),
                    numbers), f)
    if f.worst_us > f.latency_ms * 1000.0 + 1e-6:
        return (False, 'worst-case latency %s > L %.3gms; %s' % (
            _ms(f.worst_us), f.latency_ms, numbers), f)
    return (True, 'LSVM fits: worst-case latency %s <= L %.3gms, m_p=%d <= '
            '%d, n_p*T_m=%s <= T_NLSVM %s; %s' % (
                _ms(f.worst_us), f.latency_ms, f.m_p, f.max_per_pcpu,
                _ms(room), _ms(f.nlsvm_slice_us), numbers), f)
