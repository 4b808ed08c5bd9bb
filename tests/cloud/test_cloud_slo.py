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
"""SLO volumes on the one-machine cloud past their first attach.

* ``SloCapacityFilter`` in the real nova-scheduler: a server whose volume's
  SLO floor fits the host's measured capacity (the agent's report:
  ``iosched-cloud up`` measures the Ceph with ``rbd bench`` and the
  DevStack plugin gives it to the agent) boots; one whose floor does not
  is NoValidHost, and the scheduler's log names the filter;
* an online extend of a volume whose QoS spec has a per-GB key: Nova
  resizes the disk but applies QoS only at attach; the agent re-tunes the
  disk's ``<iotune>`` to Cinder's per-GB arithmetic at the new size;
* a retype: Cinder refuses it while the volume is in use (its front-end
  QoS would change under Nova); detached, retyped and attached again, Nova
  writes the new type's limits and the agent reports the new floor, read
  afresh (not the old type's from its cache).

Shares the session's cloud (tests/cloud/conftest.py). Several minutes.
"""

import json

import pytest

from tests.cloud import client
from tests.cloud.client import LAYOUT
from tests.cloud.client import openstack

FLAVOR = 'e2e.plain'
IMAGE = 'iosched-guest-idle'


@pytest.fixture(scope='module')
def host_server(cloud):
    openstack('flavor', 'create', '--vcpus', '1', '--ram', '256', '--disk',
              '1', FLAVOR, admin=True, check=False)
    server = client.server('e2e-slo-host', FLAVOR, image=IMAGE)
    assert server.get('status') == 'ACTIVE', client.text(server)
    yield server
    openstack('server', 'delete', '--wait', server['id'], parse=False,
              check=False)


def _slo_type(name, text):
    openstack('volume', 'slo', 'type', 'create', name, text, admin=True)


def _disk_state():
    return client.report()['disk']


def _iotune(server_id, vid):
    iotune = client.volume_disk(client.domain_xml(server_id),
                                vid).find('iotune')
    return {} if iotune is None else {e.tag: int(e.text) for e in iotune}


def _boot_with(name, vid):
    return openstack(
        'server', 'create', '--flavor', FLAVOR, '--image', IMAGE, '--nic',
        'none', '--block-device', 'uuid=%s,source_type=volume,'
        'destination_type=volume,boot_index=-1' % vid, name)


def test_slo_capacity_filter_refuses_what_the_disk_cannot_take(host_server):
    cap = client.wait(lambda: _disk_state().get('capacity_iops'),
                      'the agent reports its disk capacity', 120, 5)
    _slo_type('e2e-fits', '%diops,50ms' % max(10, cap // 20))
    _slo_type('e2e-toobig', '%diops,50ms' % (2 * cap + 100))
    fits = client.volume('e2e-fits-vol', 'e2e-fits')
    over = client.volume('e2e-toobig-vol', 'e2e-toobig')
    ok = client.wait_built(_boot_with('e2e-fits', fits['id'])['id'],
                           'the boot within capacity ends')
    bad = client.wait_built(_boot_with('e2e-toobig', over['id'])['id'],
                            'the boot over capacity ends')
    try:
        assert ok['status'] == 'ACTIVE', ok
        assert bad['status'] == 'ERROR', bad
        assert 'No valid host' in json.dumps(bad.get('fault', {})), bad
        with open(LAYOUT.log('nova-scheduler')) as f:
            why = [ln for ln in f if 'Filtering removed all hosts' in ln
                   and bad['id'] in ln]
        assert why and 'SloCapacityFilter: (start: 1, end: 0)' in why[-1]
    finally:
        for s in (ok, bad):
            openstack('server', 'delete', '--wait', s['id'], parse=False,
                      check=False)
        for v in (fits, over):
            client.wait_volume(v['id'], 'available')
            openstack('volume', 'delete', v['id'], parse=False)


def test_online_extend_retunes_a_per_gb_ceiling(host_server):
    _slo_type('e2e-pergb', '100iops,50ms')
    openstack('volume', 'qos', 'set', 'e2e-pergb', '--property',
              'total_iops_sec_per_gb=400', admin=True, parse=False)
    vol = client.volume('e2e-pergb-vol', 'e2e-pergb')
    sid = host_server['id']
    client.attach(sid, vol['id'])
    try:
        # Cinder's arithmetic at attach: 400 per GB x 1 GB
        assert _iotune(sid, vol['id'])['total_iops_sec'] == 400
        openstack('--os-volume-api-version', '3.42', 'volume', 'set',
                  '--size', '2', vol['id'], parse=False)
        client.wait(lambda: openstack('volume', 'show', vol['id'])['size']
                    == 2, 'the volume is extended', 120)
        # Nova resized the disk but keeps its QoS; the agent re-tunes it
        # once it reads the new size ([cinder] cache_ttl, 60 s)
        client.wait(lambda: _iotune(sid, vol['id']).get('total_iops_sec')
                    == 800, 'the agent re-tunes to 400 x 2 GB', 180, 5)
        dev = client.volume_disk(client.domain_xml(sid), vol['id']).find(
            'target').get('dev')
        with open(LAYOUT.log('iosched-agent')) as f:
            sets = [ln for ln in f if ' set disk_iotune %s/%s:' % (sid, dev)
                    in ln]
        assert any('(slo.retune' in ln for ln in sets), sets[-3:]
    finally:
        client.detach(sid, vol['id'])
        openstack('volume', 'delete', vol['id'], parse=False)


def test_retype_refused_in_use_then_new_limits_after_reattach(host_server):
    _slo_type('e2e-ret-a', '200iops,40ms')
    _slo_type('e2e-ret-b', '400iops,20ms')
    vol = client.volume('e2e-ret-vol', 'e2e-ret-a')
    sid = host_server['id']
    client.attach(sid, vol['id'])
    try:
        client.wait(lambda: _disk_state()['reserved_iops'] == 200,
                    'the agent reserves type a\'s floor', 180, 5)
        before = _iotune(sid, vol['id'])
        res = openstack('volume', 'set', '--type', 'e2e-ret-b',
                        '--retype-policy', 'never', vol['id'], parse=False,
                        check=False)
        assert res.returncode != 0
        assert 'front-end qos specs cannot change' in res.stderr, res.stderr
        assert openstack('volume', 'show', vol['id'])['type'] == 'e2e-ret-a'
        client.detach(sid, vol['id'])
        openstack('volume', 'set', '--type', 'e2e-ret-b', '--retype-policy',
                  'never', vol['id'], parse=False)
        client.wait(lambda: openstack('volume', 'show', vol['id'])['type']
                    == 'e2e-ret-b', 'the retype ends', 120)
        client.attach(sid, vol['id'])
        after = _iotune(sid, vol['id'])           # what Nova applied
        assert after != before
        client.wait(lambda: _disk_state()['reserved_iops'] == 400,
                    'the agent reserves type b\'s floor', 120, 5)
        # and it did not put type a's limits back from a stale cache
        assert _iotune(sid, vol['id']) == after
    finally:
        client.detach(sid, vol['id'])
        openstack('volume', 'delete', vol['id'], parse=False)
