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
"""Hostile trace files through every ``iosched-iotrace`` sub-command that
reads one (``analyze``, ``analyze --json``, ``render``) (issue 27).

Files: a valid simulator trace mutated (an item of a line or a header
field replaced by any JSON value, NaN/Infinity and numbers too big for a
float included, lines dropped, a JSON line inserted, the file cut short),
a header and any JSON lines, any bytes; each written plain or gzip (and
gzip cut short). Per file and sub-command, ``main`` runs in-process with
the real reader, analysis and drawing:

* no exception escapes, the exit code is in iosched-iotrace's row of
  ``tests/unit/cli_exit_codes.py``;
* a refusal is one line on stderr naming the file, shortened;
* ``analyze --json`` prints strict JSON (no NaN);
* a refused ``render`` created no output directory; an accepted one wrote
  the whole report.

Examples: IOSCHED_INPUT_FUZZ_EXAMPLES / 3 per sub-command (render draws
for real: ~0.5 s per accepted file).
"""

import contextlib
import gzip
import io
import json
import os

from hypothesis import given
from hypothesis import HealthCheck
from hypothesis import settings
from hypothesis import strategies as st
import pytest

from iosched.iotrace import cli
from tests import fault_tally
from tests.unit import cli_env
from tests.unit import cli_exit_codes
from tests.unit import input_fuzz as fz

EXAMPLES = max(10, fz.EXAMPLES // 3)
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, database=None,
                    suppress_health_check=list(HealthCheck))
CODES = cli_exit_codes.codes('iosched-iotrace')
REPORT = {'time.png', 'share.png', 'integrated.png', 'waits.png',
          'report.html'}
# number tokens json.dumps cannot write but a file can hold
RAW_NUMBERS = ('NaN', 'Infinity', '-Infinity', '1e400', '-1e400',
               '9' * 400, '9' * 5000, '-0.0', '1e-400')
TALLY = {'cases': 0, 'escaped': 0}


@pytest.fixture(scope='module', autouse=True)
def _tally():
    yield
    fault_tally.note('iotrace trace files', cases=TALLY['cases'],
                     escaped=TALLY['escaped'])


class Lines(list):
    """The lines of a trace, with a short repr (hypothesis prints it)."""

    def __repr__(self):
        return '<%d trace lines>' % len(self)


@pytest.fixture(scope='module')
def base(tmp_path_factory):
    """The lines of a small valid simulator trace (header first)."""
    path = str(tmp_path_factory.mktemp('trace') / 'tiny.jsonl.gz')
    cli_env.tiny_trace(path)
    with gzip.open(path, 'rt', encoding='utf-8') as fh:
        return Lines(json.loads(line) for line in fh)


RAW = '\x00RAW:'


def _dump(rec):
    text = json.dumps(rec)
    # a raw token travels as the string RAW + token
    for tok in RAW_NUMBERS:
        text = text.replace(json.dumps(RAW + tok), tok)
    return text


hostile = (fz.json_values
           | st.sampled_from(RAW_NUMBERS).map(lambda t: RAW + t)
           | st.sampled_from(['io', 'vcpu', 'finish', 'req', 'que', 'dis',
                              'com', 'rsp', 'R', 'W', 'running', 'idle',
                              'a$\\frac{x', '$x^$', '%s', '<script>']))


@st.composite
def mutated(draw, lines):
    lines = [list(x) if isinstance(x, list) else dict(x) for x in lines]
    for _ in range(draw(st.integers(1, 3))):
        what = draw(st.sampled_from(['item', 'header', 'drop', 'insert',
                                     'item', 'item']))
        if what == 'item' and len(lines) > 1:
            j = draw(st.integers(1, len(lines) - 1))
            if isinstance(lines[j], list) and lines[j]:
                i = draw(st.integers(0, len(lines[j]) - 1))
                lines[j][i] = draw(hostile)
            else:
                lines[j] = draw(hostile)
        elif what == 'header':
            key = draw(st.sampled_from(['format', 'version', 'vms', 'layers',
                                        'sources', 'source', 'meta']))
            if draw(st.booleans()):
                lines[0][key] = draw(hostile)
            else:
                lines[0].pop(key, None)
        elif what == 'drop' and len(lines) > 1:
            del lines[draw(st.integers(1, len(lines) - 1))]
        else:
            lines.insert(draw(st.integers(1, len(lines))), draw(
                st.lists(hostile, max_size=10) | hostile))
    data = '\n'.join(_dump(x) for x in lines).encode() + b'\n'
    if draw(st.integers(0, 9)) == 0:
        data = data[:draw(st.integers(0, len(data)))]
    return data


@st.composite
def any_json(draw, lines):
    head = draw(st.sampled_from([lines[0], {}]) | hostile)
    rest = draw(st.lists(hostile, max_size=6))
    return '\n'.join(_dump(x) for x in [head] + rest).encode()


def files(lines):
    content = st.one_of(mutated(lines), mutated(lines), any_json(lines),
                        st.binary(max_size=400))

    def pack(args):
        data, how = args
        if how == 'plain':
            return 'trace.jsonl', data
        z = gzip.compress(data)
        if how == 'gz-cut':
            z = z[:max(0, len(z) // 2)]
        return 'trace.jsonl.gz', z if how != 'gz-raw' else data
    return st.tuples(content, st.sampled_from(
        ['plain', 'plain', 'gz', 'gz-cut', 'gz-raw'])).map(pack)


def _run(argv):
    out, err = io.StringIO(), io.StringIO()
    TALLY['cases'] += 1
    try:
        with contextlib.redirect_stdout(out), \
                contextlib.redirect_stderr(err):
            try:
                code = cli.main(argv)
            except SystemExit as e:
                code = e.code
    except BaseException:
        TALLY['escaped'] += 1
        raise
    if code not in CODES or 'Traceback' in err.getvalue():
        TALLY['escaped'] += 1
    return code, out.getvalue(), err.getvalue()


def _refused_well(code, err, path):
    assert code in CODES, (code, err[-1500:])
    assert 'Traceback' not in err, err[-1500:]
    if code != 0:
        lines = err.strip().splitlines()
        assert len(lines) == 1 and path in lines[0], err[-1500:]
        assert len(lines[0]) < fz.MAX_MESSAGE + len(path), len(lines[0])


def _strict(text):
    def no(c):
        raise ValueError('%s in the JSON output' % c)
    return json.loads(text, parse_constant=no)


def _write(tmp, name, data):
    path = os.path.join(str(tmp), name)
    with open(path, 'wb') as fh:
        fh.write(data)
    return path


def test_analyze_reads_any_trace_file(tmp_path_factory, base):
    tmp = fz.scratch(tmp_path_factory)

    @SETTINGS
    @given(f=files(base), as_json=st.booleans())
    def prop(f, as_json):
        path = _write(tmp, *f)
        code, out, err = _run(['analyze', path] + (
            ['--json'] if as_json else []))
        _refused_well(code, err, path)
        if code == 0 and as_json:
            _strict(out)
    prop()


def test_render_reads_any_trace_file(tmp_path_factory, base):
    tmp = fz.scratch(tmp_path_factory)
    n = [0]

    @SETTINGS
    @given(f=files(base))
    def prop(f):
        path = _write(tmp, *f)
        n[0] += 1
        outdir = os.path.join(str(tmp), 'report-%d' % n[0])
        code, out, err = _run(['render', path, '-o', outdir])
        _refused_well(code, err, path)
        if code == 0:
            assert set(os.listdir(outdir)) == REPORT
        else:
            assert not os.path.exists(outdir), os.listdir(outdir)
    prop()


@pytest.mark.parametrize('line', [
    '["io", NaN, "VM1", "req", "R", 1, 4096, 8, 1]',
    '["io", Infinity, "VM1", "req", "R", 1, 4096, 8, 1]',
    '["io", 0.5, "VM1", "req", "R", 1, 4096, 8, {"a": 1}]',
    '["io", 0.5, "VM1", "req", "R", 1, 1e400, 8, 1]',
    '["io", 1e12, "VM1", "req", "R", 1, 4096, 8, 1]',
    '["vcpu", "VM1", 0, "idle", NaN, 1.0]',
    '["finish", "VM1", -Infinity]',
    '["io", 0.5, "VM1", "req", "R", 1, 4096, 8, ' + '9' * 400 + ']',
], ids=['nan-ts', 'inf-ts', 'dict-rid', 'inf-bytes', 'far-ts', 'nan-span',
        'inf-finish', 'huge-rid'])
@pytest.mark.parametrize('sub', ['render', 'analyze'])
def test_issue27_lines_are_refused_in_one_line(tmp_path, sub, line):
    """The crashes of issue 27: a traceback before the fix."""
    head = json.dumps({'format': 'iosched-iotrace', 'version': 1,
                       'vms': ['VM1']})
    path = _write(tmp_path, 't.jsonl', (head + '\n' + line + '\n').encode())
    outdir = str(tmp_path / 'out')
    code, out, err = _run([sub, path, '-o', outdir] if sub == 'render'
                          else [sub, path])
    assert code == 2, (code, err[-1500:])
    _refused_well(code, err, path)
    assert not os.path.exists(outdir)


def test_a_vm_name_with_dollars_is_drawn_as_text(tmp_path):
    """matplotlib took '$...$' in a VM name for math and raised."""
    head = json.dumps({'format': 'iosched-iotrace', 'version': 1,
                       'vms': ['a$\\frac{x$']})
    lines = [head] + [json.dumps(['io', 0.1 * i, 'a$\\frac{x$', layer, 'R',
                                  1, 4096, 8, i])
                      for i in range(1, 4) for layer in ('que', 'dis')]
    path = _write(tmp_path, 't.jsonl', '\n'.join(lines).encode())
    outdir = str(tmp_path / 'out')
    code, out, err = _run(['render', path, '-o', outdir])
    assert code == 0, err[-1500:]
    assert set(os.listdir(outdir)) == REPORT
