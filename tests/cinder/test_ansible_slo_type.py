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

"""The Ansible module ansible/library/iosched_slo_type.py against Cinder.

Its ``main()`` runs in this process, as Ansible documents for module unit
tests: ``ansible.module_utils.testing.patch_module_args`` supplies the
task's arguments, ``exit_json``/``fail_json`` print the result as JSON on
stdout and raise SystemExit. The module connects with its own
openstack.cloud-style parameters (``auth_type: admin_token``, ``auth:
{endpoint, token}``) to the in-process Cinder API of the ``cinder_api``
fixture (tests/cinder/conftest.py), whose noauth middleware takes the
``user:project`` token; no test-only hook in the module.
"""

import importlib
import importlib.util
import json
import os
import time
import uuid

import pytest

from tests import fixtures as iosched_fixtures

MODULE_PATH = os.path.join(os.path.dirname(__file__), '..', '..', 'ansible',
                           'library', 'iosched_slo_type.py')


@pytest.fixture(scope='module')
def slo_module():
    try:
        importlib.import_module('ansible.module_utils.testing')
        ok, why = True, ''
    except ImportError as e:
        ok, why = False, 'cannot import ansible-core: %s' % e
    iosched_fixtures.require('ansible-core', ok, why)
    spec = importlib.util.spec_from_file_location('iosched_slo_type',
                                                  MODULE_PATH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture
def run(slo_module, cinder_api, capsys):
    """run(check_mode=False, **params) -> (exit status, result dict)."""
    from ansible.module_utils import testing

    def _run(check_mode=False, **params):
        args = dict(params, auth_type='admin_token',
                    auth={'endpoint': cinder_api.endpoint,
                          'token': cinder_api.token},
                    _ansible_check_mode=check_mode)
        capsys.readouterr()
        with testing.patch_module_args(args):
            with pytest.raises(SystemExit) as e:
                slo_module.main()
        return e.value.code, json.loads(capsys.readouterr().out)
    return _run


def _name():
    return 'ans-%s' % uuid.uuid4().hex[:8]


def _types(cinder_api):
    return {t['name'] for t in cinder_api.adapter().get(
        '/types?is_public=None').json()['volume_types']}


def _qos(cinder_api):
    return {q['name']: q for q in cinder_api.adapter().get(
        '/qos-specs').json()['qos_specs']}


def test_create_rerun_absent(run, cinder_api):
    name = _name()
    code, r = run(name=name, slo='500iops,10ms,p99')
    assert code == 0 and r['changed'], r
    assert r['actions'] == ['created QoS spec %s' % name,
                            'created volume type %s' % name,
                            'associated %s with %s' % (name, name)]
    assert r['slo_type']['specs']['iosched:min_iops'] == '500'
    assert name in _types(cinder_api)
    assert _qos(cinder_api)[name]['specs'] == r['slo_type']['specs']

    code, again = run(name=name, slo='500iops,10ms,p99')
    assert code == 0 and not again['changed'], again
    assert again['slo_type']['id'] == r['slo_type']['id']

    code, check = run(check_mode=True, name=name, slo='500iops,10ms,p99')
    assert code == 0 and not check['changed'], check

    code, gone = run(check_mode=True, name=name, state='absent')
    assert code == 0 and gone['changed'], gone
    assert name in _types(cinder_api)        # check mode deleted nothing

    code, gone = run(name=name, state='absent')
    assert code == 0 and gone['changed'], gone
    assert gone['actions'] == ['deleted volume type %s' % name,
                               'deleted QoS spec %s' % name]
    assert name not in _types(cinder_api)
    assert name not in _qos(cinder_api)

    code, again = run(name=name, state='absent')
    assert code == 0 and not again['changed'], again


def test_check_mode_creates_nothing(run, cinder_api):
    name = _name()
    code, r = run(check_mode=True, name=name, slo='8MB/s,10ms')
    assert code == 0 and r['changed'], r
    assert r['actions'] == ['would create QoS spec %s' % name,
                            'would create volume type %s' % name,
                            'would associate %s with %s' % (name, name)]
    assert r['slo_type']['slo'] and r['slo_type']['specs']
    assert name not in _types(cinder_api)
    assert name not in _qos(cinder_api)


def test_conflicting_slo_refused_then_forced(run, cinder_api):
    name = _name()
    assert run(name=name, slo='500iops,10ms')[1]['changed']
    for check_mode in (True, False):
        code, r = run(check_mode=check_mode, name=name, slo='600iops,10ms')
        assert code == 1 and r['failed'] and not r['changed'], r
        assert r['error'] == 'conflict' and r['exit_code'] == 3
        assert "QoS spec '%s' exists with other keys" % name in r['msg']
        assert 'iosched:min_iops: 500 (want 600)' in r['msg']
    assert _qos(cinder_api)[name]['specs']['iosched:min_iops'] == '500'

    code, r = run(check_mode=True, name=name, slo='600iops,10ms', force=True)
    assert code == 0 and r['changed'], r
    assert _qos(cinder_api)[name]['specs']['iosched:min_iops'] == '500'
    code, r = run(name=name, slo='600iops,10ms', force=True)
    assert code == 0 and r['changed'], r
    assert r['actions'][0].startswith('updated QoS spec %s:' % name)
    assert _qos(cinder_api)[name]['specs']['iosched:min_iops'] == '600'
    assert not run(name=name, slo='600iops,10ms')[1]['changed']
    assert run(name=name, state='absent')[1]['changed']


@pytest.mark.parametrize('params, words', [
    (dict(slo='fast please'), None),
    (dict(slo='500iops,1ms', min_latency_ms=2), 'is below 2ms'),
])
def test_bad_input_fails(run, cinder_api, params, words):
    name = _name()
    code, r = run(name=name, **params)
    assert code == 1 and r['failed'] and r['error'] == 'bad input', r
    assert r['exit_code'] == 2 and r['msg']
    if words:
        assert words in r['msg']
    assert name not in _types(cinder_api)


def test_in_use_refused(run, cinder_api):
    name = _name()
    assert run(name=name, slo='500iops,10ms')[1]['changed']
    vol = cinder_api.adapter().post('/volumes', json={'volume': {
        'size': 1, 'name': name, 'volume_type': name}}).json()['volume']
    assert cinder_api.wait_volume(vol['id'], 'available')['status'] == \
        'available'
    for check_mode in (True, False):
        code, r = run(check_mode=check_mode, name=name, state='absent')
        assert code == 1 and r['error'] == 'conflict', r
        assert 'in use' in r['msg'] and vol['id'] in r['msg']
    assert name in _types(cinder_api)
    api = cinder_api.adapter()
    api.delete('/volumes/%s' % vol['id'])
    for _ in range(150):                    # deleted: 404 within ~30 s
        if api.get('/volumes/%s' % vol['id']).status_code == 404:
            break
        time.sleep(0.2)
    code, r = run(name=name, state='absent')
    assert code == 0 and r['changed'], r


def test_unreachable_cloud_fails_cleanly(slo_module, capsys):
    from ansible.module_utils import testing
    args = dict(name=_name(), slo='500iops,10ms', auth_type='admin_token',
                auth={'endpoint': 'http://127.0.0.1:9/', 'token': 'x'})
    with testing.patch_module_args(args):
        with pytest.raises(SystemExit) as e:
            slo_module.main()
    r = json.loads(capsys.readouterr().out)
    assert e.value.code == 1 and r['failed'], r
    assert r['msg'].startswith('cannot reach Cinder')


def test_cloud_from_clouds_yaml(slo_module, cinder_api, capsys, tmp_path,
                                monkeypatch):
    """``cloud: NAME`` reads clouds.yaml as the openstack.cloud modules do."""
    from ansible.module_utils import testing
    clouds = tmp_path / 'clouds.yaml'
    clouds.write_text(json.dumps({'clouds': {'iosched-test': {
        'auth_type': 'admin_token',
        'auth': {'endpoint': cinder_api.endpoint,
                 'token': cinder_api.token}}}}))
    monkeypatch.setenv('OS_CLIENT_CONFIG_FILE', str(clouds))
    name = _name()
    for state, check_mode in (('present', True), ('present', False),
                              ('absent', False)):
        args = dict(name=name, slo='300iops,20ms', cloud='iosched-test',
                    state=state, _ansible_check_mode=check_mode)
        with testing.patch_module_args(args):
            with pytest.raises(SystemExit) as e:
                slo_module.main()
        r = json.loads(capsys.readouterr().out)
        assert e.value.code == 0 and r['changed'], r
    assert name not in _types(cinder_api)


def test_playbook_slo_types_against_cinder(slo_module, cinder_api, tmp_path):
    """ansible-playbook cloud_objects.yml --tags iosched_slo_types, twice.

    The playbook runs as a subprocess; its module connects over HTTP to
    this process's Cinder API (eventlet's patched subprocess wait lets the
    server's green threads answer meanwhile). The role imports its flavor
    tasks statically, so ansible must resolve openstack.cloud.compute_flavor
    even though the tag skips them: without the real collection a stub
    one (the syntax test's) is put on ANSIBLE_COLLECTIONS_PATH.
    """
    import subprocess
    import sys

    from tests.unit import test_ansible_syntax as syntax
    playbook = os.path.join(os.path.dirname(sys.executable),
                            'ansible-playbook')
    iosched_fixtures.require('ansible-playbook', os.path.exists(playbook),
                             'not beside %s' % sys.executable)
    clouds = tmp_path / 'clouds.yaml'
    clouds.write_text(json.dumps({'clouds': {'iosched-test': {
        'auth_type': 'admin_token',
        'auth': {'endpoint': cinder_api.endpoint,
                 'token': cinder_api.token}}}}))
    names = [_name(), _name()]
    extra = tmp_path / 'vars.json'
    collections = syntax._stub_collection(tmp_path / 'stub')

    def play(state, check=False):
        extra.write_text(json.dumps({
            'iosched_cloud_objects_cloud': 'iosched-test',
            'ansible_python_interpreter': sys.executable,
            'iosched_cloud_objects_slo_types': [
                {'name': names[0], 'slo': '500iops,10ms,p99',
                 'state': state},
                {'name': names[1], 'slo': '100MB/s,50ms,class=throughput',
                 'state': state}]}))
        env = dict(os.environ, OS_CLIENT_CONFIG_FILE=str(clouds),
                   ANSIBLE_NOCOLOR='1', ANSIBLE_LOCAL_TEMP=str(tmp_path),
                   ANSIBLE_REMOTE_TEMP=str(tmp_path))
        if not syntax._has_openstack_cloud(tmp_path):
            env['ANSIBLE_COLLECTIONS_PATH'] = collections
        argv = [playbook, '-i', 'localhost,', '--tags', 'iosched_slo_types',
                '-e', '@%s' % extra,
                os.path.join(os.path.dirname(MODULE_PATH), '..',
                             'cloud_objects.yml')]
        if check:
            argv.append('--check')
        out = subprocess.run(argv, capture_output=True, text=True, env=env,
                             check=False)
        assert out.returncode == 0, out.stdout + out.stderr
        recap = [ln for ln in out.stdout.splitlines()
                 if ln.startswith('localhost')]
        return recap[-1]

    # the recap counts a looped task once
    assert 'changed=1' in play('present', check=True)
    assert not set(names) & _types(cinder_api)
    assert 'changed=1' in play('present')
    assert set(names) <= _types(cinder_api)
    assert 'changed=0' in play('present')
    assert 'changed=1' in play('absent')
    assert not set(names) & _types(cinder_api)
    assert 'changed=0' in play('absent')
