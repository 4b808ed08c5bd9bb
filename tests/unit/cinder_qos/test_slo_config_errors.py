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
"""A fault in ``iosched-slo``'s own ``--config-file`` is the same error for
every sub-command (issue 27): exit 2 (the exit code table's "bad input"),
one line naming the file and the option, nothing sent to Cinder, no
secret of the file echoed. ``type create/set`` exited 1 ("Cinder
refused") where ``translate`` exited 2.
"""

import os

import pytest

from tests.unit import cli_env
from tests.unit import cli_exit_codes

SECRET = 'S3ntinel-cinder-secret'
FAULTS = {
    'bad number': ('[cinder_qos]\nheadroom = abc\n', 'headroom'),
    'nan': ('[cinder_qos]\nheadroom = nan\n', 'headroom'),
    'out of range': ('[cinder_qos]\ndefault_expected_qd = -3\n',
                     'default_expected_qd'),
    'bad int': ('[cinder_qos]\ndefault_ref_io_bytes = 4k\n',
                'default_ref_io_bytes'),
    'no section header': ('headroom = 2\n', 'config'),
    'not utf-8': (b'[cinder_qos]\nheadroom = \xff\xfe\n', 'config'),
}
COMMANDS = {
    'iosched-slo translate': ('slo', ['translate', '500iops,10ms']),
    'iosched-slo type create': ('slo', ['type', 'create', 'silver',
                                        '500iops,10ms']),
    'iosched-slo type create --dry-run': (
        'slo', ['type', 'create', 'silver', '500iops,10ms', '--dry-run']),
    'iosched-slo type set': ('slo', ['type', 'set', 'gold', '500iops,10ms']),
    'openstack volume slo type create': (
        'osc', ['volume', 'slo', 'type', 'create', 'silver',
                '500iops,10ms']),
    'openstack volume slo type set': (
        'osc', ['volume', 'slo', 'type', 'set', 'gold', '500iops,10ms']),
}


@pytest.fixture(scope='module')
def env(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        env = cli_env.Env(mp, str(tmp_path_factory.mktemp('sloconf')))
        try:
            yield env
        finally:
            env.close()


class _Cmd(object):
    def __init__(self, runner):
        self.runner = runner


@pytest.mark.parametrize('fault', sorted(FAULTS))
@pytest.mark.parametrize('name', sorted(COMMANDS))
def test_config_fault_is_bad_input_everywhere(env, tmp_path, name, fault):
    content, option = FAULTS[fault]
    if isinstance(content, str):
        content = content.encode()
    path = str(tmp_path / 'cinder.conf')
    with open(path, 'wb') as fh:
        fh.write(content + b'[keystone_authtoken]\npassword = '
                 + SECRET.encode() + b'\n')
    runner, argv = COMMANDS[name]
    env.start_case(str(tmp_path / 'case'))
    code, out, err = env.run(_Cmd(runner), argv + ['--config-file', path])
    assert code == 2, (code, out, err)
    assert 2 in cli_exit_codes.codes(name)
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert path in lines[0] and option in lines[0], lines[0]
    assert 'Traceback' not in err and 'LocationInfo' not in err, err
    assert SECRET not in out + err
    assert not env.written(), env.written()
    assert os.listdir(env.case_dir) == []
