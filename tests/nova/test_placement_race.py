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
"""Two schedulers filling one host between two reports (issue 16), and the
fix: I/O vCPU slots claimed in Placement.

Nova's functional harness (``tests/nova/race_harness.py``) with several
scheduler services standing in for separate scheduler processes:

* each worker has its own ``iosched.nova_plugin.state.SchedulerState`` (report
  store, in-flight baselines), as a process of its own would: the
  services' ``select_destinations`` tag the green thread serving a request
  with its worker, and ``iosched.nova_plugin.state.current`` is patched to hand
  out that worker's (every report reaches every store, as the fanout
  does); each service already has its own HostManager;
* requests go to the workers in turn, as RabbitMQ hands a shared queue's
  messages to its consumers (oslo.messaging's fake driver would let one
  listener take the whole burst);
* every request's first Placement claim is held until the whole burst has
  decided: the window a burst within one report interval sees, made
  deterministic (ungated, how far requests overlap depends on where the
  in-process stack happens to yield).

3 fake computes, each reported with 4 pCPUs and no I/O vCPU, bound
``max_io_vcpus_per_pcpu = 1.0``: 4 I/O vCPU slots a host, room for two
2-vCPU io servers, 6 in all. 9 io servers are booted at once (separate
POSTs).

* Without claims (today): every request sees the state of the report, so
  all 9 pass IoDensityFilter everywhere and land; 9 servers on 3 hosts put
  at least 3 (6 I/O vCPUs > 4) on one host: at least one over-committed
  host, whatever the weighers pick. The same with one worker: its
  concurrent requests decide before any of them is consumed.
* With claims: every compute node has the child provider ``<node>:iosched``
  (published by the agent's ``InventoryPublisher`` from the same report)
  with ``CUSTOM_IOSCHED_IO_VCPU`` total 4 and the io flavor asks
  ``resources:CUSTOM_IOSCHED_IO_VCPU=2`` (``placement_resources``, set at
  microversion 2.86): exactly 6 land, 2 per host, none over-committed; a
  refused claim goes to the next host; the 3 surplus fail NoValidHost.
* Without the gate (the harness's own interleaving): printed without
  claims; zero over-commit asserted with claims.

Sizes from env: IOSCHED_RACE_WORKERS (3), IOSCHED_RACE_HOSTS (3); boots
are 1.5 x the room, so the over-commit without claims stays certain.
``pytest -s`` prints each run's counts (bench/nova_scale/race.py repeats
them).
"""

import json
import os

from nova.tests.functional.api import client as api_client

from tests.nova import race_harness

WORKERS = int(os.environ.get('IOSCHED_RACE_WORKERS', '3'))
HOSTS = int(os.environ.get('IOSCHED_RACE_HOSTS', '3'))
ROOM = HOSTS * 2                # 2-vCPU io servers in 4 slots a host
BOOTS = ROOM + ROOM // 2


class _Race(race_harness.RaceCase):
    workers = WORKERS
    hosts = HOSTS
    boots = BOOTS

    def run_race(self):
        result = self.race()
        print('\n%s: %s' % (self.id(), json.dumps(result, sort_keys=True)))
        self.assertEqual(0, result['untagged_plugin_calls'])
        self.assertEqual(self.boots, sum(
            result['requests_per_worker'].values()))
        self.assertFalse(result['gate_timed_out'])
        return result


class WithoutClaimsTestCase(_Race):

    def test_burst_over_commits_a_host(self):
        result = self.run_race()
        # every worker served its share of the burst
        self.assertEqual(min(self.workers, self.boots),
                         len(result['requests_per_worker']))
        self.assertEqual(self.boots, result['active'])
        self.assertGreaterEqual(result['over_committed_hosts'], 1)
        self.assertGreaterEqual(result['excess_io_vcpus'],
                                (self.boots - ROOM) * self.flavor_vcpus)


class OneWorkerWithoutClaimsTestCase(_Race):
    """Concurrent requests of one worker: the claim yields before
    ``consume_from_request``.
    """

    workers = 1

    def test_burst_over_commits_a_host(self):
        result = self.run_race()
        self.assertEqual(self.boots, result['active'])
        self.assertGreaterEqual(result['over_committed_hosts'], 1)


class WithClaimsTestCase(_Race):

    claims = True

    def test_no_host_over_committed(self):
        result = self.run_race()
        self.assertEqual(0, result['over_committed_hosts'])
        self.assertEqual(ROOM, result['active'])
        self.assertEqual(self.boots - ROOM, result['no_valid_host'])
        # every host full, in Placement as in the servers' hosts
        full = dict.fromkeys(self.host_names, self.slots)
        self.assertEqual(full, result['io_vcpus_per_host'])
        self.assertEqual(full, result['placement_io_vcpus'])
        # the burst decided on one state: refused claims moved on
        self.assertGreater(result['claims_refused'], 0)

    def test_flavor_resources_through_the_api(self):
        """Nova's ``resources:`` validator (2.86) takes the derived keys
        and refuses a bad amount.
        """
        api = self.api_fixture.admin_api
        api.microversion = '2.86'
        self.assertEqual(
            {'iosched:io_profile': 'io',
             'resources:CUSTOM_IOSCHED_IO_VCPU': str(self.flavor_vcpus)},
            api.get_extra_specs(self.flavor))
        lsvm = self.create_flavor('lsvm.race', {
            'iosched:latency_sensitive': 'true',
            'resources:CUSTOM_IOSCHED_LSVM_BW': '1000',
            'resources:CUSTOM_IOSCHED_SLO_IOPS': '300'})
        self.assertEqual('1000', api.get_extra_specs(lsvm)[
            'resources:CUSTOM_IOSCHED_LSVM_BW'])
        err = self.assertRaises(
            api_client.OpenStackApiException, api.post_extra_spec,
            self.flavor,
            {'extra_specs': {'resources:CUSTOM_IOSCHED_IO_VCPU': 'two'}})
        self.assertEqual(400, err.response.status_code)
        self.assertIn("'two' is not a valid integer value", str(err))


class UngatedWithoutClaimsTestCase(_Race):
    """The harness's own interleaving: recorded, not asserted."""

    gate = False

    def test_count_is_recorded(self):
        result = self.run_race()
        self.assertEqual(self.boots, sum(
            (result['active'], result['error'])))


class UngatedWithClaimsTestCase(_Race):

    gate = False
    claims = True

    def test_no_host_over_committed(self):
        result = self.run_race()
        self.assertEqual(0, result['over_committed_hosts'])
        self.assertEqual(result['active'] * self.flavor_vcpus,
                         sum(result['placement_io_vcpus'].values()))
