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
"""The Grafana dashboard's agent queries against a live ``/metrics``
scrape, without a Prometheus.

The project has no PromQL evaluator (tests/unit/test_metrics_promql.py
parses the queries, tests/unit/test_metrics_dashboard.py checks their
metric names against the code). Here each query is parsed with
``promql_parser`` and every series selector in it (metric name and label
matchers, Grafana's variables replaced by the scrape target's values) is
matched against the series of a scrape, labelled as Prometheus would
label them (``instance``, ``job``): a query can return data only if each
of its selectors selects a series, and a selector under a range function
(``rate``, ``increase``) needs that series in two scrapes.
"""

import collections
import re

from prometheus_client import parser

from tests.unit import test_metrics_dashboard

AGENT = re.compile(r'\biosched_agent_[a-z0-9_]+')
Selector = collections.namedtuple('Selector', 'name matchers ranged')
Series = collections.namedtuple('Series', 'name labels value')
_OPS = {0: '=', 1: '!=', 2: '=~', 3: '!~'}   # promql_parser.MatchOp


def agent_queries(board):
    """[(panel title, expr)] of every target naming an agent metric,
    nested panels (collapsed rows) included.
    """
    panels = list(board['panels'])
    for p in list(panels):
        panels.extend(p.get('panels', ()))
    return [(p.get('title', ''), t['expr']) for p in panels
            for t in p.get('targets', ())
            if t.get('expr') and AGENT.search(t['expr'])]


def grafana(expr, variables):
    """``expr`` with Grafana's ``$name`` variables replaced, longest
    names first (``$__rate_interval`` before ``$__rate``).
    """
    for name in sorted(variables, key=len, reverse=True):
        expr = expr.replace('$' + name, variables[name])
    return expr


def selectors(expr):
    """Every series selector of a PromQL expression (text), in order."""
    import promql_parser
    out = []

    def visit(node, ranged):
        if isinstance(node, promql_parser.VectorSelector):
            out.append(Selector(node.name, tuple(
                (m.name, _OPS[int(m.op)], m.value)
                for m in node.matchers.matchers), ranged))
        elif isinstance(node, promql_parser.MatrixSelector):
            visit(node.vector_selector, True)
        elif isinstance(node, promql_parser.Call):
            for arg in node.args:
                visit(arg, ranged)
        else:
            for attr in ('expr', 'lhs', 'rhs', 'param'):
                child = getattr(node, attr, None)
                if isinstance(child, promql_parser.Expr):
                    visit(child, ranged or isinstance(
                        node, promql_parser.SubqueryExpr))
    visit(promql_parser.parse(expr), False)
    return out


def scrape_series(text, target):
    """([Series], {metric name exported}) of a scrape's text; ``target``:
    the labels Prometheus adds (``instance``, ``job``). A family without
    samples still names its metrics (the suffixes of its type).
    """
    series, names = [], set()
    for fam in parser.text_string_to_metric_families(text):
        names.update(fam.name + s
                     for s in test_metrics_dashboard.SUFFIXES.get(
                         fam.type, ('',)))
        for s in fam.samples:
            names.add(s.name)
            series.append(Series(s.name, dict(s.labels, **target), s.value))
    return series, names


def _matches(labels, matcher):
    name, op, value = matcher
    got = labels.get(name, '')
    if op in ('=~', '!~'):
        hit = re.fullmatch(value, got) is not None
    else:
        hit = got == value
    return hit if op in ('=', '=~') else not hit


def select(series, selector):
    """The series ``selector`` selects."""
    return [s for s in series
            if (selector.name is None or s.name == selector.name)
            and all(_matches(dict(s.labels, __name__=s.name), m)
                    for m in selector.matchers)]
