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
"""Table tests of iosched.nova_plugin.lsvm_rule.

Every figure is computed by hand in the comment of its row. The bound
itself (W, T_m, the shares) is iosched.contract.lsvm, which the agent
plans with too: tests/unit/contract/test_lsvm.py.
"""

import pytest

from iosched.contract import payload
from iosched.contract import payload_sections
from iosched.nova_plugin import lsvm_rule
from iosched.nova_plugin import scoring
from tests.unit.nova_plugin import reports

R = scoring.Request
P = scoring.Pending
RR = dict(wakeup_preemption=False)


def host(pcpus=4, **lsvm):
    return reports.report(pcpus=pcpus,
                          lsvm=reports.lsvm(pcpus=pcpus, **lsvm))


LSVM1 = R(1, latency_sensitive=True, latency_ms=2)

# name, host, pending, request, passes, (m_p, n_p, T_m us, worst us),
# words in the reason
CASES = [
    ('empty host, L=2: m_p=1, T_m=min(1000, 2000)=1000, worst 1000',
     host(), None, LSVM1, True, (1, 0, 1000, 1000), ['LSVM fits']),
    ('5th LSVM vCPU on 4 pCPUs: m_p=2, T_m=min(1000, 2000/2)=1000, '
     'worst 2*1000 = 2000 <= 2000',
     host(count=4, min_latency_ms=2), None, LSVM1, True,
     (2, 0, 1000, 2000), ['LSVM fits']),
    ('9th: m_p=3, T_m=int(2000/3)=666, worst 1998 <= 2000',
     host(count=8, min_latency_ms=2), None, LSVM1, True,
     (3, 0, 666, 1998), ['LSVM fits']),
    ('13th: m_p=4 > max_per_pcpu 3',
     host(count=12, min_latency_ms=2), None, LSVM1, False,
     (4, 0, 500, 2000), ['m_p=4 > max_per_pcpu 3']),
    ('pending LSVM vCPUs count: 8 + 4 + 1 = 13 -> m_p=4 > 3',
     host(count=8, min_latency_ms=2), P(lsvm_vcpus=4), LSVM1, False,
     (4, 0, 500, 2000), ['pending 4', 'max_per_pcpu']),
    ('stricter LSVM already there: L=min(5, 0.3)=0.3, m_p=2: T_m=150, '
     'worst 300 <= 300',
     host(count=4, min_latency_ms=0.3), None,
     R(1, latency_sensitive=True, latency_ms=5), True, (2, 0, 150, 300),
     ['host strictest 0.3ms']),
    ('L=0.15 with m_p=2: budget 75us < 100us: T_m=100, worst 200 > 150',
     host(count=4, min_latency_ms=0.15), None, LSVM1, False,
     (2, 0, 100, 200), ['worst-case latency 0.2ms > L 0.15ms']),
    ('fairness: n=12 on 4 pCPUs, n_p=3: 3*1000 = 3000 <= T_NLSVM 3000',
     host(nlsvm_vcpus=12), None, LSVM1, True, (1, 3, 1000, 1000),
     ['n_p*T_m=3ms <= T_NLSVM 3ms']),
    ('fairness: n=13, n_p=4: 4*1000 > 3000 (eq. 2.12)',
     host(nlsvm_vcpus=13), None, LSVM1, False, (1, 4, 1000, 1000),
     ['no fairness room', 'eq. 2.12']),
    ('pending non-LSVM vCPUs count: 12 + (6 - 2) = 16, n_p=4: rejected',
     host(nlsvm_vcpus=12), P(placements=2, lsvm_vcpus=2, vcpus=6), LSVM1,
     False, (1, 4, 1000, 1000), ['pending 4', 'fairness']),
    ('round robin: W=T_NLSVM=3000 > L=2000 even alone',
     host(**RR), None, LSVM1, False, (1, 0, 1000, 3000),
     ['worst-case latency 3ms > L 2ms', 'W=T_NLSVM']),
    ('round robin, L=5, m_p=2: T_m=min(1000, (5000-3000)/1)=1000, '
     'worst 3000+1000 = 4000',
     host(count=4, min_latency_ms=5, **RR), None,
     R(1, latency_sensitive=True, latency_ms=5), True, (2, 0, 1000, 4000),
     ['LSVM fits']),
    ('round robin, L=3.2, m_p=3: T_m=(3200-3000)/2=100, worst 3200',
     host(count=8, **RR), None,
     R(1, latency_sensitive=True, latency_ms=3.2), True,
     (3, 0, 100, 3200), ['LSVM fits']),
    ('request without latency_ms: the host default 2.0 applies',
     host(default_latency_ms=0.5), None, R(1, latency_sensitive=True),
     True, (1, 0, 500, 500), ['request 0.5ms']),
    ('a 4-vCPU LSVM on 2 pCPUs: m_p=2, T_m=1000, worst 2000',
     host(pcpus=2), None, R(4, latency_sensitive=True, latency_ms=2), True,
     (2, 0, 1000, 2000), ['/2 pCPUs)=2']),
    # 1.3: the mechanism and the measured wake-up term W_meas
    ('slice, measured tick 4000us: W=max(T_m 1000, 4000) > L=2000',
     host(wakeup_latency_us=4000.0), None, LSVM1, False,
     (1, 0, 1000, 4000),
     ['worst-case latency 4ms > L 2ms (mechanism slice)',
      'W=max(T_m, measured p99 4000us) (wakeup_preemption)']),
    ('slice, measured 4000us, L=5, m_p=2: T_m=min(1000, 5000/2, '
     '(5000-4000)/1)=1000, worst 4000+1000 = 5000',
     host(count=4, min_latency_ms=5, wakeup_latency_us=4000.0), None,
     R(1, latency_sensitive=True, latency_ms=5), True, (2, 0, 1000, 5000),
     ['LSVM fits (slice)', 'n_p*T_m=0ms <= T_NLSVM 3ms']),
    ('weight, measured 63us: worst 63, no fairness room asked (n_p=4)',
     host(nlsvm_vcpus=13, mechanism='weight', wakeup_latency_us=63.0),
     None, LSVM1, True, (1, 4, 1000, 63),
     ['LSVM fits (weight)', 'W=measured p99 63us',
      'weight capped at the fair share']),
    ('weight, 63us, m_p=3: T_m=int((2000-63)/2)=968, worst 63+2*968=1999',
     host(count=8, min_latency_ms=2, mechanism='weight',
          wakeup_latency_us=63.0), None, LSVM1, True, (3, 0, 968, 1999),
     ['worst W+(m_p-1)*T_m=0.063ms+2*0.968ms=2ms']),
    ('weight, not measured: W=T_m, m_p=2: T_m=1000, worst 2000',
     host(count=4, mechanism='weight'), None, LSVM1, True,
     (2, 0, 1000, 2000), ['W=T_m (not measured)']),
    ("deadline, room: m=1+1+1=3, N'=3+1=4 on 2 pCPUs, s'=min(0.5, 2/4)="
     "0.5, need 1.5 <= 1.9; m_p=2, T_m=min(1000, 2000-13)=1000, worst 1013",
     host(pcpus=2, count=1, nlsvm_vcpus=1, mechanism='deadline',
          wakeup_latency_us=13.0, dl_bw_limit=1.9, dl_bw_reserved=0.5),
     P(placements=1, lsvm_vcpus=1, vcpus=1), LSVM1, True,
     (2, 1, 1000, 1013),
     ["need m*s'=3*0.5=1.5 CPUs vs limit 1.9 - foreign 0 = 1.9 CPUs "
      "(LSVMs reserve 0.5 now)", 'deadline bandwidth 1.5 <= 1.9 CPUs',
      'W=measured p99 13us']),
    ("deadline, the request exhausts it: m=4=N', s'=0.5, need 2 > 1.9",
     host(pcpus=2, count=3, mechanism='deadline', wakeup_latency_us=13.0,
          dl_bw_limit=1.9), None, LSVM1, False, (2, 0, 1000, 1013),
     ['no SCHED_DEADLINE bandwidth: need 2 CPUs > reservable 1.9 (limit '
      '1.9 - foreign 0)']),
    ("deadline, more vCPUs shrink every share: N'=4+4, s'=2/8=0.25, need "
     "1 <= 1.9 - foreign 0.5",
     host(pcpus=2, count=3, nlsvm_vcpus=4, mechanism='deadline',
          wakeup_latency_us=13.0, dl_bw_limit=1.9, dl_bw_foreign=0.5),
     None, LSVM1, True, (2, 2, 1000, 1013),
     ["s'=min(max share 0.5, 2 pCPUs/N' 8 vCPUs)=0.25"]),
    ('deadline, no root domain known: limit 0',
     host(mechanism='deadline', wakeup_latency_us=13.0), None, LSVM1,
     False, (1, 0, 1000, 13), ['need 0.5 CPUs > reservable 0']),
    ('deadline, measured W 2500us > L 2000 even with bandwidth',
     host(mechanism='deadline', wakeup_latency_us=2500.0, dl_bw_limit=3.8),
     None, LSVM1, False, (1, 0, 1000, 2500),
     ['worst-case latency 2.5ms > L 2ms (mechanism deadline)']),
    # the agent sizes runtimes to measured bursts and reports the largest
    # (dl_runtime_us): the others' runtimes count in the wait
    ("deadline, 0.5 ms bursts: k=2, T=max(T_m 1000, Q 2000)=2000, worst "
     "60+2000 > 2000",
     host(pcpus=2, count=3, min_latency_ms=5, mechanism='deadline',
          wakeup_latency_us=60.0, dl_bw_limit=3.8, dl_runtime_us=2000),
     None, LSVM1, False, (2, 0, 1000, 2060),
     ['worst W+(m_p-1)*max(T_m,Q)=0.06ms+1*2ms=2.06ms']),
    ('deadline, 0.5 ms bursts, L=5: worst 60+2000 <= 5000',
     host(pcpus=2, count=3, min_latency_ms=5, mechanism='deadline',
          wakeup_latency_us=60.0, dl_bw_limit=3.8, dl_runtime_us=2000),
     None, R(1, latency_sensitive=True, latency_ms=5), True,
     (2, 0, 1000, 2060), ['LSVM fits (deadline)']),
    ('deadline, bursts, k=1: the runtimes do not add to the wait',
     host(pcpus=2, mechanism='deadline', wakeup_latency_us=60.0,
          dl_bw_limit=3.8, dl_runtime_us=2000),
     None, LSVM1, True, (1, 0, 1000, 60), ['LSVM fits (deadline)']),
]


@pytest.mark.parametrize('name,report,pending,request_,passes,figs,words',
                         CASES, ids=[c[0] for c in CASES])
def test_check(name, report, pending, request_, passes, figs, words):
    ok, reason, f = lsvm_rule.check(report, pending, request_)
    assert ok is passes
    assert (f.m_p, f.n_p, f.t_m_us, f.worst_us) == figs
    for word in words:
        assert word in reason
    # every reason carries the formula and its terms
    assert 'W+(m_p-1)*' in reason and 'm_p=ceil(' in reason


def test_not_latency_sensitive_passes_even_on_a_full_host():
    full = host(count=12, nlsvm_vcpus=40, supported=False)
    ok, reason, f = lsvm_rule.check(full, None, R(8, 'io'))
    assert (ok, f) == (True, None)
    assert 'not latency-sensitive' in reason


@pytest.mark.parametrize('mechanism,passes', [
    ('deadline', False), ('weight', True), ('slice', True)])
def test_a_dedicated_lsvm_never_goes_to_a_deadline_host(mechanism, passes):
    """Nova pins hw:cpu_policy=dedicated vCPUs to single pCPUs; the kernel
    refuses SCHED_DEADLINE on them and the agent serves them with slices
    (lsvm_mechanisms.admit_deadline), so a deadline host cannot keep the bound.
    """
    req = R.from_extra_specs(1, {'iosched:latency_sensitive': 'true',
                                 'iosched:latency_ms': '2',
                                 'hw:cpu_policy': 'dedicated'})
    assert req.dedicated and req.latency_sensitive
    report = host(pcpus=2, mechanism=mechanism, wakeup_latency_us=13.0,
                  dl_bw_limit=1.9)
    ok, reason, _ = lsvm_rule.check(report, None, req)
    assert ok is passes, reason
    if not passes:
        assert 'hw:cpu_policy=dedicated' in reason


def test_host_without_vslicer_is_rejected():
    ok, reason, _ = lsvm_rule.check(host(supported=False), None, LSVM1)
    assert not ok and 'lsvm.supported=false' in reason


def test_a_1_2_report_reads_as_slice_unmeasured():
    """A 1.2 host (no mechanism, nothing measured): the rule of 1.2."""
    data = host(count=4, min_latency_ms=2).to_dict()
    data['version'] = '1.2'
    for key in ('mechanism', 'wakeup_latency_us', 'deadline_max_share',
                'dl_bw_limit', 'dl_bw_foreign', 'dl_bw_reserved', 'probes'):
        del data['lsvm'][key]
    ok, reason, f = lsvm_rule.check(payload.HostReport.from_dict(data),
                                    None, LSVM1)
    assert ok and reason.startswith('LSVM fits (slice)')
    assert (f.mechanism, f.wakeup_measured_us) == ('slice', 0.0)
    assert (f.m_p, f.t_m_us, f.wait_us, f.worst_us) == (2, 1000, 1000, 2000)


def test_a_1_1_report_derives_n_from_its_vcpu_list():
    entries = tuple(
        payload_sections.VcpuEntry('u%d' % i, 0, None, 0.0, 'cpu', 1.0)
        for i in range(14))
    old = payload.HostReport(
        host='h', ts=1.0, seq=1, report_interval=1.0, pcpus=4, vcpus=entries,
        lsvm=payload_sections.LsvmState(True, 1, 0.25, 11, 1.0))
    f = lsvm_rule.figures(old, None, LSVM1)
    assert (f.n, f.n_p) == (13, 4)           # 14 vCPUs - 1 LSVM
