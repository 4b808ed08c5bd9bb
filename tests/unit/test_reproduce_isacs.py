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
"""bench/reproduce/isacs: quick experiments give well-formed rows and the
mechanism results the model documents.
"""

import math

import pytest

from bench.reproduce import harness
from bench.reproduce import isacs
from bench.reproduce import isacs_setup
from tests.unit import reproduce_quick


def _by(rows, setting, metric):
    hits = [r for r in rows if r.setting == setting and r.metric == metric]
    assert len(hits) == 1, (setting, metric)
    return hits[0]


def test_paper_changes_are_computed_from_the_tables():
    # Table 5 i1c11: 19.3 -> 23.7 GB is +22.8 %; Table 3 i1c11 -30.4 %
    assert harness.pct_change(*reversed(isacs.TABLE5[1])) == pytest.approx(
        22.80, abs=0.01)
    assert harness.pct_change(*reversed(isacs.TABLE3[1])) == pytest.approx(
        -30.39, abs=0.01)


def test_cutoff_rows():
    rows = reproduce_quick.rows('isacs', 'cutoff')
    none = _by(rows, 'ping every 12 ms', 'IVCredit per round (us)')
    assert (none.verdict, none.check) == ('identity', 'match')
    assert _by(rows, 'ping every 5 ms', 'IVCredit per round (us)').ours > 0


def test_concealing_rows():
    rows = reproduce_quick.rows('isacs', 'concealing')
    strict = _by(rows, 'strict trigger',
                 'normal-phase credit per round, I/O / CPU vCPU')
    head = _by(rows, 'paper (head trigger)',
               'normal-phase credit per round, I/O / CPU vCPU')
    assert strict.verdict == 'match'
    assert head.ours > strict.ours


def test_hybrid_network_quick_rows_are_well_formed():
    rows = reproduce_quick.rows('isacs', 'hybrid_network')
    assert {r.setting for r in rows} >= {'i1c11', 'i3c9'}
    for r in rows:
        assert r.paper_id == 'isacs' and not math.isnan(r.ours)
        assert harness.category(r.verdict) in (
            'match', 'same direction', 'opposite', 'no effect', 'off',
            'holds', 'violated')
        assert r.tol in (harness.TOL, 0.0)      # the default, no looser
    # the quick window: warm-up plus half a second
    assert isacs_setup.end_us(True) == isacs_setup.WARM_US + 500_000
