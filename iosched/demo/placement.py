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
"""Placement of the embedded default through Nova's own scheduler code.

Each simulated compute host is a real ``nova.scheduler.host_manager.
HostState``; a request is a real ``nova.objects.RequestSpec``; filters and
weighers are loaded by ``HostFilterHandler`` / ``HostWeightHandler`` from
class or function paths, exactly as nova-scheduler does, and
``HostState.consume_from_request`` accounts each placement.

Two things stand in for parts of a cloud the demo does not run:

* Placement (the service): a VCPU/RAM capacity check with Nova's
  allocation ratios, as the allocation candidates query would do;
* ``ComputeFilter`` (it asks the servicegroup API whether nova-compute is
  up): every simulated host is up, so it is left out.

Stock = Nova's default filters (less ComputeFilter) and
``nova.scheduler.weights.all_weighers``; iosched adds
``iosched.nova_plugin.filters.all_filters`` and
``iosched.nova_plugin.weighers.all_weighers``, which read the
``iosched.nova_plugin.state.SchedulerState`` the cloud gives (its store fed by
the agents' reports, on the simulated clock): installed with
``iosched.nova_plugin.state.use_state`` while the classes load and while they
place.
"""

import contextlib
import dataclasses
import uuid as uuid_mod

import nova.conf
from nova import objects
from nova.scheduler import filters as nova_filters
from nova.scheduler import host_manager
from nova.scheduler import weights as nova_weights

from iosched.nova_plugin import state as plugin_state

CONF = nova.conf.CONF

STOCK_FILTERS = ('ComputeCapabilitiesFilter', 'ImagePropertiesFilter',
                 'ServerGroupAntiAffinityFilter',
                 'ServerGroupAffinityFilter')
IOSCHED_FILTERS = ('IoDensityFilter', 'LsvmFilter')
_CONFIGURED = []


def setup_nova():
    """Parse Nova's configuration once (defaults; no config files)."""
    if _CONFIGURED:
        return
    objects.register_all()
    CONF([], project='nova', default_config_files=[])
    import iosched.nova_plugin.conf as plugin_conf
    plugin_conf.register_opts(CONF)
    _CONFIGURED.append(True)


@dataclasses.dataclass
class Decision:
    server: str
    host: str                   # '' when no valid host
    passed: tuple               # hosts that passed capacity and filters
    rejected: dict              # host -> reason
    weights: dict               # host -> final weight
    iosched_weights: dict       # host -> raw IoStrengthWeigher value


def make_host_state(host, ram_mb):
    h = host_manager.HostState(host.name, host.name, 'cell1')
    h.uuid = str(uuid_mod.uuid5(uuid_mod.NAMESPACE_DNS, host.name))
    h.total_usable_ram_mb = ram_mb
    h.free_ram_mb = ram_mb
    h.total_usable_disk_gb = 1000
    h.free_disk_mb = 1000 * 1024
    h.disk_mb_used = 0
    h.vcpus_total = host.pcpus
    h.vcpus_used = 0
    h.cpu_allocation_ratio = host.cpu_allocation_ratio
    h.ram_allocation_ratio = 1.0
    h.disk_allocation_ratio = 1.0
    h.hypervisor_type = 'QEMU'
    h.hypervisor_version = 7002000
    h.hypervisor_hostname = host.name
    return h


def make_request_spec(server, index):
    f = server.flavor
    flavor = objects.Flavor(name=f.name, flavorid=f.name, vcpus=f.vcpus,
                            memory_mb=f.ram_mb, root_gb=0, ephemeral_gb=0,
                            swap=0, extra_specs=dict(f.extra_specs))
    return objects.RequestSpec(
        flavor=flavor, image=objects.ImageMeta.from_dict({}),
        num_instances=1,
        instance_uuid=str(uuid_mod.uuid5(uuid_mod.NAMESPACE_URL,
                                         'iosched-demo/%d/%s' % (
                                             index, server.name))),
        project_id='demo', user_id='demo', scheduler_hints={},
        ignore_hosts=None, force_hosts=None, force_nodes=None,
        instance_group=None, availability_zone=None, is_bfv=False,
        numa_topology=None, pci_requests=None)


class Scheduler(object):
    """Filters and weighers as nova-scheduler runs them; the iosched ones
    on ``state`` (a ``iosched.nova_plugin.state.SchedulerState``).
    """

    def __init__(self, with_iosched, state=None):
        setup_nova()
        self.with_iosched = with_iosched
        self.state = state
        with self._plugin_state():
            self._load(with_iosched)

    def _plugin_state(self):
        if self.state is None:
            return contextlib.nullcontext()
        return plugin_state.use_state(self.state)

    def _load(self, with_iosched):
        fh = nova_filters.HostFilterHandler()
        paths = ['nova.scheduler.filters.all_filters']
        wpaths = ['nova.scheduler.weights.all_weighers']
        names = STOCK_FILTERS
        if with_iosched:
            paths.append('iosched.nova_plugin.filters.all_filters')
            wpaths.append('iosched.nova_plugin.weighers.all_weighers')
            names = names + IOSCHED_FILTERS
        classes = {c.__name__: c for c in fh.get_matching_classes(paths)}
        self.filter_handler = fh
        self.filters = [classes[n]() for n in names]
        wh = nova_weights.HostWeightHandler()
        self.weight_handler = wh
        self.weighers = [c() for c in wh.get_matching_classes(wpaths)]

    @staticmethod
    def _capacity(h, spec):
        f = spec.flavor
        vcpu_limit = h.vcpus_total * h.cpu_allocation_ratio
        if h.vcpus_used + f.vcpus > vcpu_limit:
            return 'placement: VCPU %d+%d > %g' % (h.vcpus_used, f.vcpus,
                                                   vcpu_limit)
        if f.memory_mb > h.free_ram_mb:
            return 'placement: RAM %d MB > %d MB free' % (f.memory_mb,
                                                          h.free_ram_mb)
        return None

    def select(self, server, spec, host_states):
        with self._plugin_state():
            return self._select(server, spec, host_states)

    def _select(self, server, spec, host_states):
        rejected = {}
        candidates = []
        for h in host_states:
            reason = self._capacity(h, spec)
            if reason:
                rejected[h.host] = reason
            else:
                candidates.append(h)
        passed = list(candidates)
        for flt in self.filters:
            before = {h.host for h in passed}
            passed = list(self.filter_handler.get_filtered_objects(
                [flt], passed, spec) or [])
            for name in before - {h.host for h in passed}:
                rejected[name] = flt.__class__.__name__ + self._why(name)
        weights = {}
        raw = {}
        host = ''
        if passed:
            weighed = self.weight_handler.get_weighed_objects(
                self.weighers, passed, spec)
            weights = {w.obj.host: round(w.weight, 4) for w in weighed}
            host = weighed[0].obj.host
            for w in self.weighers:
                if w.__class__.__name__ == 'IoStrengthWeigher':
                    raw = {h.host: round(w._weigh_object(h, spec), 4)
                           for h in passed}
            chosen = next(h for h in passed if h.host == host)
            chosen.consume_from_request(spec)
        return Decision(server=server.name, host=host,
                        passed=tuple(h.host for h in passed),
                        rejected=rejected, weights=weights,
                        iosched_weights=raw)

    def _why(self, host):
        if self.state is None:
            return ''
        last = self.state.explainer.recent(host=host, stage='filter',
                                           limit=1)
        return ': ' + last[0].reason if last and last[0].reason else ''
