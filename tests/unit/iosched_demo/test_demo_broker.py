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
"""``iosched-demo --transport-url`` to a broker that does not answer
(issue 27): it retried for ever and printed the broker's password. Now:
one line naming the URL with its password masked, exit 1 (the exit code
table's row), before either run and before anything is written.
"""

import socket

import pytest

from iosched.demo import cloud as demo_cloud
from iosched.demo import cmd
from tests.unit import cli_exit_codes

SECRET = 'S3ntinel-broker-pass'


class Ran(Exception):
    pass


@pytest.fixture
def closed_port():
    s = socket.socket()
    s.bind(('127.0.0.1', 0))
    port = s.getsockname()[1]
    s.close()           # nothing listens there now
    return port


@pytest.fixture(autouse=True)
def no_runs(monkeypatch):
    monkeypatch.setattr(demo_cloud, 'set_defaults', lambda: None)

    def run_variant(*a, **k):
        raise Ran()
    monkeypatch.setattr(demo_cloud, 'run_variant', run_variant)


@pytest.mark.parametrize('url', [
    'rabbit://guest:%s@127.0.0.1:{port}/' % SECRET,
    'rabbit://guest:%s@127.0.0.1:{port},bob:%s@127.0.0.1:{port}/vh' % (
        SECRET, SECRET),
    'rabbit://guest:%s@sec@127.0.0.1:{port}/' % SECRET,
], ids=['one', 'two-hosts', 'at-in-password'])
def test_unreachable_broker_gives_up_in_one_line(tmp_path, capsys,
                                                 closed_port, url):
    url = url.format(port=closed_port)
    out_dir = tmp_path / 'out'
    code = cmd.main(['--transport-url', url, '-o', str(out_dir)])
    out, err = capsys.readouterr()
    assert code == 1 and code in cli_exit_codes.codes('iosched-demo')
    assert SECRET not in out + err and 'sec@' not in out + err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert 'guest:***@127.0.0.1:%d' % closed_port in lines[0], lines[0]
    assert 'broker' in lines[0]
    assert not out_dir.exists()


@pytest.mark.parametrize('url', [
    'rabbit://guest:%s@127.0.0.1:notaport/' % SECRET,
    'nosuch://guest:%s@127.0.0.1:5672/' % SECRET,
])
def test_bad_transport_url_is_not_echoed_with_its_password(tmp_path, capsys,
                                                           url):
    code = cmd.main(['--transport-url', url, '-o', str(tmp_path / 'o')])
    out, err = capsys.readouterr()
    assert code == 2
    assert SECRET not in out + err, err
    assert 'guest:***@' in err


@pytest.mark.parametrize('url, masked', [
    ('rabbit://guest:guest@h:5672/', 'rabbit://guest:***@h:5672/'),
    ('rabbit://a:b@h1:1,c:d@h2:2/v', 'rabbit://a:***@h1:1,c:***@h2:2/v'),
    ('rabbit://guest@h/', 'rabbit://guest@h/'),
    ('fake:/', 'fake:/'),
    ('rabbit://u:p@ss@h:1/', 'rabbit://u:***@h:1/'),
    ('junk u:p@x', 'junk u:p@x'),
])
def test_mask_url(url, masked):
    assert cmd.mask_url(url) == masked
