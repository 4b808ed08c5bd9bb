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
"""Table tests of the one LSVM bound (iosched.contract.lsvm).

The host agent's vSlicer policy and the Nova LsvmFilter both use it (it
replaced the copy in iosched/nova_plugin/lsvm_rule.py and the table test that
kept the copy equal to the agent's). Every figure is worked out in its row.
"""

import math

from hypothesis import given
from hypothesis import strategies as st
import pytest

from iosched.contract import lsvm
from tests.unit import input_fuzz as fz

D, W, S = lsvm.MECH_DEADLINE, lsvm.MECH_WEIGHT, lsvm.MECH_SLICE


def sl(mech=S, measured=0.0, rr=False, **kw):
    return lsvm.Slicing(mechanism=mech, measured_us=measured,
                        wakeup_preemption=not rr, **kw)


# name, Slicing, k, T_m, want W, want worst
WAITS = [
    ('slice, preemption, unmeasured: W = T_m', sl(), 2, 800, 800, 1600),
    ('slice, preemption, tick measured: W = 4 ms', sl(S, 4000), 1, 1000,
     4000, 4000),
    ('slice, round robin: W = T_NLSVM', sl(rr=True), 2, 500, 3000, 3500),
    ('slice, round robin, measured above T_NLSVM', sl(S, 5000, rr=True), 1,
     500, 5000, 5000),
    ('deadline measured 13 us', sl(D, 13), 3, 500, 13, 1013),
    ('weight measured 63 us', sl(W, 63), 1, 1000, 63, 63),
    ('deadline not measured: W = T_m', sl(D), 2, 700, 700, 1400),
    ('weight, round robin does not matter: W = measured',
     sl(W, 63, rr=True), 2, 500, 63, 563),
]


@pytest.mark.parametrize('name,s,k,t_m,wait,worst', WAITS,
                         ids=[w[0] for w in WAITS])
def test_wait_and_worst(name, s, k, t_m, wait, worst):
    assert lsvm.wait_us(t_m, s) == wait
    assert lsvm.worst_case_us(k, t_m, s) == worst


# name, Slicing, k, T_m, term (a deadline host's largest runtime Q), worst
TERMS = [
    ('Q above T_m: W + (k-1)*Q = 60 + 2000', sl(D, 60), 2, 1000, 2000, 2060),
    ('Q below T_m: T_m counts', sl(D, 60), 2, 1000, 500, 1060),
    ('k=1: no term', sl(D, 60), 1, 1000, 2000, 60),
    ('k=3, Q=1500: 13 + 2*1500', sl(D, 13), 3, 500, 1500, 3013),
]


@pytest.mark.parametrize('name,s,k,t_m,term,worst', TERMS,
                         ids=[t[0] for t in TERMS])
def test_the_deadline_term(name, s, k, t_m, term, worst):
    assert lsvm.worst_case_us(k, t_m, s, term) == worst


# name, Slicing, L ms, k, want budget us
BUDGETS = [
    ('slice preemption, k=1: L', sl(), 2, 1, 2000),
    ('slice preemption, k=2: L/2', sl(), 2, 2, 1000),
    ('slice preemption, W_meas=1500, k=2: (L-W)/(k-1)', sl(S, 1500), 2, 2,
     500),
    ('slice round robin, k=1: inf', sl(rr=True), 5, 1, math.inf),
    ('slice round robin, k=3: (L-T_NLSVM)/2', sl(rr=True), 5, 3, 1000),
    ('slice round robin, measured 4000 > T_NLSVM, k=2: L-4000',
     sl(S, 4000, rr=True), 5, 2, 1000),
    ('deadline measured, k=1: inf', sl(D, 13), 2, 1, math.inf),
    ('deadline measured, k=3: (L-W)/2', sl(D, 20), 2, 3, 990),
    ('weight unmeasured, k=2: L/2', sl(W), 2, 2, 1000),
    ('W alone above L: negative', sl(D, 2500), 2, 2, -500),
]


@pytest.mark.parametrize('name,s,lat,k,want', BUDGETS,
                         ids=[b[0] for b in BUDGETS])
def test_budget_is_the_largest_t_m_within_the_bound(name, s, lat, k, want):
    got = lsvm.budget_us(lat, k, s)
    assert got == pytest.approx(want)
    if math.isfinite(got) and got > 0:
        assert lsvm.holds(lsvm.worst_case_us(k, got, s), lat)


# name, Slicing, L ms, k, want (T_m, wanted)
MICROSLICES = [
    ('L=2, k=1: min(max slice 1000, 2000)', sl(), 2, 1, (1000, 1000)),
    ('L=2, k=3: int(2000/3)', sl(), 2, 3, (666, 2000 / 3)),
    ('L=0.15, k=2: 75 < the floor 100', sl(), 0.15, 2, (100, 75)),
    ('a floor below the kernel minimum is the kernel minimum',
     sl(min_slice_us=20), 0.15, 2, (100, 75)),
    ('a floor above it holds: 600/4=150 < 200', sl(min_slice_us=200),
     0.6, 4, (200, 150)),
    ('round robin k=1: unbounded budget, the max slice',
     sl(rr=True, max_slice_us=600), 5, 1, (600, 600)),
    ('max slice above the kernel maximum: 100 ms',
     sl(rr=True, max_slice_us=10 ** 6), 5, 1, (100000, 10 ** 6)),
    ('negative budget: the floor', sl(D, 2500), 2, 2, (100, -500)),
]


@pytest.mark.parametrize('name,s,lat,k,want', MICROSLICES,
                         ids=[m[0] for m in MICROSLICES])
def test_microslice(name, s, lat, k, want):
    t_m, wanted = lsvm.microslice_us(lat, k, s)
    assert (t_m, wanted) == (want[0], pytest.approx(want[1]))
    assert isinstance(t_m, int)


@pytest.mark.parametrize('m,pcpus,k', [
    (0, 4, 1), (1, 4, 1), (4, 4, 1), (5, 4, 2), (9, 4, 3), (13, 4, 4),
    (3, 0, 3), (7, 1, 7)])
def test_per_pcpu(m, pcpus, k):
    assert lsvm.per_pcpu(m, pcpus) == k


@pytest.mark.parametrize('worst,lat,ok', [
    (2000, 2, True), (2000.000001, 2, True), (2000.00001, 2, False),
    (1998, 2, True), (300, 0.3, True), (0, 0.001, True)])
def test_holds(worst, lat, ok):
    assert lsvm.holds(worst, lat) is ok


@pytest.mark.parametrize('pcpus,vcpus,max_share,fair,dl', [
    (4, 2, 0.5, 1.0, 0.5), (4, 16, 0.5, 0.25, 0.25), (2, 5, 0.5, 0.4, 0.4),
    (0, 0, 0.5, 1.0, 0.5), (2, 8, 0.1, 0.25, 0.1)])
def test_shares(pcpus, vcpus, max_share, fair, dl):
    assert lsvm.fair_share(pcpus, vcpus) == pytest.approx(fair)
    assert lsvm.deadline_share(pcpus, vcpus, max_share) == pytest.approx(dl)


@pytest.mark.parametrize('need,room,ok', [
    (1.5, 1.9, True), (1.9, 1.9, True), (1.9 + 1e-10, 1.9, True),
    (2.0, 1.9, False), (0.5, 0.0, False), (0.0, 0.0, True)])
def test_admits(need, room, ok):
    assert lsvm.admits(need, room) is ok


@pytest.mark.parametrize('s,words', [
    (sl(), 'T_m+(k-1)*T_m'), (sl(rr=True), 'T_NLSVM+(k-1)*T_m'),
    (sl(S, 4000), 'max(T_m,W=4000us)+(k-1)*T_m'),
    (sl(D, 13), 'W=13us+(k-1)*T_m'), (sl(W), 'T_m+(k-1)*T_m')])
def test_formula(s, words):
    assert lsvm.formula(s) == words


slicings = st.builds(
    lsvm.Slicing, mechanism=st.sampled_from(lsvm.MECHANISMS),
    measured_us=st.sampled_from((0.0, 13.0, 63.0, 4000.0))
    | st.floats(0, 20000),
    nlsvm_slice_us=st.integers(100, 100000),
    wakeup_preemption=st.booleans(),
    max_slice_us=st.integers(100, 100000), min_slice_us=st.integers(0, 5000))


@fz.SETTINGS
@given(slicings, st.floats(0.1, 10000), st.integers(1, 16))
def test_a_microslice_within_its_budget_keeps_the_bound(s, lat, k):
    """When the bound can hold at all (with the floor slice) and T_m's
    budget is not below the floor, it holds with the chosen T_m (else the
    agent refuses the bound and the filter the host).
    """
    t_m, want = lsvm.microslice_us(lat, k, s)
    floor = max(s.min_slice_us, lsvm.KERNEL_MIN_SLICE_US)
    assert floor <= t_m <= max(floor, lsvm.KERNEL_MAX_SLICE_US)
    assert t_m == int(min(max(want, floor), lsvm.KERNEL_MAX_SLICE_US)) or (
        floor > lsvm.KERNEL_MAX_SLICE_US)
    possible = lsvm.holds(lsvm.worst_case_us(k, floor, s), lat)
    if possible and want >= floor:
        assert lsvm.holds(lsvm.worst_case_us(k, t_m, s), lat)


@pytest.mark.parametrize('share, limit, stock, ok', [
    (0.0, 0.33, 0.0, True),          # not measured
    (0.33, 1 / 3.0, 0.33, True),
    (0.349, 1 / 3.0, 0.0, True),     # within 5 %
    (0.351, 1 / 3.0, 0.0, False),
    (0.5, 1 / 3.0, 0.5, True),       # stock gives more: stock is the limit
    (0.9, 1 / 3.0, 0.33, False),
])
def test_share_within(share, limit, stock, ok):
    assert lsvm.share_within(share, limit, stock) is ok


@pytest.mark.parametrize('share, stock, limit, want', [
    (0.10, 0.10, 0.25, 0.0),         # unchanged
    (0.12, 0.10, 0.25, -0.2),        # gained, under the limit: inside
    (0.09, 0.10, 0.25, 0.1),         # lost 10 %
    (0.30, 0.10, 0.25, 0.2),         # 20 % over the limit
    (0.30, 0.30, 0.25, 0.0),         # stock above the limit is the ceiling
    (0.05, 0.0, 0.25, 0.0),          # no stock figure
])
def test_share_excess(share, stock, limit, want):
    assert lsvm.share_excess(share, stock, limit) == pytest.approx(want)
    kept = lsvm.share_excess(share, stock, limit) <= lsvm.SHARE_TOLERANCE
    assert kept is (want <= 0.05)


@pytest.mark.parametrize('share, stock, limit, want', [
    (0.03, 0.04, 0.25, 0.03 / 0.25 - 1),   # served faster, used less: fine
    (0.30, 0.04, 0.25, 0.2),               # over its limit
])
def test_share_excess_of_a_demand_bound_guest(share, stock, limit, want):
    got = lsvm.share_excess(share, stock, limit, floor=False)
    assert got == pytest.approx(want)
