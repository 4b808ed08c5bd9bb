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
"""The plugin through Nova's own filter and weight handlers.

Loads the plugin by function path as nova-scheduler does
(``get_matching_classes(['iosched.nova_plugin.filters.all_filters'])``), runs
it on ``FakeHostState`` hosts with a real ``RequestSpec`` and ``Flavor``, and
reads the reports from a ``ReportStore`` on a test clock.
"""

import logging
from unittest import mock

import fixtures
from nova import objects
from nova.scheduler import filters
from nova.scheduler import weights
from nova import test
from nova.tests.unit.scheduler import fakes
from oslo_utils.fixture import uuidsentinel as uuids

from iosched.nova_plugin.filters import io_density
from iosched.nova_plugin.filters import lsvm
from iosched.nova_plugin import listener as listener_mod
from iosched.nova_plugin import scoring
from iosched.nova_plugin import state
from iosched.nova_plugin.weighers import io_strength
from tests.nova import plugin_state
from tests.unit.nova_plugin import reports


def _spec(vcpus=2, io_profile='io', **extra):
    extra_specs = dict(extra)
    if io_profile:
        extra_specs['iosched:io_profile'] = io_profile
    flavor = objects.Flavor(name='flavor-%s' % io_profile, vcpus=vcpus,
                            memory_mb=512, root_gb=1, ephemeral_gb=0,
                            swap=0, extra_specs=extra_specs)
    return objects.RequestSpec(flavor=flavor, instance_uuid=uuids.instance,
                               num_instances=1, instance_group=None)


class _PluginTestCase(test.NoDBTestCase):

    def setUp(self):
        super(_PluginTestCase, self).setUp()
        state = self.useFixture(plugin_state.PluginState())
        self.clock, self.store = state.clock, state.store
        self.worker = state.worker
        self.recent = state.worker.explainer.recent

    def report(self, host, **kw):
        kw.setdefault('ts', self.clock.now)
        self.assertTrue(self.store.update(reports.report(host=host, **kw)))

    @staticmethod
    def hosts(*names, **attrs):
        return [fakes.FakeHostState(name, name + '-node', dict(attrs))
                for name in names]


class FilterTestCase(_PluginTestCase):

    def setUp(self):
        super(FilterTestCase, self).setUp()
        self.handler = filters.HostFilterHandler()
        self.filters = [cls() for cls in self.handler.get_matching_classes(
            ['iosched.nova_plugin.filters.all_filters'])]

    def passing(self, spec, hosts):
        return [h.host for h in self.handler.get_filtered_objects(
            self.filters, hosts, spec)]

    def test_function_path_loads_the_filter(self):
        loaded = [type(f) for f in self.filters]
        self.assertIn(io_density.IoDensityFilter, loaded)
        self.assertIn(lsvm.LsvmFilter, loaded)

    def test_lsvm_filter_keeps_the_bound(self):
        # L=2 ms, 4 pCPUs, defaults (T_NLSVM 3 ms, max slice 1 ms, at most
        # 3 per pCPU): 'room' m_p=ceil(5/4)=2, worst 2*1 = 2 ms <= 2;
        # 'full' m_p=ceil(13/4)=4 > 3; 'old' runs no vSlicer; 'busy' has
        # n_p=ceil(13/4)=4 ordinary vCPUs per pCPU: 4*1 ms > T_NLSVM 3 ms.
        self.report('room', pcpus=4, lsvm=reports.lsvm(
            count=4, min_latency_ms=2))
        self.report('full', pcpus=4, lsvm=reports.lsvm(
            count=12, min_latency_ms=2))
        self.report('old', pcpus=4, lsvm=reports.lsvm(
            count=1, min_latency_ms=2, supported=False))
        self.report('busy', pcpus=4, lsvm=reports.lsvm(nlsvm_vcpus=13))
        hosts = self.hosts('room', 'full', 'old', 'busy')
        spec = _spec(1, None, **{'iosched:latency_sensitive': 'true',
                                 'iosched:latency_ms': '2'})
        flt = [f for f in self.filters if isinstance(f, lsvm.LsvmFilter)]
        got = [h.host for h in self.handler.get_filtered_objects(
            flt, hosts, spec)]
        self.assertEqual(['room'], got)
        reasons = {h: self.recent(host=h, stage='filter')[-1].reason
                   for h in ('full', 'old', 'busy')}
        self.assertIn('m_p=4 > max_per_pcpu 3', reasons['full'])
        self.assertIn('lsvm.supported=false', reasons['old'])
        self.assertIn('n_p*T_m=4*1ms=4ms > T_NLSVM 3ms', reasons['busy'])
        # not latency-sensitive: every host passes
        self.assertEqual(4, len(self.handler.get_filtered_objects(
            flt, hosts, _spec(1, 'io'))))

    def test_host_over_io_density_bound_is_filtered_out(self):
        # (3 + 2) / 4 = 1.25 > 1.0, (0 + 2) / 4 = 0.5, (2 + 2) / 4 = 1.0
        self.report('busy', pcpus=4, io_vcpus=3)
        self.report('idle', pcpus=4, io_vcpus=0)
        self.report('full', pcpus=4, io_vcpus=2)
        hosts = self.hosts('busy', 'idle', 'full')
        self.assertEqual(['idle', 'full'], self.passing(_spec(2), hosts))
        why = self.recent(host='busy', stage='filter')[-1]
        self.assertFalse(why.passed)
        self.assertEqual(uuids.instance, why.request)
        self.assertIn('1.250 > 1.000', why.reason)
        # a tighter bound takes 'full' out too; a cpu request passes all
        self.flags(max_io_vcpus_per_pcpu=0.9, group='iosched')
        self.assertEqual(['idle'], self.passing(_spec(2), hosts))
        self.assertEqual(['busy', 'idle', 'full'],
                         self.passing(_spec(2, 'cpu'), hosts))

    def test_placements_since_last_report_count(self):
        self.report('h1', pcpus=4, io_vcpus=1)
        hosts = self.hosts('h1')
        self.assertEqual(['h1'], self.passing(_spec(2), hosts))
        self.store.note_placement('h1', 2)          # (1 + 2 + 2) / 4 > 1
        self.assertEqual([], self.passing(_spec(2), hosts))
        self.report('h1', pcpus=4, io_vcpus=1, ts=self.clock.now + 1)
        self.assertEqual(['h1'], self.passing(_spec(2), hosts))

    def test_stale_report_passes_by_default_rejected_by_policy(self):
        self.report('fresh', pcpus=4)
        self.report('stale', pcpus=4, report_interval=1.0, ts=900.0)
        self.clock.now += 3.5            # 'stale' is 3.5 intervals old
        self.report('fresh', pcpus=4, ts=self.clock.now)
        hosts = self.hosts('fresh', 'stale')
        self.assertEqual(['fresh', 'stale'], self.passing(_spec(), hosts))
        self.flags(missing_report_policy='reject', group='iosched')
        self.assertEqual(['fresh'], self.passing(_spec(), hosts))
        self.assertIn('missing_report_policy=reject',
                      self.recent(host='stale')[-1].reason)
        # a request that needs no agent still lands anywhere
        self.assertEqual(['fresh', 'stale'],
                         self.passing(_spec(io_profile=None), hosts))
        self.assertEqual(['fresh'], self.passing(
            _spec(io_profile='cpu', **{'iosched:latency_sensitive': 'true'}),
            hosts))

    def _quiet(self, level):
        log = logging.getLogger('iosched.nova_plugin')
        log.setLevel(level)
        self.addCleanup(log.setLevel, logging.NOTSET)
        # IoDensityFilter alone
        self.filters = [f for f in self.filters
                        if isinstance(f, io_density.IoDensityFilter)]

    def test_reasons_are_written_only_when_read(self):
        # DEBUG off: no reason is formatted while filtering; the explain
        # ring writes one when it is read, with the numbers of that moment
        self._quiet(logging.INFO)
        self.report('busy', pcpus=4, io_vcpus=3)
        self.report('idle', pcpus=4, io_vcpus=0)
        hosts = self.hosts('busy', 'idle', 'gone')
        with mock.patch.object(scoring, 'fits',
                               side_effect=scoring.fits) as fits:
            self.assertEqual(['idle', 'gone'], self.passing(_spec(2), hosts))
            self.assertEqual(0, fits.call_count)
            self.report('busy', pcpus=4, io_vcpus=0, ts=self.clock.now + 1)
            why = self.recent(host='busy', stage='filter')[-1]
            self.assertEqual(1, fits.call_count)
        self.assertFalse(why.passed)
        self.assertIn('1.250 > 1.000 (reported 3 + pending 0 + request 2',
                      why.reason)
        self.assertEqual(
            'no fresh report (missing_report_policy=pass)',
            self.recent(host='gone', stage='filter')[-1].reason)

    def test_debug_lines_of_failing_hosts(self):
        self._quiet(logging.DEBUG)
        self.report('busy', pcpus=4, io_vcpus=3)
        self.report('idle', pcpus=4, io_vcpus=0)
        logger = self.useFixture(fixtures.FakeLogger(
            name='iosched.nova_plugin', level=logging.DEBUG))
        self.passing(_spec(2), self.hosts('busy', 'idle'))
        lines = [line for line in logger.output.splitlines()
                 if 'check for' in line]
        self.assertEqual(1, len(lines), lines)
        self.assertTrue(lines[0].startswith('(busy, busy-node) '), lines)
        self.assertIn(' fails I/O density check for %s: I/O vCPUs per pCPU '
                      'after placement 1.250 > 1.000 (reported 3 + pending '
                      '0 + request 2 on 4 pCPUs)' % uuids.instance, lines[0])


class WeigherTestCase(_PluginTestCase):

    def setUp(self):
        super(WeigherTestCase, self).setUp()
        self.handler = weights.HostWeightHandler()
        self.weighers = [cls() for cls in self.handler.get_matching_classes(
            ['iosched.nova_plugin.weighers.all_weighers'])]

    def weighed(self, spec, hosts, weighers=None):
        return [(w.obj.host, w.weight) for w in
                self.handler.get_weighed_objects(
                    weighers or self.weighers, hosts, spec)]

    def test_function_path_loads_the_weigher(self):
        self.assertEqual([io_strength.IoStrengthWeigher],
                         [type(w) for w in self.weighers])

    def test_less_io_strength_weighs_highest(self):
        # after placing 2 io vCPUs (+2.0): 4.0/4, 2.4/4, 3.0/4 per pCPU
        self.report('heavy', pcpus=4, io_strength_total=2.0)
        self.report('light', pcpus=4, io_strength_total=0.4)
        self.report('middle', pcpus=4, io_strength_total=1.0)
        got = self.weighed(_spec(2), self.hosts('heavy', 'light', 'middle'))
        self.assertEqual(['light', 'middle', 'heavy'], [h for h, _ in got])
        # normalised: -0.6 -> 1, -0.75 -> 0.625, -1.0 -> 0
        self.assertEqual([1.0, 0.625, 0.0], [w for _, w in got])
        why = self.recent(host='light', stage='weigher')[-1]
        self.assertAlmostEqual(-0.6, why.weight)
        self.assertIn('0.600 (reported 0.400', why.reason)

    def test_negative_multiplier_packs(self):
        self.flags(io_strength_weight_multiplier=-1.0, group='iosched')
        self.report('heavy', pcpus=4, io_strength_total=2.0)
        self.report('light', pcpus=4, io_strength_total=0.4)
        got = self.weighed(_spec(2), self.hosts('heavy', 'light'))
        self.assertEqual('heavy', got[0][0])

    def test_aggregate_metadata_overrides_multiplier(self):
        self.report('heavy', pcpus=4, io_strength_total=2.0)
        self.report('light', pcpus=4, io_strength_total=0.4)
        agg = objects.Aggregate(
            id=1, name='pack', hosts=['heavy', 'light'],
            metadata={'io_strength_weight_multiplier': '-2.0'})
        hosts = self.hosts('heavy', 'light', aggregates=[agg])
        self.assertEqual(-2.0, self.weighers[0].weight_multiplier(hosts[0]))
        self.assertEqual('heavy', self.weighed(_spec(2), hosts)[0][0])

    def _with_stale_host(self):
        self.report('stale', pcpus=4, report_interval=1.0, ts=900.0)
        self.clock.now += 10.0
        self.report('heavy', pcpus=4, io_strength_total=2.0)
        self.report('light', pcpus=4, io_strength_total=0.4)
        self.report('middle', pcpus=4, io_strength_total=1.0)
        return self.hosts('stale', 'heavy', 'light', 'middle')

    def test_stale_report_weighs_lowest(self):
        got = dict(self.weighed(_spec(2), self._with_stale_host()))
        self.assertEqual(0.0, got['stale'])
        reported = [got['heavy'], got['light'], got['middle']]
        self.assertGreater(min(reported), got['stale'])
        # the reported hosts keep > 90 % of their spread
        self.assertGreater(max(reported) - min(reported), 0.9)
        self.assertIn('missing_report_weight=lowest',
                      self.recent(host='stale')[-1].reason)

    def test_stale_report_weighs_lowest_with_negative_multiplier(self):
        self.flags(io_strength_weight_multiplier=-1.0, group='iosched')
        got = self.weighed(_spec(2), self._with_stale_host())
        self.assertEqual('stale', got[-1][0])
        self.assertEqual('heavy', got[0][0])
        self.assertLess(got[-1][1], got[-2][1])

    def test_stale_report_neutral(self):
        self.flags(missing_report_weight='neutral', group='iosched')
        got = dict(self.weighed(_spec(2), self._with_stale_host()))
        self.assertAlmostEqual(0.5, got['stale'])

    def test_changes_winner_among_default_weighers(self):
        # Nova's default weighers prefer 'roomy' (more free RAM, disk and
        # vCPUs): 3.0 against 0.75. It also carries the most I/O strength,
        # and with two hosts Nova's normalisation turns any difference into
        # 1 vs 0, so the I/O weigher adds its multiplier to 'small': 1.0 is
        # not enough to change the winner, 10.0 is.
        self.report('roomy', pcpus=8, io_strength_total=6.0)
        self.report('small', pcpus=8, io_strength_total=0.5)
        attrs = dict(vcpus_total=16, cpu_allocation_ratio=1.0,
                     numa_topology=None)
        roomy = fakes.FakeHostState('roomy', 'n1', dict(
            attrs, free_ram_mb=32768, free_disk_mb=500000, vcpus_used=2))
        small = fakes.FakeHostState('small', 'n2', dict(
            attrs, free_ram_mb=4096, free_disk_mb=100000, vcpus_used=10))
        default = [cls() for cls in self.handler.get_matching_classes(
            ['nova.scheduler.weights.all_weighers'])]
        both = default + self.weighers
        spec = _spec(2)
        self.assertEqual('roomy',
                         self.weighed(spec, [roomy, small], default)[0][0])
        self.flags(io_strength_weight_multiplier=1.0, group='iosched')
        self.assertEqual('roomy',
                         self.weighed(spec, [roomy, small], both)[0][0])
        self.flags(io_strength_weight_multiplier=10.0, group='iosched')
        self.assertEqual('small',
                         self.weighed(spec, [roomy, small], both)[0][0])


class PluginLoadTestCase(test.NoDBTestCase):
    """Loading the classes, as nova-scheduler does when it starts, makes
    the worker's state and starts its report listener, once; scheduling
    requests start nothing (iosched.nova_plugin.state).
    """

    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.MonkeyPatch(
            'iosched.nova_plugin.state._WORKER',
                                             state._Worker()))
        self.started = []
        real = listener_mod.BackgroundListener.start

        def start(listener):
            self.started.append(listener)
            return real(listener)
        self.useFixture(fixtures.MonkeyPatch(
            'iosched.nova_plugin.listener.BackgroundListener.start', start))
        self.flags(listen_for_reports=True, resync_on_start=False,
                   report_topic='iosched-load-%s' % uuids.topic,
                   group='iosched')

    def _load(self):
        fh, wh = filters.HostFilterHandler(), weights.HostWeightHandler()
        loaded = [cls() for cls in fh.get_matching_classes(
            ['iosched.nova_plugin.filters.all_filters'])]
        loaded += [cls() for cls in wh.get_matching_classes(
            ['iosched.nova_plugin.weighers.all_weighers'])]
        return fh, wh, loaded

    def test_load_starts_the_listener_once_requests_never(self):
        self.assertEqual([], self.started)
        fh, wh, loaded = self._load()
        worker = state.current()
        self.addCleanup(worker.stop)
        self.assertEqual([worker.listener], self.started)
        self.assertTrue(worker.listener.listening.wait(10))
        self.assertEqual(4, len(loaded))
        self._load()                    # loaded again: the same state
        self.assertIs(worker, state.current())
        worker.store.update(reports.report(host='h1', io_vcpus=0))
        hosts = [fakes.FakeHostState(h, h + '-node', {})
                 for h in ('h1', 'h2')]
        spec = _spec(2, 'io', **{'iosched:latency_sensitive': 'true'})
        for flt in loaded[:3]:
            flt.host_passes(hosts[0], spec)
        fh.get_filtered_objects(loaded[:3], hosts, spec)
        wh.get_weighed_objects(loaded[3:], hosts, spec)
        loaded[3]._weigh_object(hosts[0], spec)
        self.assertEqual([worker.listener], self.started)
        self.assertEqual(
            {'filter', 'weigher'},
            {d.stage for d in worker.explainer.recent(host='h1')})
