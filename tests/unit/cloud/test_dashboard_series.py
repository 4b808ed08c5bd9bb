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
"""tests/cloud/dashboard_series.py: the dashboard's agent queries, their
series selectors and what they select in a scrape.
"""

import json
import os

import pytest

from tests.cloud import dashboard_series as ds
from tests import fixtures

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
DASHBOARD = os.path.join(ROOT, 'etc', 'grafana', 'iosched-dashboard.json')
SCRAPE = """\
# HELP iosched_agent_knob_decisions Knobs by kind and status.
# TYPE iosched_agent_knob_decisions gauge
iosched_agent_knob_decisions{kind="vcpu_slice",status="applied"} 2.0
iosched_agent_knob_decisions{kind="vm_cap",status="failed"} 1.0
# HELP iosched_agent_decisions_total Decisions.
# TYPE iosched_agent_decisions_total counter
iosched_agent_decisions_total{policy="vslicer",rule="a",status="applied"} 3.0
# HELP iosched_agent_slo_indicator Ind.
# TYPE iosched_agent_slo_indicator gauge
# HELP iosched_agent_tick_duration_seconds Tick.
# TYPE iosched_agent_tick_duration_seconds histogram
iosched_agent_tick_duration_seconds_bucket{le="0.1"} 4.0
iosched_agent_tick_duration_seconds_bucket{le="+Inf"} 5.0
iosched_agent_tick_duration_seconds_count 5.0
iosched_agent_tick_duration_seconds_sum 0.3
"""
TARGET = {'instance': '127.0.0.1:9490', 'job': 'agent'}


@pytest.fixture(scope='module')
def promql():
    try:
        import promql_parser    # noqa: F401
        ok, why = True, ''
    except ImportError as e:
        ok, why = False, 'pip install promql-parser: %s' % e
    fixtures.require('promql-parser', ok, why)


def test_agent_queries_takes_agent_targets_of_nested_panels_too():
    board = {'panels': [
        {'type': 'row', 'panels': [{'title': 'in a row', 'targets': [
            {'expr': 'iosched_agent_vcpus'}]}]},
        {'title': 'agent', 'targets': [{'expr': 'rate(iosched_agent_x[1m])'},
                                       {'refId': 'no expr'}]},
        {'title': 'scheduler', 'targets': [
            {'expr': 'iosched_scheduler_stale_hosts'}]}]}
    assert ds.agent_queries(board) == [
        ('agent', 'rate(iosched_agent_x[1m])'),
        ('in a row', 'iosched_agent_vcpus')]


def test_grafana_replaces_longer_names_first():
    assert ds.grafana('rate(x{instance=~"$agent"}[$__rate_interval])', {
        'agent': 'h:1', '__rate': 'BAD', '__rate_interval': '1m'}) == (
        'rate(x{instance=~"h:1"}[1m])')


@pytest.mark.parametrize('expr, want', [
    ('x', [('x', (), False)]),
    ('x{a="1", b!="2", c=~"3|4", d!~"5"}',
     [('x', (('a', '=', '1'), ('b', '!=', '2'), ('c', '=~', '3|4'),
             ('d', '!~', '5')), False)]),
    ('sum by (le) (rate(h_bucket{i=~"$v"}[1m]))',
     [('h_bucket', (('i', '=~', '$v'),), True)]),
    ('histogram_quantile(0.5, sum by (le) (rate(h_bucket[1m])))',
     [('h_bucket', (), True)]),
    ('a / on(x) -(b) + 3 * (c)',
     [('a', (), False), ('b', (), False), ('c', (), False)]),
    ('max_over_time(g[5m:1m])', [('g', (), True)]),
    ('increase(c_total[1m]) > bool 0', [('c_total', (), True)]),
    ('topk(3, x)', [('x', (), False)]),
    ('{__name__="x"}', [(None, (('__name__', '=', 'x'),), False)]),
])
def test_selectors(promql, expr, want):
    assert [tuple(s) for s in ds.selectors(expr)] == want


def test_scrape_series_and_names():
    series, names = ds.scrape_series(SCRAPE, TARGET)
    assert len(series) == 7
    assert all(s.labels['instance'] == '127.0.0.1:9490' for s in series)
    # a family without samples still names its metric
    assert {'iosched_agent_slo_indicator', 'iosched_agent_decisions_total',
            'iosched_agent_tick_duration_seconds_bucket',
            'iosched_agent_tick_duration_seconds_count'} <= names
    assert 'iosched_agent_slo_indicator_total' not in names


@pytest.mark.parametrize('sel, count', [
    (('iosched_agent_knob_decisions', ()), 2),
    (('iosched_agent_knob_decisions', (('status', '=', 'failed'),)), 1),
    (('iosched_agent_knob_decisions', (('status', '!=', 'failed'),)), 1),
    (('iosched_agent_knob_decisions', (('kind', '=~', 'vm_.*'),)), 1),
    (('iosched_agent_knob_decisions', (('kind', '=~', 'vm'),)), 0),
    (('iosched_agent_knob_decisions', (('kind', '!~', 'v.*'),)), 0),
    (('iosched_agent_knob_decisions', (('instance', '=~', '127.0.0.1:9490'),
                                       ('job', '=', 'agent'))), 2),
    (('iosched_agent_knob_decisions', (('instance', '=~', 'other:1'),)), 0),
    # an absent label is the empty string
    (('iosched_agent_knob_decisions', (('volume', '=', ''),)), 2),
    (('iosched_agent_slo_indicator', ()), 0),
    (('iosched_agent_tick_duration_seconds_bucket', ()), 2),
    ((None, (('__name__', '=~', '.*_count'),)), 1),
])
def test_select(sel, count):
    series, _ = ds.scrape_series(SCRAPE, TARGET)
    assert len(ds.select(series, ds.Selector(sel[0], sel[1], False))) == (
        count)


def test_every_agent_query_of_the_dashboard_has_selectors(promql):
    with open(DASHBOARD) as f:
        board = json.load(f)
    queries = ds.agent_queries(board)
    assert len(queries) >= 12
    for title, expr in queries:
        sels = ds.selectors(ds.grafana(expr, {'agent': 'h:1',
                                              '__rate_interval': '1m'}))
        assert sels and all(s.name.startswith('iosched_agent_')
                            for s in sels), (title, sels)
        assert ('rate(' in expr or 'increase(' in expr) == any(
            s.ranged for s in sels), (title, expr)
