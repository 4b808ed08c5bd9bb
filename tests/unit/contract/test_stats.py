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
"""The one percentile and histogram quantile: nearest rank, hand-computed
rows (among them the rows where the copies it replaced disagreed), bad
input, and properties over random samples.
"""

import math
import re

from hypothesis import given
from hypothesis import strategies as st
import pytest

from iosched.contract import stats

ONE_TO_100 = list(range(1, 101))


@pytest.mark.parametrize('samples,q,want', [
    ([5], 0.99, 5.0),
    ([1, 2], 0.5, 1.0),
    ([1, 2, 3], 0.5, 2.0),
    ([3, 1, 2], 0.0, 1.0),                 # unsorted input; q = 0: min
    ([3, 1, 2], 1.0, 3.0),                 # q = 1: max
    (list(range(1, 11)), 0.5, 5.0),
    (list(range(1, 11)), 0.99, 10.0),
    (ONE_TO_100, 0.5, 50.0),
    # The wake-up self-test said 99, the simulated one (int(q * n)) 100:
    (ONE_TO_100, 0.99, 99.0),
    (ONE_TO_100, 0.999, 100.0),
    (list(range(1, 301)), 0.99, 297.0),
    # round(p * (n - 1)) (side-by-side reproduction) gave 158 here:
    (list(range(1, 161)), 0.99, 159.0),
    # 0.07 * 100 is 7.000000000000001: the rank is 7, not 8 (the list
    # copies said 8, the histogram copy 7):
    (ONE_TO_100, 0.07, 7.0),
    (ONE_TO_100, 99.9 / 100, 100.0),
    (list(range(1, 1001)), 99.9 / 100, 999.0),
    ([0.5, 0.25], 0.5, 0.25),
], ids=lambda v: None if isinstance(v, list) else repr(v))
def test_percentile(samples, q, want):
    got = stats.percentile(samples, q)
    assert got == want and isinstance(got, float)


@pytest.mark.parametrize('samples', [[], (), iter(())])
def test_percentile_of_nothing_is_none(samples):
    assert stats.percentile(samples, 0.5) is None


@pytest.mark.parametrize('q,words', [
    (99, 'outside [0, 1]'), (-0.1, 'outside [0, 1]'),
    (1.0000001, 'outside [0, 1]'), (float('nan'), 'outside [0, 1]'),
    (float('inf'), 'outside [0, 1]'), ('0.5', 'not a number'),
    (None, 'not a number'), (True, 'not a number'),
])
def test_bad_q_is_refused(q, words):
    with pytest.raises(ValueError,
                       match=r'q .*%s.*accepted' % re.escape(words)):
        stats.percentile([1, 2, 3], q)
    with pytest.raises(ValueError, match=r'q .*accepted'):
        stats.hist_quantile([1, 2], q, (10,))
    with pytest.raises(ValueError):        # also without samples
        stats.percentile([], q)


def test_nan_sample_is_refused():
    with pytest.raises(ValueError, match='NaN'):
        stats.percentile([1.0, float('nan'), 2.0], 0.5)


BOUNDS = (10, 20, 40)


@pytest.mark.parametrize('counts,q,want', [
    ((4, 0, 0, 0), 0.5, 5.0),              # rank 2 of 4 in (0, 10]
    ((4, 0, 0, 0), 1.0, 10.0),             # max: the bucket's top
    ((0, 2, 2, 0), 0.5, 20.0),             # rank 2: top of (10, 20]
    ((0, 2, 2, 0), 0.75, 30.0),            # rank 3: half of (20, 40]
    ((0, 2, 2, 0), 0.0, 15.0),             # rank 1: min in its bucket
    ((1, 0, 0, 3), 0.5, 40.0),             # overflow: the last bound
    ((1, 0, 0, 3), 1.0, 40.0),
    ((1, 1), 0.99, 20.0),                  # fewer buckets than bounds
    ((0, 0, 100), 0.99, 39.8),             # 20 + 20 * 99 / 100
    ((0, 0, 0, 0), 0.5, None),             # nothing measured
    ((), 0.5, None),
])
def test_hist_quantile(counts, q, want):
    got = stats.hist_quantile(counts, q, BOUNDS)
    assert got == (None if want is None else pytest.approx(want))


# The agent's disk histograms (bounds in ns, the figure in ms).
@pytest.mark.parametrize('counts, q, want', [
    ([0, 10, 0, 0], 0.5, 1.5),       # rank 5 of 10 in (1, 2] ms: halfway
    ([0, 10, 0, 0], 1.0, 2.0),       # max: the bucket's upper bound
    ([10, 0, 0, 0], 0.5, 0.5),       # first bucket starts at 0
    ([90, 0, 9, 1], 0.99, 4.0),      # rank 99 is the last of (2, 4]
    ([90, 0, 9, 1], 1.0, 4.0),       # overflow valued at the last bound
    ([50, 50, 0, 0], 0.9, 1.8),      # rank 90: 40th of 50 in (1, 2]
])
def test_hist_quantile_in_ns(counts, q, want):
    got = stats.hist_quantile(counts, q, (1000000, 2000000, 4000000))
    assert got / 1e6 == pytest.approx(want)


@pytest.mark.parametrize('counts,words', [
    ((1, -1, 0, 0), r'counts\[1\] -1'),
    ((1, float('nan')), r'counts\[1\] nan'),
    ((1, 0, 0, 0, 0), '5 buckets for 3 bounds'),
])
def test_hist_bad_counts(counts, words):
    with pytest.raises(ValueError, match=words):
        stats.hist_quantile(counts, 0.5, BOUNDS)


def test_rank():
    assert [stats.rank(q, 100) for q in (0, 0.01, 0.5, 0.99, 1)] == [
        1, 1, 50, 99, 100]
    assert stats.rank(0.07, 100) == 7


samples_st = st.lists(st.floats(-1e9, 1e9, allow_nan=False), min_size=1,
                      max_size=200)
q_st = st.floats(0, 1)


@given(samples_st, q_st)
def test_percentile_is_a_sample_with_enough_below(samples, q):
    got = stats.percentile(samples, q)
    assert got in samples
    n = len(samples)
    # nearest rank: at least ceil(q n) samples <= it, fewer strictly below
    assert sum(1 for v in samples if v <= got) >= min(n, math.ceil(
        q * n * (1 - stats.RANK_TOLERANCE)))
    assert sum(1 for v in samples if v < got) < max(1, math.ceil(
        q * n * (1 - stats.RANK_TOLERANCE)))


@given(samples_st, q_st, q_st)
def test_percentile_is_monotone_in_q(samples, q1, q2):
    lo, hi = sorted((q1, q2))
    assert stats.percentile(samples, lo) <= stats.percentile(samples, hi)


@given(st.lists(st.integers(0, 50), min_size=1, max_size=4), q_st)
def test_hist_quantile_is_inside_its_bucket(counts, q):
    got = stats.hist_quantile(counts, q, BOUNDS)
    if sum(counts) == 0:
        assert got is None
        return
    r = stats.rank(q, sum(counts))
    k = next(i for i in range(len(counts)) if sum(counts[:i + 1]) >= r)
    lo = BOUNDS[k - 1] if k else 0
    hi = BOUNDS[min(k, len(BOUNDS) - 1)]
    assert (lo if k < len(BOUNDS) else hi) <= got <= hi
