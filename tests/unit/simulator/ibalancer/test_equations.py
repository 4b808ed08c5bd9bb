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
"""I-Balancer's equations (iosched.simulator.ibalancer.equations),
table-driven.
"""

import pytest

from iosched.simulator.ibalancer import equations as eq


@pytest.mark.parametrize('vr,pr,alpha,io', [
    (30, 100, 30, True),        # exactly alpha: I/O (>=)
    (29.9, 100, 30, False),
    (0, 30000, 30, False),      # stress only
    (30000, 30000, 30, True),   # pure network
    (10, 0, 30, False),         # no runtime: CPU
    (50, 100, 60, False),
])
def test_eq1_workload_type(vr, pr, alpha, io):
    assert eq.io_intensive(vr, pr, alpha) is io


@pytest.mark.parametrize('counts,d', [
    ([10, 10, 10, 10], 0.0),
    ([5, 15], 50.0),                  # mean 10, mean |dev| 5
    ([0, 0, 0], 0.0),                 # no events: nothing to balance
    ([], 0.0),
    ([1, 2, 3, 4, 5, 6], 100 * 1.5 / 3.5),
])
def test_eq2_normalised_deviation(counts, d):
    assert eq.deviation(counts) == pytest.approx(d)


def test_eq2_printed_sum_is_n_times_ours():
    counts = [4, 8, 12, 20]
    m = sum(counts) / 4
    printed = 100 * sum(abs(c - m) for c in counts) / m
    assert printed == pytest.approx(4 * eq.deviation(counts))


@pytest.mark.parametrize('counts,beta,fire', [
    ([5, 15], 49.9, True), ([5, 15], 50.0, False), ([7, 7], 0, False)])
def test_eq2_trigger_is_strictly_above_beta(counts, beta, fire):
    assert eq.trigger(counts, beta) is fire


@pytest.mark.parametrize('slice_us,n,period', [
    (30000, 32, 960000), (10000, 32, 320000),
    (30000, 48, 1440000), (10000, 48, 480000), (30000, 0, 30000)])
def test_eq3_period(slice_us, n, period):
    assert eq.period_us(slice_us, n) == period


def test_eq4_eq5_worked_example():
    ei = [100, 150, 300, 450]
    assert eq.drv(ei) == 250
    assert eq.delays(ei) == pytest.approx([280, 120])
    assert sum(eq.delays(ei)) / 2 == pytest.approx(200)
    # the printed product: us^2 and sub-us... nonsense delays
    assert eq.drv_product(ei) == 125 * 375
    assert 200 * (450 - 100) / eq.drv_product(ei) < 2


@pytest.mark.parametrize('ei', [
    [10, 20, 30, 40, 50, 60], [1, 1000], [5, 6, 7, 8, 9, 10, 11, 90]])
def test_eq5_delays_average_the_base(ei):
    ds = eq.delays(ei)
    assert len(ds) == len(ei) // 2
    assert sum(ds) / len(ds) == pytest.approx(200)
    assert ds == sorted(ds, reverse=True) or len(set(ds)) < len(ds)


def test_odd_n_leaves_the_median_alone():
    ei = [100, 150, 999, 300, 450]
    order, pairs = eq.sort_and_pair(dict(enumerate(ei)))
    assert order == [0, 1, 3, 4, 2]
    assert pairs == [(0, 2), (1, 4)]        # 3 (EI 300) is the median
    # the median is not used by DRV either: changing it changes nothing
    a = eq.delays([100, 150, 300, 450, 999])
    b = eq.delays([100, 150, 420, 450, 999])
    assert a == b and sum(a) / 2 == pytest.approx(200)


@pytest.mark.parametrize('ei', [[100, 100, 100, 100], [50], []])
def test_drv_not_positive_gives_no_delay(ei):
    assert eq.drv(ei) <= 0
    assert eq.delays(ei) == [0.0] * (len(ei) // 2)


def test_sort_is_by_frequency_highest_first_with_stable_ties():
    order, pairs = eq.sort_and_pair({'b': 300, 'a': 300, 'c': 100})
    assert order == ['c', 'a', 'b'] and pairs == [('c', 'b')]


@pytest.mark.parametrize('prev,sample,w,out', [
    (None, 500, 0.25, 500), (400, 800, 0.25, 500), (400, 800, 1.0, 800)])
def test_ewma(prev, sample, w, out):
    assert eq.ewma(prev, sample, w) == pytest.approx(out)


@pytest.mark.parametrize('w', [0, -0.1, 1.5])
def test_ewma_rejects_bad_weight(w):
    with pytest.raises(ValueError, match='0 < w <= 1'):
        eq.ewma(1, 2, w)
