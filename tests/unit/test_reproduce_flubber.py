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
"""bench/reproduce/flubber: every quick experiment gives well-formed rows."""

import pytest

from bench.reproduce import flubber
from bench.reproduce import harness
from tests.unit import reproduce_quick


@pytest.mark.parametrize('name,fn', flubber.EXPERIMENTS,
                         ids=[n for n, _ in flubber.EXPERIMENTS])
def test_quick_experiment_rows(name, fn):
    rows = reproduce_quick.rows('flubber', name)
    assert rows
    for r in rows:
        assert isinstance(r, harness.Row) and r.paper_id == 'flubber'
        assert r.claim and r.setting and r.metric
        assert r.ours is not None, (r.setting, r.metric)
        v = r.verdict
        assert harness.category(v) in harness.CATEGORIES, v
        assert v != 'no result', (r.setting, r.metric)
        if r.kind != 'info':
            assert r.ratio is not None
        r.as_dict()


def test_read_pair_rows_cover_table3_table6_and_the_wait():
    rows = reproduce_quick.rows('flubber', 'read_pair')
    metrics = [(r.setting, r.metric) for r in rows]
    assert sum(1 for _, m in metrics if 'execution time (s)' in m) == 8
    assert sum(1 for _, m in metrics if 'd = 0' in m) == 4
    assert ('read, Flubber', 'BD wait success (%)') in metrics
    hold = 'read, ' + flubber.HOLD
    for want in (('read, Flubber', 'seeks outside +-5e7 (%)'),
                 (hold, 'seeks outside +-5e7 (%)'),
                 (hold, 'makespan vs CFQ + priority\'s (%)'),
                 (hold, 'RndR p99 latency (ms)'),
                 (hold + ' vs base CFQ', 'SeqR execution time change (%)')):
        assert want in metrics, want
    for r in rows:
        if 'd = 0' in r.metric or 'wait' in r.metric:
            assert 0.0 <= r.ours <= 100.0


def test_calibration_targets_are_labelled_not_matched():
    rows = reproduce_quick.rows('flubber', 'read_pair')
    got = {(r.setting, r.metric): r.verdict for r in rows}
    for s in ('read, base CFQ', 'read, CFQ + priority'):
        for v in ('SeqR', 'RndR'):
            assert got[(s, v + ' execution time (s)')] == 'calibrated'
    assert got[('read, Flubber', 'SeqR execution time (s)')] != \
        'calibrated'
    little = [r for r in reproduce_quick.rows('flubber', 'beta_sweep')
              if 'Little' in r.claim]
    assert little and {r.verdict for r in little} == {'identity'}


def test_bd_off_is_not_counted_against_the_edf_figures():
    # the paper has no BD-off run: one result (Flubber vs EDF + credit)
    # is counted once, in Tables 3 / 4
    rows = reproduce_quick.rows('flubber', 'ablation')
    assert rows and all(r.kind == 'info' for r in rows)


def test_paper_tables_are_consistent_with_the_claims():
    # the text's -25 % (RndR vs CFQ) and +34 % (mixed IOPS vs CFQ)
    assert harness.pct_change(flubber.TABLE3[('RndR', 'flubber')],
                              flubber.TABLE3[('RndR', 'cfq')]) == \
        pytest.approx(-25.4, abs=0.1)
    assert harness.pct_change(flubber.TABLE4['flubber'][3],
                              flubber.TABLE4['cfq'][3]) == \
        pytest.approx(34.3, abs=0.1)
    assert sum(flubber.TABLE2[32][i] for i in (0, 2)) == pytest.approx(
        1152.7, abs=0.1)


def test_the_papers_own_bounds():
    # CFQ + priority runs RndR, then SeqR, alone: 58.43 s back to back;
    # the paper's Flubber finishes both in 54.16 s, and its SeqR can gain
    # at most -9.3 % on base CFQ's 64.42 s
    span, gain = flubber.serial_bound()
    assert span == 58.43 and gain == pytest.approx(-9.3, abs=0.05)
    assert flubber.TABLE3[('SeqR', 'flubber')] < span
    # VBC's round at beta = 32, 8:1: 288 requests, 250 ms at 1152.7 IOPS;
    # one image change per round is 0.35 % of requests, 8.7 x Table 6's
    # 0.04 % for Flubber's read pair
    assert flubber.round_requests() == 288
    assert flubber.HOLD_MS == pytest.approx(249.8)
    assert flubber.change_floor_pct() == pytest.approx(0.347, abs=0.001)
    assert flubber.change_floor_pct() > 8 * flubber.TABLE6[
        ('read', 'flubber')][1]


@pytest.mark.parametrize('table3, want', [
    # a SeqR-last CFQ + priority: its SeqR time is the makespan
    ({('SeqR', 'cfq-prio'): 50.0, ('RndR', 'cfq-prio'): 30.0,
      ('SeqR', 'cfq'): 100.0}, (50.0, -50.0)),
    # RndR last: RndR's time is
    ({('SeqR', 'cfq-prio'): 40.0, ('RndR', 'cfq-prio'): 60.0,
      ('SeqR', 'cfq'): 50.0}, (60.0, 20.0)),
])
def test_serial_bound_cases(table3, want):
    assert flubber.serial_bound(table3) == pytest.approx(want)
