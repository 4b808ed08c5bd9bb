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
"""The host agent reading an attached volume's SLO from Cinder's real API
(``iosched.host_agent.cinder_slo``): the volume's type and its QoS spec, the
SLO the slo policy then defends, and the new one after an in-use retype once
the cache entry expires; the lookup built from the agent's own options
(``[cinder]`` credentials, ``[volume_slo] from_cinder`` unset) for a type
made by ``iosched.cinder_qos``.
"""

import uuid

from oslo_config import cfg

from iosched.cinder_qos import client
from iosched.cinder_qos import rest
from iosched.cinder_qos import translate
from iosched.contract import qos_attach
from iosched.contract import slo as slo_mod
from iosched.host_agent import cinder_slo
from iosched.host_agent.conf import opts
from iosched.host_agent import model
from iosched.host_agent import volume_slo


class Clock(object):
    t = 0.0

    def __call__(self):
        return self.t


def _name(prefix):
    return 'agent-%s-%s' % (prefix, uuid.uuid4().hex[:8])


def _slo_type(api, text):
    specs = translate.translate(slo_mod.parse(text))
    resp = api.post('/qos-specs', json={'qos_specs': dict(
        specs, name=_name('qos'), consumer=translate.consumer())})
    assert resp.status_code == 200, resp.text
    qos_id = resp.json()['qos_specs']['id']
    resp = api.post('/types', json={'volume_type': {'name': _name('type')}})
    assert resp.status_code == 200, resp.text
    vtype = resp.json()['volume_type']
    resp = api.get('/qos-specs/%s/associate' % qos_id,
                   params={'vol_type_id': vtype['id']})
    assert resp.status_code == 202, resp.text
    return vtype, specs


def test_agent_reads_the_slo_and_follows_a_retype(cinder_api):
    api = cinder_api.adapter()
    gold, gold_specs = _slo_type(api, '500iops,5ms,p99,qd=4')
    bronze, bronze_specs = _slo_type(api, '100iops,50ms,class=throughput')
    resp = api.post('/volumes', json={'volume': {
        'size': 1, 'name': _name('vol'), 'volume_type': gold['name']}})
    assert resp.status_code == 202, resp.text
    vol_id = resp.json()['volume']['id']
    assert cinder_api.wait_volume(vol_id, 'available')['status'] == \
        'available'

    clock = Clock()
    src = cinder_slo.CinderQosLookup(cinder_api.adapter, cache_ttl=60.0,
                                     clock=clock)
    assert src.specs(vol_id) == gold_specs
    res = volume_slo.Resolver('', src)
    (inst,) = res.attach([model.InstanceInfo(uuid='u', name='u', disks=(
        model.DiskInfo('vdb', serial=vol_id),))])
    assert inst.disks[0].slo == slo_mod.SLO(
        min_iops=500.0, latency_ms=5.0, latency_stat='p99', expected_qd=4,
        slo_class='latency')

    resp = api.post('/volumes/%s/action' % vol_id, json={'os-retype': {
        'new_type': bronze['name'], 'migration_policy': 'never'}})
    assert resp.status_code == 202, resp.text
    assert cinder_api.wait_volume(vol_id, 'available')['volume_type'] == \
        bronze['name']
    assert src.specs(vol_id) == gold_specs          # cached
    clock.t = 61.0
    assert src.specs(vol_id) == bronze_specs        # asked again
    assert src.outage is None


def test_unknown_volume_and_a_type_without_qos(cinder_api):
    api = cinder_api.adapter()
    src = cinder_slo.CinderQosLookup(cinder_api.adapter, clock=Clock())
    assert src.specs(str(uuid.uuid4())) is None
    resp = api.post('/types', json={'volume_type': {'name': _name('plain')}})
    plain = resp.json()['volume_type']
    resp = api.post('/volumes', json={'volume': {
        'size': 1, 'name': _name('vol'), 'volume_type': plain['name']}})
    vol_id = resp.json()['volume']['id']
    cinder_api.wait_volume(vol_id, 'available')
    assert src.specs(vol_id) == {}


def test_online_extend_with_per_gb_keys_changes_the_limits(cinder_api):
    # total_iops_sec_per_gb: Cinder turns it into total_iops_sec for the
    # volume's size at attach; after an extend the agent computes the new
    # value the same way (iosched.contract.qos_attach) and re-applies it.
    api = cinder_api.adapter()
    specs = dict(translate.translate(slo_mod.parse('100iops,50ms')))
    del specs['total_iops_sec']
    specs['total_iops_sec_per_gb'] = '300'
    resp = api.post('/qos-specs', json={'qos_specs': dict(
        specs, name=_name('qos'), consumer='front-end')})
    assert resp.status_code == 200, resp.text
    qos_id = resp.json()['qos_specs']['id']
    vtype = api.post('/types', json={'volume_type': {
        'name': _name('pergb')}}).json()['volume_type']
    api.get('/qos-specs/%s/associate' % qos_id,
            params={'vol_type_id': vtype['id']})
    resp = api.post('/volumes', json={'volume': {
        'size': 1, 'name': _name('vol'), 'volume_type': vtype['name']}})
    vol_id = resp.json()['volume']['id']
    cinder_api.wait_volume(vol_id, 'available')
    clock = Clock()
    src = cinder_slo.CinderQosLookup(cinder_api.adapter, clock=clock)
    assert src.specs(vol_id)['total_iops_sec'] == '300'
    resp = api.post('/volumes/%s/action' % vol_id,
                    json={'os-extend': {'new_size': 3}})
    assert resp.status_code == 202, resp.text
    assert cinder_api.wait_volume(vol_id, 'available')['size'] == 3
    clock.t = 61.0
    got = src.specs(vol_id)
    assert got['total_iops_sec'] == '900'
    assert 'total_iops_sec_per_gb' not in got
    assert got['iosched:min_iops'] == specs['iosched:min_iops']


def test_agent_options_resolve_a_volume_of_an_iosched_slo_type(cinder_api,
                                                               tmp_path):
    # The type as an admin makes it (iosched.cinder_qos, over openstacksdk),
    # a volume of it, and the agent's lookup built from its own options:
    # a [cinder] section with credentials and [volume_slo] from_cinder
    # unset (on). This Cinder runs without Keystone: admin_token.
    admin = client.SloAdmin(rest.RestApi(
        cinder_api.connection().block_storage))
    plan = client.plan(_name('slo'), '250iops,10ms,p99')
    admin.create(plan)
    api = cinder_api.adapter()
    resp = api.post('/volumes', json={'volume': {
        'size': 1, 'name': _name('vol'), 'volume_type': plan.type_name}})
    assert resp.status_code == 202, resp.text
    vol_id = resp.json()['volume']['id']
    cinder_api.wait_volume(vol_id, 'available')
    conf_file = tmp_path / 'host-agent.conf'
    conf_file.write_text('[cinder]\nauth_type = admin_token\n'
                         'endpoint = %s\ntoken = %s\n'
                         % (cinder_api.endpoint, cinder_api.token))
    conf = cfg.ConfigOpts()
    opts.register_all(conf)
    conf(['--config-file', str(conf_file)], default_config_files=[])
    assert conf.volume_slo.from_cinder is None and cinder_slo.enabled(conf)
    res = volume_slo.Resolver('', cinder_slo.from_conf(conf))
    # the disk as the libvirt driver lists it: serial and Nova's <iotune>
    iotune = qos_attach.iotune(plan.specs)
    (inst,) = res.attach([model.InstanceInfo(uuid='u', name='u', disks=(
        model.DiskInfo('vdb', serial=vol_id, iotune=iotune),))])
    disk = inst.disks[0]
    assert disk.slo == slo_mod.SLO.from_specs(plan.specs)
    assert (disk.slo_source, disk.reserved_iops) == ('cinder', 250.0)
    assert res.cinder.outage is None
    # a volume Cinder does not know: its <iotune> ceiling counts
    (inst,) = res.attach([model.InstanceInfo(uuid='u', name='u', disks=(
        model.DiskInfo('vdb', serial=str(uuid.uuid4()), iotune=iotune),))])
    assert (inst.disks[0].slo_source, inst.disks[0].reserved_iops) == (
        'iotune', float(iotune['total_iops_sec']))
