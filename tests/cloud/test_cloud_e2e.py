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
"""The one-machine cloud, end to end (issue 26's short form for CI).

``iosched-cloud up`` builds a real OpenStack (Keystone, Placement, Glance,
Neutron's API, Nova with the libvirt driver under TCG, Cinder on a
one-node Ceph) with iosched installed from its sdist and configured by its
DevStack plugin; then, through the ``openstack`` CLI as a tenant and an
admin:

* an LSVM server boots from Glance; the agent finds the domain Nova made,
  sets its LSVM mechanism and ``iosched-explain`` says why; the guest's
  workload answers over the serial port Nova created;
* an SLO volume type made with ``openstack volume slo type create``, a
  volume of it created by Cinder on Ceph and attached by Nova: Nova writes
  the front-end QoS into the domain's ``<iotune>``, the agent reads the SLO
  from Cinder and reports its reserved IOPS;
* Placement: the agent's child provider sits under the compute node
  provider Nova's resource tracker made, an LSVM flavor claims
  CUSTOM_IOSCHED_LSVM_BW there, the boot after the host's bandwidth is
  used up is NoValidHost, and deleting a server frees it;
* ``iosched-cloud down`` leaves nothing behind.

Needs root, libvirtd, RabbitMQ, MariaDB and the package registries (the
cloud's venv and the Ceph packages): skipped locally without them, a
failure under CI=true. About 10 minutes.
"""

import json

import pytest

from tests.cloud import client
from tests.cloud.client import LAYOUT
from tests.cloud.client import openstack


@pytest.fixture(scope='module')
def lsvm(cloud):
    server = client.server('e2e-lsvm', 'lsvm.small')
    assert server.get('status') == 'ACTIVE', client.text(server)
    yield server
    openstack('server', 'delete', '--wait', server['id'], parse=False,
              check=False)


def test_lsvm_server_is_nova_made_and_managed_by_the_agent(lsvm):
    xml = client.domain_xml(lsvm['id'])
    assert 'openstack.org/xmlns/libvirt/nova' in xml
    assert 'iosched:latency_sensitive' in xml   # the flavor's extra spec
    knobs = client.wait(lambda: client.explain(lsvm['id']),
                        'the agent acts on the LSVM')
    rules = {k['rule'] for k in knobs}
    assert any(r.startswith('vslicer.lsvm') for r in rules), rules
    assert all(k['reason'] for k in knobs)


def test_lsvm_guest_answers_over_novas_serial_port(lsvm):
    import libvirt

    from iosched.testbed import guest as guest_mod
    conn = libvirt.open('qemu:///system')
    try:
        dom = conn.lookupByUUIDString(lsvm['id'])
        ports = guest_mod.serial_tcp_ports(dom.XMLDesc(0))
        name = dom.name()
    finally:
        conn.close()
    assert len(ports) == 2, ports
    g = guest_mod.Guest('lsvm', name, lsvm['id'], 'rr', ports[1],
                        LAYOUT.path('nova', 'instances', lsvm['id'],
                                    'console.log'))
    g.connect(timeout=180)
    try:
        g.wait_hello(timeout=180)
        rtts = g.rr(50, rate_per_s=50, burst_us=200, timeout=60)
    finally:
        g.close()
    assert len(rtts) == 50


def test_slo_volume_from_cinder_reaches_the_agent(lsvm):
    openstack('volume', 'slo', 'type', 'create', 'e2e-slo',
              '300iops,20ms', admin=True)
    vol = client.volume('e2e-vol', 'e2e-slo')
    client.attach(lsvm['id'], vol['id'])
    disk = client.volume_disk(client.domain_xml(lsvm['id']), vol['id'])
    assert disk.find('source').get('protocol') == 'rbd'
    # Nova wrote the type's front-end QoS spec: 300 IOPS at 16 KiB, with
    # the spec's headroom (iosched-slo translate)
    assert int(disk.findtext('iotune/total_iops_sec')) >= 300

    def reserved():
        rep = client.report()['disk']
        return rep if rep['slo_volumes'] >= 1 else None
    disk_state = client.wait(reserved, 'the agent reports the SLO volume',
                             180, 5)
    assert disk_state['slo_source'] == 'cinder'
    assert disk_state['reserved_iops'] == pytest.approx(300.0)


def _providers():
    rps = openstack('resource', 'provider', 'list', admin=True)
    return {rp['name']: rp for rp in rps}


def test_agent_provider_is_a_child_of_novas_compute_node(cloud):
    child = '%s:iosched' % LAYOUT.hostname
    rps = client.wait(lambda: (lambda r: r if child in r else None)(
        _providers()), 'child provider', 120, 5)
    node = rps[LAYOUT.hostname]
    assert rps[child]['parent_provider_uuid'] == node['uuid']


def _lsvm_bw(child):
    """(what is free to claim, what is used) of the child's LSVM_BW; the
    agent may move ``reserved`` with what it measures, so read it fresh.
    """
    inv = {i['resource_class']: i for i in openstack(
        'resource', 'provider', 'inventory', 'list', child, admin=True)}
    bw = inv['CUSTOM_IOSCHED_LSVM_BW']
    usage = {u['resource_class']: u['usage'] for u in openstack(
        'resource', 'provider', 'usage', 'show', child, admin=True)}
    used = usage.get('CUSTOM_IOSCHED_LSVM_BW', 0)
    return int((bw['total'] - bw['reserved']) * bw['allocation_ratio']
               - used), used


def _rest_flavor(left):
    """A 1-vCPU LSVM flavor asking exactly ``left`` of LSVM_BW, with the
    latency bound of lsvm.small (the LSVM already there): LsvmFilter
    holds a host to its strictest LSVM's bound and the agent's W is what
    the LSVMs' vCPUs wait on this busy host (1-2 ms seen here), so a
    flavor without a bound (the 2 ms default) could be turned away by the
    bound, not by the claim this test is about.
    """
    props = openstack('flavor', 'show', 'lsvm.small', admin=True)[
        'properties']
    # made once; a second create fails and is ignored
    openstack('flavor', 'create', '--vcpus', '1', '--ram', '256',
              '--disk', '1', 'e2e.lsvm-rest', admin=True, check=False)
    openstack('flavor', 'set', 'e2e.lsvm-rest', '--property',
              'iosched:latency_sensitive=true', '--property',
              'iosched:latency_ms=%s' % props['iosched:latency_ms'],
              '--property', 'resources:CUSTOM_IOSCHED_LSVM_BW=%d' % left,
              admin=True, parse=False)


def test_lsvm_bandwidth_claims_until_novalidhost(cloud, lsvm):
    idle = 'iosched-guest-idle'
    child = _providers()['%s:iosched' % LAYOUT.hostname]['uuid']
    left, used = _lsvm_bw(child)
    assert used >= 500, used        # the LSVM server's claim
    # a flavor that asks what is left, in one server: the next fails
    _rest_flavor(left)
    client.admits_lsvms('lsvm.small')
    first = client.server('e2e-fill', 'e2e.lsvm-rest', image=idle)
    assert first.get('status') == 'ACTIVE', client.text(first)
    # a second LSVM on the host: the agent manages it too, and every knob
    # write succeeds (Nova's domains have more I/O-path threads than the
    # testbed's: deadline admission must count them all, or the kernel
    # refuses the second LSVM's reservations with EBUSY)
    knobs = client.wait(lambda: client.explain(first['id']),
                        'the agent acts on the second LSVM')
    assert any(k['rule'].startswith('vslicer.lsvm') for k in knobs), knobs
    with open(LAYOUT.log('iosched-agent')) as f:
        failed = [ln for ln in f if 'cannot set' in ln]
    assert not failed, failed[-3:]
    second = client.server('e2e-over', 'e2e.lsvm-rest', image=idle,
                           wait=False)
    over = client.wait_built(second['id'], 'the over-commit boot ends')
    assert over['status'] == 'ERROR', over
    assert 'No valid host' in json.dumps(over.get('fault', {})), over
    openstack('server', 'delete', '--wait', second['id'], parse=False)
    openstack('server', 'delete', '--wait', first['id'], parse=False)
    # the delete gave the claim back; what is free now boots again
    assert _lsvm_bw(child)[1] == used
    _rest_flavor(_lsvm_bw(child)[0])
    client.admits_lsvms('lsvm.small')
    again = client.server('e2e-again', 'e2e.lsvm-rest', image=idle)
    assert again.get('status') == 'ACTIVE', client.text(again)
    openstack('server', 'delete', '--wait', again['id'], parse=False)
