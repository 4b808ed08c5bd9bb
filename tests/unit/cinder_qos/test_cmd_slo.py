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

"""Tests of the iosched-slo CLI (iosched.cinder_qos.cmd.slo.main)."""

import json

import pytest

from iosched.cinder_qos.cmd import slo as cmd
from iosched.cinder_qos import translate
from iosched.contract import slo


def run(capsys, *argv):
    code = cmd.main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_translate_table(capsys):
    code, out, err = run(capsys, 'translate', '500iops,10ms,p99')
    assert (code, err) == (0, '')
    assert 'consumer: front-end' in out
    lines = {line.split()[0]: line.split()[1:] for line in out.splitlines()
             if line.startswith(('total_', 'size_', 'iosched:'))}
    assert lines['total_iops_sec'][0] == '2400'
    assert 'ceil(h x max(B, N/L)) = ceil(1.5 x max(500, 16/0.01s = 1600))' \
        in out
    assert 'N = 16 from default_expected_qd' in out
    assert lines['size_iops_sec'][0] == '16384'
    assert lines['iosched:class'][0] == 'latency'
    assert 'B x L = 5 requests in flight < threshold 16' in out
    assert 'total_iops_sec_max' not in lines
    assert 'openstack volume qos create --consumer front-end' in out
    assert '--property total_iops_sec=2400' in out


def test_translate_json_matches_library(capsys):
    code, out, _ = run(capsys, 'translate', '40MB/s,20ms', '--format',
                       'json', '--headroom', '2', '--qd', '8')
    assert code == 0
    doc = json.loads(out)
    assert doc['consumer'] == 'front-end'
    assert doc['specs'] == translate.translate(
        slo.parse('40MB/s,20ms'), headroom=2, expected_qd=8)
    assert set(doc['explain']) == set(doc['specs'])
    assert doc['explain']['iosched:expected_qd'] == 'N from --qd'
    assert slo.parse(doc['slo']) == slo.parse('40MB/s,20ms')


def test_translate_paper_rand_read_with_qd(capsys):
    code, out, _ = run(capsys, 'translate', '120iops,60ms', '--qd', '8',
                       '--format', 'json')
    assert code == 0
    specs = json.loads(out)['specs']
    assert specs['total_iops_sec'] == '200'
    assert 'total_iops_sec_max' not in specs


def test_translate_reads_config_file(capsys, tmp_path):
    path = tmp_path / 'iosched.conf'
    path.write_text('[cinder_qos]\nheadroom = 2.0\ndefault_expected_qd = 8\n'
                    'default_ref_io_bytes = 4096\n')
    code, out, _ = run(capsys, 'translate', '120iops,60ms', '--format',
                       'json', '--config-file', str(path))
    assert code == 0
    specs = json.loads(out)['specs']
    assert specs['total_iops_sec'] == '267'     # ceil(2 * 8/0.06)
    assert specs['size_iops_sec'] == '4096'
    # A flag beats the file.
    code, out, _ = run(capsys, 'translate', '120iops,60ms', '--format',
                       'json', '--config-file', str(path), '--headroom', '1')
    assert json.loads(out)['specs']['total_iops_sec'] == '134'


@pytest.mark.parametrize('argv,needle', [
    (['translate', 'latency=10 parsecs,5iops'],
     "latency '10 parsecs': unknown unit 'parsecs'; accepted: ms, us, s"),
    (['translate', '500iops'], 'missing latency'),
    (['translate', '500iops,10ms', '--headroom', '0.5'],
     "headroom '0.5': must be at least 1.0"),
    (['translate', '500iops,10ms', '--qd', '0'], "qd '0'"),
    (['translate', '500iops,10ms', '--config-file', '/nonexistent/x.conf'],
     'x.conf'),
    (['check', 'total_iops_sec'], "spec 'total_iops_sec': not KEY=VALUE"),
    (['check', 'a=1', 'a=2'], 'duplicate key a'),
])
def test_bad_input_exits_2_with_message(capsys, argv, needle):
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert out == ''
    assert err.startswith('iosched-slo: error: ')
    assert needle in err


def test_bad_config_value_exits_2(capsys, tmp_path):
    path = tmp_path / 'iosched.conf'
    path.write_text('[cinder_qos]\nheadroom = 0.5\n')
    code, _, err = run(capsys, 'translate', '120iops,60ms', '--config-file',
                       str(path))
    assert code == 2
    assert 'headroom' in err


@pytest.mark.parametrize('argv', [[], ['translate'], ['frobnicate'],
                                  ['translate', '5iops,1ms', '--format',
                                   'xml']])
def test_usage_errors_exit_2(capsys, argv):
    code, _, err = run(capsys, *argv)
    assert code == 2
    assert 'usage: iosched-slo' in err


@pytest.mark.parametrize('argv', [['--help'], ['translate', '--help']])
def test_help_has_examples(capsys, argv):
    code, out, _ = run(capsys, *argv)
    assert code == 0
    assert 'iosched-slo translate "500iops,10ms,p99"' in out
    assert 'iosched-slo check' in out


def test_check_ok(capsys):
    code, out, _ = run(capsys, 'check', 'total_iops_sec=400',
                       'size_iops_sec=16384', 'iosched:min_iops=120',
                       'iosched:latency_ms=60')
    assert code == 0
    assert out.startswith('OK')


def test_check_problems_exit_1(capsys):
    code, out, _ = run(capsys, 'check', 'total_iops_sec=400',
                       'total_iops_sec_max=300', 'read_iops_sec=5')
    assert code == 1
    problems = [line for line in out.splitlines()
                if line.startswith('problem: ')]
    assert len(problems) == 2
    assert 'cannot be used at the same time' in out
    assert 'total_iops_sec_max 300 is lower than total_iops_sec 400' in out


def test_check_json(capsys):
    code, out, _ = run(capsys, 'check', 'size_iops_sec=4096', '--format',
                       'json')
    assert code == 1
    doc = json.loads(out)
    assert doc['specs'] == {'size_iops_sec': '4096'}
    assert len(doc['problems']) == 1


def test_check_accepts_translate_output(capsys):
    specs = translate.translate(slo.parse('1000iops,80ms'))
    code, _, _ = run(capsys, 'check', *('%s=%s' % kv for kv in specs.items()))
    assert code == 0


def test_explain_covers_every_key():
    for text in ('500iops,10ms,p99', '40MB/s,20ms,qd=4,class=latency'):
        d = translate.derive(slo.parse(text))
        assert set(cmd.explain(d)) == set(translate.specs_of(d))
