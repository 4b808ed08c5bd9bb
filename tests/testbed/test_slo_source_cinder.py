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
"""A real guest's disk with a QoS spec is reported with its reserved IOPS.

The path an SLO really takes on a compute host, every part real except
os-brick's connection (the guest's disk is a file, not the iSCSI device):

1. ``iosched.cinder_qos`` (``SloAdmin.create``) makes the QoS spec and the
   volume type in Cinder's real API (``python -m tests.cinder.server``, a
   process of its own), a volume of that type is created and attached
   (``POST /attachments``: Cinder puts the front-end spec into the
   attachment's connection_info);
2. Nova's libvirt volume driver, in a process of its own
   (``tests.functional.nova_volume_disk``), turns that attachment into the
   guest's ``<disk>``: ``<serial>`` the volume id, ``<iotune>`` the front-end
   keys only;
3. a TCG guest under the system libvirtd (prefix ``iosched-slosrc-``) has
   that ``<serial>`` and ``<iotune>`` on its disk;
4. the agent (``assembly.build_agent``, the libvirt driver, the slo
   policy), with ``[cinder]`` credentials and ``[volume_slo] from_cinder``
   unset, reads the disk's serial and iotune, looks the volume up in
   Cinder and reports ``disk.reserved_iops`` = B of the SLO,
   ``disk.slo_source`` = cinder. Without credentials the same disk is
   counted at its ``<iotune>`` ceiling (slo_source iotune).

Skips locally and fails in CI (CI=true) without libvirt/QEMU/root or
Cinder.
"""

import json
import subprocess
import sys
import time
import uuid
import xml.etree.ElementTree as ET

from keystoneauth1 import loading as ks_loading
import pytest

from bench import testbed_common as tc
from iosched.cinder_qos import client
from iosched.cinder_qos import rest
from iosched.cinder_qos import translate
from iosched.contract import qos_attach
from iosched.contract import slo as slo_mod
from iosched.host_agent.policies import slo as slo_policy
from iosched.testbed import spec as spec_mod
from tests.cinder_process import child_cinder  # noqa: F401 (fixture)
from tests.cinder_process import REPO
from tests import fixtures
from tests.testbed import needs

CONF = fixtures.CONF
PREFIX = 'iosched-slosrc-'
SLO_TEXT = '120iops,60ms'
B = 120.0                       # the SLO's throughput floor
CONNECTOR = {'host': 'iosched-slosrc', 'initiator': 'iqn.2026-11.test:h',
             'ip': '127.0.0.1', 'platform': 'x86_64', 'os_type': 'linux',
             'multipath': False}


def _name(what):
    return 'slosrc-%s-%s' % (what, uuid.uuid4().hex[:8])


def _wait_available(api, vol_id, timeout=60.0):
    deadline = time.monotonic() + timeout
    while True:
        status = api.get('/volumes/%s' % vol_id).json()['volume']['status']
        if status == 'available':
            return
        assert time.monotonic() < deadline, (
            'volume %s still %s after %.0f s' % (vol_id, status, timeout))
        time.sleep(0.2)


@pytest.fixture(scope='module')
def attachment(child_cinder):  # noqa: F811
    """(volume id, the SLO type's specs, Cinder's attachment)."""
    from openstack import connection
    conn = connection.Connection(
        session=child_cinder.session(),
        block_storage_endpoint_override=child_cinder.root,
        block_storage_api_version='3')
    admin = client.SloAdmin(rest.RestApi(conn.block_storage))
    plan = client.plan(_name('type'), SLO_TEXT)
    admin.create(plan)
    api = child_cinder.adapter()
    resp = api.post('/volumes', json={'volume': {
        'size': 1, 'name': _name('vol'), 'volume_type': plan.type_name}})
    assert resp.status_code == 202, resp.text
    vol_id = resp.json()['volume']['id']
    _wait_available(api, vol_id)
    resp = child_cinder.adapter('3.54').post('/attachments', json={
        'attachment': {'volume_uuid': vol_id,
                       'instance_uuid': str(uuid.uuid4()),
                       'connector': CONNECTOR, 'mode': 'rw'}})
    assert resp.status_code == 200, resp.text
    return vol_id, plan.specs, resp.json()['attachment']


def _nova_disk(attachment, vol_id, dev):
    """Nova's ``<disk>`` element for the attachment (its own process)."""
    out = subprocess.run(
        [sys.executable, '-W', 'ignore', '-m',
         'tests.functional.nova_volume_disk'], cwd=REPO,
        input=json.dumps({'attachment': attachment, 'volume_id': vol_id,
                          'dev': dev}),
        capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    return ET.fromstring(out.stdout)


@pytest.fixture(scope='module')
def guest(attachment):
    vol_id, specs, att = attachment
    disk = _nova_disk(att, vol_id, 'vda')
    iotune = {c.tag: int(c.text) for c in disk.find('iotune')}
    tb, started = needs.start_testbed(PREFIX)
    try:
        tb.down()
        (g,) = tb.up([spec_mod.GuestSpec(
            'vol', 'idle', volume_id=disk.findtext('serial'),
            disk_iotune=iotune)])
        yield g, vol_id, specs, disk
    finally:
        tc.shutdown(tb, started)


def _report(conf):
    with tc.AgentThread(conf, PREFIX,
                        policies=[slo_policy.SloPolicy(conf)]) as at:
        at.wait_ticks(2)
        report = at.agent.last_report
        (inst,) = at.agent.volumes.attach(at.driver.list_instances())
    assert at.errors == []
    return report, inst.disks[0]


def test_nova_writes_the_front_end_keys_and_the_volume_id(guest):
    g, vol_id, specs, disk = guest
    assert disk.findtext('serial') == vol_id
    # Cinder gave Nova the whole spec, Nova kept its 13 keys only
    assert {c.tag: int(c.text) for c in disk.find('iotune')} == \
        qos_attach.iotune(specs) == {'total_iops_sec': 400,
                                     'size_iops_sec': 16384}
    assert specs == translate.translate(slo_mod.parse(SLO_TEXT))
    assert 'iosched' not in ET.tostring(disk, encoding='unicode')


def test_a_real_guest_disk_with_a_qos_spec_is_reported_with_its_reserved_iops(
        guest, child_cinder):  # noqa: F811
    g, vol_id, specs, _ = guest
    # nova-compute's [cinder] credentials; this Cinder runs without
    # Keystone, hence admin_token (endpoint + token)
    CONF.register_opts(ks_loading.get_auth_plugin_conf_options(
        'admin_token'), group='cinder')
    for name, value in (('auth_type', 'admin_token'),
                        ('endpoint', child_cinder.endpoint),
                        ('token', child_cinder.token)):
        CONF.set_override(name, value, 'cinder')
    try:
        assert CONF.volume_slo.from_cinder is None      # the default
        report, disk = _report(CONF)
    finally:
        for name in ('auth_type', 'endpoint', 'token'):
            CONF.clear_override(name, 'cinder')
    assert (disk.serial, dict(disk.iotune)) == (vol_id,
                                                qos_attach.iotune(specs))
    assert disk.slo == slo_mod.SLO.from_specs(specs)
    assert disk.slo.min_iops == B
    assert (report.disk.slo_source, report.disk.reserved_iops,
            report.disk.slo_volumes) == ('cinder', B, 1)
    print('real guest %s, volume %s: reserved_iops %.1f (slo_source %s)'
          % (g.name, vol_id, report.disk.reserved_iops,
             report.disk.slo_source))


def test_without_credentials_the_iotune_ceiling_is_counted(guest):
    g, vol_id, specs, _ = guest
    assert not CONF.cinder.auth_type
    report, disk = _report(CONF)
    assert disk.slo is None and disk.slo_source == 'iotune'
    assert (report.disk.slo_source, report.disk.reserved_iops,
            report.disk.slo_volumes) == ('iotune', 400.0, 0)
