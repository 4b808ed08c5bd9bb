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
"""SLO volume types through Cinder's own API (issue 12, deliverable 2).

Everything goes over HTTP to the in-process Cinder API of the
``cinder_api`` fixture (tests/cinder/conftest.py): QoS specs made of
``translate(parse(slo))`` and the front-end consumer are created and read
back equal, associated with volume types, refused by Cinder when bad, and
a volume of one SLO type is retyped to another and extended, after which
the connection info Cinder hands Nova carries the new SLO's specs.
"""

import uuid

import pytest

from iosched.cinder_qos import translate
from iosched.contract import qos_keys
from iosched.contract import slo

# name, SLO text: each translated by iosched.cinder_qos.translate
SLOS = [
    ('iops_mean', '500iops,10ms'),
    ('bandwidth', '8MB/s,10ms'),
    ('p99_qd8', '500 iops, 10 ms, p99, qd=8'),
    ('throughput_class', '1000iops,80ms,class=throughput,window=2s'),
    ('small_ref_io', '4MiB/s,5ms,ref_io=4KiB,tolerance=10%'),
]


def _name(prefix):
    return '%s-%s' % (prefix, uuid.uuid4().hex[:8])


def _specs(text):
    return translate.translate(slo.parse(text))


def _create_qos(api, name, specs, consumer=None):
    body = dict(specs, name=name,
                consumer=consumer or translate.consumer())
    return api.post('/qos-specs', json={'qos_specs': body})


def _slo_type(api, text):
    """A volume type associated with the QoS spec of ``text``."""
    resp = _create_qos(api, _name('qos'), _specs(text))
    assert resp.status_code == 200, resp.text
    qos_id = resp.json()['qos_specs']['id']
    resp = api.post('/types', json={'volume_type': {'name': _name('slo')}})
    assert resp.status_code == 200, resp.text
    vtype = resp.json()['volume_type']
    resp = api.get('/qos-specs/%s/associate' % qos_id,
                   params={'vol_type_id': vtype['id']})
    assert resp.status_code == 202, resp.text
    return vtype, qos_id


@pytest.mark.parametrize('text', [s[1] for s in SLOS],
                         ids=[s[0] for s in SLOS])
def test_qos_spec_reads_back_equal(cinder_api, text):
    api = cinder_api.adapter()
    specs = _specs(text)
    assert all(isinstance(v, str) for v in specs.values())
    name = _name('qos')
    resp = _create_qos(api, name, specs)
    assert resp.status_code == 200, resp.text
    created = resp.json()['qos_specs']
    assert created['specs'] == specs
    shown = api.get('/qos-specs/%s' % created['id']).json()['qos_specs']
    assert shown == {'id': created['id'], 'name': name,
                     'consumer': qos_keys.FRONTEND_CONSUMER, 'specs': specs}
    listed = {q['id']: q for q in api.get('/qos-specs').json()['qos_specs']}
    assert listed[created['id']]['specs'] == specs


def test_association_reads_back(cinder_api):
    api = cinder_api.adapter()
    vtype, qos_id = _slo_type(api, '500iops,10ms,p99')
    resp = api.get('/qos-specs/%s/associations' % qos_id)
    assert resp.status_code == 200, resp.text
    assert resp.json()['qos_associations'] == [
        {'association_type': 'volume_type', 'name': vtype['name'],
         'id': vtype['id']}]
    shown = api.get('/types/%s' % vtype['id']).json()['volume_type']
    assert shown['qos_specs_id'] == qos_id
    # A type has at most one QoS spec: a second association is refused.
    other = _create_qos(api, _name('qos'), _specs('8MB/s,10ms'))
    resp = api.get('/qos-specs/%s/associate' % other.json()['qos_specs']['id'],
                   params={'vol_type_id': vtype['id']})
    assert resp.status_code == 400
    assert 'already associated' in resp.json()['badRequest']['message']


# name, change to a good translated spec body, HTTP status, message part
BAD = [
    ('unknown_consumer', {'consumer': 'sideways'}, 400,
     'Valid consumer of QoS specs are'),
    ('key_too_long', {'iosched:' + 'k' * 248: '1'}, 400,
     'more than 255'),
    ('value_too_long', {qos_keys.CLASS: 'x' * 256}, 400,
     'has 256 characters, more than 255'),
    ('value_not_a_string', {'total_iops_sec': 2400}, 400,
     'is not a string'),
    ('empty_name', {'name': ''}, 400, "'name' can not be"),
]


@pytest.mark.parametrize('change,status,message', [b[1:] for b in BAD],
                         ids=[b[0] for b in BAD])
def test_bad_qos_spec_refused(cinder_api, change, status, message):
    api = cinder_api.adapter()
    body = dict(_specs('500iops,10ms'), name=_name('bad'),
                consumer=translate.consumer())
    body.update(change)
    resp = api.post('/qos-specs', json={'qos_specs': body})
    assert resp.status_code == status, resp.text
    assert message in resp.json()['badRequest']['message']
    names = [q['name'] for q in api.get('/qos-specs').json()['qos_specs']]
    assert body['name'] not in names


def test_duplicate_name_conflicts(cinder_api):
    api = cinder_api.adapter()
    name = _name('dup')
    assert _create_qos(api, name, _specs('500iops,10ms')).status_code == 200
    resp = _create_qos(api, name, _specs('8MB/s,10ms'))
    assert resp.status_code == 409, resp.text


def test_bad_key_refused_on_update(cinder_api):
    api = cinder_api.adapter()
    resp = _create_qos(api, _name('upd'), _specs('500iops,10ms'))
    qos = resp.json()['qos_specs']
    resp = api.put('/qos-specs/%s' % qos['id'],
                   json={'qos_specs': {'k' * 256: '1'}})
    assert resp.status_code == 400, resp.text
    shown = api.get('/qos-specs/%s' % qos['id']).json()['qos_specs']
    assert shown['specs'] == qos['specs']


def _connection_qos(cinder_api, volume_id):
    """The qos_specs Cinder puts in the connection info Nova receives."""
    resp = cinder_api.adapter().post(
        '/volumes/%s/action' % volume_id,
        json={'os-initialize_connection': {'connector': {
            'host': 'compute-1', 'initiator': 'iqn.2026-11.test:compute-1',
            'ip': '127.0.0.1', 'platform': 'x86_64', 'os_type': 'linux',
            'multipath': False}}})
    assert resp.status_code == 200, resp.text
    return resp.json()['connection_info']['data'].get('qos_specs')


def test_volume_retyped_and_extended(cinder_api):
    api = cinder_api.adapter()
    gold, _ = _slo_type(api, '500iops,5ms,p99')
    bronze, _ = _slo_type(api, '100iops,50ms,class=throughput')
    resp = api.post('/volumes', json={'volume': {
        'size': 1, 'name': _name('vol'), 'volume_type': gold['name']}})
    assert resp.status_code == 202, resp.text
    vol_id = resp.json()['volume']['id']
    vol = cinder_api.wait_volume(vol_id, 'available')
    assert (vol['status'], vol['volume_type']) == ('available', gold['name'])
    assert _connection_qos(cinder_api, vol_id) == _specs('500iops,5ms,p99')

    resp = api.post('/volumes/%s/action' % vol_id, json={'os-retype': {
        'new_type': bronze['name'], 'migration_policy': 'never'}})
    assert resp.status_code == 202, resp.text
    vol = cinder_api.wait_volume(vol_id, 'available')
    assert (vol['status'], vol['volume_type']) == ('available',
                                                   bronze['name'])
    assert (_connection_qos(cinder_api, vol_id)
            == _specs('100iops,50ms,class=throughput'))

    resp = api.post('/volumes/%s/action' % vol_id,
                    json={'os-extend': {'new_size': 2}})
    assert resp.status_code == 202, resp.text
    vol = cinder_api.wait_volume(vol_id, 'available')
    assert (vol['status'], vol['size']) == ('available', 2)
    assert vol['volume_type'] == bronze['name']
