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
"""``iosched-explain`` on a fake journal and a saved HostReport; bad input
exits 2 with one line on stderr; every policy rule has a description.
"""

import ast
import glob
import json
import os
import re
import subprocess
import sys

import pytest

from iosched.contract import payload
from iosched.contract import payload_sections
from iosched.host_agent.actuators import journal as journal_mod
from iosched.host_agent.cmd import explain
from iosched.host_agent import model

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
WALL = 1717243200.0          # 2024-06-01 12:00:00 UTC
U1, U2 = '11111111-aaaa', '22222222-bbbb'


def _change(kind, uuid, target, before, after, rule, reason, ts):
    return model.Change(kind=kind, instance_uuid=uuid, target=target,
                        before=before, after=after, rule=rule, ts=ts,
                        reason=reason)


@pytest.fixture
def journal(tmp_path):
    path = str(tmp_path / 'journal.jsonl')
    j = journal_mod.Journal(path, clock=lambda: WALL)
    j.record(_change('vcpu_slice', U1, '0', 3000, 1000,
                     'vslicer.lsvm_microslice', 'L=2ms, k=1: T_m=1000us',
                     5.0))
    j.record(_change('vcpu_slice', U1, '0', 1000, 500,
                     'vslicer.lsvm_microslice', 'L=1ms, k=1: T_m=500us',
                     9.0))
    j.record(_change('vcpu_pin', U2, '1', None, (3,), 'isacs.io_balance',
                     'IOload pCPU0=0.9, pCPU3=0.1', 7.0))
    j.record(_change('vcpu_weight', U2, '0', 50, 100, 'vturbo.new_rule',
                     'a rule this version does not describe', 8.0))
    j.close()
    return path


def run(argv, capsys):
    rc = explain.main(argv)
    out, err = capsys.readouterr()
    assert 'Traceback' not in err
    return rc, out, err


def test_text_explains_every_held_knob(journal, capsys):
    rc, out, err = run(['--journal', journal], capsys)
    assert rc == 0 and err == ''
    assert '3 knob(s) held by the agent' in out
    block = out.split('instance %s  vcpu_slice  vCPU 0' % U1)[1]
    assert '3000 -> 500  (original -> set by the agent; 2 changes)' in block
    assert 'vslicer.lsvm_microslice' in block
    assert 'L=1ms, k=1: T_m=500us' in block        # the last reason
    assert '2024-06-01 12:00:00 UTC' in block
    assert 'null -> [3]' in out                      # unpinned -> pCPU 3
    # The rules legend: described rules, and an unknown one without text.
    legend = out.split('\nrules:\n')[1]
    assert explain.RULES['isacs.io_balance'][:40] in legend.replace(
        '\n      ', ' ')
    assert '  vturbo.new_rule\n' in legend


@pytest.mark.parametrize('filters,want', [
    (['--instance', U1], [(U1, 'vcpu_slice', '0')]),
    (['--kind', 'vcpu_pin'], [(U2, 'vcpu_pin', '1')]),
    (['--instance', U2, '--kind', 'vcpu_weight'], [(U2, 'vcpu_weight', '0')]),
    (['--instance', U2, '--kind', 'vcpu_slice'], []),
    (['--kind', 'vcpu_pin', '--kind', 'vcpu_weight'],
     [(U2, 'vcpu_pin', '1'), (U2, 'vcpu_weight', '0')]),
])
def test_filters_and_json(journal, capsys, filters, want):
    rc, out, _ = run(['--journal', journal, '--json'] + filters, capsys)
    assert rc == 0
    data = json.loads(out)
    assert data['source'] == 'journal' and data['path'] == journal
    got = [(k['instance_uuid'], k['kind'], k['target'])
           for k in data['knobs']]
    assert got == want
    for k in data['knobs']:
        assert k['rule_description'] == explain.RULES.get(k['rule'], '')
        assert set(k) >= {'original', 'current', 'reason', 'ts', 'when'}


def test_no_match_says_so(journal, capsys):
    rc, out, _ = run(['--journal', journal, '--kind', 'disk_iotune'], capsys)
    assert rc == 0
    assert 'nothing to explain matching --kind disk_iotune' in out


def test_journal_path_comes_from_the_agent_config(journal, tmp_path, capsys):
    conf = tmp_path / 'host-agent.conf'
    conf.write_text('[host_agent]\njournal_path = %s\n' % journal)
    rc, out, _ = run(['--config-file', str(conf), '--json'], capsys)
    assert rc == 0 and len(json.loads(out)['knobs']) == 3


def _report(tmp_path, **changes):
    data = payload.HostReport(
        host='compute-1', ts=100.0, seq=4, report_interval=1.0, pcpus=2,
        decisions=(
            payload_sections.DecisionEntry(
                'vcpu_slice', U1, '0', 3000, 1000,
                'vslicer.lsvm_microslice', 'L=2ms', 99.0),
            payload_sections.DecisionEntry(
                'emulator_slice', U1, '', None, 1000,
                'vslicer.lsvm_io_thread', 'like vCPUs', 99.0, applied=False,
                error='no emulator_slice knob'),
            payload_sections.DecisionEntry(
                'vcpu_weight', U2, '0', 100, 100,
                'vslicer.equal_weight', 'equal', 98.0),
        )).to_dict()
    data.update(changes)
    path = tmp_path / 'report.json'
    path.write_text(json.dumps(data))
    return str(path)


def test_report_decisions_are_explained(tmp_path, capsys):
    rc, out, err = run(['--report', _report(tmp_path)], capsys)
    assert rc == 0 and err == ''
    assert 'host compute-1, version 1.5, seq 4: 3 decision(s)' in out
    flat = ' '.join(out.split())          # long lines wrap
    assert '3000 -> 1000 (before -> chosen; applied)' in flat
    assert 'NOT applied: no emulator_slice knob' in flat
    assert '100 -> 100 (before -> chosen; already set, nothing written)' \
        in flat
    assert 'whole instance' in out and 't=99.000 s on the agent clock' in out
    rc, out, _ = run(['--report', _report(tmp_path), '--json', '--instance',
                      U1], capsys)
    data = json.loads(out)
    assert [d['status'] for d in data['decisions']] == ['failed', 'applied']
    assert data['host'] == 'compute-1' and data['version'] == '1.5'


def test_report_1_0_has_nothing_to_explain(tmp_path, capsys):
    path = _report(tmp_path, version='1.0')
    data = json.loads(open(path).read())
    del data['decisions']
    open(path, 'w').write(json.dumps(data))
    rc, out, err = run(['--report', path], capsys)
    assert rc == 0 and 'nothing to explain' in out
    assert 'HostReport 1.0 carries no decisions' in err


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize('make,says', [
    (lambda t: ['--journal', str(t / 'missing.jsonl')], 'no journal at'),
    (lambda t: ['--journal', str(t)], 'cannot read the journal'),
    (lambda t: ['--journal', _write(t, 'j', '[DEFAULT]\nx = 1\n')],
     'not an agent journal'),
    (lambda t: ['--journal', _write(t, 'j', '{"op": "move"}\n')],
     "'op'"),
    (lambda t: ['--report', str(t / 'missing.json')],
     'cannot read the report'),
    (lambda t: ['--report', _write(t, 'r.json', '{"host": ')],
     'is not JSON'),
    (lambda t: ['--report', _write(t, 'r.json', '{"version": "1.1"}')],
     "is not a HostReport: invalid HostReport field 'vcpus'"),
    (lambda t: ['--config-file', str(t / 'nope.conf')],
     'cannot read the agent configuration'),
    (lambda t: ['--config-file', _write(t, 'c.conf', 'not ini [')],
     'cannot read the agent configuration'),
    (lambda t: ['--config-file', _write(
        t, 'c.conf', '[host_agent]\njournal_path =\n')],
     'journal_path is empty'),
])
def test_bad_input_exits_2_with_a_clear_error(tmp_path, capsys, make, says):
    rc, out, err = run(make(tmp_path), capsys)
    assert rc == explain.EXIT_BAD_INPUT == 2
    assert out == '' and err.startswith('iosched-explain: error: ')
    assert says in err and err.count('\n') == 1


def test_console_script_never_prints_a_traceback(tmp_path):
    proc = subprocess.run(
        [sys.executable, '-m', 'iosched.host_agent.cmd.explain', '--journal',
         str(tmp_path / 'missing.jsonl')], capture_output=True, text=True,
        cwd=ROOT)
    assert proc.returncode == 2
    assert 'Traceback' not in proc.stderr and 'no journal' in proc.stderr


def test_help_explains_sources_exit_codes_and_rules(capsys):
    with pytest.raises(SystemExit) as exc:
        explain.main(['--help'])
    out = capsys.readouterr().out
    assert exc.value.code == 0
    for text in ('journal_path', '--report', '--instance', '--kind',
                 '--json', 'exit status', '2 bad input',
                 'vslicer.lsvm_microslice'):
        assert text in out, text
    assert max(len(line) for line in out.splitlines()) <= 79


def test_console_script_is_declared():
    setup = open(os.path.join(ROOT, 'setup.cfg')).read()
    assert ('\n    iosched-explain = iosched.host_agent.cmd.explain:main\n'
            in setup)


RULE_NAME = re.compile(r'^([a-z][a-z0-9]*)\.[a-z][a-z0-9_]*$')


def policy_rule_names():
    """Every rule name in iosched/host_agent/policies/*.py: string literals
    given as ``rule=``/``rule = '...'``, and any literal of the same
    ``<policy>.<name>`` shape (rules chosen through tuples).
    """
    literals, prefixes = set(), {'vturbo'}
    for path in glob.glob(os.path.join(ROOT, 'iosched', 'host_agent',
                                       'policies',
                                       '*.py')):
        prefixes.add(os.path.basename(path)[:-3])
        tree = ast.parse(open(path).read())
        for node in ast.walk(tree):
            if isinstance(node, ast.keyword) and node.arg == 'rule':
                value = node.value
            elif isinstance(node, ast.Assign) and any(
                    getattr(t, 'id', None) == 'rule' for t in node.targets):
                value = node.value
            else:
                if (isinstance(node, ast.Constant) and
                        isinstance(node.value, str) and
                        RULE_NAME.match(node.value)):
                    literals.add(node.value)
                continue
            if isinstance(value, ast.Constant) and isinstance(value.value,
                                                              str):
                literals.add(value.value)
                prefixes.add(value.value.split('.')[0])
    return sorted(r for r in literals if RULE_NAME.match(r) and
                  RULE_NAME.match(r).group(1) in prefixes)


def test_every_policy_rule_has_a_description():
    names = policy_rule_names()
    assert 'vslicer.lsvm_microslice' in names and 'isacs.equal_weight' in \
        names, names
    missing = [r for r in names if not explain.describe(r)]
    assert not missing, ('add these rules to '
                         'iosched.host_agent.cmd.explain.RULES: '
                         '%s' % missing)
