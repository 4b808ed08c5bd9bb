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
"""The scheduler plugin's counters, scraped: reports cast through the real
report listener (oslo.messaging fake:/ bus), hosts judged by the plugin's
filters and weigher through Nova's own handlers, and the endpoint the
listener started (``[iosched_metrics] enabled``, port 0) read over HTTP
with prometheus_client's parser.
"""

import time
import urllib.request

import nova.conf
from nova import objects
from nova.scheduler import filters
from nova.scheduler import weights
from nova import test
from nova.tests.unit.scheduler import fakes
import oslo_messaging
from oslo_utils.fixture import uuidsentinel as uuids
from prometheus_client import parser

from iosched.nova_plugin import conf as iosched_conf
from iosched.nova_plugin import endpoint
from tests.nova import plugin_state
from tests.unit.nova_plugin import reports


def _spec(vcpus=2):
    flavor = objects.Flavor(name='io', vcpus=vcpus, memory_mb=512,
                            root_gb=1, ephemeral_gb=0, swap=0,
                            extra_specs={'iosched:io_profile': 'io'})
    return objects.RequestSpec(flavor=flavor, instance_uuid=uuids.instance,
                               num_instances=1, instance_group=None)


def _scrape(port):
    text = urllib.request.urlopen('http://127.0.0.1:%d/metrics' % port,
                                  timeout=10).read().decode()
    out = {}
    for family in parser.text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def _get(samples, name, **labels):
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


class SchedulerMetricsTestCase(test.NoDBTestCase):

    def setUp(self):
        super().setUp()
        state = self.useFixture(plugin_state.PluginState())
        self.clock, self.store = state.clock, state.store
        self.worker = state.worker
        self.recent = state.worker.explainer.recent
        iosched_conf.register_opts(nova.conf.CONF)    # as the filters do
        self.flags(enabled=True, port=0, group='iosched_metrics')
        self.server = endpoint.start_listener(
            nova.conf.CONF, transport_url='fake:/', store=self.store,
            host='scheduler-1', metrics=self.worker.metrics)
        self.addCleanup(self._stop_server)
        # (the worker's endpoint: stopped with the state at cleanup)
        self.exporter = self.worker.metrics.ensure_exporter(nova.conf.CONF)

    def _stop_server(self):
        self.server.stop()
        self.server.wait()
        self.server.transport.cleanup()

    def cast(self, report):
        client = oslo_messaging.get_rpc_client(
            self.server.transport, oslo_messaging.Target(
                topic='iosched-reports', namespace='iosched', version='1.0'))
        client.prepare(fanout=True).cast({}, 'report_host_io', report=report)

    def wait_received(self, before, n):
        deadline = time.monotonic() + 10
        name = 'iosched_scheduler_reports_received_total'
        while time.monotonic() < deadline:
            got = _scrape(self.exporter.port)
            if _get(got, name) - _get(before, name) >= n:
                return got
            time.sleep(0.02)
        self.fail('%d reports not received in 10 s' % n)

    def test_listener_started_the_endpoint_and_counts_flow(self):
        # the listener's start served this worker's metrics
        self.assertIsNotNone(self.exporter)
        self.assertGreater(self.exporter.port, 0)
        before = _scrape(self.exporter.port)

        # reports through the real endpoint: two hosts, a copy, a bad one
        busy = reports.report(host='busy', ts=self.clock.now, pcpus=4,
                              io_vcpus=3).to_dict()
        idle = reports.report(host='idle', ts=self.clock.now, pcpus=4,
                              io_vcpus=0).to_dict()
        for r in (busy, idle, busy, dict(idle, pcpus=0)):
            self.cast(r)
        got = self.wait_received(before, 4)
        dropped = 'iosched_scheduler_reports_dropped_total'
        self.assertEqual(1, _get(got, dropped, reason='out_of_order') -
                         _get(before, dropped, reason='out_of_order'))
        self.assertEqual(1, _get(got, dropped, reason='malformed') -
                         _get(before, dropped, reason='malformed'))
        self.assertEqual(2, _get(got, 'iosched_scheduler_hosts',
                                 state='fresh'))

        # filters through Nova's handler: 'busy' fails the rule,
        # 'unknown' has no report and missing_report_policy=reject
        self.flags(missing_report_policy='reject', group='iosched')
        handler = filters.HostFilterHandler()
        flts = [cls() for cls in handler.get_matching_classes(
            ['iosched.nova_plugin.filters.all_filters'])]
        hosts = [fakes.FakeHostState(h, h + '-node', {})
                 for h in ('busy', 'idle', 'unknown')]
        passed = handler.get_filtered_objects(flts, hosts, _spec())
        self.assertEqual(['idle'], [h.host for h in passed])
        # the weigher (Nova weighs only when there are 2 hosts or more);
        # 'unknown' has no report
        handler = weights.HostWeightHandler()
        handler.get_weighed_objects(
            [cls() for cls in handler.get_matching_classes(
                ['iosched.nova_plugin.weighers.all_weighers'])],
            hosts[1:], _spec())

        # 'busy' goes stale: 3.5 report intervals later, 'idle' reports
        self.clock.now += 3.5
        self.cast(reports.report(host='idle', ts=self.clock.now,
                                 pcpus=4).to_dict())
        got = self.wait_received(before, 5)

        rejections = 'iosched_scheduler_filter_rejections_total'
        self.assertEqual(1, _get(got, rejections, filter='IoDensityFilter',
                                 cause='rule') -
                         _get(before, rejections, filter='IoDensityFilter',
                              cause='rule'))
        self.assertEqual(1, _get(got, rejections, filter='IoDensityFilter',
                                 cause='no_report') -
                         _get(before, rejections, filter='IoDensityFilter',
                              cause='no_report'))
        checks = 'iosched_scheduler_filter_checks_total'
        self.assertEqual(1, _get(got, checks, filter='IoDensityFilter',
                                 result='passed') -
                         _get(before, checks, filter='IoDensityFilter',
                              result='passed'))
        inv = 'iosched_scheduler_weigher_invocations_total'
        self.assertEqual(1, _get(got, inv, weigher='IoStrengthWeigher') -
                         _get(before, inv, weigher='IoStrengthWeigher'))
        missing = 'iosched_scheduler_weigher_missing_reports_total'
        self.assertEqual(1, _get(got, missing, weigher='IoStrengthWeigher') -
                         _get(before, missing, weigher='IoStrengthWeigher'))
        self.assertEqual(1, _get(got, 'iosched_scheduler_stale_hosts'))
        self.assertEqual(1, _get(got, 'iosched_scheduler_stale_host',
                                 host='busy'))
        self.assertEqual(1, _get(got, 'iosched_scheduler_hosts',
                                 state='fresh'))
