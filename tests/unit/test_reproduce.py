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
"""bench/reproduce: verdicts (table-driven) and the one command, quick."""

import json
import os
import subprocess
import sys

import pytest

from bench.reproduce import harness

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


@pytest.mark.parametrize('kind,paper,ours,tol,want', [
    ('value', 10.0, 11.0, 0.25, 'match'),
    ('value', 10.0, 20.0, 0.25, 'off x2.00'),
    ('value', 0.0, 0.1, 0.25, 'match'),
    ('value', 0.0, 1.0, 0.25, 'differs'),
    ('change', -30.0, -20.0, 0.25, 'same direction'),
    ('change', -30.0, -28.0, 0.25, 'match'),
    ('change', -30.0, 5.0, 0.25, 'opposite'),
    ('change', -30.0, 0.0, 0.25, 'no effect'),        # never acted
    ('bound', 0.5, 0.016, 0.0, 'holds'),
    ('bound', 0.5, 0.7, 0.25, 'violated'),
    ('info', None, 3.0, 0.25, 'info'),
    ('value', 10.0, float('nan'), 0.25, 'no result'),
])
def test_verdict(kind, paper, ours, tol, want):
    assert harness.verdict(kind, paper, ours, tol) == want


@pytest.mark.parametrize('fields,msg', [
    ({'kind': 'guess'}, 'Row.kind'),
    ({'paper': None}, 'Row.paper'),
])
def test_bad_rows_are_refused(fields, msg):
    args = dict(paper_id='x', claim='c', setting='s', metric='m',
                paper=1.0, ours=1.0)
    args.update(fields)
    with pytest.raises(ValueError, match=msg):
        harness.Row(**args)


def test_every_module_registers_experiments():
    import importlib

    from bench.reproduce import __main__ as main
    for name in main.MODULES:
        mod = importlib.import_module('bench.reproduce.' + name)
        assert mod.EXPERIMENTS, name
        for exp_name, fn in mod.EXPERIMENTS:
            assert callable(fn) and fn.__module__ == mod.__name__


def test_one_command_quick_run_writes_rows(tmp_path):
    md = tmp_path / 'rows.md'
    out = subprocess.run(
        [sys.executable, '-m', 'bench.reproduce', '--quick', '--only',
         'vturbo', '-j', '1', '-o', str(tmp_path), '--markdown', str(md)],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    rows = json.load(open(tmp_path / 'rows.json'))['rows']
    assert rows and all('verdict' in r and 'ratio' in r for r in rows)
    assert '| C15 Table 3.1' in md.read_text()
    assert 'rows in' in out.stdout


def test_unknown_module_is_a_clear_error():
    out = subprocess.run(
        [sys.executable, '-m', 'bench.reproduce', '--only', 'nosuchpaper'],
        cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert 'nosuchpaper unknown; accepted:' in out.stderr
