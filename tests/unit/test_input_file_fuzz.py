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
"""Hostile input files of the operator tools (issue 27): io-host-agent
configuration files and the ``--report`` files of iosched-explain and
iosched-placement. (Trace files: tests/unit/iotrace/test_trace_fuzz.py;
scenario files: iosched_demo/test_scenario_fuzz.py; ``volume_qos_file``:
cinder_qos/test_slo_fuzz.py; the agent's journal is not fuzzed here.)

* Agent configurations: the good base (with sentinel secrets) followed by
  hypothesis-made INI: known and unknown sections and options, nasty
  values (NaN, huge, empty, unicode, control characters, newlines),
  broken lines; or any bytes. ``main`` runs in-process with the driver
  faked: reaching it is exit 0 ("started"), so a refused file never got
  to the driver and no knob was touched.
* Report files: a valid report mutated (a field set to any JSON value or
  removed), any JSON, any bytes; through ``iosched-explain --report`` and
  ``iosched-placement --report``.

Per case: no traceback, the exit code in the command's row of
``cli_exit_codes``, a refusal is one error line naming the file, an
option or a field, and no sentinel secret (``cli_env.SECRETS``) is
printed. Examples: IOSCHED_INPUT_FUZZ_EXAMPLES / 3 per property. Figures
to ``tests/fault_tally.py`` (campaign "input files").
"""

import json
import os

from hypothesis import given
from hypothesis import HealthCheck
from hypothesis import settings
from hypothesis import strategies as st
import pytest

from tests import fault_tally
from tests.unit import cli_env
from tests.unit import cli_exit_codes
from tests.unit import input_fuzz as fz

EXAMPLES = max(10, fz.EXAMPLES // 3)
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, database=None,
                    suppress_health_check=list(HealthCheck))
TALLY = {'cases': 0, 'escaped': 0}
ERROR_LINE = (' ERROR ', ' CRITICAL ')
# what [DEFAULT] debug = true asked for, before the error
QUIET_LINE = (' DEBUG ', ' INFO ')


@pytest.fixture(scope='module')
def env(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        env = cli_env.Env(mp, str(tmp_path_factory.mktemp('filefuzz')))
        try:
            yield env
        finally:
            env.close()
    fault_tally.note('input files', cases=TALLY['cases'],
                     escaped=TALLY['escaped'])


class _Cmd(object):
    def __init__(self, runner):
        self.runner = runner


def _run(env, name, runner, argv):
    """(code, out, err) of one case, the generic invariants asserted."""
    TALLY['cases'] += 1
    TALLY['escaped'] += 1       # until it ran clean
    _run.n = getattr(_run, 'n', 0) + 1
    env.start_case(os.path.join(env.root, 'f%d' % _run.n))
    code, out, err = env.run(_Cmd(runner), argv)
    text = out + err
    assert isinstance(code, int), code
    assert 'Traceback' not in text, text[-2000:]
    assert code in cli_exit_codes.codes(name), (code, text[-1000:])
    for secret in cli_env.SECRETS:
        assert secret not in text, 'printed a secret'
    TALLY['escaped'] -= 1
    return code, out, err


def _one_error(out, err, names):
    """The refusal is one error line (stderr, or the agent's log on
    stdout; debug and info log lines aside) naming one of ``names``.
    """
    lines = [x for x in err.splitlines() if x.strip() and not any(
        m in x for m in QUIET_LINE)] + [
        x for x in out.splitlines() if any(m in x for m in ERROR_LINE)]
    assert len(lines) == 1, (out[-1500:], err[-1500:])
    assert any(n in lines[0] for n in names if n), (lines[0], names)
    assert len(lines[0]) < 2 * fz.MAX_MESSAGE, len(lines[0])


# -- io-host-agent configuration files ---------------------------------------

def _agent_options():
    from iosched.host_agent.conf import opts
    out = {}
    for group, options in opts.list_opts():
        name = group if isinstance(group, str) else group.name
        out[name] = sorted(o.dest for o in options)
    return out


AGENT_OPTIONS = _agent_options()
LINE_TEXT = st.text(st.characters(blacklist_categories=('Cs',),
                                  blacklist_characters='\x00'), max_size=30)
ini_values = (fz.numbers_text | fz.junk_text | st.sampled_from(
    ['true', 'false', 'simulated', 'libvirt', 'vslicer', 'vslicer,slo',
     'ibalancer,,', '0', '-1', '1e999', '  ', 'a\n b', '$x', '%(zz)s',
     '${zz}']) | LINE_TEXT)


@st.composite
def agent_ini(draw):
    if draw(st.integers(0, 9)) == 0:
        return draw(st.binary(max_size=300))
    lines = []
    for _ in range(draw(st.integers(1, 4))):
        section = draw(st.sampled_from(sorted(AGENT_OPTIONS) + ['DEFAULT'])
                       | LINE_TEXT)
        lines.append('[%s]' % section)
        known = AGENT_OPTIONS.get(section) or ['debug', 'zz']
        for _ in range(draw(st.integers(1, 3))):
            opt = draw(st.sampled_from(known) | LINE_TEXT)
            kind = draw(st.integers(0, 9))
            if kind == 0:           # a broken line
                lines.append(draw(LINE_TEXT))
            else:
                lines.append('%s = %s' % (opt, draw(ini_values)))
    text = cli_env.GOOD_AGENT_CONF + '\n'.join(lines) + '\n'
    return text.encode('utf-8', 'surrogatepass')


def test_agent_config_files(env):
    @SETTINGS
    @given(data=agent_ini())
    def prop(data):
        path = env.files.written(data)
        code, out, err = _run(env, 'io-host-agent', 'agent',
                              ['--config-file', path])
        if code != 0:
            names = [path, os.path.basename(path), 'config']
            names += [o for opts in AGENT_OPTIONS.values() for o in opts
                      if o in err + out]
            _one_error(out, err, names)
    prop()


# -- --report files of iosched-explain and iosched-placement ----------------

def _report():
    from tests.unit.nova_plugin import reports
    return reports.report(host='compute-1').to_dict()


def _paths(data, prefix=()):
    out = [prefix] if prefix else []
    if isinstance(data, dict):
        for k, v in data.items():
            out += _paths(v, prefix + (k,))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            out += _paths(v, prefix + (i,))
    return out


BASE_REPORT = _report()
REPORT_PATHS = _paths(BASE_REPORT)


@st.composite
def report_files(draw):
    from tests import fixtures
    kind = draw(st.integers(0, 9))
    if kind == 0:
        return draw(st.binary(max_size=300))
    if kind == 1:
        return json.dumps(draw(fz.json_values)).encode()
    data = BASE_REPORT
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(REPORT_PATHS))
        try:
            data = fixtures.mutated(data, path, draw(
                st.just(KeyError) | fz.json_values))
        except (KeyError, IndexError, TypeError):
            pass            # the path went with an earlier mutation
    return json.dumps(data).encode()


REPORT_COMMANDS = {
    'iosched-explain': ('explain', lambda f, p: ['--report', p]),
    'iosched-placement': ('placement', lambda f, p: [
        '--report', p, '--report', f['good_report2'], '--vcpus', '2',
        '--config-file', f['good_nova_conf']]),
}


@pytest.mark.parametrize('name', sorted(REPORT_COMMANDS))
def test_report_files(env, name):
    runner, argv = REPORT_COMMANDS[name]

    @SETTINGS
    @given(data=report_files())
    def prop(data):
        path = env.files.written(data)
        code, out, err = _run(env, name, runner, argv(env.files, path))
        if code not in (0, 1):      # 1: placement --check-flavors only
            _one_error(out, err, [path, os.path.basename(path)])
    prop()


@pytest.mark.parametrize('extra, named', [
    ('[collectors]\ncpu_share_threshold = \n 2\n', 'cpu_share_threshold'),
    ('[collectors]\ncpu_share_threshold = 0\x0c0\n', 'cpu_share_threshold'),
    ('[DEFAULT]\ndebug = maybe\n', 'debug'),
], ids=['continued-value', 'form-feed', 'cli-opt-in-file'])
def test_agent_config_faults_found(env, extra, named):
    """What the fuzz found: a value over two lines was a two-line error;
    a bad [DEFAULT] debug exited 1 without naming the file.
    """
    path = env.files.written((cli_env.GOOD_AGENT_CONF + extra).encode())
    code, out, err = _run(env, 'io-host-agent', 'agent',
                          ['--config-file', path])
    assert code == 2, (code, out, err)
    _one_error(out, err, [path])
    assert named in err
