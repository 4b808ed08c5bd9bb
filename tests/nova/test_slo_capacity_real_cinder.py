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
"""SloCapacityFilter reading a real Cinder API through ``nova.volume.cinder``.

Cinder runs in a child process (``tests/cinder_process.py``,
``python -m tests.cinder.server``: Cinder's v3 API with noauth, sqlite and
the fake volume driver); this process never imports Cinder. nova.conf's
``[cinder]`` section points Nova's own client code at it the way a
deployment without a service catalog would: ``auth_type = admin_token``
with the server's ``endpoint`` and ``token`` (the scheduler's admin
context carries no token, so ``nova.volume.cinder`` loads this plugin).
The test creates volume types, QoS specs and a volume over Cinder's HTTP
API (keystoneauth, no Cinder import). The resolver and ``CinderVolumeTypes``
are the real ones, and hosts are judged as the fake-based tests judge them:

* ``RealCinderFilterTestCase``: the filter through Nova's handler on
  FakeHostStates; only the Nova DB boundary is a stub (the boot request's
  block device mappings, as in ``test_slo_capacity``);
* ``RealCinderBootTest``: boots through Nova's API, conductor and
  scheduler; the API's volume type check and the scheduler read the real
  Cinder, the compute side keeps Nova's CinderFixture.

The server process is started once for the module and stopped after it.
Without Cinder installed the module skips, and fails under CI=true.
"""

import time
import uuid

from keystoneauth1 import loading as ks_loading
import nova.conf
from nova import context as nova_context
from nova import exception
from nova import objects
from nova.scheduler import filters
from nova import service_auth
from nova import test
from nova.tests.functional import integrated_helpers
from nova.tests.unit.scheduler import fakes
from nova.volume import cinder
from oslo_utils.fixture import uuidsentinel as uuids
import pytest

from iosched.nova_plugin.filters import slo_capacity
from iosched.nova_plugin.filters import slo_request
from tests import cinder_process
from tests.nova import plugin_state
from tests.nova import test_slo_capacity as fake_based

CONF = nova.conf.CONF
# Nova's own, before CinderFixture replaces it with a mock
REAL_GET_ALL_VOLUME_TYPES = cinder.API.get_all_volume_types
# the child Cinder server, for this module (skips or fails without Cinder)
child_cinder = cinder_process.child_cinder

# name suffix -> (consumer, specs) of its QoS spec; None: no QoS spec
TYPES = {
    'gold': ('front-end', {'iosched:min_iops': '500',
                           'total_iops_sec': '750'}),
    'silver': ('both', {'iosched:min_iops': '100'}),
    'backend': ('back-end', {'iosched:min_iops': '900'}),
    'plain': None,
}


def _ok(resp, *codes):
    assert resp.status_code in (codes or (200,)), (resp.status_code,
                                                   resp.text)
    return resp.json() if resp.content else {}


def _make_types(api, tag):
    """Create TYPES (named ``<tag>-<suffix>``); name -> type id."""
    ids = {}
    for suffix, qos in TYPES.items():
        name = '%s-%s' % (tag, suffix)
        vtype = _ok(api.post('/types', json={'volume_type': {
            'name': name}}))['volume_type']
        ids[name] = vtype['id']
        if qos is None:
            continue
        consumer, specs = qos
        body = dict(specs, name='%s-qos' % name, consumer=consumer)
        spec = _ok(api.post('/qos-specs', json={'qos_specs': body}))
        _ok(api.get('/qos-specs/%s/associate?vol_type_id=%s'
                    % (spec['qos_specs']['id'], vtype['id'])), 200, 202)
    return ids


def _make_volume(api, type_name, timeout=60):
    vol = _ok(api.post('/volumes', json={'volume': {
        'size': 1, 'volume_type': type_name,
        'name': 'iosched-%s' % type_name}}), 202)['volume']
    deadline = time.monotonic() + timeout
    while vol['status'] != 'available' and time.monotonic() < deadline:
        time.sleep(0.2)
        vol = _ok(api.get('/volumes/%s' % vol['id']))['volume']
    assert vol['status'] == 'available', vol
    return vol['id']


@pytest.fixture(scope='module')
def real_cinder(child_cinder):
    """The child Cinder, its SLO types and one gold volume."""
    api = child_cinder.adapter()
    tag = 'slo-%s' % uuid.uuid4().hex[:8]
    ids = _make_types(api, tag)
    return {'server': child_cinder, 'tag': tag, 'type_ids': ids,
            'gold_volume': _make_volume(api, tag + '-gold')}


@pytest.fixture
def _cinder_for_class(request, real_cinder):
    request.cls.cinder = real_cinder


def _point_nova_at(test_case, server):
    """nova.conf ``[cinder]``: the keystoneauth admin_token plugin with
    the server's endpoint and token. Nova registers a plugin's options
    when it first loads it; register them here to set them first.
    """
    CONF.register_opts(
        ks_loading.get_auth_plugin_conf_options('admin_token'),
        group='cinder')
    test_case.flags(auth_type='admin_token', endpoint=server.endpoint,
                    token=server.token, group='cinder')
    service_auth.reset_globals()            # cached auth and session
    test_case.addCleanup(service_auth.reset_globals)


@pytest.mark.usefixtures('_cinder_for_class')
class RealCinderFilterTestCase(test.NoDBTestCase):
    """Boot requests judged with B read from the child's Cinder."""

    cinder = None

    def setUp(self):
        super(RealCinderFilterTestCase, self).setUp()
        server = self.cinder['server']
        self.tag = self.cinder['tag']
        _point_nova_at(self, server)
        state = self.useFixture(plugin_state.PluginState())
        self.clock, self.store = state.clock, state.store
        self.worker = state.worker
        self.recent = state.worker.explainer.recent
        # the Nova DB boundary: the boot request's mappings
        self.bdms = []
        self.stub_out(
            'nova.objects.BuildRequest.get_by_instance_uuid',
            lambda *args: objects.BuildRequest(
                instance_uuid=args[-1],
                block_device_mappings=objects.BlockDeviceMappingList(
                    objects=self.bdms)))
        self.handler = filters.HostFilterHandler()
        self.filters = [slo_capacity.SloCapacityFilter()]

    def type_name(self, suffix):
        return '%s-%s' % (self.tag, suffix)

    def report(self, host, capacity, reserved):
        self.clock.now += 1
        self.assertTrue(self.store.update(fake_based.disk_report(
            host, capacity, reserved, ts=self.clock.now)))

    def passing(self, instance, *hosts, **mapping):
        """Hosts that pass for a boot from one volume ``mapping``."""
        mapping.setdefault('boot_index', 0)
        mapping.setdefault('destination_type', 'volume')
        self.bdms[:] = [objects.BlockDeviceMapping(**mapping)]
        spec = objects.RequestSpec(instance_uuid=instance)
        states = [fakes.FakeHostState(h, h + '-node', {}) for h in hosts]
        return [h.host for h in self.handler.get_filtered_objects(
            self.filters, states, spec)]

    def test_slo_boot_is_admitted_only_where_there_is_room(self):
        # host1: 800 + 500 > 1000; host2: 0 + 500 <= 1000
        self.report('host1', 1000, 800)
        self.report('host2', 1000, 0)
        # a new boot volume of the gold type, by name (API 2.67+)
        self.assertEqual(['host2'], self.passing(
            uuids.new_gold, 'host1', 'host2', source_type='image',
            image_id=uuids.image, volume_type=self.type_name('gold')))
        why = self.recent(host='host1')[-1]
        self.assertEqual((False, uuids.new_gold), (why.passed, why.request))
        self.assertIn('reserved 800.0 + pending 0.0 + request 500.0 = '
                      '1300.0 IOPS', why.reason)
        # the same type by id, and an existing gold volume
        self.assertEqual(['host2'], self.passing(
            uuids.gold_by_id, 'host1', 'host2', source_type='image',
            image_id=uuids.image,
            volume_type=self.cinder['type_ids'][self.type_name('gold')]))
        self.assertEqual(['host2'], self.passing(
            uuids.old_gold, 'host1', 'host2', source_type='volume',
            volume_id=self.cinder['gold_volume']))
        demand = self.worker.resolver.demand(
            objects.RequestSpec(instance_uuid=uuids.old_gold),
            slo_request.NovaVolumeLookup())
        self.assertEqual((500.0, ''), (demand.iops, demand.error))

    def test_room_full_unknown_and_missing(self):
        # as FilterTestCase, with a 'both' spec read from Cinder (B = 100)
        self.report('room', 1000, 900)      # 900 + 100 = 1000 <= 1000
        self.report('full', 1000, 901)      # 1001 > 1000
        self.report('unknown', 0, 0)        # capacity not measured
        hosts = ('room', 'full', 'unknown', 'missing')
        silver = dict(source_type='image', image_id=uuids.image,
                      volume_type=self.type_name('silver'))
        self.assertEqual(['room', 'unknown', 'missing'],
                         self.passing(uuids.silver, *hosts, **silver))
        self.assertIn('reserved 901.0 + pending 0.0 + request 100.0 = '
                      '1001.0 IOPS, limit 1.00 x capacity 1000.0',
                      self.recent(host='full')[-1].reason)
        self.flags(missing_report_policy='reject', group='iosched')
        self.assertEqual(['room'],
                         self.passing(uuids.silver, *hosts, **silver))

    def test_types_without_a_front_end_floor_pass_everywhere(self):
        self.report('full', 1000, 1000)
        self.flags(missing_report_policy='reject', group='iosched')
        for n, volume_type in enumerate(
                (self.type_name('plain'), self.type_name('backend'), None)):
            # None: Cinder's default type (__DEFAULT__, no QoS spec)
            self.assertEqual(['full', 'missing'], self.passing(
                getattr(uuids, 'plain%d' % n), 'full', 'missing',
                source_type='image', image_id=uuids.image,
                volume_type=volume_type))
        self.assertEqual([], self.recent())

    def test_unknown_type_follows_the_lookup_failure_policy(self):
        self.report('h1', 1000, 1000)
        nope = dict(source_type='image', image_id=uuids.image,
                    volume_type=self.type_name('nope'))
        self.assertEqual(['h1'], self.passing(uuids.nope1, 'h1', **nope))
        self.assertIn('slo_lookup_failure_policy=pass',
                      self.recent(host='h1')[-1].reason)
        demand = self.worker.resolver.demand(
            objects.RequestSpec(instance_uuid=uuids.nope1),
            slo_request.NovaVolumeLookup())
        self.assertIn(exception.VolumeTypeNotFound.__name__, demand.error)
        self.flags(slo_lookup_failure_policy='reject', group='iosched')
        self.assertEqual([], self.passing(uuids.nope2, 'h1', **nope))


@pytest.mark.usefixtures('_cinder_for_class')
class RealCinderBootTest(integrated_helpers.ProviderUsageBaseTestCase):
    """Boots through Nova's API, conductor and scheduler (two fake
    computes): the scheduler's resolver and the API's volume type check
    read the child's Cinder; the compute side (volume create and attach)
    stays Nova's CinderFixture, which has no real volume to attach.
    """

    compute_driver = 'fake.MediumFakeDriver'
    microversion = 'latest'
    cinder = None

    def setUp(self):
        self.flags(available_filters=[
            'nova.scheduler.filters.all_filters',
            'iosched.nova_plugin.filters.all_filters'],
            enabled_filters=['ComputeFilter', 'ComputeCapabilitiesFilter',
                             'ImagePropertiesFilter', 'SloCapacityFilter'],
            group='filter_scheduler')
        super(RealCinderBootTest, self).setUp()
        _point_nova_at(self, self.cinder['server'])
        plugin_state.ignore_noload_warning()
        state = self.useFixture(plugin_state.PluginState())
        self.clock, self.store = state.clock, state.store
        self.worker = state.worker
        self.recent = state.worker.explainer.recent
        # the API validates a requested type against Cinder's real list
        # (the fake API request has no token: ask as the admin)
        self.stub_out(
            'nova.volume.cinder.API.get_all_volume_types',
            lambda api, ctxt: REAL_GET_ALL_VOLUME_TYPES(
                api, nova_context.get_admin_context()))
        self._start_compute('host1')
        self._start_compute('host2')

    def reports(self, **hosts):
        """host=(capacity, reserved) for each host."""
        self.clock.now += 1
        for host, (capacity, reserved) in hosts.items():
            self.assertTrue(self.store.update(fake_based.disk_report(
                host, capacity, reserved, ts=self.clock.now)))

    def _new_volume(self, suffix, expected_state='ACTIVE'):
        server = self._build_server(networks='none')
        server.pop('imageRef')
        mapping = dict(boot_index=0, destination_type='volume',
                       source_type='image', uuid=fake_based.IMAGE,
                       volume_size=1)
        if suffix:
            mapping['volume_type'] = '%s-%s' % (self.cinder['tag'], suffix)
        server['block_device_mapping_v2'] = [mapping]
        server = self.api.post_server({'server': server})
        return self._wait_for_state_change(server, expected_state)

    def test_slo_boot_lands_on_the_host_with_room(self):
        # host1: 800 + 500 > 1000; host2: 0 + 500 <= 1000
        self.reports(host1=(1000, 800), host2=(1000, 0))
        server = self._new_volume('gold')
        self.assertEqual('host2', server['OS-EXT-SRV-ATTR:host'])
        why = self.recent(host='host1')[-1]
        self.assertEqual((False, server['id']), (why.passed, why.request))
        self.assertIn('reserved 800.0 + pending 0.0 + request 500.0 = '
                      '1300.0 IOPS', why.reason)

    def test_no_host_with_room_is_no_valid_host(self):
        self.reports(host1=(1000, 800), host2=(1000, 600))
        server = self._new_volume('gold', expected_state='ERROR')
        self.assertIn('No valid host', server['fault']['message'])

    def test_non_slo_boots_are_unaffected(self):
        self.reports(host1=(1000, 1000), host2=(1000, 1000))
        self.flags(missing_report_policy='reject', group='iosched')
        self._new_volume('plain')                       # no QoS spec
        self._new_volume(None)                          # Cinder's default
        self.assertEqual([], self.recent())
