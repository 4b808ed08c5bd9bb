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
"""iosched-wakeup-probe: help, bad input (exit 2), the table and --json,
with the self-test replaced by a fake (the real one is in
tests/functional/test_wakeup_probe.py).
"""

import io
import json
import os

import pytest

from iosched.contract import lsvm as lsvm_bound
from iosched.host_agent.cmd import wakeup_probe as cli
from iosched.host_agent import linux
from iosched.host_agent.linux import wakeup_probe as wp
from iosched.host_agent import model

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))


@pytest.fixture
def config(tmp_path):
    """An agent config with a fake sysfs (CPUs 0-3 online); the global
    CONF is parsed again without files afterwards.
    """
    d = tmp_path / 'sys' / 'devices' / 'system' / 'cpu'
    d.mkdir(parents=True)
    (d / 'online').write_text('0-3\n')
    path = tmp_path / 'agent.conf'
    path.write_text('[host_paths]\nsys_root = %s\n' % (tmp_path / 'sys'))
    yield path
    cli.CONF([], project='iosched', default_config_files=[])


class FakeProbe(object):
    def __init__(self, rows=None, error=None):
        self.rows = rows
        self.error = error
        self.calls = []

    def __call__(self, conf, cases, cpus, wakes, hogs_per_cpu,
                 lsvm_weight):
        self.calls.append(dict(cases=cases, cpus=cpus, wakes=wakes,
                               hogs_per_cpu=hogs_per_cpu,
                               lsvm_weight=lsvm_weight))
        if self.error:
            raise self.error
        return self.rows or tuple(
            model.WakeupProbe(c, True, 15.0, 4000.0 if c != 'deadline'
                              else 60.0, wakes) for c in cases)


def run(argv, probe=None):
    out, err = io.StringIO(), io.StringIO()
    rc = cli.main(argv, out=out, err=err, probe=probe or FakeProbe())
    return rc, out.getvalue(), err.getvalue()


def test_help_explains_the_test_and_its_cost(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(['--help'])
    out = capsys.readouterr().out
    assert exc.value.code == 0
    for text in ('No VM', 'stock', 'deadline', 'weight', 'slice',
                 'fully loaded', 'about 3 s', '--cases', '--wakes',
                 '--hogs-per-cpu', '--json', 'exit status', '2 bad input',
                 'x stock'):
        assert text in out, text
    assert max(len(line) for line in out.splitlines()) <= 79


@pytest.mark.parametrize('argv, says', [
    (['--cases', 'stock,fifo'], "unknown ['fifo']; accepted: one or more "
                                'of stock, deadline, weight, slice'),
    (['--cases', ','], 'empty'),
    (['--cases', 'stock,stock'], 'twice'),
    (['--wakes', '3'], 'wakes 3 is not an int in 50..5000'),
    (['--wakes', 'many'], "--wakes 'many' is not an integer"),
    (['--hogs-per-cpu', '99'], 'hogs_per_cpu 99 is not an int in 0..8'),
    (['--hogs-per-cpu', '1.5'], "--hogs-per-cpu '1.5' is not an integer"),
])
def test_bad_input_exits_2_with_a_clear_error(config, argv, says):
    probe = FakeProbe()
    rc, out, err = run(['--config-file', str(config)] + argv, probe)
    assert rc == cli.EXIT_BAD_INPUT == 2
    assert out == '' and err.startswith('iosched-wakeup-probe: error: ')
    assert says in err and err.count('\n') == 1
    assert probe.calls == []


def test_bad_configuration_exits_2(tmp_path):
    bad = tmp_path / 'bad.conf'
    bad.write_text('[host_agent_policy.vslicer]\nselftest_wakes = lots\n')
    try:
        rc, out, err = run(['--config-file', str(bad)])
    finally:
        cli.CONF([], project='iosched', default_config_files=[])
    assert rc == 2 and 'configuration' in err


def test_guest_pcpus_outside_the_online_ones_exits_2(config, tmp_path):
    with open(config, 'a') as fh:
        fh.write('[libvirt]\nguest_pcpus = 2-5\n')
    rc, _, err = run(['--config-file', str(config)])
    assert rc == 2 and 'cpus [4, 5] are not online' in err


def test_daemon_refusal_is_bad_input(config):
    probe = FakeProbe(error=wp.ProbeArgError('cpus [9] are not online'))
    rc, _, err = run(['--config-file', str(config)], probe)
    assert rc == 2 and 'cpus [9]' in err


def test_a_test_that_cannot_run_exits_1(config):
    probe = FakeProbe(error=linux.LinuxKnobError('no privilege'))
    rc, out, err = run(['--config-file', str(config)], probe)
    assert rc == cli.EXIT_FAILED == 1 and out == ''
    assert 'could not run' in err and 'no privilege' in err


def test_defaults_come_from_the_configuration(config):
    with open(config, 'a') as fh:
        fh.write('[host_agent_policy.vslicer]\nselftest_wakes = 120\n'
                 'selftest_hogs_per_cpu = 3\nlsvm_weight = 800\n')
    probe = FakeProbe()
    rc, _, _ = run(['--config-file', str(config)], probe)
    assert rc == 0
    assert probe.calls == [dict(cases=lsvm_bound.PROBE_CASES,
                                cpus=(0, 1, 2, 3),
                                wakes=120, hogs_per_cpu=3, lsvm_weight=800)]


def test_table_has_ratios_and_errors(config):
    rows = (model.WakeupProbe('stock', True, 15.0, 4000.0, 300),
            model.WakeupProbe('deadline', True, 45.0, 60.0, 300),
            model.WakeupProbe('weight', False, error='EACCES (Permission '
                              'denied): cannot create'))
    rc, out, _ = run(['--config-file', str(config), '--cases',
                      'stock,deadline,weight', '--wakes', '300'],
                     FakeProbe(rows))
    lines = out.splitlines()
    assert rc == 0
    assert lines[0].startswith('wake-up self-test on CPUs 0,1,2,3: 2 busy '
                               'loop(s) per CPU, 300 wakes per case')
    assert lines[1].split() == ['case', 'ok', 'p50', 'us', 'p99', 'us',
                                'p50', 'x', 'p99', 'x', 'error']
    assert lines[3].split() == ['stock', 'yes', '15.0', '4000.0', '1.00',
                                '1.00']
    assert lines[4].split() == ['deadline', 'yes', '45.0', '60.0', '3.00',
                                '0.01']
    assert lines[5].split()[:6] == ['weight', 'no', '-', '-', '-', '-']
    assert 'EACCES' in lines[5]
    assert all(line == line.rstrip() for line in lines)


def test_json_shape(config):
    rc, out, _ = run(['--config-file', str(config), '--json', '--cases',
                      'stock,deadline', '--hogs-per-cpu', '1'])
    data = json.loads(out)
    assert rc == 0
    assert sorted(data) == ['cpus', 'hogs_per_cpu', 'lsvm_weight', 'rows',
                            'wakes', 'wall_s']
    assert data['cpus'] == [0, 1, 2, 3] and data['hogs_per_cpu'] == 1
    assert [r['mechanism'] for r in data['rows']] == ['stock', 'deadline']
    assert sorted(data['rows'][1]) == [
        'error', 'mechanism', 'ok', 'p50_us', 'p50_vs_stock', 'p99_us',
        'p99_vs_stock', 'p99s_us', 'samples', 'share']
    assert data['rows'][1]['p99_vs_stock'] == 0.01


def test_console_script_is_declared():
    setup = open(os.path.join(ROOT, 'setup.cfg')).read()
    assert ('\n    iosched-wakeup-probe = '
            'iosched.host_agent.cmd.wakeup_probe:main\n' in setup)
