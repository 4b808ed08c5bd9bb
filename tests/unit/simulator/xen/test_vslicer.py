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
"""The vSlicer model: Algorithm 1's schedule, fairness, waits, knobs."""

import pytest

from iosched.simulator import spec
from iosched.simulator.xen import credit_accounting
from iosched.simulator.xen import specs_credit
from iosched.simulator.xen import vslicer_math
from tests.unit.simulator.xen import helpers as hp

WARM = hp.SEC                       # credits settle after a few periods


def _run(microslices, names, secs=4, cost=0):
    h = hp.make_host(specs_credit.VSlicerSpec(microslices=microslices),
                     cost=cost)
    log = hp.trace(h.sched)
    for u in names:
        hp.add(h, u)
    h.run_until(secs * hp.SEC)
    return h, log


def _runs(log, end, since):
    """[(uuid, run length)] of a one-pCPU log after ``since``."""
    out = []
    for (t, _, u, _), nxt in zip(log, log[1:] + [(end, 0, None, 0)]):
        if t >= since:
            out.append((u, nxt[0] - t))
    return out


def test_m2_n2_tm5_follows_fig_2_7():
    # [L1 L2 L1 L2 L1 L2] N1 [L1 L2 L1 L2 L1 L2] N2, T_P = 120 ms.
    h, log = _run((('L1', 5000), ('L2', 5000)), ['L1', 'L2', 'N1', 'N2'])
    runs = _runs(log, 4 * hp.SEC, WARM)
    first = next(i for i, (u, _) in enumerate(runs) if u == 'L1'
                 and runs[i - 1][0].startswith('N'))
    period = runs[first:first + 14]
    micro = [('L1', 5000), ('L2', 5000)] * 3
    assert period in (micro + [('N1', 30000)] + micro + [('N2', 30000)],
                      micro + [('N2', 30000)] + micro + [('N1', 30000)])
    w = hp.waits(log, 4 * hp.SEC, WARM)
    for u in ('L1', 'L2'):          # C2: best (m-1) T_m, worst + T_NLSVM
        assert min(w[u]) == vslicer_math.best_wait(2, 5000)
        assert max(w[u]) == vslicer_math.worst_wait(30000, 2, 5000)


def test_m1_n3_follows_fig_2_6():
    # L(10) N1(30) L(10) N2(30) L(10) N3(30), worst wait 30 ms.
    h, log = _run((('L', 10000),), ['L', 'N1', 'N2', 'N3'])
    runs = _runs(log, 4 * hp.SEC, WARM)[:-1]
    assert {r for u, r in runs if u == 'L'} == {10000}
    assert {r for u, r in runs if u != 'L'} == {30000}
    names = [u for u, _ in runs]
    assert names[1::2] == ['L'] * len(names[1::2]) or \
        names[0::2] == ['L'] * len(names[0::2])
    assert max(hp.waits(log, 4 * hp.SEC, WARM)['L']) == 30000


@pytest.mark.parametrize('ms,names', [
    ((('L1', 5000), ('L2', 5000)), ['L1', 'L2', 'N1', 'N2']),
    ((('L', 10000),), ['L', 'N1', 'N2', 'N3']),
    ((('L1', 5000), ('L2', 5000)), ['L1', 'L2', 'N1', 'N2', 'N3']),
    ((('L', 5000),), ['L', 'N1', 'N2', 'N3', 'N4']),       # T_n = 7.5 ms
])
def test_lsvms_and_nlsvms_get_equal_shares(ms, names):
    # C3: 1 / (m + n) each.
    h, _ = _run(ms, names, secs=8, cost=2)
    total = sum(h.cpu_run_us(u) for u in names)
    for u in names:
        assert h.cpu_run_us(u) / total == pytest.approx(1 / len(names),
                                                        rel=0.03)


def test_non_divisor_microslice_is_cut_to_t_n():
    # n = 4: T_n = 7.5 ms; T_m = 5 ms runs 5 + 2.5 back to back.
    h, log = _run((('L', 5000),), ['L', 'N1', 'N2', 'N3', 'N4'])
    runs = _runs(log, 4 * hp.SEC, WARM)[:-1]
    assert {r for u, r in runs if u == 'L'} == {7500}
    assert h.sched.stats()['cores'] == [{'m': 1, 'n': 4, 't_n_us': 7500}]


def test_without_nlsvm_lsvms_round_robin_in_microslices():
    h, log = _run((('L1', 5000), ('L2', 5000)), ['L1', 'L2'])
    runs = _runs(log, 4 * hp.SEC, WARM)[:-1]
    assert {r for _, r in runs} == {5000}
    assert h.sched.stats()['cores'][0]['t_n_us'] is None


def test_without_lsvm_it_is_credit():
    h, log = _run((), ['N1', 'N2', 'N3'])
    runs = _runs(log, 4 * hp.SEC, WARM)[:-1]
    assert {r for _, r in runs} == {30000}


def test_set_slice_makes_an_lsvm_and_back():
    h, log = _run((), ['a', 'b', 'c', 'd'], secs=1)
    assert h.get_vcpu_slice('a', 0) == 30000
    h.set_vcpu_slice('a', 0, 10000)
    assert h.get_vcpu_slice('a', 0) == 10000
    assert h.sched.stats()['cores'][0] == {'m': 1, 'n': 3, 't_n_us': 10000}
    h.run_until(4 * hp.SEC)
    runs = _runs(log, 4 * hp.SEC, 2 * hp.SEC)[:-1]
    assert {r for u, r in runs if u == 'a'} == {10000}
    h.set_vcpu_slice('a', 0, 30000)         # a slice of T_NLSVM: NLSVM
    assert h.sched.stats()['cores'][0] == {'m': 0, 'n': 4, 't_n_us': 7500}


def test_parameters_follow_vm_arrival_and_removal():
    h, _ = _run((('L', 5000),), ['L', 'N1'], secs=1)
    assert h.sched.stats()['cores'][0]['t_n_us'] == 30000
    hp.add(h, 'N2')
    assert h.sched.stats()['cores'][0]['t_n_us'] == 15000
    h.remove_vm('N1')
    h.remove_vm('N2')
    assert h.sched.stats()['cores'][0] == {'m': 1, 'n': 0, 't_n_us': None}


def test_a_woken_lsvm_preempts_as_boost_and_keeps_its_micro_round():
    loop, s = hp.sched_only(specs_credit.VSlicerSpec(
        microslices=(('L', 5000),)))
    n1, n2 = hp.entity(s, 0, uuid='N1'), hp.entity(s, 1, uuid='N2')
    lsvm = hp.entity(s, 2, hp.Work(1000), uuid='L')
    for e in (n1, n2):
        s.wake(e, 0, initial=True)
    loop.run_until(41000)           # N2 runs, both demoted to UNDER
    s.wake(lsvm, 41000)
    assert lsvm.pri == credit_accounting.BOOST and s.cpus[0].curr is lsvm
    assert s.cpus[0].runq == [n1, n2]       # N2 preempted to the tail
    loop.run_until(42000)
    # N2 stopped: a micro-round started (refill to T_n = 15 ms), then the
    # LSVM was charged the 1 ms it ran, not a whole T_m.
    assert lsvm.micro == 15000 - 1000


@pytest.mark.parametrize('ms,field', [
    ((('a', 50),), r'microslices\[0\]\[1\]'),
    ((('a', 30000),), r'microslices\[0\]\[1\]'),
    ((('a',),), r'microslices\[0\]'),
    ((('a', 5000), ('a', 5000)), 'microslices'),
    ('a', 'microslices'),
])
def test_spec_rejects_bad_microslices(ms, field):
    with pytest.raises(ValueError, match='VSlicerSpec.' + field):
        specs_credit.VSlicerSpec(microslices=ms)


def test_request_latency_of_an_lsvm_under_hogs():
    # An LSVM that is always busy answers within its micro-rounds.
    def rtt(sched_spec):
        h = hp.make_host(sched_spec, cost=2)
        hp.add(h, 'L', spec.Mixed(cpu_fraction=1.0, rate_per_s=20,
                                  burst_us=50))
        for u in ('N1', 'N2', 'N3'):
            hp.add(h, u)
        h.run_until(20 * hp.SEC)
        lat = h.request_latencies_us('L', since_us=WARM)
        return sum(lat) / len(lat)
    credit_rtt = rtt(specs_credit.CreditSpec())
    vs_rtt = rtt(specs_credit.VSlicerSpec(microslices=(('L', 10000),)))
    assert credit_rtt > 25000                # about (N-1)^2 T / 2N = 33.75
    assert vs_rtt < 15000                    # about 15 n / (n + 1) = 11.25
