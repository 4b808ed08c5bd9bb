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
"""The in-flight estimate on real Nova HostState objects.

Nova's scheduler calls ``HostState.consume_from_request`` on the host it
chose and keeps using the same HostState for the next requests; the
plugin's filters and weigher see that growth as placements since the
host's last report (``iosched.nova_plugin.inflight``), with no help from the
demo's ``note_placement``.
"""

from nova import objects
from nova.scheduler import host_manager
from nova import test
from oslo_utils.fixture import uuidsentinel as uuids

from iosched.nova_plugin.filters import io_density
from iosched.nova_plugin.filters import lsvm
from iosched.nova_plugin.weighers import io_strength
from tests.nova import plugin_state
from tests.unit.nova_plugin import reports


def _spec(vcpus, **extra_specs):
    flavor = objects.Flavor(name='f', vcpus=vcpus, memory_mb=512, root_gb=1,
                            ephemeral_gb=0, swap=0, extra_specs=extra_specs)
    return objects.RequestSpec(flavor=flavor, instance_uuid=uuids.instance,
                               num_instances=1, instance_group=None,
                               numa_topology=None, pci_requests=None)


def _host_state(name):
    h = host_manager.HostState(name, name + '-node', 'cell1')
    h.vcpus_total, h.vcpus_used, h.num_instances = 4, 3, 2
    h.free_ram_mb, h.free_disk_mb = 65536, 1 << 20
    return h


class InflightTestCase(test.NoDBTestCase):

    def setUp(self):
        super(InflightTestCase, self).setUp()
        state = self.useFixture(plugin_state.PluginState())
        self.clock, self.store = state.clock, state.store
        self.worker = state.worker
        self.recent = state.worker.explainer.recent
        self.host = _host_state('h1')

    def report(self, **kw):
        kw.setdefault('ts', self.clock.now)
        self.assertTrue(self.store.update(reports.report(host='h1', **kw)))

    def test_consumed_vcpus_count_until_the_next_report(self):
        # 4 pCPUs, 2 I/O vCPUs reported, bound 1.0, a 1-vCPU io request:
        #   (2 + 0 + 1)/4 = 0.75, then (2 + 1 + 1)/4 = 1.0, then
        #   (2 + 2 + 1)/4 = 1.25 > 1.0 with 2 pending (mixed profile)
        self.report(pcpus=4, io_vcpus=2)
        flt = io_density.IoDensityFilter()
        spec = _spec(1, **{'iosched:io_profile': 'io'})
        self.assertTrue(flt.host_passes(self.host, spec))
        self.host.consume_from_request(spec)
        self.assertTrue(flt.host_passes(self.host, spec))
        self.host.consume_from_request(spec)
        self.assertFalse(flt.host_passes(self.host, spec))
        why = self.recent(host='h1', stage='filter')[-1].reason
        self.assertIn('1.250 > 1.000 (reported 2 + pending 2 + request 1',
                      why)
        self.assertIn('2 placement(s) of 2 vCPU(s)', why)
        self.assertIn('inflight_vcpu_profile=mixed', why)
        # 'cpu' ignores them for I/O density
        self.flags(inflight_vcpu_profile='cpu', group='iosched')
        self.assertTrue(flt.host_passes(self.host, spec))
        self.flags(inflight_vcpu_profile='mixed', group='iosched')
        # a newer report (which includes those VMs) resets the baseline
        self.report(pcpus=4, io_vcpus=2, ts=self.clock.now + 1)
        self.assertTrue(flt.host_passes(self.host, spec))

    def test_noted_placements_are_not_counted_twice(self):
        self.report(pcpus=4, io_vcpus=2)
        flt = io_density.IoDensityFilter()
        spec = _spec(1, **{'iosched:io_profile': 'io'})
        self.assertTrue(flt.host_passes(self.host, spec))
        self.host.consume_from_request(spec)
        self.store.note_placement('h1', io_vcpus=1)
        # (2 + 1 + 1)/4 = 1.0: one pending, not two
        self.assertTrue(flt.host_passes(self.host, spec))

    def test_weigher_sees_pending_strength(self):
        # (0.4 + 0 + 2.0)/4 = 0.6, after a 2-vCPU placement of unknown
        # flavor counted as mixed (+1.0): (0.4 + 1.0 + 2.0)/4 = 0.85
        self.report(pcpus=4, io_strength_total=0.4)
        weigher = io_strength.IoStrengthWeigher()
        spec = _spec(2, **{'iosched:io_profile': 'io'})
        self.assertAlmostEqual(-0.6, weigher._weigh_object(self.host, spec))
        self.host.consume_from_request(_spec(2))
        self.assertAlmostEqual(-0.85,
                               weigher._weigh_object(self.host, spec))

    def test_lsvm_filter_counts_pending_vcpus_as_non_lsvm(self):
        # 12 ordinary vCPUs reported on 4 pCPUs: n_p = 3, 3*1 ms <= 3 ms;
        # after Nova placed 4 more vCPUs: n_p = ceil(16/4) = 4 > 3
        self.report(pcpus=4, lsvm=reports.lsvm(nlsvm_vcpus=12))
        flt = lsvm.LsvmFilter()
        spec = _spec(1, **{'iosched:latency_sensitive': 'true',
                           'iosched:latency_ms': '2'})
        self.assertTrue(flt.host_passes(self.host, spec))
        self.host.consume_from_request(_spec(4))
        self.assertFalse(flt.host_passes(self.host, spec))
        why = self.recent(host='h1', stage='filter')[-1].reason
        self.assertIn('n_p=ceil((reported 12 + pending 4)/4)=4', why)
