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

from bench.reproduce import __main__ as main
from bench.reproduce import harness

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


@pytest.mark.parametrize('kind,paper,ours,tol,want', [
    ('value', 10.0, 11.0, 0.15, 'match'),
    ('value', 10.0, 11.6, 0.15, 'off x1.16'),
    ('value', 10.0, 20.0, 0.15, 'off x2.00'),
    ('value', 10.0, 20.0, 1.0, 'match'),              # a stated looser tol
    ('value', 0.0, 0.1, 0.25, 'match'),               # absolute around 0
    ('value', 0.0, 1.0, 0.25, 'off'),
    # changes: the paper's >= 5 %
    ('change', -30.0, -28.0, 0.15, 'match'),
    ('change', -30.0, -20.0, 0.15, 'same direction'),
    ('change', -30.0, -5.0, 0.15, 'same direction'),  # 5 % is an effect
    ('change', -30.0, -4.9, 0.15, 'no effect'),       # dead band
    ('change', -30.0, 0.0, 0.15, 'no effect'),
    ('change', -30.0, 4.9, 0.15, 'no effect'),        # not 'opposite'
    ('change', -30.0, 5.0, 0.15, 'opposite'),
    ('change', 5.2, 4.9, 0.15, 'no effect'),          # before the ratio
    # changes: the paper's own < 5 % (no effect in the paper)
    ('change', 3.0, -4.0, 0.15, 'match'),
    ('change', 0.0, 4.99, 0.15, 'match'),
    ('change', -2.0, -8.0, 0.15, 'off'),              # no ratio to ~0
    ('change', 0.0, 6.0, 0.15, 'off'),
    ('bound', 0.5, 0.016, 0.0, 'holds'),
    ('bound', 0.5, 0.5, 0.0, 'holds'),
    ('bound', 0.5, 0.51, 0.0, 'violated'),
    ('info', None, 3.0, None, 'info'),
    ('value', 10.0, float('nan'), 0.15, 'no result'),
])
def test_verdict(kind, paper, ours, tol, want):
    assert harness.verdict(kind, paper, ours, tol) == want


def _row(**fields):
    args = dict(paper_id='x', claim='c', setting='s', metric='m',
                paper=1.0, ours=1.0)
    args.update(fields)
    return harness.Row(**args)


@pytest.mark.parametrize('fields,msg', [
    ({'kind': 'guess'}, 'Row.kind'),
    ({'paper': None}, 'Row.paper'),
    ({'tol': 0.5}, 'Row.tol_reason'),                 # looser, no reason
    ({'tol': 0.05}, 'Row.tol_reason'),                # tighter, no reason
    ({'kind': 'bound', 'tol': 1.0}, 'Row.tol_reason'),
    ({'paper': 0.0}, 'Row.tol_reason'),               # absolute: say so
    ({'kind': 'info', 'paper': None, 'tol': 0.15}, 'Row.tol'),
    ({'basis': 'fit'}, 'Row.basis'),
    ({'basis': 'calibrated'}, 'Row.basis_reason'),
    ({'basis': 'identity', 'basis_reason': 'a closed form'}, None),
    ({'kind': 'info', 'paper': None, 'basis': 'identity',
      'basis_reason': 'x'}, 'Row.basis'),
])
def test_bad_rows_are_refused(fields, msg):
    if msg is None:                 # the control: accepted
        _row(**fields)
        return
    with pytest.raises(ValueError, match=msg):
        _row(**fields)


@pytest.mark.parametrize('fields,tol,text', [
    ({}, 0.15, '+-15%'),
    ({'kind': 'change'}, 0.15, '+-15%'),
    ({'kind': 'bound'}, 0.0, '<= paper'),
    ({'kind': 'bound', 'tol': 1.0, 'tol_reason': 'r'}, 1.0,
     '<= paper +100%'),
    ({'paper': 0.0, 'tol': 2.5, 'tol_reason': 'r'}, 2.5, '|x| <= 2.5'),
    ({'kind': 'info', 'paper': None}, None, '-'),
])
def test_default_tolerances_and_their_text(fields, tol, text):
    r = _row(**fields)
    assert r.tol == tol and r.tol_text() == text


@pytest.mark.parametrize('basis', ['calibrated', 'identity'])
def test_rows_set_by_their_inputs_are_never_a_match(basis):
    r = _row(basis=basis, basis_reason='the paper\'s figure is fed in')
    assert r.verdict == basis and r.check == 'match'
    d = r.as_dict()
    assert (d['verdict'], d['check']) == (basis, 'match')
    assert r.why() == 'the paper\'s figure is fed in'
    off = _row(ours=2.0, basis=basis, basis_reason='r')
    assert off.verdict == basis and off.check == 'off x2.00'


@pytest.mark.parametrize('other,text', [
    ('', '1.0'),
    ('prose -70.7', '1.0 (prose -70.7)'),
])
def test_the_papers_other_figure_is_shown_beside(other, text):
    r = _row(paper_other=other)
    assert r.paper_text() == text and r.verdict == 'match'


def test_counts_per_seed_and_total():
    rows = [_row(paper_id='isacs'), _row(paper_id='isacs', ours=3.0),
            _row(paper_id='vslicer', basis='identity', basis_reason='r'),
            _row(paper_id='vturbo', kind='change', paper=-30.0, ours=1.0),
            _row(paper_id='side-by-side', kind='info', paper=None)]
    c = harness.counts(rows)
    assert list(c) == ['000 ISACS', '001 vSlicer / vTurbo', 'side by side',
                       'total']
    assert (c['000 ISACS']['match'], c['000 ISACS']['off']) == (1, 1)
    assert c['001 vSlicer / vTurbo']['identity'] == 1
    assert c['001 vSlicer / vTurbo']['no effect'] == 1
    assert c['001 vSlicer / vTurbo']['match'] == 0
    assert c['total'] == {'match': 1, 'same direction': 0, 'opposite': 0,
                          'no effect': 1, 'off': 1, 'holds': 0,
                          'violated': 0, 'calibrated': 0, 'identity': 1,
                          'info': 1, 'no result': 0}


def test_every_module_registers_experiments():
    import importlib

    for name in main.MODULES:
        mod = importlib.import_module('bench.reproduce.' + name)
        assert mod.EXPERIMENTS, name
        for exp_name, fn in mod.EXPERIMENTS:
            assert callable(fn) and fn.__module__ == mod.__name__


def test_one_command_quick_run_writes_rows_and_the_pinned_counts(tmp_path):
    # every experiment, quick (a sixteenth of the work, about 1 min of CPU
    # on 2 cores; the full run is the env-gated test below): the verdict
    # counts per seed are the ones pinned for --quick, so a changed model
    # or rule shows here, not silently in the docs. A worker process per
    # experiment, as make reproduce runs them (side_by_side's agent sets
    # process-wide options and log levels).
    md = tmp_path / 'rows.md'
    out = subprocess.run(
        [sys.executable, '-m', 'bench.reproduce', '--quick', '-j', '2',
         '-o', str(tmp_path), '--markdown', str(md)],
        cwd=ROOT, capture_output=True, text=True, timeout=900)
    data = json.load(open(tmp_path / 'rows.json'))
    assert data['counts'] == _pinned()['quick'], out.stdout[-2000:]
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr
    rows = data['rows']
    assert rows and all('verdict' in r and 'ratio' in r for r in rows)
    assert all(r['verdict'] != 'no result' for r in rows)
    text = md.read_text()
    assert '| C15 Table 3.1' in text
    assert '| tol | verdict | why |' in text and '| ±15% |' in text
    assert 'rows in' in out.stdout and 'counts as pinned' in out.stdout
    assert '001 vSlicer / vTurbo' in out.stdout     # the counts table
    from bench.reproduce import headlines
    assert len(headlines.table(rows)) == 1 + len(headlines.HEADLINES)
    assert 'headlines (each one row above' in out.stdout
    assert text.startswith('| seed | headline |')


def test_the_docs_header_gives_the_pinned_full_counts():
    table = main.counts_markdown(_pinned()['full'])
    with open(os.path.join(ROOT, 'docs', 'reproduction.md')) as f:
        assert table in f.read()


@pytest.mark.skipif(os.environ.get('IOSCHED_REPRODUCE_FULL') != '1' and
                    os.environ.get('CI') != 'true',
                    reason='the full run takes 3-6 min: CI runs it; set '
                    'IOSCHED_REPRODUCE_FULL=1 to run it here (make '
                    'reproduce checks the same pin)')
def test_full_counts_are_pinned(tmp_path):
    out = subprocess.run(
        [sys.executable, '-m', 'bench.reproduce', '-o', str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=1800)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr
    data = json.load(open(tmp_path / 'rows.json'))
    assert data['counts'] == _pinned()['full']
    # docs/reproduction.md's headline table is this run's
    from bench.reproduce import headlines
    with open(os.path.join(ROOT, 'docs', 'reproduction.md')) as f:
        assert headlines.markdown(data['rows']) in f.read()


def _pinned():
    with open(main.PINNED) as f:
        return json.load(f)


def test_unknown_module_is_a_clear_error():
    out = subprocess.run(
        [sys.executable, '-m', 'bench.reproduce', '--only', 'nosuchpaper'],
        cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert 'nosuchpaper unknown; accepted:' in out.stderr


def test_pin_needs_a_run_of_every_module():
    out = subprocess.run(
        [sys.executable, '-m', 'bench.reproduce', '--only', 'vaio', '--pin'],
        cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert '--pin: the counts of a run of every module only' in out.stderr


def _headline_row(**kw):
    base = {'paper_id': 'vslicer', 'claim': 'C4 Fig. 2.9: ping',
            'setting': '4 VMs, 1 LSVM vs credit',
            'metric': 'mean RTT change (%)', 'paper': -71.0, 'ours': -68.1,
            'verdict': 'match'}
    return dict(base, **kw)


@pytest.mark.parametrize('rows, error', [
    ([_headline_row()], None),                             # found once
    ([_headline_row(), _headline_row()], '2 rows match'),  # ambiguous
    ([_headline_row(setting='3 VMs')], '0 rows match'),    # renamed away
    ([_headline_row(paper_id='other')], None),   # no headline's paper run
])
def test_headlines_pick_one_row_each(rows, error):
    from bench.reproduce import headlines
    if error is None:
        lines = headlines.table(rows)
        want = ['vSlicer' in ln for ln in lines[1:]]
        assert want == ([True] if rows[0]['paper_id'] == 'vslicer' else [])
        return
    with pytest.raises(headlines.HeadlineMissing, match=error):
        headlines.table(rows)
