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
"""The agent's I/O inventories in Nova's functional harness.

Two fake computes (``fake.MediumFakeDriver``) and Nova's in-process
Placement (``PlacementFixture``, reached through wsgi-intercept). The
agent's ``InventoryPublisher`` goes the real keystoneauth1 way, built from
``[placement]`` options (``auth_type = admin_token`` at the fixture's
endpoint), and keeps host1's child provider ``host1:iosched``. Then:
servers whose flavors ask the custom classes (``resources:CUSTOM_...``)
get allocations against the child; Nova's resource tracker periodic and a
compute restart leave the child, its inventories and those allocations
alone; a capacity change updates the inventory; a class no longer offered
while a server uses it stays with reserved = total until the server is
gone; the I/O vCPUs a server measured by the agent uses without a slot
allocation are reserved, so the slots left are the ones really free.
"""

from nova.tests.functional import integrated_helpers

from iosched.contract import payload
from iosched.contract import payload_sections
from iosched.host_agent import placement_inventory as pi
from iosched.host_agent import placement_sizing as ps
from tests.nova import plugin_state


def _report(pcpus=4, capacity_iops=5000.0, mechanism='slice',
            supported=True, io_vcpus=0):
    return payload.HostReport(
        host='host1', ts=100.0, seq=1, report_interval=1.0, pcpus=pcpus,
        io_vcpus=io_vcpus,
        lsvm=payload_sections.LsvmState(supported=supported,
                                        mechanism=mechanism, max_per_pcpu=3),
        disk=payload_sections.DiskState(capacity_iops=capacity_iops))


def _totals(inventories):
    return {rc: (inv['total'], inv['reserved'])
            for rc, inv in inventories.items()}


def _resources(allocations):
    """{provider: resources} (without the providers' generations)."""
    return {rp: a['resources'] for rp, a in allocations.items()}


class IoInventoryTestCase(integrated_helpers.ProviderUsageBaseTestCase):

    compute_driver = 'fake.MediumFakeDriver'

    def setUp(self):
        super().setUp()
        plugin_state.ignore_noload_warning()
        self._start_compute('host1')
        self._start_compute('host2')
        self.rp1 = self._get_provider_uuid_by_host('host1')
        conf = plugin_state.agent_placement_conf(
            self, {'io_inventory': {'publish': 'true'}})
        self.publisher = pi.InventoryPublisher(
            lambda: pi.PlacementInventories(pi.placement_adapter(conf)),
            'host1', options=ps.Options.from_conf(conf.io_inventory))
        self.io_flavor = self._create_flavor(
            name='io.small', memory_mb=512, vcpu=2, disk=1, ephemeral=0,
            extra_spec={'resources:' + ps.IO_VCPU: '2',
                        'resources:' + ps.LSVM_BW: '1000'})
        self.slo_flavor = self._create_flavor(
            name='slo.small', memory_mb=512, vcpu=1, disk=1, ephemeral=0,
            extra_spec={'resources:' + ps.SLO_IOPS: '1000'})

    def _publish(self, report):
        self.publisher.want_from_report(report)
        self.assertTrue(self.publisher.sync(),
                        self.publisher.state.last_error)

    def _child(self):
        tree = self._get_all_rps_in_a_tree(self.rp1)
        children = [rp for rp in tree if rp['name'] == 'host1:iosched']
        self.assertEqual(1, len(children), tree)
        return children[0]

    def test_child_inventories_survive_nova_and_serve_allocations(self):
        self._publish(_report())
        child = self._child()
        self.assertEqual(self.rp1, child['parent_provider_uuid'])
        self.assertEqual(self.rp1, child['root_provider_uuid'])
        inv = self._get_provider_inventory(child['uuid'])
        self.assertEqual({ps.IO_VCPU: (4, 0), ps.LSVM_BW: (6000, 0),
                          ps.SLO_IOPS: (5000, 0)}, _totals(inv))
        self.assertEqual(ps.inventory(6000), inv[ps.LSVM_BW])

        # Only host1 has the classes: the servers go there, and their
        # allocations are split between the compute node and the child.
        io = self._create_server(name='io', flavor_id=self.io_flavor,
                                 networks='none')
        slo = self._create_server(name='slo', flavor_id=self.slo_flavor,
                                  networks='none')
        for server in (io, slo):
            self.assertEqual('host1', server['OS-EXT-SRV-ATTR:host'])
        allocations = {
            s['id']: _resources(self._get_allocations_by_server_uuid(s['id']))
            for s in (io, slo)}
        self.assertEqual({ps.IO_VCPU: 2, ps.LSVM_BW: 1000},
                         allocations[io['id']][child['uuid']])
        self.assertEqual({ps.SLO_IOPS: 1000},
                         allocations[slo['id']][child['uuid']])
        self.assertEqual({ps.IO_VCPU: 2, ps.LSVM_BW: 1000,
                          ps.SLO_IOPS: 1000},
                         self._get_provider_usages(child['uuid']))

        # Nova's resource tracker periodic, then a restart of host1's
        # nova-compute (a new resource tracker reading the whole tree):
        # the child, its inventories and the allocations are untouched.
        generation = self._get_resource_provider_by_uuid(
            child['uuid'])['generation']
        self._run_periodics()
        self.computes['host1'] = self.restart_compute_service(
            self.computes['host1'])
        self._run_periodics()
        after = self._child()
        self.assertEqual(dict(child, generation=generation), after)
        self.assertEqual(inv, self._get_provider_inventory(child['uuid']))
        self.assertEqual(generation, self._get_resource_provider_by_uuid(
            child['uuid'])['generation'])
        for server in (io, slo):
            self.assertEqual(allocations[server['id']],
                             _resources(self._get_allocations_by_server_uuid(
                                 server['id'])))
        self._publish(_report())                # a recheck: no write
        self.assertEqual(1, self.publisher.state.changes)

        # The measured disk capacity grows: the inventory follows, and
        # Nova's periodic (its cache still holds 5000) does not undo it.
        self._publish(_report(capacity_iops=8000.0))
        self._run_periodics()
        self.assertEqual(
            (8000, 0),
            _totals(self._get_provider_inventory(child['uuid']))[ps.SLO_IOPS])
        self.assertEqual(allocations[slo['id']], _resources(
            self._get_allocations_by_server_uuid(slo['id'])))

    def test_a_class_in_use_is_kept_full_until_its_servers_are_gone(self):
        self._publish(_report())
        child = self._child()['uuid']
        slo = self._create_server(name='slo', flavor_id=self.slo_flavor,
                                  networks='none')
        self.assertEqual('host1', slo['OS-EXT-SRV-ATTR:host'])

        # The capacity is unknown again: SLO_IOPS must go, but slo uses it.
        self._publish(_report(capacity_iops=0.0))
        self.assertEqual([ps.SLO_IOPS], self.publisher.last_outcome.held)
        inv = self._get_provider_inventory(child)
        self.assertEqual((5000, 5000),
                         _totals(inv)[ps.SLO_IOPS])
        self.assertEqual({ps.SLO_IOPS: 1000},
                         self._get_allocations_by_server_uuid(
                             slo['id'])[child]['resources'])
        full = self._create_server(name='no-room',
                                   flavor_id=self.slo_flavor,
                                   networks='none', expected_state='ERROR')
        self.assertIn('No valid host', full['fault']['message'])
        self._publish(_report(capacity_iops=0.0))   # recheck: still held
        self.assertIn(ps.SLO_IOPS, self._get_provider_inventory(child))

        # The server is deleted: the next recheck deletes the class.
        self._delete_server(slo)
        self._publish(_report(capacity_iops=0.0))
        self.assertEqual({ps.IO_VCPU: (4, 0), ps.LSVM_BW: (6000, 0)},
                         _totals(self._get_provider_inventory(child)))
        self.assertEqual([], self.publisher.last_outcome.held)

    def test_unclaimed_io_vcpus_are_reserved(self):
        # A 2-vCPU server whose flavor has no resources: key (booted before
        # the keys were set) turns I/O-bound: the agent's report counts its
        # 2 vCPUs as I/O, and no allocation of the child claims them.
        self._publish(_report())
        child = self._child()['uuid']
        plain = self._create_flavor(name='plain.small', memory_mb=512,
                                    vcpu=2, disk=1, ephemeral=0)
        old = self._create_server(name='old', flavor_id=plain,
                                  networks='none', az='nova:host1')
        self.assertEqual('host1', old['OS-EXT-SRV-ATTR:host'])
        self.assertEqual(0, self._get_provider_usages(child).get(
            ps.IO_VCPU, 0))                     # no slot held
        self._publish(_report(io_vcpus=2))
        self.assertEqual({ps.IO_VCPU: (4, 2), ps.LSVM_BW: (6000, 0),
                          ps.SLO_IOPS: (5000, 0)},
                         _totals(self._get_provider_inventory(child)))

        # The 2 slots left take one io.small (which claims them), and the
        # agent's next report measures both servers: 4 I/O vCPUs, 2
        # claimed, the reserve stays 2 (no write).
        io = self._create_server(name='io', flavor_id=self.io_flavor,
                                 networks='none')
        self.assertEqual('host1', io['OS-EXT-SRV-ATTR:host'])
        changes = self.publisher.state.changes
        self._publish(_report(io_vcpus=4))
        self.assertEqual(changes, self.publisher.state.changes)
        self.assertEqual(2, self._get_provider_usages(child)[ps.IO_VCPU])
        self.assertEqual((4, 2), _totals(
            self._get_provider_inventory(child))[ps.IO_VCPU])

        # Without the reserve another io.small would fit (4 slots, 2 used);
        # with it the host is full: NoValidHost.
        full = self._create_server(name='no-room', flavor_id=self.io_flavor,
                                   networks='none', expected_state='ERROR')
        self.assertIn('No valid host', full['fault']['message'])

        # The unclaimed server is gone: the reserve goes, the boot fits.
        self._delete_server(old)
        self._publish(_report(io_vcpus=2))
        self.assertEqual((4, 0), _totals(
            self._get_provider_inventory(child))[ps.IO_VCPU])
        again = self._create_server(name='room', flavor_id=self.io_flavor,
                                    networks='none')
        self.assertEqual('host1', again['OS-EXT-SRV-ATTR:host'])

    def test_background_thread_creates_the_child_once_nova_compute_has(self):
        missing = pi.InventoryPublisher(self.publisher._factory, 'host3')
        missing.want_from_report(_report())
        self.assertFalse(missing.sync())
        self.assertIn("no resource provider named 'host3'",
                      missing.state.last_error)
        self.assertIn('[io_inventory] provider_name',
                      missing.state.last_error)

        self._start_compute('host3')
        pub = pi.InventoryPublisher(self.publisher._factory, 'host3',
                                    retry_initial=0.01).start()
        self.addCleanup(pub.stop)
        pub.report_host_io(_report(pcpus=2, capacity_iops=0.0,
                                   supported=False))
        self.assertTrue(pub.wait_settled(60), pub.state.last_error)
        pub.stop()
        rp3 = self._get_provider_uuid_by_host('host3')
        child = self._get_provider_uuid_by_name('host3:iosched')
        self.assertEqual(
            rp3, self._get_resource_provider_by_uuid(child)[
                'parent_provider_uuid'])
        self.assertEqual({ps.IO_VCPU: (2, 0)},
                         _totals(self._get_provider_inventory(child)))

    def test_deleting_the_compute_service_deletes_the_child_too(self):
        # Nova deletes a compute node's provider tree children first, so
        # the agent's child does not block `openstack compute service
        # delete`; the agent then waits for a new compute node provider.
        self._publish(_report())
        child = self._child()['uuid']
        self.computes['host1'].stop()
        service = self.admin_api.get_services(binary='nova-compute',
                                              host='host1')[0]
        self.admin_api.api_delete('/os-services/%s' % service['id'])
        names = [rp['name'] for rp in self._get_all_providers()]
        self.assertNotIn('host1', names)
        self.assertNotIn('host1:iosched', names)
        self.assertNotIn(child, [rp['uuid']
                                 for rp in self._get_all_providers()])
        self.assertFalse(self.publisher.sync())
        self.assertIn("no resource provider named 'host1'",
                      self.publisher.state.last_error)
