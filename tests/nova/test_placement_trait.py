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
"""The LSVM trait in Nova's functional harness: Placement, API, scheduler.

Two fake computes (``fake.MediumFakeDriver``) and Nova's in-process
Placement (``PlacementFixture``, reached through wsgi-intercept). The
agent's ``TraitPublisher`` goes the real keystoneauth1 way, built from
``[placement]`` options (``auth_type = admin_token`` pointed at the
fixture's endpoint, token ``admin`` for its noauth2 middleware), and marks
host1's compute node provider. Then: Nova's resource tracker periodic,
forced to rewrite the provider's traits, keeps the trait; a flavor with
``trait:CUSTOM_IOSCHED_LSVM=required`` lands on host1 only; once the agent
reports LSVMs unsupported, such a boot fails with NoValidHost. With the
I/O inventory publisher beside it (``CUSTOM_IOSCHED_LSVM_BW`` on each
node's child ``<node>:iosched``), a flavor asking the trait and bandwidth
lands only where both are, until the bandwidth is used up.
"""

from nova.tests.functional import integrated_helpers

from iosched.contract import payload
from iosched.contract import payload_sections
from iosched.host_agent import placement_inventory
from iosched.host_agent import placement_sizing
from iosched.host_agent import placement_trait
from tests.nova import plugin_state

TRAIT = 'CUSTOM_IOSCHED_LSVM'
LSVM_BW = placement_sizing.LSVM_BW


class LsvmTraitTestCase(integrated_helpers.ProviderUsageBaseTestCase):

    compute_driver = 'fake.MediumFakeDriver'

    def setUp(self):
        super().setUp()
        plugin_state.ignore_noload_warning()
        self._start_compute('host1')
        self._start_compute('host2')
        self.rp1 = self._get_provider_uuid_by_host('host1')
        self.rp2 = self._get_provider_uuid_by_host('host2')
        self.conf = conf = plugin_state.agent_placement_conf(
            self, {'lsvm_trait': {'publish': 'true'}})
        self.publisher = placement_trait.TraitPublisher(
            lambda: placement_trait.PlacementTraits(
                placement_trait.placement_adapter(conf)), 'host1')
        self.lsvm_flavor = self._create_flavor(
            name='lsvm.small', memory_mb=512, vcpu=1, disk=1, ephemeral=0,
            extra_spec={'trait:' + TRAIT: 'required',
                        'iosched:latency_sensitive': 'true'})
        self.plain_flavor = self._create_flavor(
            name='plain.small', memory_mb=512, vcpu=1, disk=1, ephemeral=0)

    def _publish(self, supported):
        self.publisher.want(supported)
        self.assertTrue(self.publisher.sync(),
                        self.publisher.state.last_error)

    def test_trait_is_published_kept_by_nova_and_required_by_the_flavor(self):
        before = set(self._get_provider_traits(self.rp1))
        self.assertIn('COMPUTE_VOLUME_MULTI_ATTACH', before)
        self._publish(True)
        self.assertEqual(before | {TRAIT},
                         set(self._get_provider_traits(self.rp1)))
        self.assertNotIn(TRAIT, self._get_provider_traits(self.rp2))
        self.assertEqual(1, self.publisher.state.changes)

        # Make nova-compute rewrite host1's traits from its cached (stale)
        # view: it loses a capability. Its PUT conflicts, it re-reads, and
        # keeps the trait it does not own.
        driver = self.computes['host1'].driver
        driver.capabilities = dict(driver.capabilities,
                                   supports_multiattach=False)
        self._run_periodics()
        after = set(self._get_provider_traits(self.rp1))
        self.assertNotIn('COMPUTE_VOLUME_MULTI_ATTACH', after)  # Nova wrote
        self.assertIn(TRAIT, after)
        self._publish(True)                # a recheck: nothing to change
        self.assertEqual(1, self.publisher.state.changes)

        # Nova spreads plain servers (RAM weigher); LSVMs all go to host1.
        for i in range(3):
            server = self._create_server(
                name='lsvm-%d' % i, flavor_id=self.lsvm_flavor,
                networks='none')
            self.assertEqual('host1', server['OS-EXT-SRV-ATTR:host'])
        plain = self._create_server(name='plain', flavor_id=self.plain_flavor,
                                    networks='none')
        self.assertEqual('host2', plain['OS-EXT-SRV-ATTR:host'])

        # vslicer switched off on host1: the agent removes the trait.
        self._publish(False)
        self.assertEqual(after - {TRAIT},
                         set(self._get_provider_traits(self.rp1)))
        server = self._create_server(name='lsvm-none',
                                     flavor_id=self.lsvm_flavor,
                                     networks='none', expected_state='ERROR')
        self.assertIn('No valid host', server['fault']['message'])

    def test_background_thread_waits_for_the_provider_then_publishes(self):
        # A provider name nova-compute has not created yet, then host2's.
        missing = placement_trait.TraitPublisher(
            self.publisher._factory, 'host3', retry_initial=0.01,
            retry_max=0.05)
        missing.want(True)
        self.assertFalse(missing.sync())
        self.assertIn("no resource provider named 'host3'",
                      missing.state.last_error)

        pub = placement_trait.TraitPublisher(
            self.publisher._factory, 'host2').start()
        self.addCleanup(pub.stop)
        pub.want(True)
        self.assertTrue(pub.wait_settled(60), pub.state.last_error)
        self.assertIn(TRAIT, self._get_provider_traits(self.rp2))
        pub.stop()
        self.assertFalse(pub._thread.is_alive())
        self.assertIn(TRAIT, self._get_provider_traits(self.rp2))
        server = self._create_server(flavor_id=self.lsvm_flavor,
                                     networks='none')
        self.assertEqual('host2', server['OS-EXT-SRV-ATTR:host'])

    def test_trait_on_the_node_and_bandwidth_on_the_child_together(self):
        # The trait (compute node) and the I/O inventories (its child
        # <node>:iosched) side by side: an LSVM flavor asking both lands
        # where both are, until the child's LSVM bandwidth is used up.
        self._publish(True)
        inventories = {}
        for host, pcpus in (('host1', 1), ('host2', 4)):
            inv = placement_inventory.InventoryPublisher(
                lambda: placement_inventory.PlacementInventories(
                    placement_inventory.placement_adapter(self.conf)), host)
            inv.want(placement_sizing.wanted_inventories(
                payload.HostReport(
                    host=host, ts=1.0, seq=1, report_interval=1.0,
                    pcpus=pcpus,
                    lsvm=payload_sections.LsvmState(max_per_pcpu=3)),
                placement_sizing.Options())[0])
            self.assertTrue(inv.sync(), inv.state.last_error)
            inventories[host] = inv.state.wanted
        self.assertEqual(1500, inventories['host1'][LSVM_BW]['total'])
        self.assertEqual(6000, inventories['host2'][LSVM_BW]['total'])
        flavor = self._create_flavor(
            name='lsvm.bw', memory_mb=512, vcpu=1, disk=1, ephemeral=0,
            extra_spec={'trait:' + TRAIT: 'required',
                        'resources:' + LSVM_BW: '500',
                        'iosched:latency_sensitive': 'true'})
        for i in range(3):
            server = self._create_server(name='lsvm-bw-%d' % i,
                                         flavor_id=flavor, networks='none')
            self.assertEqual('host1', server['OS-EXT-SRV-ATTR:host'])
        server = self._create_server(name='lsvm-bw-full', flavor_id=flavor,
                                     networks='none', expected_state='ERROR')
        self.assertIn('No valid host', server['fault']['message'])
