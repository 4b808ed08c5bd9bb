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
"""Servers booted through the real Nova API land where iosched says.

Nova's own functional harness (``ProviderUsageBaseTestCase``): the API,
conductor, scheduler and fake computes (``fake.MediumFakeDriver``: 10 vCPUs,
8 GiB each) with the in-memory Placement service. The plugin is enabled as
``docs/nova.md`` says (Nova's filters and weighers plus ours) and fed with
``HostReport``s through a ``ReportStore`` on a test clock, stubbed in for
the process-wide store. Flavors carry ``iosched:io_profile`` extra specs.

Every report gives 4 guest-usable pCPUs; the MediumFakeDriver's 10 vCPUs
(x4 allocation ratio in Placement) are never the limit here. Servers
placed since a host's last report count through the in-flight estimate
(``iosched.nova_plugin.inflight``, default ``inflight_vcpu_profile=mixed``:
each such vCPU is an I/O vCPU of 0.5 I/O strength).

Cases: I/O spread (one boot, boots with reports in between, a burst
between two reports, cpu servers not steered), the density filter (never
an over-bound host, NoValidHost when none fits), stale reports (pass:
lowest weight but still choosable; reject: io servers never, cpu servers
still) and a multi-instance request (filters and weighers per instance).
"""

from nova.tests.functional import integrated_helpers

from tests.nova import plugin_state
from tests.unit.nova_plugin import reports


class _PlacementTestCase(integrated_helpers.ProviderUsageBaseTestCase):
    """Three computes, the plugin enabled, reports from a test clock."""

    compute_driver = 'fake.MediumFakeDriver'
    hosts = ('host1', 'host2', 'host3')

    def setUp(self):
        # nova.conf of nova-scheduler, as docs/nova.md says; set before the
        # base class starts the scheduler, which loads its filters then.
        plugin_state.enable_plugin(self, 'IoDensityFilter')
        super().setUp()
        plugin_state.ignore_noload_warning()
        state = self.useFixture(plugin_state.PluginState())
        self.clock, self.store = state.clock, state.store
        self.worker = state.worker
        self.recent = state.worker.explainer.recent
        for host in self.hosts:
            self._start_compute(host)
        self.flavors = {
            profile: self._create_flavor(
                name='%s.small' % profile, vcpu=2, memory_mb=512, disk=1,
                ephemeral=0,
                extra_spec={'iosched:io_profile': profile})
            for profile in ('io', 'cpu', 'mixed')}

    def report(self, host, **kw):
        """Store a fresh report of ``host`` (4 pCPUs unless given)."""
        kw.setdefault('ts', self.clock.now)
        kw.setdefault('pcpus', 4)
        self.assertTrue(self.store.update(reports.report(host=host, **kw)))

    def boot(self, profile, expected_state='ACTIVE', host=None):
        """Boot one server of ``<profile>.small`` through the API."""
        return self._create_server(flavor_id=self.flavors[profile],
                                   networks='none', host=host,
                                   expected_state=expected_state)

    @staticmethod
    def host_of(server):
        return server['OS-EXT-SRV-ATTR:host']

    def weigher_values(self, server):
        """Our weigher's raw values for ``server``'s request, per host."""
        return {d.host: d.weight for d in self.recent(
            request=server['id'], stage='weigher')}


class IoSpreadTestCase(_PlacementTestCase):
    """Case 1: io servers go to the least I/O-loaded host; cpu ones do not
    care.
    """

    def test_io_server_goes_to_least_io_loaded_host(self):
        # host1 is the heaviest in I/O strength, host3 the lightest; for
        # Nova's own weighers the three empty hosts are equal.
        self.report('host1', io_strength_total=3.0)
        self.report('host2', io_strength_total=1.0)
        self.report('host3', io_strength_total=0.2)
        server = self.boot('io')
        self.assertEqual('host3', self.host_of(server))
        # raw values: -(reported + 2.0 for two io vCPUs) / 4 pCPUs
        values = self.weigher_values(server)
        self.assertAlmostEqual(-0.55, values['host3'])
        self.assertAlmostEqual(-0.75, values['host2'])
        self.assertAlmostEqual(-1.25, values['host1'])

    def test_io_servers_in_a_row_follow_the_reports(self):
        # The agent reports every second, so a server booted a few seconds
        # after the previous one finds it in its host's report. I/O weighs
        # 10x Nova's weighers here, so the order is the I/O one, not the
        # free-RAM one: per pCPU after placement (+2.0 strength each boot)
        # host1 3.0, host2 1.0, host3 0.2 -> host3 (0.55); then host3 2.2
        # -> host2 (0.75); then host2 3.0 -> host3 (1.05, not host1 1.25);
        # then host3 4.2 -> host1 (1.25) -> host2 (1.25 vs host3 1.55).
        self.flags(io_strength_weight_multiplier=10.0, group='iosched')
        strength = {'host1': 3.0, 'host2': 1.0, 'host3': 0.2}
        landed = []
        for _ in range(4):
            for host, total in strength.items():
                self.report(host, io_strength_total=total)
            host = self.host_of(self.boot('io'))
            landed.append(host)
            strength[host] += 2.0       # the agent measured the new server
            self.clock.now += 1.0
        self.assertEqual(['host3', 'host2', 'host3', 'host1'], landed)

    def test_io_servers_between_two_reports(self):
        # Boots faster than the agents report: no report has the new
        # servers yet. The in-flight estimate (iosched.nova_plugin.inflight)
        # sees them in Nova's HostState and counts each 2-vCPU server as 1.0 of
        # I/O strength (inflight_vcpu_profile=mixed), so even with I/O at
        # 10x Nova's weighers the burst spreads: host3 (0.55); host3 is now
        # (0.2 + 1.0 + 2) / 4 = 0.8, host2 0.75 -> host2; host2 is now
        # 1.0 -> host3 (0.8). Without the estimate all three stack on host3.
        self.flags(io_strength_weight_multiplier=10.0, group='iosched')
        self.report('host1', io_strength_total=3.0)
        self.report('host2', io_strength_total=1.0)
        self.report('host3', io_strength_total=0.2)
        servers = [self.boot('io') for _ in range(3)]
        self.assertEqual(['host3', 'host2', 'host3'],
                         [self.host_of(s) for s in servers])
        second = self.weigher_values(servers[1])
        self.assertAlmostEqual(-0.8, second['host3'])
        self.assertAlmostEqual(-0.75, second['host2'])
        why = self.recent(request=servers[1]['id'], host='host3',
                             stage='weigher')[-1]
        self.assertIn('pending 1.000', why.reason)
        self.assertIn("1 placement(s) of 2 vCPU(s) seen in Nova's HostState",
                      why.reason)

    def test_cpu_server_is_not_steered_by_io_strength(self):
        # host2 and host3 (I/O-light) already run a cpu server each; host1
        # (I/O-heavy) is empty. Even with the I/O multiplier at 10, a cpu
        # server goes where Nova's weighers send it: the empty host1.
        self.flags(io_strength_weight_multiplier=10.0, group='iosched')
        self.report('host1', io_strength_total=3.0)
        self.report('host2', io_strength_total=1.0)
        self.report('host3', io_strength_total=0.2)
        for host in ('host2', 'host3'):
            self.assertEqual(host, self.host_of(self.boot('cpu', host=host)))
        server = self.boot('cpu')
        self.assertEqual('host1', self.host_of(server))
        self.assertEqual({'host1': 0.0, 'host2': 0.0, 'host3': 0.0},
                         self.weigher_values(server))
        # the same layout with an io server: the I/O-light host3 wins
        # against Nova's weighers
        self.assertEqual('host3', self.host_of(self.boot('io')))


class DensityFilterTestCase(_PlacementTestCase):
    """Case 2: a host over max_io_vcpus_per_pcpu never takes io servers."""

    def test_host_over_the_bound_is_never_chosen(self):
        # per pCPU after a 2-vCPU io server: host1 (3+2)/4 = 1.25 > 1,
        # host2 (2+2)/4 = 1.0 <= 1, host3 (4+2)/4 = 1.5 > 1. host1 and host3
        # are the I/O-light ones the weigher would prefer.
        self.flags(max_io_vcpus_per_pcpu=1.0, group='iosched')
        self.report('host1', io_vcpus=3, io_strength_total=0.0)
        self.report('host2', io_vcpus=2, io_strength_total=3.0)
        self.report('host3', io_vcpus=4, io_strength_total=0.0)
        server = self.boot('io')
        self.assertEqual('host2', self.host_of(server))
        why = {d.host: d for d in self.recent(request=server['id'],
                                                 stage='filter')}
        self.assertEqual({'host1': False, 'host2': True, 'host3': False},
                         {h: d.passed for h, d in why.items()})
        self.assertIn('1.250 > 1.000', why['host1'].reason)
        self.assertIn('1.500 > 1.000', why['host3'].reason)
        # Before host2's agent reports that server, the in-flight estimate
        # counts its 2 vCPUs as I/O vCPUs (inflight_vcpu_profile=mixed):
        # (2 + 2 + 2) / 4 = 1.5 > 1, so a mixed server (every vCPU counts
        # as I/O) finds no host; a cpu server still does.
        server = self.boot('mixed', expected_state='ERROR')
        self.assertIn('No valid host', server['fault']['message'])
        self.assertIn('1.500 > 1.000', self.recent(
            request=server['id'], host='host2')[-1].reason)
        self.boot('cpu')
        # once the agent reports the server, host2 is full for good
        self.report('host2', io_vcpus=4, io_strength_total=5.0,
                    ts=self.clock.now + 1)
        self.boot('io', expected_state='ERROR')

    def test_no_host_fits_goes_to_error(self):
        self.flags(max_io_vcpus_per_pcpu=1.0, group='iosched')
        for host in self.hosts:
            self.report(host, io_vcpus=3)   # (3 + 2) / 4 > 1 everywhere
        server = self.boot('io', expected_state='ERROR')
        self.assertIn('No valid host', server['fault']['message'])
        self.assertEqual(
            {False}, {d.passed for d in self.recent(
                request=server['id'], stage='filter')})
        # requests without I/O vCPUs are not the filter's business
        self.boot('cpu')

    def test_bound_zero_admits_no_io_server(self):
        self.flags(max_io_vcpus_per_pcpu=0.0, group='iosched')
        for host in self.hosts:
            self.report(host)
        server = self.boot('io', expected_state='ERROR')
        self.assertIn('No valid host', server['fault']['message'])


class StaleReportTestCase(_PlacementTestCase):
    """Case 3: a report older than the TTL counts as missing."""

    def setUp(self):
        super().setUp()
        # host1 is the lightest, but its agent stopped reporting: after
        # 3.5 report intervals (TTL 3) only host2 and host3 are fresh.
        self.report('host1', io_strength_total=0.0, report_interval=1.0)
        self.clock.now += 3.5
        self.report('host2', io_strength_total=1.0)
        self.report('host3', io_strength_total=2.0)

    def test_pass_policy_keeps_stale_host_with_lowest_weight(self):
        self.flags(missing_report_policy='pass', group='iosched')
        server = self.boot('io')
        self.assertEqual('host2', self.host_of(server))
        values = self.weigher_values(server)
        # reported: host2 -0.75, host3 -1.0; host1 below by 10 % of the
        # spread: -1.025
        self.assertAlmostEqual(-0.75, values['host2'])
        self.assertAlmostEqual(-1.0, values['host3'])
        self.assertAlmostEqual(-1.025, values['host1'])
        # it still passes the filter and can be chosen
        server = self.boot('io', host='host1')
        self.assertEqual('host1', self.host_of(server))

    def test_pass_policy_stale_host_is_chosen_when_others_are_full(self):
        self.flags(missing_report_policy='pass', group='iosched')
        self.report('host2', io_vcpus=4, ts=self.clock.now + 0.1)
        self.report('host3', io_vcpus=4, ts=self.clock.now + 0.1)
        self.assertEqual('host1', self.host_of(self.boot('io')))

    def test_reject_policy_keeps_io_servers_off_stale_host(self):
        self.flags(missing_report_policy='reject', group='iosched')
        for _ in range(2):
            self.assertNotEqual('host1', self.host_of(self.boot('io')))
        server = self.boot('io', host='host1', expected_state='ERROR')
        self.assertIn('No valid host', server['fault']['message'])
        why = self.recent(request=server['id'], stage='filter')
        self.assertIn('missing_report_policy=reject', why[-1].reason)
        # cpu servers do not need the agent: they may still go there
        self.assertEqual('host1', self.host_of(self.boot('cpu',
                                                         host='host1')))

    def test_fresh_report_brings_the_host_back(self):
        self.flags(missing_report_policy='reject', group='iosched')
        self.report('host1', io_strength_total=0.0)
        self.assertEqual('host1', self.host_of(self.boot('io')))


class MultiInstanceTestCase(_PlacementTestCase):
    """Case 4: min_count=3 io servers: filters and weighers per instance."""

    def _boot_many(self, count):
        body = self._build_server(flavor_id=self.flavors['io'],
                                  networks='none')
        body.update(min_count=count, max_count=count)
        self.api.post_server({'server': body})
        # the only servers of the test
        servers = self._wait_for_assert(
            lambda: self._all_active(count), max_retries=40, sleep=0.25)
        return servers

    def _all_active(self, count):
        servers = self.api.get_servers()
        self.assertEqual([count * ['ACTIVE']],
                         [[s['status'] for s in servers]])
        return servers

    def test_multi_instance_request_spreads(self):
        self.report('host1', io_strength_total=3.0)
        self.report('host2', io_strength_total=1.0)
        self.report('host3', io_strength_total=0.2)
        servers = self._boot_many(3)
        self.assertEqual(['host1', 'host2', 'host3'],
                         sorted(self.host_of(s) for s in servers))
        # our weigher ran once per instance
        weighed = {d.request for d in self.recent(stage='weigher')}
        self.assertEqual({s['id'] for s in servers}, weighed)

    def test_density_filter_runs_per_instance(self):
        # host1 cannot take a 2-vCPU io server ((3 + 2) / 4 > 1); Nova
        # filters the hosts once per instance, each time starting from the
        # hosts left by the previous instance, so host1 is out for all
        # three and the other two hosts take them.
        self.flags(max_io_vcpus_per_pcpu=1.0, group='iosched')
        self.report('host1', io_vcpus=3)
        self.report('host2', io_vcpus=0)
        self.report('host3', io_vcpus=0)
        servers = self._boot_many(3)
        ids = {s['id'] for s in servers}
        self.assertEqual({'host2', 'host3'},
                         {self.host_of(s) for s in servers})
        checked = {d.request for d in self.recent(host='host2',
                                                     stage='filter')}
        self.assertEqual(ids, checked)
        rejected = [d for d in self.recent(host='host1', stage='filter')]
        self.assertEqual([False], [d.passed for d in rejected])
        self.assertIn(rejected[0].request, ids)

    def test_inflight_estimate_spreads_one_request(self):
        # Each host can take exactly one 2-vCPU io server: (2 + 2) / 4 = 1.
        # I/O weighs 10x and host3 is the lightest, so without an in-flight
        # estimate the three instances would all pass the filter on host3
        # and stack there. Nova consumes each chosen host in its HostState
        # before the next instance; the estimate counts that server's
        # vCPUs as I/O vCPUs, and the filter then rejects the host.
        self.flags(max_io_vcpus_per_pcpu=1.0, group='iosched')
        self.flags(io_strength_weight_multiplier=10.0, group='iosched')
        self.report('host1', io_vcpus=2, io_strength_total=3.0)
        self.report('host2', io_vcpus=2, io_strength_total=1.0)
        self.report('host3', io_vcpus=2, io_strength_total=0.2)
        servers = self._boot_many(3)
        self.assertEqual(['host1', 'host2', 'host3'],
                         sorted(self.host_of(s) for s in servers))
        rejected = [d for d in self.recent(host='host3', stage='filter')
                    if d.passed is False]
        self.assertTrue(rejected)
        self.assertIn('1.500 > 1.000', rejected[0].reason)
