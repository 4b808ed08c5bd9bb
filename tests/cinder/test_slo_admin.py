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

"""iosched.cinder_qos.client and ``iosched-slo type ...`` against Cinder's own
API.

Everything goes over HTTP to the in-process Cinder API of the
``cinder_api`` fixture (tests/cinder/conftest.py), through an openstacksdk
connection's block-storage proxy, as the admin commands do.
"""

import io
import json
import time
import uuid

import pytest

from iosched.cinder_qos import client
from iosched.cinder_qos.cmd import slo as cmd
from iosched.cinder_qos import rest
from tests import fixtures as iosched_fixtures


def _name(prefix):
    return '%s-%s' % (prefix, uuid.uuid4().hex[:8])


@pytest.fixture
def admin(cinder_api):
    return client.SloAdmin(rest.RestApi(
        cinder_api.connection().block_storage))


def _cli(cinder_api, argv):
    out, err = io.StringIO(), io.StringIO()

    def factory(args):
        return client.SloAdmin(rest.RestApi(
            cinder_api.connection().block_storage))
    code = cmd.main(argv, out, err, admin_factory=factory)
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize('text', ['500iops,10ms,p99', '8MB/s,10ms',
                                  '1000iops,80ms,class=throughput,qd=8'])
def test_create_reads_back_equal_and_is_idempotent(cinder_api, admin, text):
    p = client.plan(_name('slo'), text)
    r = admin.create(p)
    assert r.actions == ['created QoS spec %s' % p.qos_name,
                         'created volume type %s' % p.type_name,
                         'associated %s with %s' % (p.qos_name, p.type_name)]
    shown = admin.show(p.type_name)
    assert (shown.specs, shown.consumer, shown.slo_text) == (
        p.specs, 'front-end', p.slo_text)
    assert p.type_name in [x.type_name for x in admin.list()]
    # Cinder's own view agrees
    qos = cinder_api.adapter().get('/qos-specs/%s' % r.qos_id).json()
    assert qos['qos_specs']['specs'] == p.specs
    again = admin.create(p)
    assert not again.changed, again.actions


def test_conflicting_spec_refused(admin):
    name = _name('slo')
    admin.create(client.plan(name, '500iops,10ms'))
    with pytest.raises(client.Conflict) as e:
        admin.create(client.plan(name, '600iops,10ms'))
    assert 'iosched:min_iops: 500 (want 600)' in str(e.value)
    assert admin.show(name).specs['iosched:min_iops'] == '500'


def test_set_updates_keys(admin):
    name = _name('slo')
    admin.create(client.plan(name, '120iops,60ms,qd=8'))
    want = client.plan(name, '1000iops,80ms')
    r = admin.set(want)
    assert r.changed
    assert admin.show(name).specs == want.specs     # qd key removed too


def test_delete_in_use_refused_then_deleted(cinder_api, admin):
    name = _name('slo')
    r = admin.create(client.plan(name, '500iops,10ms'))
    api = cinder_api.adapter()
    resp = api.post('/volumes', json={'volume': {
        'size': 1, 'name': _name('vol'), 'volume_type': name}})
    assert resp.status_code == 202, resp.text
    vol_id = resp.json()['volume']['id']
    assert cinder_api.wait_volume(vol_id, 'available')['status'] == \
        'available'
    with pytest.raises(client.Conflict) as e:
        admin.delete(name)
    assert 'in use by 1 volume(s) (%s)' % vol_id in str(e.value)
    assert admin.show(name).qos_id == r.qos_id      # nothing half-deleted
    assert api.delete('/volumes/%s' % vol_id).status_code == 202
    for _ in range(600):          # the fake driver deletes at once
        if api.get('/volumes/%s' % vol_id).status_code == 404:
            break
        time.sleep(0.1)
    assert admin.delete(name).actions == ['deleted volume type %s' % name,
                                          'deleted QoS spec %s' % name]
    assert api.get('/qos-specs/%s' % r.qos_id).status_code == 404
    with pytest.raises(client.NotFound):
        admin.show(name)


def test_cli_type_verbs(cinder_api):
    name = _name('slo')
    code, out, err = _cli(cinder_api, ['type', 'create', name,
                                       '500iops,10ms,p99', '-f', 'json'])
    assert code == 0, err
    created = json.loads(out)
    code, out, err = _cli(cinder_api, ['type', 'show', name, '-f', 'json'])
    assert code == 0 and json.loads(out)['properties'] == \
        created['properties']
    code, out, _ = _cli(cinder_api, ['type', 'list', '-f', 'json'])
    assert name in [r['Name'] for r in json.loads(out)]
    code, _, err = _cli(cinder_api, ['type', 'create', name, '600iops,10ms'])
    assert code == client.EXIT_CONFLICT and 'other keys' in err
    code, out, err = _cli(cinder_api, ['type', 'set', name, '600iops,10ms',
                                       '-f', 'json'])
    assert code == 0, err
    assert json.loads(out)['properties']['iosched:min_iops'] == '600'
    code, out, err = _cli(cinder_api, ['type', 'delete', name])
    assert code == 0 and 'deleted QoS spec' in out, err
    code, _, err = _cli(cinder_api, ['type', 'show', name])
    assert code == client.EXIT_NOT_FOUND


def test_openstack_volume_slo_plugin(cinder_api, capsys):
    """``openstack volume slo type ...``: osc loads the plugin and runs it."""
    try:
        from openstackclient import shell
    except ImportError as e:
        shell = None
        why = str(e)
    iosched_fixtures.require('python-openstackclient', shell is not None,
                             shell is None and why)
    auth = ['--os-auth-type', 'admin_token', '--os-endpoint',
            cinder_api.endpoint, '--os-token', cinder_api.token]
    name = _name('osc')
    capsys.readouterr()
    assert shell.main(auth + ['volume', 'slo', 'type', 'create', name,
                              '500iops,10ms', '-f', 'json']) == 0
    created = json.loads(capsys.readouterr().out)
    assert created['properties'] == client.plan(name, '500iops,10ms').specs
    assert shell.main(auth + ['volume', 'slo', 'type', 'list', '-f',
                              'json']) == 0
    assert name in [r['Name'] for r in json.loads(capsys.readouterr().out)]
    assert shell.main(auth + ['volume', 'slo', 'type', 'delete', name]) == 0
    assert 'deleted QoS spec %s' % name in capsys.readouterr().out
