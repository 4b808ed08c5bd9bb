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
"""bench/reproduce/ibalancer_tables: the two inequalities hold for any data
and catch rows that break them; the paper's union rows are pinned.
"""

import random
import statistics

import pytest

from bench.reproduce import ibalancer_tables as t


@pytest.mark.parametrize('sd,mad,ok', [
    (1.0, 0.8, True), (1.0, 1.0, True), (0.41, 0.6, False),
    (0.0, 0.0, True), (0.27, 0.42, False)])
def test_mad_within_sd(sd, mad, ok):
    assert t.mad_within_sd(sd, mad) is ok


@pytest.mark.parametrize('mean,sd,median,ok', [
    (10.0, 1.0, 10.9, True), (10.0, 1.0, 9.0, True),
    (18.52, 0.65, 21.2, False), (10.0, 1.0, None, True),
    (10.0, 0.0, 10.0, True)])
def test_median_within_sd(mean, sd, median, ok):
    assert t.median_within_sd(mean, sd, median) is ok


def _figures(xs):
    m = statistics.fmean(xs)
    return (m, statistics.pstdev(xs),
            statistics.fmean(abs(x - m) for x in xs), statistics.median(xs))


@pytest.mark.parametrize('seed', range(40))
def test_every_data_set_passes_both_checks(seed):
    """The checks are theorems: no data set, however skewed, breaks one."""
    rng = random.Random(seed)
    n = rng.randint(2, 12)
    xs = [rng.choice((rng.random(), rng.expovariate(0.1), 20.0))
          for _ in range(n)]
    assert t.broken(_figures(xs)) == []


@pytest.mark.parametrize('figures,checks', [
    ((19.34, 0.67, 0.98, 19.13), ['MAD <= SD']),
    ((18.52, 0.65, 0.42, 21.2), ['|mean - median| <= SD']),
    ((10.0, 0.1, 0.2, 12.0), list(t.CHECKS)),
    ((10.0, 1.0, 0.8, 10.5), [])])
def test_broken_names_the_checks(figures, checks):
    assert t.broken(figures) == checks


def test_every_union_row_of_the_paper_breaks_one_check():
    bad = t.violations()
    assert set(bad) == set(t.UNION)
    assert sum(1 for v in bad.values() if 'MAD <= SD' in v) == 6
    assert sum(1 for v in bad.values()
               if '|mean - median| <= SD' in v) == 12


def test_panel_e_changes_and_the_duplicate():
    assert t.changes('table', 'credit', 'e') == (-53.8, -42.9, 1.2)
    assert t.changes('prose', 'credit', 'e') == (-70.7, -71.7, 1.4)
    for system in ('stock', 'ib'):
        assert t.same_cells(('table', 'credit', 'e', system),
                            ('table', 'credit2', 'e', system)) == 4
    assert t.same_cells(('table', 'credit', 'd', 'stock'),
                        ('table', 'credit2', 'd', 'stock')) == 0


def test_a_consistent_table_has_no_violations():
    ok = {('table', 'credit', 'x', 'stock'): (10.0, 1.0, 0.8, 10.2)}
    assert t.violations(ok) == {}
