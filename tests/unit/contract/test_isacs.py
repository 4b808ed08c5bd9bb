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
"""ISACS Eqs. 1-4 and concealing, hand-computed, in the simulator's units
(us) and the agent's (ns, shares of a window), with the guards where the
agent's and the simulator's copies disagreed.
"""

from hypothesis import given
from hypothesis import strategies as st
import pytest

from iosched.contract import isacs

MS = 1_000_000  # ns


def _observe_all(times, weight=0.9, cutoff=10000):
    n, last, ibar = 0, None, None
    for t in times:
        n, last, ibar = isacs.observe(n, last, ibar, t, weight, cutoff)
    return n, last, ibar


# Eq. 1: Ibar = w * I_e + (1 - w) * Ibar, I_e <= cutoff only.
@pytest.mark.parametrize('times,weight,events,ibar', [
    ([0], 0.9, 1, None),
    ([0, 1000], 0.9, 2, 1000.0),                    # first gap seeds
    ([0, 1000, 3000], 0.9, 3, 1900.0),              # .9*2000 + .1*1000
    ([0, 1000, 3000], 0.5, 3, 1500.0),              # configurable weight
    ([0, 1000, 3000, 3500], 0.9, 4, 640.0),         # .9*500 + .1*1900
    ([0, 0, 500], 0.9, 2, 500.0),                   # same time: one event
    ([0, 1000, 12000, 13000], 0.9, 4, 1000.0),      # 11 ms gap skipped
    ([0, 10000], 0.9, 2, 10000.0),                  # exactly 10 ms: used
    ([0, 20000, 40000], 0.9, 3, None),              # sparse: no interval
])
def test_eq1_ema_and_cutoff(times, weight, events, ibar):
    n, last, got = _observe_all(times, weight)
    assert n == events
    assert last == times[-1]
    assert got == (None if ibar is None else pytest.approx(ibar))
    # the window form agrees, with 0.0 for "no usable interval"
    assert isacs.ema_gap(times, weight, 10000) == (
        events, pytest.approx(ibar or 0.0))


@given(st.lists(st.integers(0, 50000), max_size=60),
       st.sampled_from([0.5, 0.9, 1.0]))
def test_ema_gap_is_observe_folded(gaps, weight):
    # ema_gap inlines observe() for speed: the two must agree exactly.
    times = [sum(gaps[:i + 1]) for i in range(len(gaps))]
    n, _, ibar = _observe_all(times, weight)
    assert isacs.ema_gap(times, weight, 10000) == (n, ibar or 0.0)


def test_eq1_long_gap_restarts_the_interval_clock():
    # after an 11 ms silence the next gap is measured from the late event
    n, last, ibar = _observe_all([0, 11000, 11500])
    assert (n, last, ibar) == (3, 11500, 500)


# Hand-computed in ns, as the agent's collector calls it.
@pytest.mark.parametrize('name,events,want_n,want_ibar', [
    ('no events', (), 0, 0.0),
    ('one event: no gap', (5 * MS,), 1, 0.0),
    ('two events 2 ms apart', (0, 2 * MS), 2, 2 * MS),
    ('three events, gaps 2 then 4 ms', (0, 2 * MS, 6 * MS), 3,
     0.9 * 4 * MS + 0.1 * 2 * MS),
    ('gap of 20 ms dropped, clock restarts', (0, 20 * MS, 23 * MS), 3,
     3 * MS),
    ('only long gaps', (0, 11 * MS, 30 * MS), 3, 0.0),
    ('exactly the cutoff is kept', (0, 10 * MS), 2, 10 * MS),
    ('simultaneous events are one delivery', (0, 0, 0, 2 * MS, 2 * MS), 2,
     2 * MS),
    ('four events, gaps 1, 2, 3 ms', (0, 1 * MS, 3 * MS, 6 * MS), 4,
     0.9 * 3 * MS + 0.1 * (0.9 * 2 * MS + 0.1 * 1 * MS)),
])
def test_eq1_ema_gap_of_a_window(name, events, want_n, want_ibar):
    n, ibar = isacs.ema_gap(events, 0.9, 10 * MS)
    assert n == want_n, name
    assert ibar == pytest.approx(want_ibar), name


@pytest.mark.parametrize('events,ibar,window,want', [
    (400, 2.5 * MS, 1000 * MS, 1.0),     # active the whole window
    (10, 1 * MS, 1000 * MS, 0.01),
    (10, 1 * MS, 0, 0.0),                # no window
    (10, 250.5, 1, 2505.0),              # the paper's units: E_n * Ibar
    (10, None, 1, 0.0),                  # no usable interval
    (10, 0.0, 1, 0.0),
    (0, 1000, 1, 0.0),                   # no event
])
def test_io_strength(events, ibar, window, want):
    assert isacs.io_strength(events, ibar, window) == pytest.approx(want)


# Eq. 2: IVCredit = strength * consumed / mean(consumed), cap if > 0.
@pytest.mark.parametrize('strength,consumed,mean,cap,want', [
    (10000, 5000, 10000, 0, 5000.0),
    (10000, 20000, 10000, 0, 20000.0),
    (10000, 20000, 10000, 10000, 10000.0),          # Gap 4: the cap
    (751.5, 4000, 8000, 0, 375.75),
    (0.5, 20, 10, 0, 1.0),                          # agent: shares
    (0.5, 5, 10, 0, 0.25),
    (30.0, 3.0, 1.5, 0, 60.0),                      # 5 * 2 * 3 / 1.5
    (0.0, 5000, 10000, 0, 0.0),                     # no I/O
    (10000, 0, 10000, 0, 0.0),                      # vCPU did not run
    (10000, 5000, 0, 0, 0.0),                       # mean 0: no credit
    # The copies disagreed: the agent's gave 10 * 2 * -1 / 3 = -6.67, the
    # simulator's 0.0. A credit is never negative: 0.0.
    (20.0, -1, 3, 0, 0.0),
    (20.0, 1, -3, 0, 0.0),
    (-5.0, 1, 3, 0, 0.0),
])
def test_eq2_ivcredit(strength, consumed, mean, cap, want):
    assert isacs.ivcredit(strength, consumed, mean, cap) == pytest.approx(
        want)


def test_eq2_unset_ibar_is_no_credit():
    # The agent's copy raised TypeError for I_bar None; the simulator's 0.
    assert isacs.ivcredit(isacs.io_strength(10, None), 5000, 10000) == 0.0


# Eq. 3: member iff mean positive IVCredit > IVCredit_c + guard.
@pytest.mark.parametrize('ivcs,guard,want', [
    ([0, 0, 6000, 2000], 0.001, [True, True, False, True]),    # mean 4000
    ([0, 0, 0], 0.001, [False, False, False]),                 # k = 0
    ([], 0.001, []),                                           # empty
    ([5000], 0.001, [False]),
    ([0, 3999.9995, 4000.0005], 0.001, [True, False, False]),  # guard
    ([0, 1, 3], 1, [True, False, False]),           # mean 2 > 0 + 1 only
    ([0, 3, 5], 1.0, [True, False, False]),         # mean 4 == 3 + 1: strict
    ([4, 4, 4], 1.0, [False, False, False]),        # all I/O, equal
    ([0, 0.5], 1.0, [False, False]),                # mean below guard
    ([0, 0.5], 0.0, [True, False]),                 # guard 0: no division
])
def test_eq3_boost_group(ivcs, guard, want):
    assert isacs.boost_members(ivcs, guard) == want


# Eq. 4: CVCredit = sum IVCredit / j * consumed / default.
@pytest.mark.parametrize('ivcs,j,consumed,default,want', [
    ([0, 0, 6000, 2000], 3, 10000, 10000, 8000 / 3),
    ([0, 0, 6000, 2000], 3, 5000, 10000, 4000 / 3),
    ([0, 0, 6000, 2000], 3, 12000, 10000, 3200.0),  # overrun
    ([0, 10, 20], 2, 0.5, 1.0, 7.5),                # agent: shares
    ([0, 0], 0, 10000, 10000, 0.0),                 # j = 0
    ([0, 0, 0], 3, 10000, 10000, 0.0),              # no I/O vCPU
    ([0, 6000], 1, 0, 10000, 0.0),
    ([0, 6000], 1, 10000, 0, 0.0),                  # default 0
    # The agent's copy had no consumed guard (-3000 here): 0.0.
    ([0, 6000], 1, -5000, 10000, 0.0),
])
def test_eq4_cvcredit(ivcs, j, consumed, default, want):
    assert isacs.cvcredit(ivcs, j, consumed, default) == pytest.approx(want)


@pytest.mark.parametrize('default,ivc,concealed,want', [
    (10000, 3000, True, (13000, 3000)), (10000, 0, True, (10000, 0)),
    (10000, 3000, False, (13000, 0)), (0.2, 0.6, True, (0.8, 0.6))])
def test_concealing(default, ivc, concealed, want):
    credit, end = isacs.conceal(default, ivc, concealed)
    assert (credit, end) == pytest.approx(want)
    if concealed:
        assert credit - end == pytest.approx(default)   # same usable credit
