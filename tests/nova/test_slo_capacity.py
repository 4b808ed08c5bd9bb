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
"""SloCapacityFilter: resolution with fakes at the Nova/Cinder boundary, the
filter on FakeHostStates, and boots through Nova's API, conductor and
scheduler (functional harness, CinderFixture).
"""

import dataclasses

from nova import context as nova_context
from nova import exception
from nova import objects
from nova.scheduler import filters
from nova import test
from nova.tests.fixtures import cinder as cinder_fixture
from nova.tests.functional import integrated_helpers
from nova.tests.unit.scheduler import fakes
from nova.volume import cinder
from oslo_utils.fixture import uuidsentinel as uuids

from iosched.contract import payload_sections
from iosched.nova_plugin import filters as plugin_filters
from iosched.nova_plugin.filters import slo_capacity
from iosched.nova_plugin.filters import slo_request
from iosched.nova_plugin import slo_lookup
from iosched.nova_plugin import store
from tests.nova import plugin_state
from tests.unit.nova_plugin import reports

# Volume types as cinder_qos makes them: (consumer, specs) of the QoS spec.
TYPES = {
    'slo-gold': ('front-end', {'iosched:min_iops': '500',
                               'total_iops_sec': '750'}),
    'slo-silver': ('both', {'iosched:min_iops': '100'}),
    'slo-backend': ('back-end', {'iosched:min_iops': '900'}),
    'slo-broken': ('front-end', {'iosched:min_iops': 'lots'}),
    'lvm-1': (None, {}),
}
# An image of Nova's GlanceFixture.
IMAGE = '155d900f-4e14-4e4c-a73d-069cbf4541e6'
TYPE_IDS = {'slo-gold': uuids.gold, 'slo-silver': uuids.silver,
            'lvm-1': '5f9204ec-3e94-4f27-9beb-fe7bb73b6eb9'}


def disk_report(host, capacity, reserved, ts=100.0, seq=1,
                slo_source=payload_sections.SLO_SOURCE_CINDER):
    """A HostReport whose disk has ``capacity`` and ``reserved`` IOPS,
    read from ``slo_source`` ('': a report older than 1.5).
    """
    return dataclasses.replace(
        reports.report(host=host, ts=ts, seq=seq),
        disk=payload_sections.DiskState(capacity_iops=float(capacity),
                                        reserved_iops=float(reserved),
                                        slo_source=slo_source))


class FakeCinderTypes(object):
    """The boundary ``slo_request.CinderVolumeTypes``, counting calls."""

    def __init__(self, volumes=None, snapshots=None, default=None,
                 fail=None):
        self.volumes = volumes or {}
        self.snapshots = snapshots or {}
        self.default = default
        self.fail = fail
        self.calls = []

    def _call(self, *what):
        self.calls.append(what)
        if self.fail is not None:
            raise self.fail

    def volume_type(self, ctxt, volume_id):
        self._call('volume', volume_id)
        if volume_id not in self.volumes:
            raise exception.VolumeNotFound(volume_id=volume_id)
        return self.volumes[volume_id]

    def snapshot_volume(self, ctxt, snapshot_id):
        self._call('snapshot', snapshot_id)
        return self.snapshots[snapshot_id]

    def default_type(self, ctxt):
        self._call('default')
        return self.default

    def type_qos(self, ctxt, type_ref):
        self._call('type', type_ref)
        if type_ref not in TYPES:
            raise exception.VolumeTypeNotFound(id_or_name=type_ref)
        return TYPES[type_ref]


class FakeClock(object):
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def bdm(**kw):
    return objects.BlockDeviceMapping(**kw)


class ResolverTestCase(test.NoDBTestCase):
    """Request -> B with fakes at the DB and Cinder boundaries."""

    def setUp(self):
        super(ResolverTestCase, self).setUp()
        self.build_bdms = {}            # instance uuid -> BuildRequest BDMs
        self.cell_bdms = {}             # instance uuid -> cell BDMs
        self.stub_out('nova.objects.BuildRequest.get_by_instance_uuid',
                      self._build_request)
        self.stub_out('nova.objects.InstanceMapping.get_by_instance_uuid',
                      self._instance_mapping)
        self.stub_out(
            'nova.objects.BlockDeviceMappingList.get_by_instance_uuid',
            lambda *args: objects.BlockDeviceMappingList(
                objects=self.cell_bdms[args[-1]]))
        self.stub_out('nova.context.target_cell', self._target_cell)
        self.cinder = FakeCinderTypes(
            volumes={uuids.vol_silver: 'slo-silver', uuids.vol_plain: None,
                     uuids.vol_gold_src: TYPE_IDS['slo-gold']},
            snapshots={uuids.snap: uuids.vol_gold_src}, default='lvm-1')
        TYPES.setdefault(TYPE_IDS['slo-gold'], TYPES['slo-gold'])
        self.clock = FakeClock()
        self.resolver = slo_lookup.Resolver(clock=self.clock, ttl=60,
                                            max_entries=10)
        self.lookup = slo_request.NovaVolumeLookup(self.cinder)

    def demand(self, spec):
        return self.resolver.demand(spec, self.lookup)

    def _build_request(self, *args):
        uuid = args[-1]                 # (cls,) ctxt, uuid
        if uuid not in self.build_bdms:
            raise exception.BuildRequestNotFound(uuid=uuid)
        return objects.BuildRequest(
            instance_uuid=uuid,
            block_device_mappings=objects.BlockDeviceMappingList(
                objects=self.build_bdms[uuid]))

    def _instance_mapping(self, *args):
        uuid = args[-1]
        if uuid not in self.cell_bdms:
            raise exception.InstanceMappingNotFound(uuid=uuid)
        return objects.InstanceMapping(
            instance_uuid=uuid,
            cell_mapping=objects.CellMapping(uuid=uuids.cell1, name='cell1'))

    @staticmethod
    def _target_cell(ctxt, cell_mapping):
        class _Ctx(object):
            def __enter__(self):
                return ctxt

            def __exit__(self, *exc):
                return False
        return _Ctx()

    @staticmethod
    def spec(uuid=uuids.instance):
        return objects.RequestSpec(instance_uuid=uuid)

    def test_boot_and_data_volumes_add_up_once_per_request(self):
        self.build_bdms[uuids.instance] = [
            # the image BDM of a server booted from an image: no volume
            bdm(source_type='image', destination_type='local',
                boot_index=0, image_id=uuids.image),
            # a new boot volume of an SLO type (API 2.67+): 500
            bdm(source_type='image', destination_type='volume',
                boot_index=0, image_id=uuids.image, volume_type='slo-gold'),
            # an existing data volume of an SLO type: 100
            bdm(source_type='volume', destination_type='volume',
                volume_id=uuids.vol_silver),
            # an existing volume without a type: 0
            bdm(source_type='volume', destination_type='volume',
                volume_id=uuids.vol_plain),
            # a new volume from a snapshot of a gold volume (type id): 500
            bdm(source_type='snapshot', destination_type='volume',
                snapshot_id=uuids.snap),
            # a new blank volume of Cinder's default type (no QoS): 0
            bdm(source_type='blank', destination_type='volume'),
        ]
        demand = self.demand(self.spec())
        self.assertEqual('', demand.error)
        self.assertEqual(slo_lookup.SOURCE_BUILD_REQUEST, demand.source)
        self.assertEqual(1100.0, demand.iops)
        self.assertEqual(5, len(demand.volumes))
        calls = list(self.cinder.calls)
        # every host of the request reuses the answer: no more lookups
        for _ in range(5):
            self.assertEqual(demand, self.demand(self.spec()))
        self.assertEqual(calls, self.cinder.calls)
        # a second request of the same types asks only for its volumes
        self.build_bdms[uuids.other] = [
            bdm(source_type='image', destination_type='volume',
                volume_type='slo-gold'),
            bdm(source_type='volume', destination_type='volume',
                volume_id=uuids.vol_silver)]
        self.assertEqual(600.0,
                         self.demand(self.spec(uuids.other)).iops)
        self.assertEqual([('volume', uuids.vol_silver)],
                         self.cinder.calls[len(calls):])

    def test_cache_expires_and_is_bounded(self):
        self.build_bdms[uuids.instance] = [
            bdm(source_type='image', destination_type='volume',
                volume_type='slo-gold')]
        self.demand(self.spec())
        self.assertEqual(1, len(self.cinder.calls))
        self.clock.now += 59
        self.demand(self.spec())
        self.assertEqual(1, len(self.cinder.calls))
        self.clock.now += 1                 # 60 s: both caches expired
        self.demand(self.spec())
        self.assertEqual(2, len(self.cinder.calls))
        self.resolver.configure(ttl=0)      # 0: every host reads again
        self.demand(self.spec())
        self.demand(self.spec())
        self.assertEqual(4, len(self.cinder.calls))
        self.resolver.configure(ttl=60, max_entries=1)
        for n in range(3):
            uuid = getattr(uuids, 'req%d' % n)
            self.build_bdms[uuid] = []
            self.demand(self.spec(uuid))
        self.assertEqual(1, len(self.resolver._requests))

    def test_no_build_request_reads_the_cell(self):
        # a reschedule or a move: the instance's own mappings
        self.cell_bdms[uuids.instance] = [
            bdm(source_type='image', destination_type='volume',
                volume_id=uuids.vol_silver, boot_index=0)]
        demand = self.demand(self.spec())
        self.assertEqual((slo_lookup.SOURCE_INSTANCE, 100.0, ''),
                         (demand.source, demand.iops, demand.error))

    def test_failures_become_errors_once(self):
        # neither a BuildRequest nor an instance mapping
        demand = self.demand(self.spec())
        self.assertIn('has no mapping to a cell', demand.error)
        self.assertEqual(0.0, demand.iops)
        # Cinder down: the error names the exception; asked once
        self.build_bdms[uuids.other] = [
            bdm(source_type='image', destination_type='volume',
                volume_type='slo-gold')]
        self.cinder.fail = exception.CinderConnectionFailed(reason='boom')
        demand = self.demand(self.spec(uuids.other))
        self.assertIn('CinderConnectionFailed', demand.error)
        self.demand(self.spec(uuids.other))
        self.assertEqual(1, len(self.cinder.calls))

    def test_bad_specs_and_mappings_are_errors(self):
        cases = [
            (bdm(source_type='image', destination_type='volume',
                 volume_type='slo-broken'),
             "volume type slo-broken: iosched:min_iops='lots' is invalid"),
            (bdm(source_type='image', destination_type='volume',
                 volume_type='nope'), 'Volume type nope could not be found'),
            (bdm(source_type='volume', destination_type='volume',
                 volume_id=uuids.gone), 'could not be found'),
            (bdm(source_type='volume', destination_type='volume'),
             'accepted sources'),
        ]
        for n, (mapping, words) in enumerate(cases):
            uuid = getattr(uuids, 'bad%d' % n)
            self.build_bdms[uuid] = [mapping]
            self.assertIn(words, self.demand(self.spec(uuid)).error)

    def test_back_end_specs_and_requests_without_uuid_count_zero(self):
        self.build_bdms[uuids.instance] = [
            bdm(source_type='image', destination_type='volume',
                volume_type='slo-backend')]
        self.assertEqual(0.0, self.demand(self.spec()).iops)
        self.assertEqual(slo_lookup.NO_DEMAND,
                         self.demand(objects.RequestSpec()))


class _Type(object):
    def __init__(self, id, name, qos_specs_id=None):
        self.id, self.name = id, name
        if qos_specs_id is not None:
            self.qos_specs_id = qos_specs_id


class CinderBoundaryTestCase(test.NoDBTestCase):
    """``CinderVolumeTypes`` over a fake cinderclient and Nova's
    ``cinder.API``.
    """

    def setUp(self):
        super(CinderBoundaryTestCase, self).setUp()
        client = self.client = type('Client', (), {})()
        client.volume_types = type('Types', (), {})()
        client.volume_types.list = lambda is_public=None: [
            _Type(uuids.gold, 'slo-gold', uuids.qos_gold),
            _Type(uuids.plain, 'plain')]
        client.volume_types.default = lambda: _Type(uuids.plain, 'plain')
        client.qos_specs = type('Qos', (), {})()
        client.qos_specs.get = lambda qos_id: type('Spec', (), dict(
            consumer='front-end', specs={'iosched:min_iops': '500'}))()
        self.stub_out('nova.volume.cinder.cinderclient',
                      lambda ctxt, *a, **kw: client)
        self.stub_out('nova.volume.cinder.API.get',
                      lambda self_, ctxt, volume_id, microversion=None: {
                          'id': volume_id, 'volume_type_id': 'slo-gold'})
        self.ctxt = nova_context.get_admin_context()
        self.slo = slo_request.CinderVolumeTypes()

    def test_types_by_name_or_id(self):
        want = ('front-end', {'iosched:min_iops': '500'})
        self.assertEqual(want, self.slo.type_qos(self.ctxt, 'slo-gold'))
        self.assertEqual(want, self.slo.type_qos(self.ctxt, uuids.gold))
        self.assertEqual((None, {}), self.slo.type_qos(self.ctxt, 'plain'))
        self.assertRaises(exception.VolumeTypeNotFound,
                          self.slo.type_qos, self.ctxt, 'nope')
        self.assertEqual(uuids.plain, self.slo.default_type(self.ctxt))
        self.assertEqual('slo-gold',
                         self.slo.volume_type(self.ctxt, uuids.vol))


class FilterTestCase(test.NoDBTestCase):
    """The filter through Nova's handler, with a stubbed resolver."""

    def setUp(self):
        super(FilterTestCase, self).setUp()
        state = self.useFixture(plugin_state.PluginState())
        self.clock, self.store = state.clock, state.store
        self.worker = state.worker
        self.recent = state.worker.explainer.recent
        self.demand = slo_lookup.Demand(iops=500.0,
                                         volumes=(('gold', 500.0),),
                                         source='build_request')
        self.stub_out('iosched.nova_plugin.slo_lookup.Resolver.demand',
                      lambda resolver, spec_obj, lookup: self.demand)
        self.handler = filters.HostFilterHandler()
        self.filters = [slo_capacity.SloCapacityFilter()]
        self.spec = objects.RequestSpec(instance_uuid=uuids.instance)

    def report(self, host, capacity, reserved, slo_source='cinder'):
        self.assertTrue(self.store.update(disk_report(
            host, capacity, reserved, ts=self.clock.now,
            slo_source=slo_source)))

    def passing(self, *hosts):
        states = [fakes.FakeHostState(h, h + '-node', {}) for h in hosts]
        return [h.host for h in self.handler.get_filtered_objects(
            self.filters, states, self.spec)]

    def test_all_filters_lists_it(self):
        self.assertIn(slo_capacity.SloCapacityFilter,
                      plugin_filters.all_filters())

    def test_room_full_unknown_and_missing(self):
        self.report('room', 1000, 500)      # 500 + 0 + 500 = 1000 <= 1000
        self.report('full', 1000, 501)      # 1001 > 1000
        self.report('unknown', 0, 0)        # capacity not measured
        hosts = ('room', 'full', 'unknown', 'missing')
        self.assertEqual(['room', 'unknown', 'missing'],
                         self.passing(*hosts))
        why = self.recent(host='full')[-1]
        self.assertEqual((False, uuids.instance), (why.passed, why.request))
        self.assertIn('reserved 501.0 + pending 0.0 + request 500.0 = '
                      '1001.0 IOPS, limit 1.00 x capacity 1000.0', why.reason)
        self.flags(missing_report_policy='reject', group='iosched')
        self.assertEqual(['room'], self.passing(*hosts))
        self.assertIn('capacity unknown',
                      self.recent(host='unknown')[-1].reason)
        self.assertIn('no fresh report (missing_report_policy=reject)',
                      self.recent(host='missing')[-1].reason)
        self.flags(slo_capacity_fraction=0.9, group='iosched')
        self.assertEqual([], self.passing(*hosts))

    def test_pending_floors_count_when_the_store_has_them(self):
        self.report('h1', 1000, 400)
        self.assertEqual(['h1'], self.passing('h1'))
        pending = type('P', (), {'reserved_iops': 200.0})()
        real = store.ReportStore.read_many

        def read_many(st, hosts):
            found, _, version, earliest = real(st, hosts)
            return found, [pending] * len(found), version, earliest

        self.stub_out('iosched.nova_plugin.store.ReportStore.read_many',
                      read_many)
        self.assertEqual([], self.passing('h1'))
        self.assertIn('pending 200.0',
                      self.recent(host='h1')[-1].reason)

    def test_lookup_failure_policy(self):
        self.report('h1', 1000, 1000)
        self.demand = slo_lookup.Demand(error='CinderConnectionFailed: x')
        self.assertEqual(['h1'], self.passing('h1'))
        self.assertIn('slo_lookup_failure_policy=pass',
                      self.recent(host='h1')[-1].reason)
        self.flags(slo_lookup_failure_policy='reject', group='iosched')
        self.assertEqual([], self.passing('h1'))

    def test_hosts_that_cannot_know_their_floors(self):
        # 'none': no SLO source on the agent; '': a report older than 1.5;
        # 'iotune': ceilings only, an upper bound, judged as known
        self.report('blind', 1000, 0, slo_source='none')
        self.report('old', 1000, 0, slo_source='')
        self.report('ceil', 1000, 400, slo_source='iotune')
        self.report('full', 1000, 600, slo_source='iotune')
        hosts = ('blind', 'old', 'ceil', 'full')
        with self.assertLogs('iosched.nova_plugin.slo_check',
                             'WARNING') as logs:
            self.assertEqual(['blind', 'old', 'ceil'], self.passing(*hosts))
            self.passing(*hosts)            # said once per host
        self.assertEqual(2, len(logs.records))
        self.assertIn("agent's [cinder] credentials", logs.output[0])
        self.assertIn('slo_source=none',
                      self.recent(host='blind')[-1].reason)
        self.flags(slo_unknown_source_policy='reject', group='iosched')
        self.assertEqual(['ceil'], self.passing(*hosts))
        why = self.recent(host='blind')[-1]
        self.assertFalse(why.passed)
        self.assertIn('cannot know the SLO floors attached here '
                      '(slo_source=none)', why.reason)
        self.assertIn('slo_unknown_source_policy=reject', why.reason)
        self.assertIn('unknown, report',
                      self.recent(host='old')[-1].reason)

    def test_requests_without_slo_volumes_pass_everywhere(self):
        self.report('full', 1000, 1000)
        self.demand = slo_lookup.Demand(volumes=(('plain', 0.0),))
        self.flags(missing_report_policy='reject', group='iosched')
        self.assertEqual(['full', 'missing'], self.passing('full', 'missing'))
        self.assertEqual([], self.recent())


class SloCapacityFunctionalTest(integrated_helpers.ProviderUsageBaseTestCase):
    """Boots through the API: two computes, reports with different room."""

    compute_driver = 'fake.MediumFakeDriver'
    microversion = 'latest'

    def setUp(self):
        self.flags(available_filters=[
            'nova.scheduler.filters.all_filters',
            'iosched.nova_plugin.filters.all_filters'],
            enabled_filters=['ComputeFilter', 'ComputeCapabilitiesFilter',
                             'ImagePropertiesFilter', 'SloCapacityFilter'],
            group='filter_scheduler')
        super(SloCapacityFunctionalTest, self).setUp()
        plugin_state.ignore_noload_warning()
        state = self.useFixture(plugin_state.PluginState())
        self.clock, self.store = state.clock, state.store
        self.worker = state.worker
        self.recent = state.worker.explainer.recent
        # Cinder's side: types the API validates, their QoS specs (the
        # boundary the resolver asks, admin-only in Cinder), and the type
        # of the fixture's existing bootable volume.
        self.stub_out('nova.volume.cinder.API.get_all_volume_types',
                      lambda *a, **kw: [{'id': TYPE_IDS.get(n, n),
                                         'name': n} for n in TYPES])
        self.stub_out(
            'iosched.nova_plugin.filters.slo_request.CinderVolumeTypes.'
            'type_qos',
            lambda slo, ctxt, ref: TYPES[ref])
        self.stub_out(
            'iosched.nova_plugin.filters.slo_request.CinderVolumeTypes.'
            'default_type',
            lambda slo, ctxt: 'lvm-1')
        self.volume_types = {cinder_fixture.CinderFixture.IMAGE_BACKED_VOL:
                             'slo-gold'}
        fake_get = cinder.API.get       # the CinderFixture's mock

        def get_with_type(api, ctxt, volume_id, microversion=None):
            volume = fake_get(ctxt, volume_id, microversion=microversion)
            volume['volume_type_id'] = self.volume_types.get(volume_id)
            return volume
        self.stub_out('nova.volume.cinder.API.get', get_with_type)
        self._start_compute('host1')
        self._start_compute('host2')

    def reports(self, **hosts):
        """host=(capacity, reserved) for each host."""
        self.clock.now += 1
        for host, (capacity, reserved) in hosts.items():
            self.assertTrue(self.store.update(disk_report(
                host, capacity, reserved, ts=self.clock.now)))

    def _bfv(self, expected_state='ACTIVE', **mapping):
        server = self._build_server(networks='none')
        server.pop('imageRef')
        mapping.setdefault('boot_index', 0)
        mapping.setdefault('destination_type', 'volume')
        server['block_device_mapping_v2'] = [mapping]
        server = self.api.post_server({'server': server})
        return self._wait_for_state_change(server, expected_state)

    def _new_volume(self, volume_type, expected_state='ACTIVE'):
        mapping = dict(source_type='image', uuid=IMAGE, volume_size=1)
        if volume_type:
            mapping['volume_type'] = volume_type
        return self._bfv(expected_state, **mapping)

    def test_slo_boot_lands_on_the_host_with_room(self):
        # host1: 800 + 500 > 1000; host2: 0 + 500 <= 1000
        self.reports(host1=(1000, 800), host2=(1000, 0))
        for _ in range(2):
            server = self._new_volume('slo-gold')
            self.assertEqual('host2', server['OS-EXT-SRV-ATTR:host'])
        why = self.recent(host='host1')[-1]
        self.assertFalse(why.passed)
        self.assertEqual(server['id'], why.request)
        self.assertIn('reserved 800.0 + pending 0.0 + request 500.0 = '
                      '1300.0 IOPS', why.reason)
        # an existing volume whose type is an SLO type, by its type's name
        server = self._bfv(
            source_type='volume',
            uuid=cinder_fixture.CinderFixture.IMAGE_BACKED_VOL)
        self.assertEqual('host2', server['OS-EXT-SRV-ATTR:host'])

    def test_no_host_with_room_is_no_valid_host(self):
        self.reports(host1=(1000, 800), host2=(1000, 600))
        server = self._new_volume('slo-gold', expected_state='ERROR')
        self.assertIn('No valid host', server['fault']['message'])
        self.assertEqual(
            {'host1': False, 'host2': False},
            {d.host: d.passed for d in self.recent(request=server['id'])})

    def test_non_slo_boots_are_unaffected(self):
        self.reports(host1=(1000, 1000), host2=(1000, 1000))
        self.flags(missing_report_policy='reject', group='iosched')
        self._create_server(networks='none')            # from an image
        self._new_volume('lvm-1')                       # a type without QoS
        self._new_volume(None)                          # Cinder's default
        self.assertEqual([], self.recent())

    def test_unknown_capacity_follows_missing_report_policy(self):
        self.reports(host1=(0, 0), host2=(0, 0))
        self._new_volume('slo-gold')
        self.flags(missing_report_policy='reject', group='iosched')
        self._new_volume('slo-gold', expected_state='ERROR')

    def test_cold_migration_reads_the_instance_mappings(self):
        self.reports(host1=(1000, 800), host2=(1000, 0))
        server = self._new_volume('slo-gold')
        self.assertEqual('host2', server['OS-EXT-SRV-ATTR:host'])
        # a move has no BuildRequest: forget the boot's answer, so the
        # filter reads the instance's mappings in its cell
        self.worker.resolver.clear()
        # host1 still full: no host for the move; the server stays put
        self.api.post_server_action(server['id'], {'migrate': None})
        self._wait_for_migration_status(server, ['error'])
        server = self._wait_for_state_change(server, 'ACTIVE')
        self.assertEqual('host2', server['OS-EXT-SRV-ATTR:host'])
        why = self.recent(host='host1', request=server['id'])[-1]
        self.assertFalse(why.passed)
        # room on host1 now: the move goes there
        self.reports(host1=(1000, 100), host2=(1000, 500))
        self._migrate_server(server)
        server = self._wait_for_state_change(server, 'VERIFY_RESIZE')
        self.assertEqual('host1', server['OS-EXT-SRV-ATTR:host'])
        demand = self.worker.resolver.demand(
            objects.RequestSpec(instance_uuid=server['id']),
            slo_request.NovaVolumeLookup())
        self.assertEqual((slo_lookup.SOURCE_INSTANCE, 500.0),
                         (demand.source, demand.iops))
