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
"""Hostile command lines for every command iosched installs (issue 15).

Each console script of setup.cfg and each ``openstack volume slo type``
verb gets hypothesis-generated argv with one fault each (cli_cases): an
unknown option, an option without its value, a hostile value, a
sub-command that does not exist. ``main(argv)`` runs in-process with the
bus, libvirt, Cinder, Nova and the long simulations faked. Per case:

* the command exits with a code (no other exception escapes ``main``,
  no traceback on stderr);
* 0 only for valid arguments, 1 or 2 (3, 4: Cinder's conflict / not
  found) for bad ones, 2 for usage errors;
* the error names what was wrong (the option, the argument or the value);
* a command that writes (Cinder QoS specs and types, the testbed, trace
  and report files, iosched-cloud up/down) has written nothing when it
  failed;
* the exit code is in the command's row of the exit code table
  (``cli_exit_codes``, docs/reliability.md §9c; the doc's table is
  checked to be that module's);
* no secret of the fake configurations or of the base argv (report keys,
  keystone passwords, the transport URL's password:
  ``cli_env.SECRETS``) is on stdout or stderr.

The figures go to ``tests/fault_tally.py`` (campaign "command lines").

Cases per command: IOSCHED_CLI_FUZZ_EXAMPLES (default 30; ``make
bench-faults`` runs 300, drawn afresh with IOSCHED_CLI_FUZZ_RANDOM=1;
without it the cases are the same on every run). IOSCHED_CLI_FUZZ_COUNTS=
FILE appends the number of cases run per command to FILE.
"""

import collections
import os
import re

from hypothesis import given
from hypothesis import HealthCheck
from hypothesis import settings
import pytest

from tests import fault_tally
from tests.unit import cli_cases
from tests.unit import cli_env
from tests.unit import cli_exit_codes

EXAMPLES = cli_cases.examples(30)
# argparse's own errors repeat the whole value; ours must not
ARGPARSE = re.compile(r'error: (argument |unrecognized arguments|the '
                      r'following arguments are required)')
MAX_MESSAGE = 4000
# CI runs the same cases each time; the benchmark draws new ones
RANDOM = os.environ.get('IOSCHED_CLI_FUZZ_RANDOM') == '1'
RUN = collections.Counter()
ESCAPED = collections.Counter()
DOC = os.path.join(os.path.dirname(__file__), '..', '..', 'docs',
                   'reliability.md')


@pytest.fixture(scope='module')
def env(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        env = cli_env.Env(mp, str(tmp_path_factory.mktemp('clifuzz')))
        try:
            yield env
        finally:
            env.close()
    fault_tally.note('command lines', cases=sum(RUN.values()),
                     escaped=sum(ESCAPED.values()))
    path = os.environ.get('IOSCHED_CLI_FUZZ_COUNTS')
    if path:
        with open(path, 'a') as fh:
            for name, n in sorted(RUN.items()):
                fh.write('%s\t%d\n' % (name, n))


def _dir(env):
    _dir.n = getattr(_dir, 'n', 0) + 1
    return os.path.join(env.root, 'case-%d' % _dir.n)


def _norm(text):
    return text.replace('_', '-').lower()


def check(env, cmd, case):
    """Run one case and assert the invariants; returns the exit code."""
    env.start_case(_dir(env))
    RUN[cmd.name] += 1
    ESCAPED[cmd.name] += 1      # until the case ran clean
    code, out, err = env.run(cmd, case.argv)
    assert isinstance(code, int), (case, code)
    assert 'Traceback' not in err, (case, err[-2000:])
    assert code in cli_exit_codes.codes(cmd.name), (
        case, code, 'not in the exit code table', err[-1000:])
    for secret in cli_env.SECRETS:
        assert secret not in out + err, (case, 'printed a secret')
    ESCAPED[cmd.name] -= 1
    if case.valid is True:
        assert code == 0, (case, code, err[-2000:])
    if case.valid is False or code != 0:
        assert code in (2,) + cmd.fail_codes, (case, code, err[-2000:])
        text = err + out if cmd.stdout_counts else err
        assert text.strip(), (case, code, 'nothing said')
        if case.valid is False and case.names:
            assert any(_norm(n) in _norm(text) for n in case.names), (
                case, 'the error does not name any of %r' % (case.names,),
                err[-1500:])
        assert not env.written(), (case, env.written())
        if not ARGPARSE.search(err):
            # our own messages shorten a huge value (argparse's do not)
            assert len(text) < MAX_MESSAGE, (case, len(text), text[:300])
    if case.fault in ('unknown option', 'no value'):
        assert code == 2, (case, code, err[-1000:])
    return code


def test_exit_code_table_in_docs_is_the_module():
    """docs/reliability.md §9c holds cli_exit_codes.markdown() verbatim,
    and every console script of setup.cfg has a row.
    """
    with open(DOC, encoding='utf-8') as fh:
        assert cli_exit_codes.markdown() in fh.read()
    import configparser
    cfg = configparser.ConfigParser()
    cfg.read(os.path.join(os.path.dirname(DOC), '..', 'setup.cfg'))
    scripts = [line.split('=')[0].strip() for line in cfg.get(
        'entry_points', 'console_scripts').splitlines() if line.strip()]
    assert scripts and all(cli_exit_codes.row(s) == s for s in scripts)
    fuzzed = {cli_exit_codes.row(n) for n in cli_cases.COMMANDS}
    assert set(scripts) <= fuzzed, set(scripts) - fuzzed


@pytest.mark.parametrize('name', sorted(cli_cases.COMMANDS))
def test_valid_base_argv_succeeds(env, name):
    """The base every case starts from is valid: exit 0 (else the fuzz
    below would only ever test one error path).
    """
    cmd = cli_cases.COMMANDS[name]
    env.start_case(_dir(env))
    code, out, err = env.run(cmd, cmd.base(env.files))
    assert code == 0, err[-2000:]
    assert 'Traceback' not in err
    for secret in cli_env.SECRETS:
        assert secret not in out + err, 'printed a secret'


@pytest.mark.parametrize('name', sorted(cli_cases.COMMANDS))
def test_hostile_argv(env, name):
    cmd = cli_cases.COMMANDS[name]

    @settings(max_examples=EXAMPLES, deadline=None, database=None,
              derandomize=not RANDOM,
              suppress_health_check=list(HealthCheck))
    @given(case=cli_cases.cases(cmd, env.files))
    def fuzz(case):
        check(env, cmd, case)
    fuzz()
