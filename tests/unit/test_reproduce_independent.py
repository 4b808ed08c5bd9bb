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
"""bench/reproduce/independent(_math): the hand derivations, table-driven,
and the quick experiments (at least three rows per seed)."""

import collections

import pytest

from bench.reproduce import harness
from bench.reproduce import independent
from bench.reproduce import independent_math as im

APPROX = 1e-6

# (function, args, expected): every expected value worked out by hand.
CASES = [
    (im.credit_mean_wait_ms, (2,), 7.5),
    (im.credit_mean_wait_ms, (3,), 20.0),
    (im.credit_mean_wait_ms, (4,), 33.75),     # digest 001: 33.75 ms
    (im.credit_mean_wait_ms, (5,), 48.0),
    (im.vslicer_worst_wait_ms, (2, 5.0), 35.0),   # Fig. 2.7
    (im.vslicer_worst_wait_ms, (1, 10.0), 30.0),  # Fig. 2.6
    (im.vslicer_worst_wait_ms, (3, 5.0), 40.0),
    (im.vslicer_best_wait_ms, (2, 5.0), 5.0),
    (im.vslicer_best_wait_ms, (3, 5.0), 10.0),
    (im.vslicer_mean_wait_ms, (1, 3, 10.0), 11.25),   # 15 n / (n + 1)
    (im.vslicer_mean_wait_ms, (1, 4, 10.0), 12.0),
    (im.vslicer_mean_wait_ms, (2, 1, 5.0), 7.5),       # digest 001 C4
    (im.vslicer_mean_wait_ms, (2, 2, 5.0), 10.625),
    (im.vslicer_mean_wait_ms, (2, 3, 5.0), 12.5),
    (im.vslicer_share, (1, 3), 0.25),
    (im.vslicer_share, (3, 2), 0.2),
    (im.vslicer_microslice_valid, (2, 5.0), True),
    (im.vslicer_microslice_valid, (2, 4.0), False),
    (im.vslicer_microslice_valid, (3, 10.0), True),
    (im.vslicer_microslice_valid, (3, 20.0), False),
    (im.vturbo_regular_shares, ((15, 55), (50, 50)), [70.0, 30.0]),
    (im.vturbo_regular_shares, ((0, 100), (50, 50)), [100.0, 0.0]),
    (im.vturbo_regular_shares, ((10, 40), (50, 50)), [65.0, 35.0]),
    (im.vturbo_regular_shares, ((0, 0), (50, 50), (2, 1)),
     [200.0 / 3, 100.0 / 3]),
    (im.vturbo_udp_mbps, (1000.0, 11.25e6, 0.25), 1000.0),   # B_min
    (im.vturbo_udp_mbps, (1000.0, 5.625e6, 0.25), 625.0),
    (im.vturbo_udp_mbps, (1000.0, 0.0, 0.25), 250.0),
    (im.isacs_strength_per_round_us, (30000.0, 2000.0), 30000.0),
    (im.isacs_strength_per_round_us, (30000.0, 12000.0), 0.0),
    (im.isacs_ivcredit_per_round_us, (4, 0.02, 38000.0), 3040.0),
    (im.isacs_boost_members, ([3880.0, 1940.0, 0.0, 0.0, 0.0],), 4),
    (im.isacs_boost_members, ([2000.0, 0.0, 0.0, 0.0],), 3),
    (im.isacs_boost_members, ([1000.0, 1000.0],), 0),
    (im.isacs_boost_members, ([0.0, 0.0],), 0),
    (im.isacs_cvcredit_over_ivcredit, (12380.0,), 1.238),
    (im.isacs_max_io_share, (3,), 1.0 / 17),
    (im.flubber_proportions, ((1000, 500),), [2, 1]),
    (im.flubber_proportions, ((1000, 1200, 100),), [10, 12, 1]),
    (im.flubber_proportions, ((1200, 600),), [2, 1]),
    (im.flubber_shares, ((1000, 500),), [2.0 / 3, 1.0 / 3]),
    (im.flubber_bd_burst_ms, (60.0, 6.0), 53.7),
    (im.flubber_bd_completions, (60.0, 6.0, 8.0), 1 + 45.7 / 6.1),
    (im.flubber_bd_iops_ratio, (30.0, 60.0, 6.0, 6.0),
     (1 + 47.7 / 6.1) / (1 + 17.7 / 6.1)),
    (im.flubber_bd_max_latency_ms, (30.0, 10.0), 40.65),
    (im.ibalancer_delay_example, (), [280.0, 120.0]),
    (im.ibalancer_window_mb_s, (0, 4, 150, 245, 64), 65536.0 / 150),
    (im.ibalancer_window_mb_s, (800, 4, 150, 245, 64), 4 * 65536.0 / 1195),
    (im.ibalancer_busy_mb_s, (800, 150, 64), 65536.0 / 950),
    (im.ibalancer_events_per_window, (30000, 150), 200.0),
    (im.ibalancer_events_per_window, (30000, 150, 800), 30000.0 / 950),
    (im.ibalancer_deviation, ([200, 1875],), 100 * 837.5 / 1037.5),
    (im.ibalancer_deviation, ([5, 5, 5],), 0.0),
    (im.ibalancer_deviation, ([1, 3],), 50.0),
    (im.va_fair_share, (4,), 0.25),
    (im.va_finish_ratio, (4,), 1.0),
]


@pytest.mark.parametrize('fn,args,want', CASES,
                         ids=['%s%r' % (c[0].__name__, c[1]) for c in CASES])
def test_derivation(fn, args, want):
    got = fn(*args)
    if isinstance(want, list):
        assert got == pytest.approx(want, rel=APPROX)
    elif isinstance(want, bool):
        assert got is want
    else:
        assert got == pytest.approx(want, rel=APPROX)


@pytest.mark.parametrize('k,rho', [(3, 0.02), (2, 0.02), (3, 0.01)])
def test_isacs_fixed_point_solves_its_equations(k, rho):
    r_us, ivc, cvc = im.isacs_fixed_point(k, rho)
    x = cvc / k
    assert r_us == pytest.approx(k * (10000 + x) / (1 - rho))
    assert ivc == pytest.approx((k + 1) * rho * r_us)
    assert x == pytest.approx(ivc / k * (10000 + x) / 10000)


def test_isacs_fixed_point_without_io_is_credit2s_round():
    assert im.isacs_fixed_point(3, 0.0) == (30000.0, 0.0, 0.0)


@pytest.mark.parametrize('k', [1, 2, 3, 5])
def test_isacs_fixed_point_exists_up_to_the_max_share(k):
    rho = im.isacs_max_io_share(k)
    assert im.isacs_fixed_point(k, rho * 0.98, iters=5000) is not None
    assert im.isacs_fixed_point(k, rho * 1.05, iters=5000) is None


@pytest.fixture(scope='module')
def quick_rows():
    return {name: fn(True) for name, fn in independent.EXPERIMENTS}


SEEDS = ('isacs', 'vslicer', 'vturbo', 'flubber', 'ibalancer', 'vaio')


def test_quick_run_has_three_rows_per_seed(quick_rows):
    per = collections.Counter(r.paper_id for rows in quick_rows.values()
                              for r in rows)
    for seed in SEEDS:
        assert per[seed] >= 3, (seed, per)
    for rows in quick_rows.values():
        for r in rows:
            assert isinstance(r, harness.Row)
            assert r.claim.startswith('independent check: ')
            assert r.kind in ('value', 'bound') and r.note
            assert r.ratio is not None, (r.setting, r.metric)
            r.as_dict()


# Rows whose scenario is exact enough to hold in a quick run (the others,
# Flubber's 10:12:1 shares and VA's finish ratio, need the full run's
# rounds and data).
STABLE = ('vslicer', 'vturbo', 'isacs', 'ibalancer')


# The documented miss (docs/reproduction.md "Independent checks"): Credit2's
# minimum run and ratelimit overrun the CVCredit the equations grant, so
# the simulator burns more than the ideal fixed point, never less.
KNOWN_OFF = {('isacs', 'sum CVCredit per round (ms)')}


@pytest.mark.parametrize('name', STABLE)
def test_quick_stable_rows_agree(quick_rows, name):
    for r in quick_rows[name]:
        if (name, r.metric) in KNOWN_OFF:
            assert r.ours > r.paper
            continue
        assert r.verdict in ('match', 'holds'), (r.setting, r.metric,
                                                  r.paper, r.ours)


def test_experiments_are_registered():
    from bench.reproduce import __main__ as main
    assert 'independent' in main.MODULES
    assert [n for n, _ in independent.EXPERIMENTS] == [
        'vslicer', 'vturbo', 'isacs', 'flubber', 'ibalancer', 'vaio']
