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
"""The scheduler race of issue 16 in Nova's functional harness.

Used by tests/nova/test_placement_race.py and bench/nova_scale/race.py.
``RaceCase`` starts the API, a conductor, ``workers`` scheduler services
and ``hosts`` fake computes (``fake.MediumFakeDriver``) with Nova's
in-process Placement, stores in every worker a report per host saying it
has room for ``room_per_host`` io servers (right after a report), then
boots ``boots`` io servers with separate POSTs, all at once, and counts
the hosts whose I/O vCPUs exceed floor(pcpus * max_io_vcpus_per_pcpu).

How the harness stands in for separate scheduler processes:

* **Own state per worker.** Real workers are separate processes, each
  with its own ``iosched.nova_plugin.state.SchedulerState`` (its store filled
  by the fanout reports, each report's figures and in-flight baselines);
  ``iosched.nova_plugin.state.current`` hands out the one of this process.
  ``PerWorkerPlugin`` gives each scheduler service a state of its own,
  wraps its ``select_destinations`` (the RPC endpoint) so the green thread
  serving a request is tagged with its worker, and patches
  ``state.current`` to hand out that worker's state (a shared one would
  also reset the baselines each time the workers' copies of a report
  alternate). Each worker has its own ``HostManager`` (its own HostStates,
  as in Nova). A filter call outside a tagged request counts in
  ``untagged`` (0 in every run).
* **Requests spread over workers.** oslo.messaging's fake driver lets the
  first listener that polls the topic queue take a message, so one worker
  would usually take a whole burst. RabbitMQ hands a shared queue's
  messages to its consumers in turn; ``RoundRobin`` does the same by
  sending each ``select_destinations`` call to the next scheduler server.
* **The window, made deterministic.** In production the claim in
  Placement is an HTTP call: the worker's green thread yields there, before
  ``consume_from_request`` records the placement in its HostState, and
  another worker sees the placement only after the compute node record (or
  the next agent report) shows it. In the harness, how far requests
  overlap depends on where the in-process stack happens to yield (ungated
  bursts over-commit too, by an amount that may vary). ``ClaimGate`` holds
  each request's first claim until every request of the burst has reached
  its claim (or ``gate_timeout`` passed): every request decides on the
  state right after the report, which is what a burst within one report
  interval sees. ``gate = False`` measures the harness's own interleaving.
* **Claims.** With ``claims = True`` every compute node gets a child
  provider ``<node>:iosched`` with ``CUSTOM_IOSCHED_IO_VCPU`` inventory
  floor(pcpus * max_io_vcpus_per_pcpu), published by the agent's own
  ``iosched.host_agent.placement_inventory.InventoryPublisher`` from the same
  report (``[io_inventory]`` and ``[placement]`` of a host-agent.conf
  pointed at the in-process Placement, as
  tests/nova/test_placement_inventory.py does), and the io flavor carries the
  ``resources:`` keys of ``iosched.nova_plugin.placement_resources``, set
  through the API at microversion
  2.86 (Nova's ``resources:`` validator).
"""

import collections
import itertools
import math
import os
import threading
import time

import fixtures
from nova.scheduler import rpcapi as scheduler_rpcapi
from nova.tests import fixtures as nova_fixtures
from nova.tests.functional import integrated_helpers

from iosched.host_agent import placement_inventory
from iosched.host_agent import placement_sizing
from iosched.nova_plugin import placement_resources
from iosched.nova_plugin import state
from tests.nova import plugin_state
from tests.unit.nova_plugin import reports

IO_VCPU = placement_resources.IO_VCPU


class PerWorkerPlugin(fixtures.Fixture):
    """Each scheduler worker's own SchedulerState."""

    def __init__(self, clock):
        super().__init__()
        self.clock = clock
        self.states = {}
        self.requests = collections.Counter()
        self.untagged = 0

    def _setUp(self):
        # created after nova.tests.functional monkey-patched threading:
        # local to each green thread
        self._local = threading.local()
        self.useFixture(fixtures.MonkeyPatch(
            'iosched.nova_plugin.state.current',
                                             self.current))

    def add(self, service):
        """Give ``service`` (a scheduler) its own state."""
        name = service.host
        self.states[name] = state.SchedulerState(clock=self.clock)
        manager = service.manager
        real = manager.select_destinations

        def select_destinations(*args, **kwargs):
            self._local.worker = name
            self.requests[name] += 1
            try:
                return real(*args, **kwargs)
            finally:
                self._local.worker = None
        # the RPC dispatcher looks the method up on the endpoint per call
        manager.select_destinations = select_destinations

    def worker(self):
        name = getattr(self._local, 'worker', None)
        if name is None:
            self.untagged += 1
            name = next(iter(self.states))
        return name

    def current(self):
        """``state.current()`` of the worker serving this green thread."""
        return self.states[self.worker()]

    def report(self, host, **kw):
        """The agent's fanout: the same report reaches every worker."""
        for worker in self.states.values():
            assert worker.store.update(reports.report(host=host, **kw))


class RoundRobin(fixtures.Fixture):
    """Send each select_destinations call to the next scheduler server."""

    def __init__(self, servers):
        super().__init__()
        self._next = itertools.cycle(servers)
        self._lock = threading.Lock()

    def _setUp(self):
        real = scheduler_rpcapi.SchedulerAPI.select_destinations
        router = self

        def select_destinations(api, *args, **kwargs):
            with router._lock:
                server = next(router._next)
            shadow = object.__new__(type(api))
            shadow.__dict__.update(api.__dict__)
            shadow.client = _ToServer(api.client, server)
            return real(shadow, *args, **kwargs)

        self.useFixture(fixtures.MonkeyPatch(
            'nova.scheduler.rpcapi.SchedulerAPI.select_destinations',
            select_destinations))


class _ToServer(object):
    """An RPC client whose calls go to one server of the topic."""

    def __init__(self, client, server):
        self._client = client
        self._server = server

    def prepare(self, **kwargs):
        kwargs.setdefault('server', self._server)
        return self._client.prepare(**kwargs)

    def can_send_version(self, version):
        return self._client.can_send_version(version)

    def __getattr__(self, name):
        return getattr(self._client, name)


class ClaimGate(fixtures.Fixture):
    """Hold each instance's first Placement claim until ``expected``
    instances are at their claim, or none came for ``timeout`` seconds.
    """

    def __init__(self, expected, timeout):
        super().__init__()
        self.expected = expected
        self.timeout = timeout
        self.arrived = set()
        self.timed_out = False
        self._last = time.monotonic()
        self.claims = collections.Counter()     # instance -> attempts
        self.refused = 0

    def _setUp(self):
        self._cond = threading.Condition()
        import nova.scheduler.utils as scheduler_utils
        real = scheduler_utils.claim_resources
        gate = self

        def claim_resources(ctx, client, spec_obj, instance_uuid, *a, **kw):
            gate.wait(instance_uuid)
            ok = real(ctx, client, spec_obj, instance_uuid, *a, **kw)
            gate.claims[instance_uuid] += 1
            gate.refused += 0 if ok else 1
            return ok

        self.useFixture(fixtures.MonkeyPatch(
            'nova.scheduler.utils.claim_resources', claim_resources))

    # A slow machine only delays the burst: the timeout runs from the
    # latest arrival, so it ends a wait only when no request has come for
    # ``timeout`` seconds (one that never reaches a claim).
    def wait(self, instance_uuid):
        with self._cond:
            if instance_uuid in self.arrived:
                return
            self.arrived.add(instance_uuid)
            self._last = time.monotonic()
            self._cond.notify_all()
            while len(self.arrived) < self.expected and not self.timed_out:
                left = self._last + self.timeout - time.monotonic()
                if left <= 0:
                    self.timed_out = True
                    self._cond.notify_all()
                    return
                self._cond.wait(min(left, 0.1))


class RaceCase(integrated_helpers.ProviderUsageBaseTestCase):
    """See the module docstring; subclasses set the class attributes."""

    compute_driver = 'fake.MediumFakeDriver'
    workers = 3
    hosts = 3
    boots = 9
    pcpus = 4
    max_io_vcpus_per_pcpu = 1.0
    flavor_vcpus = 2
    claims = False
    gate = True
    gate_timeout = float(os.environ.get('IOSCHED_RACE_GATE_TIMEOUT', '60'))
    boot_timeout = float(os.environ.get('IOSCHED_RACE_BOOT_TIMEOUT', '300'))

    def setUp(self):
        plugin_state.enable_plugin(self, 'IoDensityFilter')
        super().setUp()
        # [iosched] is registered once the scheduler loaded our filters
        self.flags(max_io_vcpus_per_pcpu=self.max_io_vcpus_per_pcpu,
                   group='iosched')
        # a burst is larger than Nova's default quotas (10 instances, 20
        # cores)
        self.flags(instances=-1, cores=-1, ram=-1, group='quota')
        plugin_state.ignore_noload_warning()
        self.clock = reports.FakeClock(1000.0)
        self.plugin = self.useFixture(PerWorkerPlugin(self.clock))
        services = [self.scheduler_service] + [
            self.useFixture(nova_fixtures.ServiceFixture(
                'scheduler', host='scheduler%d' % i)).service
            for i in range(2, self.workers + 1)]
        for service in services:
            self.plugin.add(service)
        self.useFixture(RoundRobin([s.host for s in services]))
        self.host_names = ['host%d' % i for i in range(1, self.hosts + 1)]
        for host in self.host_names:
            self._start_compute(host)
        self.slots = int(math.floor(self.pcpus * self.max_io_vcpus_per_pcpu
                                    + 1e-9))
        specs = {'iosched:io_profile': 'io'}
        if self.claims:
            self.publish_inventory()
            specs = placement_resources.with_resources(self.flavor_vcpus,
                                                       specs)
        self.flavor = self.create_flavor('io.race', specs)

    def create_flavor(self, name, specs):
        """A flavor whose extra specs are set at microversion 2.86."""
        flavor = self._create_flavor(name=name, vcpu=self.flavor_vcpus,
                                     memory_mb=256, disk=1, ephemeral=0)
        api = self.api_fixture.admin_api
        before, api.microversion = api.microversion, '2.86'
        try:
            api.post_extra_spec(flavor, {'extra_specs': specs})
        finally:
            api.microversion = before
        return flavor

    def agent_conf(self):
        """host-agent.conf's [io_inventory] and [placement] sections."""
        return plugin_state.agent_placement_conf(self, {'io_inventory': {
            'publish': 'true',
            'max_io_vcpus_per_pcpu': repr(self.max_io_vcpus_per_pcpu)}})

    def publish_inventory(self):
        """Each host's agent publishes ``<node>:iosched`` (one sync)."""
        conf = self.agent_conf()
        options = placement_sizing.Options.from_conf(conf.io_inventory)
        self.children = {}
        for host in self.host_names:
            publisher = placement_inventory.InventoryPublisher(
                lambda: placement_inventory.PlacementInventories(
                    placement_inventory.placement_adapter(conf)),
                host, options=options)
            publisher.want_from_report(reports.report(
                host=host, ts=self.clock.now, pcpus=self.pcpus))
            self.assertTrue(publisher.sync(), publisher.state.last_error)
            self.children[host] = self._get_provider_uuid_by_name(
                placement_inventory.child_name(host))
            self.assertEqual(
                self.slots, self._get_provider_inventory(
                    self.children[host])[IO_VCPU]['total'])

    def io_vcpus_used_in_placement(self):
        return {host: self._get_provider_usages(uuid).get(IO_VCPU, 0)
                for host, uuid in self.children.items()}

    def wait_for_servers(self, servers):
        """Each server once it left BUILD."""
        deadline = time.monotonic() + self.boot_timeout
        done = {}
        while len(done) < len(servers):
            for server in servers:
                if server['id'] in done:
                    continue
                found = self.api.get_server(server['id'])
                if found['status'] in ('ACTIVE', 'ERROR'):
                    done[server['id']] = found
            if time.monotonic() > deadline:
                raise AssertionError('servers still building after %.0f s: '
                                     '%d of %d done' % (self.boot_timeout,
                                                        len(done),
                                                        len(servers)))
            time.sleep(0.05)
        return [done[s['id']] for s in servers]

    def race(self):
        """Report room everywhere, boot the burst; the counts."""
        for host in self.host_names:
            self.plugin.report(host, ts=self.clock.now, pcpus=self.pcpus,
                               io_vcpus=0)
        gate = self.useFixture(ClaimGate(
            self.boots if self.gate else 0, self.gate_timeout))
        start = time.monotonic()
        posted = [self.api.post_server({'server': self._build_server(
            name='race-%d' % i, flavor_id=self.flavor, networks='none')})
            for i in range(self.boots)]
        servers = self.wait_for_servers(posted)
        seconds = time.monotonic() - start
        io_vcpus = dict.fromkeys(self.host_names, 0)
        for server in servers:
            if server['status'] == 'ACTIVE':
                io_vcpus[server['OS-EXT-SRV-ATTR:host']] += self.flavor_vcpus
        errors = [s for s in servers if s['status'] == 'ERROR']
        return {
            'workers': self.workers, 'hosts': self.hosts,
            'boots': self.boots, 'claims': self.claims, 'gate': self.gate,
            'slots_per_host': self.slots,
            'over_committed_hosts': sum(1 for v in io_vcpus.values()
                                        if v > self.slots),
            'excess_io_vcpus': sum(max(0, v - self.slots)
                                   for v in io_vcpus.values()),
            'io_vcpus_per_host': io_vcpus,
            'active': len(servers) - len(errors),
            'no_valid_host': sum(1 for s in errors if 'No valid host' in
                                 s.get('fault', {}).get('message', '')),
            'error': len(errors),
            'faults': dict(collections.Counter(
                s.get('fault', {}).get('message', '?')[:120]
                for s in errors)),
            'requests_per_worker': dict(self.plugin.requests),
            'untagged_plugin_calls': self.plugin.untagged,
            'claims_refused': gate.refused,
            'gate_timed_out': gate.timed_out,
            'placement_io_vcpus': (self.io_vcpus_used_in_placement()
                                   if self.claims else None),
            'seconds': round(seconds, 2),
        }
