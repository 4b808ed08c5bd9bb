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
"""Whole-list filtering against the per-host path it replaced.

``filter_all`` of IoDensityFilter, LsvmFilter and SloCapacityFilter and
``weigh_objects`` of IoStrengthWeigher judge every host of a request at
once. Here, over randomized host lists (fresh, stale and missing reports,
placements Nova consumed and placements noted since the reports, new
reports between rounds, every ``[iosched]`` policy, rebuilds, later
instances of a multi-create request, DEBUG logging on and off), each is
compared with ``Oracle``: the per-host code of before (``host_passes``
per host, ``_assess`` per host and ``missing_weights``), written with the
pure rules. Same passing hosts, same raw weights, same reasons in the
explain ring and the same metric counts. Examples:
IOSCHED_FILTER_ALL_EXAMPLES (default 60).
"""

import dataclasses
import logging
import os

import fixtures
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
from nova import objects
from nova.scheduler import filters
from nova import test
from nova.tests.unit.scheduler import fakes
from oslo_utils.fixture import uuidsentinel as uuids

from iosched.contract import lsvm as lsvm_bound
from iosched.contract import payload_sections
from iosched.nova_plugin.filters import io_density
from iosched.nova_plugin.filters import lsvm
from iosched.nova_plugin.filters import slo_capacity
from iosched.nova_plugin import inflight
from iosched.nova_plugin import lsvm_rule
from iosched.nova_plugin import metrics
from iosched.nova_plugin import request_spec
from iosched.nova_plugin import scoring
from iosched.nova_plugin import slo_check
from iosched.nova_plugin import slo_lookup
from iosched.nova_plugin import slo_rule
from iosched.nova_plugin import state
from iosched.nova_plugin.weighers import io_strength
from tests.unit.nova_plugin import reports

EXAMPLES = int(os.environ.get('IOSCHED_FILTER_ALL_EXAMPLES', '60'))


class Oracle(object):
    """The per-host filters and weigher of before, on the pure rules."""

    def __init__(self, reports_, opts, tracker):
        self.reports, self.o, self.tracker = reports_, opts, tracker

    def _pending(self, h, report):
        return inflight.pending_for(self.reports, h, report,
                                    self.o['inflight_vcpu_profile'],
                                    self.tracker)

    def report_filter(self, kind, hosts, request):
        """[(host, passes, reason, cause)] of IoDensity/LsvmFilter."""
        if kind == 'lsvm' and not request.latency_sensitive:
            return None
        out = []
        for h in hosts:
            report = self.reports.get(h.host)
            if report is None:
                policy = self.o['missing_report_policy']
                needs = (scoring.needs_report(request) if kind == 'density'
                         else True)
                out.append((h.host, policy == 'pass' or not needs,
                            'no fresh report (missing_report_policy=%s)'
                            % policy, metrics.CAUSE_NO_REPORT))
                continue
            pending = self._pending(h, report)
            if kind == 'density':
                ok, why = scoring.fits(report, pending, request,
                                       self.o['max_io_vcpus_per_pcpu'])
            else:
                ok, why, _ = lsvm_rule.check(report, pending, request)
            out.append((h.host, ok, why, metrics.CAUSE_RULE))
        return out

    def slo(self, hosts, demand):
        if not demand.iops and not demand.error:
            return None
        out = []
        for h in hosts:
            if demand.error:
                policy = self.o['slo_lookup_failure_policy']
                out.append((h.host, policy == 'pass',
                            'SLO floors unknown (slo_lookup_failure_policy='
                            '%s): %s' % (policy, demand.error),
                            metrics.CAUSE_SLO_LOOKUP))
                continue
            report = self.reports.get(h.host)
            cause = metrics.CAUSE_RULE
            if report is None:
                ok, why, cause = None, 'no fresh report', \
                    metrics.CAUSE_NO_REPORT
            else:
                ok, why = slo_rule.admit(
                    report.disk.capacity_iops, report.disk.reserved_iops,
                    slo_check.pending_iops(self.reports.pending(h.host)),
                    demand.iops, self.o['slo_capacity_fraction'])
            if ok is None:
                policy = self.o['missing_report_policy']
                ok = policy == 'pass'
                why = '%s (missing_report_policy=%s)' % (why, policy)
            out.append((h.host, ok, why, cause))
        return out

    def weigh(self, hosts, request, multipliers):
        """(raw weights, reasons)."""
        assessed = []
        for h in hosts:
            report = self.reports.get(h.host)
            if report is None:
                assessed.append((None, 'no fresh report'))
                continue
            pending = self._pending(h, report)
            assessed.append((scoring.score(report, pending, request),
                             scoring.score_reason(report, pending,
                                                  request)))
        mode = self.o['missing_report_weight']
        filled = scoring.missing_weights([v for v, _ in assessed],
                                         multipliers, mode)
        reasons = [why if v is not None else
                   '%s: missing_report_weight=%s' % (why, mode)
                   for v, why in assessed]
        return filled, reasons


def _counts(worker):
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for m in worker.metrics.registry.collect() for s in m.samples
            if m.name in (metrics.PREFIX + 'filter_rejections',
                          metrics.PREFIX + 'filter_checks') and
            not s.name.endswith('_created')}


def _grown(before, after):
    return {k: v - before.get(k, 0.0) for k, v in after.items()
            if v - before.get(k, 0.0)}


OPTS = st.fixed_dictionaries({
    'missing_report_policy': st.sampled_from(['pass', 'reject']),
    'missing_report_weight': st.sampled_from(['lowest', 'neutral']),
    'inflight_vcpu_profile': st.sampled_from(['mixed', 'io', 'cpu']),
    'max_io_vcpus_per_pcpu': st.sampled_from([0.5, 1.0, 2.0]),
    'io_strength_weight_multiplier': st.sampled_from([1.0, -1.0, 2.5]),
    'slo_capacity_fraction': st.sampled_from([0.5, 1.0]),
    'slo_lookup_failure_policy': st.sampled_from(['pass', 'reject']),
})

HOST = st.fixed_dictionaries({
    'report': st.sampled_from(['fresh', 'fresh', 'fresh', 'stale',
                               'missing']),
    'pcpus': st.sampled_from([2, 4, 8]),
    'io_vcpus': st.integers(0, 10),
    'io_strength_total': st.sampled_from([0.0, 0.4, 1.0, 2.0, 5.5]),
    'lsvm_count': st.integers(0, 12),
    'nlsvm_vcpus': st.integers(0, 16),
    'mechanism': st.sampled_from(lsvm_bound.MECHANISMS),
    'wakeup_latency_us': st.sampled_from([0.0, 13.0, 63.0, 4000.0]),
    'min_latency_ms': st.sampled_from([0.0, 2.0, 5.0]),
    'capacity_iops': st.sampled_from([0.0, 1000.0, 5000.0]),
    'reserved_iops': st.sampled_from([0.0, 500.0, 4000.0]),
    'num_instances': st.integers(0, 4),
    'vcpus_used': st.integers(0, 16),
})

FLAVOR = st.fixed_dictionaries({
    'vcpus': st.integers(1, 6),
    'io_profile': st.sampled_from([None, 'io', 'cpu', 'mixed']),
    'latency_sensitive': st.booleans(),
    'latency_ms': st.sampled_from([None, '1', '2', '5']),
    'dedicated': st.booleans(),
})

# Between two rounds: (host index, Nova consumed vCPUs, noted I/O vCPUs,
# new report).
CHANGE = st.tuples(st.integers(0, 30), st.integers(0, 4),
                   st.integers(0, 3), st.booleans())

ROUND = st.fixed_dictionaries({
    'flavor': FLAVOR,
    'demand': st.sampled_from(['none', 'iops', 'big', 'error']),
    'rebuild': st.booleans(),
    'index': st.sampled_from([0, 1]),
    'changes': st.lists(CHANGE, max_size=6),
    'advance': st.sampled_from([0.0, 0.0, 2.0]),
})


class WholeListTestCase(test.NoDBTestCase):

    def _report(self, name, h, ts):
        lsvm_state = reports.lsvm(
            count=h['lsvm_count'], nlsvm_vcpus=h['nlsvm_vcpus'],
            min_latency_ms=h['min_latency_ms'], pcpus=h['pcpus'],
            mechanism=h['mechanism'],
            wakeup_latency_us=h['wakeup_latency_us'],
            dl_bw_limit=0.95 * h['pcpus'])
        r = reports.report(host=name, ts=ts, pcpus=h['pcpus'],
                           io_vcpus=h['io_vcpus'],
                           io_strength_total=h['io_strength_total'],
                           report_interval=1.0, lsvm=lsvm_state)
        # an agent that knows its SLO floors (the hosts that cannot know
        # are tests/nova/test_slo_capacity.py's)
        return dataclasses.replace(r, disk=payload_sections.DiskState(
            capacity_iops=h['capacity_iops'],
            reserved_iops=h['reserved_iops'],
            slo_source=payload_sections.SLO_SOURCE_DRIVER))

    def _spec(self, f, rebuild):
        extra = {}
        if f['io_profile']:
            extra['iosched:io_profile'] = f['io_profile']
        if f['latency_sensitive']:
            extra['iosched:latency_sensitive'] = 'true'
        if f['latency_ms']:
            extra['iosched:latency_ms'] = f['latency_ms']
        if f['dedicated']:
            extra['hw:cpu_policy'] = 'dedicated'
        flavor = objects.Flavor(name='f', vcpus=f['vcpus'], memory_mb=512,
                                root_gb=1, ephemeral_gb=0, swap=0,
                                extra_specs=extra)
        spec = objects.RequestSpec(flavor=flavor,
                                   instance_uuid=uuids.instance,
                                   num_instances=2, instance_group=None)
        if rebuild:
            spec.scheduler_hints = {'_nova_check_type': ['rebuild']}
        return spec

    def _compare_filter(self, worker, flt, hosts, spec, index, want):
        handler = filters.HostFilterHandler()
        worker.explainer.clear()
        before = _counts(worker)
        got = handler.get_filtered_objects([flt], hosts, spec, index)
        grown = _grown(before, _counts(worker))
        if want is None:                # not looked at: every host passes
            self.assertEqual([h.host for h in hosts],
                             [h.host for h in got])
            self.assertEqual([], worker.explainer.recent())
            self.assertEqual({}, grown)
            return
        self.assertEqual([w[0] for w in want if w[1]],
                         [h.host for h in got or []])
        self.assertEqual([(w[0], w[1], w[2]) for w in want],
                         [(d.host, d.passed, d.reason)
                          for d in worker.explainer.recent(stage='filter')])
        name = type(flt).__name__
        expected = {}
        for _, ok, _, cause in want:
            key = (metrics.PREFIX + 'filter_checks_total', (
                ('filter', name), ('result', 'passed' if ok else
                                   'rejected')))
            expected[key] = expected.get(key, 0) + 1
            if not ok:
                key = (metrics.PREFIX + 'filter_rejections_total', (
                    ('cause', cause), ('filter', name)))
                expected[key] = expected.get(key, 0) + 1
        self.assertEqual(expected, grown)

    @settings(max_examples=EXAMPLES, deadline=None)
    @given(OPTS, st.lists(HOST, min_size=2, max_size=30),
           st.lists(ROUND, min_size=1, max_size=4), st.booleans())
    def test_same_verdicts_weights_reasons_and_counts(self, opts, host_specs,
                                                      rounds, debug):
        clock = reports.FakeClock(1000.0)
        # a fresh worker state per example
        worker = state.SchedulerState(clock=clock)
        scope = state.use_state(worker)
        scope.__enter__()
        self.addCleanup(scope.__exit__, None, None, None)
        reports_ = worker.store
        logging.getLogger('iosched.nova_plugin').setLevel(
            logging.DEBUG if debug else logging.INFO)
        self.addCleanup(logging.getLogger('iosched.nova_plugin').setLevel,
                        logging.NOTSET)
        for name, value in opts.items():
            self.flags(**{name: value, 'group': 'iosched'})
        oracle = Oracle(reports_, opts, inflight.Tracker())
        names = ['h%02d' % i for i in range(len(host_specs))]
        for name, h in zip(names, host_specs):
            if h['report'] == 'stale':
                reports_.update(self._report(name, h, 990.0))
            elif h['report'] == 'fresh':
                reports_.update(self._report(name, h, clock.now))
        hosts = [fakes.FakeHostState(name, name + '-node', dict(
            num_instances=h['num_instances'], vcpus_used=h['vcpus_used']))
            for name, h in zip(names, host_specs)]
        weigher = io_strength.IoStrengthWeigher()
        for rnd in rounds:
            clock.now += rnd['advance']
            spec = self._spec(rnd['flavor'], rnd['rebuild'])
            request = request_spec.to_request(spec)
            demand = {'none': slo_lookup.NO_DEMAND,
                      'iops': slo_lookup.Demand(iops=600.0),
                      'big': slo_lookup.Demand(iops=4600.0),
                      'error': slo_lookup.Demand(error='no Cinder')}[
                          rnd['demand']]
            self.useFixture(fixtures.MonkeyPatch(
                'iosched.nova_plugin.slo_lookup.Resolver.demand',
                lambda resolver, spec_obj, lookup, d=demand: d))
            rebuild = rnd['rebuild']
            # the filters, each alone on every host, in Nova's order
            for flt, want in (
                    (io_density.IoDensityFilter(),
                     lambda: oracle.report_filter('density', hosts,
                                                  request)),
                    (lsvm.LsvmFilter(),
                     lambda: oracle.report_filter('lsvm', hosts, request)),
                    (slo_capacity.SloCapacityFilter(),
                     lambda: oracle.slo(hosts, demand))):
                self._compare_filter(worker, flt, hosts, spec, rnd['index'],
                                     None if rebuild else want())
            # the weigher on every host
            worker.explainer.clear()
            multipliers = [weigher.weight_multiplier(h) for h in hosts]
            want_w, want_why = oracle.weigh(hosts, request, multipliers)
            from nova import weights
            got = weigher.weigh_objects(
                [weights.WeighedObject(h, 0.0) for h in hosts], spec)
            self.assertEqual(want_w, got)
            self.assertEqual(
                list(zip([h.host for h in hosts], want_w, want_why)),
                [(d.host, d.weight, d.reason)
                 for d in worker.explainer.recent(stage='weigher')])
            # then the world moves on: Nova places, the demo notes, hosts
            # report again
            for i, consumed, noted, again in rnd['changes']:
                if i >= len(hosts):
                    continue
                hosts[i].num_instances += 1 if consumed else 0
                hosts[i].vcpus_used += consumed
                if noted:
                    reports_.note_placement(hosts[i].host, noted)
                if again and host_specs[i]['report'] != 'missing':
                    reports_.update(self._report(
                        names[i], host_specs[i], clock.now + 0.5))
