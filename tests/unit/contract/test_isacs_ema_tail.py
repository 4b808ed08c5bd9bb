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
"""Eq. 1 over a window from its distinct count and newest intervals
(``iosched.contract.isacs.ema_gap``) against the Python loop it replaced
(the reference in bench/agent_load_reference.py): tables of edge cases
and random windows (sorted, unsorted, duplicates, long gaps, float times,
a unit scale).
"""

import array
import random

from hypothesis import given
from hypothesis import strategies as st
import pytest

from bench import agent_load_reference
from iosched.contract import isacs

MS = 1_000_000  # ns


# The pre-issue-29 ema_gap (a Python loop over every event), the one copy
# the bench's reference path also runs.
reference = agent_load_reference.old_ema_gap_loop


def usable_gaps(times, cutoff, scale=1):
    return sum(1 for a, b in zip(times, times[1:])
               if 0 < (b - a) * scale <= cutoff)


def assert_same(times, weight=0.9, cutoff=10000, scale=1):
    want = reference(times, weight, cutoff, scale)
    got = isacs.ema_gap(times, weight, cutoff, scale)
    assert got[0] == want[0]
    assert got[1] == pytest.approx(want[1], rel=1e-15, abs=0)
    return got, want


LONG = list(range(0, 500 * 1000, 1000))         # 499 gaps of 1 ms (us)


@pytest.mark.parametrize('name,times,weight,cutoff,scale,want', [
    ('no event', [], 0.9, 10000, 1, (0, 0.0)),
    ('one event', [7], 0.9, 10000, 1, (1, 0.0)),
    ('two events', [0, 300], 0.9, 10000, 1, (2, 300)),
    ('two equal events: one delivery', [5, 5], 0.9, 10000, 1, (1, 0.0)),
    ('two events, long gap', [0, 20000], 0.9, 10000, 1, (2, 0.0)),
    ('duplicates between', [0, 0, 100, 100, 100, 300], 0.9, 10000, 1,
     (3, 0.9 * 200 + 0.1 * 100)),
    ('unsorted: a backwards step counts, no interval', [100, 50, 250],
     0.9, 10000, 1, (3, 200)),
    ('unsorted: a value seen before, not just before', [0, 10, 0, 10],
     0.9, 10000, 1, (4, 10.0)),
    ('exactly the cutoff', [0, 10000], 0.9, 10000, 1, (2, 10000)),
    ('us scaled to ns', [0, 2, 6], 0.9, 10 * MS, 1000,
     (3, 0.9 * 4000 + 0.1 * 2000)),
    ('scaled gap over the cutoff', [0, 20, 21], 0.9, 10000, 1000,
     (3, 1000)),
    ('weight 1: the newest interval', [0, 5, 7, 100], 1.0, 10000, 1,
     (4, 93.0)),
    ('weight 0: the first interval', [0, 5, 7, 100], 0.0, 10000, 1,
     (4, 5)),
    ('many equal gaps: their value', LONG, 0.9, 10000, 1,
     (500, 1000.0)),
    ('many equal gaps, scaled', LONG, 0.9, 10 * MS, 1000,
     (500, 1000.0 * 1000)),
    ('a window ending in a clump', LONG + [LONG[-1]] * 300, 0.9, 10000, 1,
     (500, 1000.0)),
    ('a window ending in a silence', LONG + [10 ** 7, 10 ** 8], 0.9, 10000,
     1, (502, 1000.0)),
])
def test_table(name, times, weight, cutoff, scale, want):
    got = isacs.ema_gap(times, weight, cutoff, scale)
    assert got[0] == want[0], name
    assert got[1] == pytest.approx(want[1], rel=1e-15), name
    assert got == pytest.approx(reference(times, weight, cutoff, scale),
                                rel=1e-15), name


def test_tuple_list_and_range_agree():
    times = list(range(0, 90000, 3))
    for seq in (times, tuple(times), range(0, 90000, 3),
                array.array('q', times)):
        assert isacs.ema_gap(seq, 0.9, 10000) == (30000, 3.0)


@pytest.mark.parametrize('weight,cutoff,gap,want', [
    (0.9, 10 * MS, 1 * MS, 27),       # 0.1^27 * 10 ms < 2^-80 * 0.9 ms
    (0.9, 10 * MS, 1, 33),              # a tiny newest gap: a longer tail
    (0.9, 10000, 10000, 26),
    (0.5, 10000, 1000, 86),
    (1.0, 10000, 1000, 1),
    (0.0, 10000, 1000, None),           # nothing forgotten: all
    (0.9, 10000, 0, None),
    (0.5, 10000, 5e-324, None),         # the bound underflows: all
])
def test_tail_length(weight, cutoff, gap, want):
    assert isacs.ema_tail_length(weight, cutoff, gap) == want


def test_a_long_window_reads_only_its_tail():
    # old intervals beyond the tail do not move the figure
    tail = [10 ** 6 + 10 * i for i in range(200)]
    a = isacs.ema_gap([0, 9999, 19998] + tail, 0.9, 10 ** 6)
    b = isacs.ema_gap([0, 1, 2] + tail, 0.9, 10 ** 6)
    assert a[1] == b[1] == pytest.approx(10.0)
    assert a[0] == b[0] == 203


# Random windows: as the drivers give them (sorted, clumps of equal
# times, long silences), unsorted ones, float times and scales.
gaps = st.one_of(st.just(0), st.integers(1, 50), st.integers(1, 12000),
                 st.integers(10001, 10 ** 6))


@given(st.lists(gaps, max_size=400), st.integers(0, 10 ** 9),
       st.sampled_from([0.0, 0.1, 0.5, 0.9, 0.99, 1.0]),
       st.sampled_from([1, 1000]))
def test_sorted_windows_match_the_loop(steps, start, weight, scale):
    times, t = [], start
    for s in steps:
        t += s
        times.append(t)
    cutoff = 10000 * scale
    got, want = assert_same(times, weight, cutoff, scale)
    need = isacs.ema_tail_length(weight, cutoff, cutoff)  # the least
    if need is None or usable_gaps(times, cutoff, scale) <= need:
        assert got == want          # every interval used: bit for bit


@given(st.lists(st.integers(-20000, 20000), max_size=300),
       st.sampled_from([0.5, 0.9, 1.0]))
def test_unsorted_windows_match_the_loop(times, weight):
    assert_same(times, weight)


@given(st.lists(st.floats(0, 1e6, allow_nan=False), max_size=300),
       st.sampled_from([0.5, 0.9]))
def test_float_times_match_the_loop(times, weight):
    assert_same(sorted(times), weight)
    assert_same(times, weight)


def test_large_random_windows_match_the_loop():
    rng = random.Random(29)
    for _ in range(40):
        t, times = rng.randrange(10 ** 9), []
        for _ in range(rng.randrange(1000, 20000)):
            t += rng.choice((0, 0, rng.randrange(1, 3000),
                             rng.randrange(1, 30000)))
            times.append(t)
        assert_same(times, 0.9, 10 * MS, 1000)
        assert_same(times, 0.9, 10000, 1)
