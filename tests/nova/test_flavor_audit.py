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
"""``iosched-placement --check-flavors`` against Nova's real API, then the
fix it prints, run with the real ``openstack`` client.

Nova's ``osapi_compute`` runs in a child process (``tests/nova_process.py``,
with the installed extra-spec validators). Flavors are created through the
API at microversion 2.86 (so Nova's own validators accept what is stored);
the installed ``iosched-placement`` console script reads them with
openstacksdk from a clouds.yaml (``admin_token`` with Nova's endpoint),
prints the problems and the ``openstack flavor set/unset`` commands; those
commands run as printed (``OS_CLOUD`` selects the cloud), and the audit
then exits 0. There is no Keystone: osc's ``flavor unset`` insists that
the identity service be v3 (for its ``--project``), so a small process
answers Keystone's v3 version document, and nothing else, at
``identity_endpoint_override``.
"""

import json
import os
import shlex
import subprocess
import sys
import uuid

import pytest

from tests import nova_process

VENV_BIN = os.path.dirname(sys.executable)
child_nova = nova_process.child_nova
IO_VCPU = 'resources:CUSTOM_IOSCHED_IO_VCPU'
LSVM_BW = 'resources:CUSTOM_IOSCHED_LSVM_BW'


def _ok(resp, status=200):
    assert resp.status_code == status, (resp.status_code, resp.text)
    return resp.json()


def _create(nova, name, vcpus, specs):
    api = nova.adapter(microversion='2.86')
    flavor = _ok(api.post('/flavors', json={'flavor': {
        'name': name, 'vcpus': vcpus, 'ram': 512, 'disk': 1}}))['flavor']
    if specs:
        _ok(api.post('/flavors/%s/os-extra_specs' % flavor['id'],
                     json={'extra_specs': specs}))
    return flavor['id']


# Keystone's version document, the one thing osc asks Keystone; in a
# process of its own (this one is eventlet's: a thread would not run while
# the test waits for a child)
_IDENTITY_V3 = """
import http.server, json, sys


class V3(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        href = 'http://127.0.0.1:%d/v3/' % self.server.server_address[1]
        body = json.dumps({'version': {
            'id': 'v3.14', 'status': 'stable',
            'links': [{'rel': 'self', 'href': href}]}}).encode()
        self.send_response(200)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


server = http.server.HTTPServer(('127.0.0.1', 0), V3)
print(server.server_address[1], flush=True)
server.serve_forever()
"""


@pytest.fixture(scope='module')
def identity():
    proc = subprocess.Popen([sys.executable, '-c', _IDENTITY_V3],
                            stdout=subprocess.PIPE, text=True)
    try:
        port = int(proc.stdout.readline())
        yield 'http://127.0.0.1:%d/v3' % port
    finally:
        proc.kill()
        proc.wait()


@pytest.fixture
def cloud(child_nova, identity, tmp_path):
    """env for the console scripts: a clouds.yaml naming Nova only."""
    clouds = tmp_path / 'clouds.yaml'
    clouds.write_text(json.dumps({'clouds': {'iosched-test': {
        'auth_type': 'admin_token',
        'auth': {'endpoint': child_nova.endpoint,
                 'token': child_nova.token},
        'compute_endpoint_override': child_nova.endpoint,
        'identity_endpoint_override': identity}}}))
    env = {k: v for k, v in os.environ.items() if not k.startswith('OS_')}
    env.update(OS_CLIENT_CONFIG_FILE=str(clouds), HOME=str(tmp_path))
    return env


def _audit(env, *args):
    proc = subprocess.run(
        [os.path.join(VENV_BIN, 'iosched-placement'), '--check-flavors',
         '--os-cloud', 'iosched-test', '--json'] + list(args),
        capture_output=True, text=True, env=env, timeout=120)
    assert 'Traceback' not in proc.stderr, proc.stderr
    return proc.returncode, proc


def test_audit_then_fix_then_clean(child_nova, cloud):
    tag = 'audit-%s-' % uuid.uuid4().hex[:6]
    _create(child_nova, tag + 'plain', 1, {})
    _create(child_nova, tag + 'io-ok', 2, {'iosched:io_profile': 'io',
                                          IO_VCPU: '2'})
    _create(child_nova, tag + 'io-stale', 4, {'iosched:io_profile': 'io',
                                             IO_VCPU: '2'})
    _create(child_nova, tag + 'lsvm', 2, {'iosched:latency_sensitive': 'true',
                                          'iosched:latency_ms': '2'})
    _create(child_nova, tag + 'cpu', 2, {'iosched:io_profile': 'cpu',
                                         IO_VCPU: '2'})
    code, proc = _audit(cloud)
    assert code == 1, proc.stderr
    doc = json.loads(proc.stdout)
    rows = {f['name'][len(tag):]: f for f in doc['flavors']
            if f['name'].startswith(tag)}
    assert sorted(rows) == ['cpu', 'io-ok', 'io-stale', 'lsvm']
    assert {n: [(p['key'], p['kind']) for p in r['problems']]
            for n, r in rows.items()} == {
        'cpu': [(IO_VCPU, 'unexpected')], 'io-ok': [],
        'io-stale': [(IO_VCPU, 'wrong')], 'lsvm': [(LSVM_BW, 'missing')]}
    fixes = [c for r in rows.values() for c in r['fix']]
    assert len(fixes) == 3
    # the fix, as printed, through the real openstack client
    env = dict(cloud, OS_CLOUD='iosched-test')
    for command in fixes:
        argv = shlex.split(command)
        assert argv[0] == 'openstack'
        done = subprocess.run([os.path.join(VENV_BIN, 'openstack')]
                              + argv[1:], capture_output=True, text=True,
                              env=env, timeout=120)
        assert done.returncode == 0, (command, done.stderr[-2000:])
    code, proc = _audit(cloud, '--lsvm-vcpu-share', '0.5')
    doc = json.loads(proc.stdout)
    left = [(f['name'], f['problems']) for f in doc['flavors']
            if not f['ok']]
    assert (code, left) == (0, []), proc.stderr
    api = child_nova.adapter(microversion='2.61')
    specs = {f['name'][len(tag):]: f['extra_specs'] for f in _ok(api.get(
        '/flavors/detail?is_public=None'))['flavors']
        if f['name'].startswith(tag)}
    assert specs['io-stale'][IO_VCPU] == '4'
    assert specs['lsvm'][LSVM_BW] == '1000'
    assert IO_VCPU not in specs['cpu']
    assert specs['cpu'] == {'iosched:io_profile': 'cpu'}


def test_unreachable_nova_is_one_line(cloud, tmp_path):
    clouds = tmp_path / 'gone.yaml'
    clouds.write_text(json.dumps({'clouds': {'iosched-test': {
        'auth_type': 'admin_token',
        'auth': {'endpoint': 'http://127.0.0.1:9/v2.1', 'token': 't'},
        'compute_endpoint_override': 'http://127.0.0.1:9/v2.1'}}}))
    code, proc = _audit(dict(cloud, OS_CLIENT_CONFIG_FILE=str(clouds)))
    assert code == 2 and proc.stdout == ''
    assert len(proc.stderr.splitlines()) == 1, proc.stderr
    assert 'cannot list the flavors of Nova' in proc.stderr
