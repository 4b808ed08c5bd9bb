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

VERDICTS = ('match', 'same direction', 'opposite', 'no effect', 'holds',
            'violated', 'info', 'differs')


@pytest.mark.parametrize('name,fn', flubber.EXPERIMENTS,
                         ids=[n for n, _ in flubber.EXPERIMENTS])
def test_quick_experiment_rows(name, fn):
    rows = fn(True)
    assert rows
    for r in rows:
        assert isinstance(r, harness.Row) and r.paper_id == 'flubber'
        assert r.claim and r.setting and r.metric
        assert r.ours is not None, (r.setting, r.metric)
        v = r.verdict
        assert v in VERDICTS or v.startswith('off x'), v
        if r.kind != 'info':
            assert r.ratio is not None
        r.as_dict()


def test_read_pair_rows_cover_table3_table6_and_the_wait():
    rows = flubber.read_pair(True)
    metrics = [(r.setting, r.metric) for r in rows]
    assert sum(1 for _, m in metrics if 'execution time (s)' in m) == 8
    assert sum(1 for _, m in metrics if 'd = 0' in m) == 4
    assert ('read, Flubber', 'BD wait success (%)') in metrics
    for r in rows:
        if 'd = 0' in r.metric or 'wait' in r.metric:
            assert 0.0 <= r.ours <= 100.0


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
