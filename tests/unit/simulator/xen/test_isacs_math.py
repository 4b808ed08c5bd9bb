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
"""ISACS Eqs. 1-4, concealing and Algorithm 2's choices, hand-computed."""

import pytest

from iosched.simulator.xen import isacs_math as m


def _observe_all(times, weight=0.9, cutoff=10000):
    n, last, ibar = 0, None, None
    for t in times:
        n, last, ibar = m.observe(n, last, ibar, t, weight, cutoff)
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


def test_eq1_long_gap_restarts_the_interval_clock():
    # after an 11 ms silence the next gap is measured from the late event
    n, last, ibar = _observe_all([0, 11000, 11500])
    assert (n, last, ibar) == (3, 11500, 500)


# Eq. 2: IVCredit = E_n * Ibar * consumed / mean(consumed), cap if > 0.
@pytest.mark.parametrize('events,ibar,consumed,mean,cap,expected', [
    (10, 1000, 5000, 10000, 0, 5000.0),
    (10, 1000, 20000, 10000, 0, 20000.0),
    (10, 1000, 20000, 10000, 10000, 10000.0),
    (3, 250.5, 4000, 8000, 0, 375.75),
    (10, None, 5000, 10000, 0, 0.0),                # no usable interval
    (0, 1000, 5000, 10000, 0, 0.0),
    (10, 1000, 0, 10000, 0, 0.0),
    (10, 1000, 5000, 0, 0, 0.0),                    # mean 0: no credit
])
def test_eq2_ivcredit(events, ibar, consumed, mean, cap, expected):
    assert m.ivcredit(events, ibar, consumed, mean, cap) == pytest.approx(
        expected)


# Eq. 3: member iff mean positive IVCredit > IVCredit_c + guard.
@pytest.mark.parametrize('ivcs,guard,expected', [
    ([0, 0, 6000, 2000], 0.001, [True, True, False, True]),    # mean 4000
    ([0, 0, 0], 0.001, [False, False, False]),                 # k = 0
    ([5000], 0.001, [False]),
    ([0, 3999.9995, 4000.0005], 0.001, [True, False, False]),  # guard
    ([0, 1, 3], 1, [True, False, False]),           # mean 2 > 0 + 1 only
])
def test_eq3_boost_group(ivcs, guard, expected):
    assert m.boost_members(ivcs, guard) == expected


# Eq. 4: CVCredit = sum IVCredit / j * consumed / default.
@pytest.mark.parametrize('ivcs,j,consumed,default,expected', [
    ([0, 0, 6000, 2000], 3, 10000, 10000, 8000 / 3),
    ([0, 0, 6000, 2000], 3, 5000, 10000, 4000 / 3),
    ([0, 0, 6000, 2000], 3, 12000, 10000, 3200.0),
    ([0, 0], 0, 10000, 10000, 0.0),                 # j = 0
    ([0, 6000], 1, 0, 10000, 0.0),
])
def test_eq4_cvcredit(ivcs, j, consumed, default, expected):
    assert m.cvcredit(ivcs, j, consumed, default) == pytest.approx(expected)


@pytest.mark.parametrize('ivc,concealed,expected', [
    (3000, True, (13000, 3000)), (0, True, (10000, 0)),
    (3000, False, (13000, 0))])
def test_concealing(ivc, concealed, expected):
    credit, end = m.conceal(10000, ivc, concealed)
    assert (credit, end) == expected
    if concealed:
        assert credit - end == 10000        # the same usable credit


def test_reallocate_two_passes():
    # rows: (E_n, Ibar, consumed); mean consumed = 40000 / 4 = 10000
    rows = [(0, None, 12000), (0, None, 8000), (20, 300.0, 15000),
            (10, 200.0, 5000)]
    ivcs, members, cvcs, load = m.reallocate(rows, 10000)
    # 20*300*1.5 = 9000; 10*200*0.5 = 1000; mean positive 5000
    assert ivcs == pytest.approx([0, 0, 9000, 1000])
    assert members == [True, True, False, True]
    # j = 3 (final size); sum 10000 / 3 * consumed / 10 ms
    assert cvcs == pytest.approx([4000, 10000 / 3 * 0.8, 0, 10000 / 3 * 0.5])
    assert load == pytest.approx(10000)


def test_reallocate_caps_and_no_io():
    ivcs, members, cvcs, load = m.reallocate(
        [(100, 1000.0, 10000), (0, None, 10000)], 10000, cap=10000)
    assert ivcs == [10000, 0] and members == [False, True]
    assert cvcs == pytest.approx([0, 10000])
    ivcs, members, cvcs, load = m.reallocate(
        [(0, None, 10000), (0, None, 10000)], 10000)
    assert members == [False, False] and cvcs == [0, 0] and load == 0


@pytest.mark.parametrize('src,io_events,expected', [
    (1, [(0, 5), (1, 10), (2, 3), (3, 12)], 2),     # last qualifying
    (1, [(0, 5), (1, 10), (2, 3), (3, 8)], 3),
    (0, [(0, 5), (1, 10), (2, 5)], None),           # RunQ_d unset
    (0, [(0, 5)], None),
])
def test_alg2_destination(src, io_events, expected):
    assert m.pick_destination(src, io_events) == expected


@pytest.mark.parametrize('load_s,load_d,cands,expected', [
    # gap 8000: IVCredit < 4000 qualifies; the last one wins
    (10000, 2000, [('a', 1000), ('b', 3000), ('c', 5000)], 'b'),
    (10000, 2000, [('b', 3000), ('a', 1000), ('c', 5000)], 'a'),
    (10000, 2000, [('a', 0), ('b', 0)], None),      # CPU-bound: never
    (10000, 2000, [('a', 4000)], None),             # strict: equal loads
    (20000, 0, [('a', 10000), ('b', 10000)], None),
])
def test_alg2_migrant(load_s, load_d, cands, expected):
    assert m.pick_migrant(load_s, load_d, cands) == expected
