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
