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
"""Every PromQL expression we ship parses as PromQL.

The Grafana dashboard's queries (with Grafana's variables replaced by
what Grafana would put there), the examples in docs/metrics.md and the
alerting rules there, parsed with ``promql_parser`` (Python bindings of
the Rust PromQL parser that GreptimeDB uses); there is no Prometheus or
Grafana here to load them, so this is the syntax check, and
tests/unit/test_metrics_dashboard.py checks the metric names.
"""

import json
import os
import re

import pytest
import yaml

from tests import fixtures

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
DASHBOARD = os.path.join(ROOT, 'etc', 'grafana', 'iosched-dashboard.json')
DOC = os.path.join(ROOT, 'docs', 'metrics.md')
# What Grafana substitutes: a regex of instances, a job, a range.
GRAFANA_VARS = {'$__rate_interval': '1m', '$agent': 'compute-1:9487|.*',
                '$scheduler_job': 'nova-scheduler'}


@pytest.fixture(scope='module')
def parse():
    try:
        import promql_parser
        ok, why = True, ''
    except ImportError as e:
        ok, why = False, 'pip install promql-parser: %s' % e
    fixtures.require('promql-parser', ok, why)
    return promql_parser.parse


def _grafana(expr):
    for var, value in GRAFANA_VARS.items():
        expr = expr.replace(var, value)
    return expr


def _dashboard_exprs():
    with open(DASHBOARD) as fh:
        board = json.load(fh)
    panels = list(board['panels'])
    for p in list(panels):
        panels.extend(p.get('panels', ()))
    return [(p.get('title', ''), t['expr']) for p in panels
            for t in p.get('targets', ()) if t.get('expr')]


def _doc_blocks(lang):
    with open(DOC) as fh:
        text = fh.read()
    return re.findall(r'```%s\n(.*?)```' % lang, text, re.S)


def _doc_examples():
    """The PromQL examples: each comment starts one, its lines follow."""
    out = []
    for block in _doc_blocks('promql'):
        current = []
        for line in block.split('\n') + ['']:
            if line.startswith('#') or not line.strip():
                if current:
                    out.append(' '.join(current))
                current = []
                continue
            # a line that does not continue an expression starts another
            if current and not line.startswith(' '):
                out.append(' '.join(current))
                current = []
            current.append(line.strip())
    return out


def _alert_exprs():
    out = []
    for block in _doc_blocks('yaml'):
        rules = yaml.safe_load(block)
        for group in rules.get('groups', ()):
            out.extend((r['alert'], r['expr']) for r in group['rules'])
    return out


def test_there_is_something_to_check():
    assert len(_dashboard_exprs()) >= 20
    assert len(_doc_examples()) >= 8
    assert len(_alert_exprs()) >= 5


@pytest.mark.parametrize('title,expr', _dashboard_exprs())
def test_dashboard_queries_parse(parse, title, expr):
    parse(_grafana(expr))


@pytest.mark.parametrize('expr', _doc_examples())
def test_doc_examples_parse(parse, expr):
    parse(expr)


@pytest.mark.parametrize('alert,expr', _alert_exprs())
def test_alert_rules_parse(parse, alert, expr):
    parse(expr)


@pytest.mark.parametrize('bad', [
    'sum by (instance (iosched_agent_vcpus)',
    'rate(iosched_agent_decisions_total[5m]',
    'iosched_agent_vcpus{class="io"',
])
def test_the_parser_refuses_broken_expressions(parse, bad):
    with pytest.raises(ValueError):
        parse(bad)
