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
"""bench/reproduce/vaio: every quick experiment gives well-formed rows."""

import pytest

from bench.reproduce import harness
from bench.reproduce import vaio
from tests.unit import reproduce_quick


@pytest.mark.parametrize('name,fn', vaio.EXPERIMENTS,
                         ids=[n for n, _ in vaio.EXPERIMENTS])
def test_quick_experiment_rows(name, fn):
    rows = reproduce_quick.rows('vaio', name)
    assert rows
    for r in rows:
        assert isinstance(r, harness.Row) and r.paper_id == 'vaio'
        assert r.claim and r.setting and r.metric
        assert r.ours is not None, (r.setting, r.metric)
        if r.kind != 'info':
            assert r.ratio is not None
        r.as_dict()


def test_finish_sd_rows_carry_the_headline():
    rows = {(r.setting, r.metric): r
            for r in reproduce_quick.rows('vaio', 'finish_sd')}
    sd = 'finish-time SD (s), mean of trials'
    assert rows[('stock CFQ', sd)].paper == 4.5
    assert rows[('VA-CFQ', sd)].paper == 1.2
    assert rows[('VA-CFQ', sd)].ours < rows[('stock CFQ', sd)].ours
    change = rows[('VA-CFQ vs stock CFQ', 'finish-time SD change (%)')]
    assert change.paper == pytest.approx(-73.3) and change.ours < 0


class _Trial:
    def __init__(self, seed, ratio):
        self.scenario = type('S', (), {'seed': seed})()
        self._ratio = ratio

    def ratio(self):
        return self._ratio


@pytest.mark.parametrize('ratios,want', [
    # the median of the unfair trials (> 1.1), not the worst
    ((1.05, 1.2, 1.4, 1.3), 4),      # 1.2, 1.3, 1.4: seed 4's 1.3
    ((1.2, 1.4), 1),                 # even count: the lower median
    ((1.0, 1.05, 1.02), 3),          # none unfair: the median of all
    ((1.5,), 1),
])
def test_the_shown_trial_is_the_median_unfair_one(ratios, want):
    runs = [_Trial(i + 1, x) for i, x in enumerate(ratios)]
    assert vaio.showcase(runs).scenario.seed == want


def test_p_quiet_rows_are_labelled_calibrated():
    rows = reproduce_quick.rows('vaio', 'finish_sd')
    got = {r.metric: r.verdict for r in rows if r.setting == 'stock CFQ'}
    assert got['unfair trials (%)'] == 'calibrated'
    assert got['median gap of stalled writes (> 1 s)'] == 'calibrated'
