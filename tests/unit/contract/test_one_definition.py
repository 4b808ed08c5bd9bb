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
"""One concept, one place: a second definition of a contract concept fails.

Scanned: every source module of host_agent, nova_plugin, cinder_qos,
iosched (the contract aside) and bench. A second definition is

* a function named like a percentile or quantile (percentile, pct,
  quantile, p99 ...): there is one, ``contract.stats``;
* a function with the name of one of the contract's formulas
  (``contract.stats``, ``contract.isacs``, ``contract.lsvm``);
* a module-level constant whose value equals a contract constant's and
  whose name is the same or ends the same way (``MECH_SLICE`` /
  ``SLICE``), or any tuple of two or more strings equal to a contract
  tuple (a spelling list, a key list, a set of kinds).

The flavor keys and spellings have their own scan (test_flavor.py).
"""

import ast
import importlib
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
SCANNED = ('iosched', 'bench')
CONTRACT = 'iosched/contract/'
FORMULA_MODULES = ('stats', 'isacs', 'lsvm')
# Same name or value, another concept (each with why).
NOT_A_COPY = {
    ('iosched/host_agent/policies/slo_window.py', 'IDLE'):
        "an SLO window's verdict (no I/O), not a vCPU class",
    ('iosched/simulator/throttle.py', 'wait_us'):
        "a token bucket's wait for the next request, not the LSVM wait",
    ('iosched/nova_plugin/inflight.py', 'observe'):
        'records a placement in flight, not ISACS Eq. 1',
    ('iosched/nova_plugin/slo_lookup.py', 'SOURCE_NONE'):
        "where a request's floors were read (none), not an agent's "
        'disk.slo_source',
}
PERCENTILE = re.compile(
    r'_?(percentile|pct|quantile|nearest_rank|p\d\d?|_q)')


def _sources():
    out = subprocess.run(['git', 'ls-files', '*.py'], cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout.split()
    return [p for p in out if p.split('/')[0] in SCANNED]


def _tree(path):
    return ast.parse(open(os.path.join(ROOT, path)).read())


def _constants(tree):
    for node in tree.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id.isupper()):
            try:
                yield node.targets[0].id, ast.literal_eval(node.value)
            except ValueError:
                continue


def _functions(tree):
    return [n.name for n in ast.walk(tree)
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def _contract():
    consts, formulas = {}, set()
    for path in _sources():
        if not path.startswith(CONTRACT) or path.endswith('__init__.py'):
            continue
        tree = _tree(path)
        module = os.path.basename(path)[:-3]
        # the values as the contract computes them (a tuple of names too)
        mod = importlib.import_module('iosched.contract.' + module)
        for name in dir(mod):
            value = getattr(mod, name)
            if name.isupper() and isinstance(value, (str, tuple)):
                consts.setdefault(repr(value), []).append((name, value,
                                                           path))
        if module in FORMULA_MODULES:
            formulas.update(n for n in _functions(tree)
                            if not n.startswith('_'))
    return consts, formulas


def _related(a, b):
    return a == b or a.endswith('_' + b) or b.endswith('_' + a)


def _is_list(value):
    return (isinstance(value, tuple) and len(value) >= 2
            and all(isinstance(v, str) for v in value))


def second_definitions(paths, consts, formulas):
    bad = []
    for path in paths:
        if path.startswith(CONTRACT):
            continue
        tree = _tree(path)
        for fn in _functions(tree):
            if (path, fn) in NOT_A_COPY:
                continue
            if PERCENTILE.fullmatch(fn):
                bad.append('%s: def %s (a percentile: contract.stats)'
                           % (path, fn))
            elif fn in formulas:
                bad.append('%s: def %s (a contract formula)' % (path, fn))
        for name, value in _constants(tree):
            if (isinstance(value, (bool, int, float))
                    or (path, name) in NOT_A_COPY):
                continue
            for cname, _, cpath in consts.get(repr(value), ()):
                if _is_list(value) or (isinstance(value, str)
                                       and _related(name, cname)):
                    bad.append('%s: %s = %r (is %s.%s)' % (
                        path, name, value, cpath, cname))
    return bad


def test_no_second_definition():
    consts, formulas = _contract()
    assert formulas, 'no contract formulas found'
    bad = second_definitions(_sources(), consts, formulas)
    assert not bad, '\n'.join(bad)


@pytest.mark.parametrize('source,caught', [
    ('def percentile(xs, q):\n    pass\n', True),
    ('def _pct(xs, p):\n    pass\n', True),
    ('def ivcredit(s, c, m):\n    pass\n', True),
    ('MECH_SLICE = "slice"\n', True),
    ('SLICE = "slice"\n', True),
    ('RULE = "slice"\n', False),
    ('SPELLINGS = ("true", "1", "yes", "on")\n', True),
    ('KINDS = ("vcpu_pin", "emulator_pin")\n', True),
    ('N = 3\n', False),
])
def test_the_scan_catches(tmp_path, monkeypatch, source, caught):
    consts, formulas = _contract()
    (tmp_path / 'x.py').write_text(source)
    monkeypatch.setattr(sys.modules[__name__], 'ROOT', str(tmp_path))
    got = second_definitions(['x.py'], consts, formulas)
    assert bool(got) == caught, got
