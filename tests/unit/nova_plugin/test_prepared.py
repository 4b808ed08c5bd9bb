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
"""The whole-list parts of the filters' hot path, against the per-host
ones (no nova): ``lsvm_rule.passes`` against ``check``, ``prepared``,
``inflight.observe_node`` against ``Tracker.observe``, the explain ring's
batches against a plain bounded ring, ``SchedulerMetrics.note_filters`` against
``note_filter``. Example counts: IOSCHED_PREPARED_EXAMPLES (default 300).
"""

import collections
import os
import types

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import pytest

from iosched.contract import lsvm as lsvm_bound
from iosched.contract import payload_sections
from iosched.nova_plugin import explain
from iosched.nova_plugin import inflight
from iosched.nova_plugin import lsvm_rule
from iosched.nova_plugin import metrics
from iosched.nova_plugin import prepared
from iosched.nova_plugin import scoring
from tests.unit.nova_plugin import reports

EXAMPLES = int(os.environ.get('IOSCHED_PREPARED_EXAMPLES', '300'))

MECHS = st.sampled_from(lsvm_bound.MECHANISMS + ('bogus',))


@st.composite
def lsvm_reports(draw):
    pcpus = draw(st.integers(1, 64))
    lsvm = payload_sections.LsvmState(
        supported=draw(st.booleans()), count=draw(st.integers(0, 200)),
        nlsvm_slice_ms=draw(st.sampled_from([0.5, 1.0, 3.0, 6.0, 12.0])),
        min_slice_ms=draw(st.sampled_from([0.05, 0.1, 0.3, 1.0])),
        max_slice_ms=draw(st.sampled_from([0.2, 1.0, 2.0, 200.0])),
        max_per_pcpu=draw(st.integers(1, 8)),
        default_latency_ms=draw(st.sampled_from([0.5, 1.0, 2.0, 5.0])),
        min_latency_ms=draw(st.sampled_from([0.0, 0.5, 1.0, 2.0, 10.0])),
        wakeup_preemption=draw(st.booleans()),
        nlsvm_vcpus=draw(st.one_of(st.none(), st.integers(0, 300))),
        mechanism=draw(MECHS),
        wakeup_latency_us=draw(st.sampled_from([0.0, 13.0, 63.0, 4000.0])),
        deadline_max_share=draw(st.sampled_from([0.1, 0.5, 1.0])),
        dl_bw_limit=draw(st.sampled_from([0.0, 3.8, 15.2, 60.8])),
        dl_bw_foreign=draw(st.sampled_from([0.0, 0.5, 2.0])),
        dl_runtime_us=draw(st.sampled_from([0, 500, 1500])))
    return reports.report(pcpus=pcpus, lsvm=lsvm)


PENDINGS = st.builds(
    scoring.Pending, placements=st.integers(0, 5),
    io_vcpus=st.integers(0, 20), lsvm_vcpus=st.integers(0, 20),
    io_strength=st.floats(0, 20), vcpus=st.integers(0, 40))

REQUESTS = st.builds(
    scoring.Request, vcpus=st.integers(0, 16),
    io_profile=st.sampled_from([None, 'io', 'cpu', 'mixed']),
    latency_sensitive=st.just(True),
    latency_ms=st.sampled_from([None, 1, 2, 5, 50]),
    dedicated=st.booleans())


@settings(max_examples=EXAMPLES, deadline=None)
@given(lsvm_reports(), PENDINGS, REQUESTS)
def test_lsvm_passes_is_checks_verdict(report, pending, request):
    terms = lsvm_rule.host_terms(report)
    want = lsvm_rule.check(report, pending, request)[0]
    assert lsvm_rule.passes(terms, *lsvm_rule.pending_terms(pending),
                            request) is want
    # and memoised per report: the second answer is the same
    prep = prepared.Prepared(report)
    for _ in range(2):
        assert prep.lsvm_passes(
            request, *lsvm_rule.pending_terms(pending)) is want


@pytest.mark.parametrize('value, ok', [
    (0, True), (0.0, True), (12.5, True), (-1, False), (float('nan'), False),
    (float('inf'), False), (True, False), ('3', False), (None, False)])
def test_iops_ok_is_what_admit_accepts(value, ok):
    assert prepared.iops_ok(value) is ok


def test_cache_prepares_once_per_report_and_is_bounded():
    cache = prepared.Cache(max_hosts=2)
    r1 = reports.report(host='a', io_vcpus=3)
    p1 = cache.prepared(r1)
    assert cache.prepared(r1) is p1
    assert (p1.io_vcpus, p1.pcpus, p1.bases) == (3, 4.0, {})
    r2 = reports.report(host='a', io_vcpus=3, seq=2)   # a new report
    assert cache.prepared(r2) is not p1
    cache.prepared(reports.report(host='b'))
    cache.prepared(reports.report(host='c'))
    assert len(cache) == 2                    # 'a', least recent, left


class _Store(object):
    """get(host) of a dict, with max_hosts like ReportStore."""

    max_hosts = 10

    def __init__(self, held):
        self.held = held
        self.asked = []

    def get(self, host):
        self.asked.append(host)
        return self.held.get(host)


def test_fresh_reads_every_host_once_in_order():
    r = reports.report(host='a')
    store = _Store({'a': r})
    hosts = [types.SimpleNamespace(host=h) for h in ('a', 'x', 'a')]
    got = prepared.fresh(store, hosts, prepared.Cache())
    assert store.asked == ['a', 'x', 'a']
    assert got[0].report is r and got[1] is None and got[2] is got[0]


# A look: (host index, report index, num_instances, vcpus_used), the
# HostState's numbers possibly not numbers (a MagicMock, None).
LOOKS = st.lists(st.tuples(
    st.integers(0, 5), st.integers(0, 2),
    st.one_of(st.integers(0, 20), st.floats(0, 40), st.none(),
              st.just('x')),
    st.one_of(st.integers(0, 40), st.floats(0, 40), st.none())),
    max_size=60)


@settings(max_examples=EXAMPLES, deadline=None)
@given(LOOKS)
def test_observe_node_is_the_trackers_rule(looks):
    # the tracker keys a baseline by (host, node) and report; observe_node
    # keeps one dict of baselines per report (and host): a new report (here
    # report index r of host h) starts afresh
    tracker = inflight.Tracker()
    bases = collections.defaultdict(dict)
    for h, r, n, v in looks:
        hs = types.SimpleNamespace(host='h%d' % h, nodename='n%d' % h,
                                   num_instances=n, vcpus_used=v)
        want = tracker.observe(('h%d' % h, 'n%d' % h), r,
                               inflight._attr(hs, 'num_instances'),
                               inflight._attr(hs, 'vcpus_used'))
        assert inflight.observe_node(bases[(h, r)], hs) == want
        for other in range(3):     # the tracker forgets the other reports
            if other != r:
                bases.pop((h, other), None)


def test_observe_node_bounds_its_nodes():
    bases = {}
    for i in range(5):
        inflight.observe_node(bases, types.SimpleNamespace(
            nodename='n%d' % i, num_instances=1, vcpus_used=1), max_nodes=3)
    assert len(bases) <= 3


def test_pendings_is_pending_for():
    class Reports(object):
        max_hosts = 100

        def pending(self, host):
            return (scoring.Pending(placements=1, io_vcpus=2, vcpus=2)
                    if host == 'noted' else scoring.NO_PENDING)

    rep = reports.report()
    hosts = [types.SimpleNamespace(host=h, nodename=h, num_instances=2,
                                   vcpus_used=4) for h in ('noted', 'x')]
    tracker = inflight.Tracker()
    preps = [prepared.Prepared(rep), prepared.Prepared(rep), None]
    for grow in (0, 3):
        for h in hosts:
            h.num_instances += grow
            h.vcpus_used += 2 * grow
        want = [inflight.pending_for(Reports(), h, rep, 'io', tracker)
                for h in hosts] + [None]
        assert prepared.pendings(Reports(), hosts + [hosts[0]], preps,
                                 'io') == want


# A batch: (stage, request, [(host, passed)]).
BATCHES = st.lists(st.tuples(
    st.sampled_from(['filter', 'weigher']), st.sampled_from(['r1', 'r2']),
    st.lists(st.tuples(st.sampled_from(['a', 'b', 'c']), st.booleans()),
             max_size=9)), max_size=8)


@settings(max_examples=EXAMPLES, deadline=None)
@given(BATCHES, st.integers(1, 12), st.sampled_from([None, 'a', 'b']),
       st.sampled_from([None, 'r1']), st.sampled_from([None, 'filter']),
       st.sampled_from([None, 1, 3, 50]))
def test_batches_read_as_one_decision_at_a_time(batches, maxlen, host,
                                                request, stage, limit):
    # the reference: a plain bounded ring of decisions written at once
    ring = collections.deque(maxlen=maxlen)
    seq = 0
    lazy = explain.Explainer(maxlen=maxlen)
    formatted = []
    for n, (bstage, breq, hosts) in enumerate(batches):
        for i, (h, ok) in enumerate(hosts):
            seq += 1
            ring.append(explain.Decision(seq, bstage, h, breq, ok, None,
                                         'why %d.%d' % (n, i)))
        lazy.record_batch(
            bstage, breq, [types.SimpleNamespace(host=h) if i % 2 else h
                           for i, (h, _) in enumerate(hosts)],
            lambda i, n=n: formatted.append((n, i)) or 'why %d.%d' % (n, i),
            passed=[ok for _, ok in hosts])
    assert formatted == []                  # nothing written yet
    want = [d for d in ring if (host is None or d.host == host) and
            (request is None or d.request == request) and
            (stage is None or d.stage == stage)]
    want = want[-limit:] if limit else want
    assert lazy.recent(host=host, request=request, stage=stage,
                       limit=limit) == want
    assert len(formatted) == len(want)      # only what was read


def test_record_returns_its_decision_and_numbers_go_on():
    ring = explain.Explainer(maxlen=2)
    ring.record_batch('filter', 'r', ['a', 'b'], str, passed=[True, False])
    d = ring.record('weigher', 'c', 'r', weight=-0.5, reason='because')
    assert d == explain.Decision(3, 'weigher', 'c', 'r', None, -0.5,
                                 'because')
    assert ring.recent() == [
        explain.Decision(2, 'filter', 'b', 'r', False, None, '1'), d]
    ring.record_batch('weigher', 'r', ['a', 'b'], str, weights=[0.5, 1.5])
    assert [(x.host, x.passed, x.weight) for x in ring.recent()] == [
        ('a', None, 0.5), ('b', None, 1.5)]
    assert ring.record_batch('filter', 'r', [], str) is None
    with pytest.raises(ValueError, match='maxlen must be >= 1'):
        explain.Explainer(maxlen=0)


def _samples(counters):
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for m in counters.registry.collect() for s in m.samples
            if not s.name.endswith('_created') and
            m.name in (metrics.PREFIX + 'filter_checks',
                       metrics.PREFIX + 'filter_rejections')}


@pytest.mark.parametrize('passed, rejected', [
    (0, {}), (3, {}), (0, {metrics.CAUSE_RULE: 2}),
    (5, {metrics.CAUSE_RULE: 1, metrics.CAUSE_NO_REPORT: 0,
         metrics.CAUSE_SLO_LOOKUP: 4})])
def test_note_filters_counts_as_note_filter(passed, rejected):
    counters = metrics.SchedulerMetrics()
    before = _samples(counters)
    for _ in range(passed):
        counters.note_filter('OneByOne', True)
    for cause, n in rejected.items():
        for _ in range(n):
            counters.note_filter('OneByOne', False, cause)
    counters.note_filters('AllAtOnce', passed, rejected)
    after = _samples(counters)

    def grown(name):
        out = {}
        for (metric, labels), value in after.items():
            d = dict(labels)
            if d.get('filter') == name:
                d.pop('filter')
                out[(metric, tuple(sorted(d.items())))] = (
                    value - before.get((metric, labels), 0.0))
        return {k: v for k, v in out.items() if v}
    assert grown('AllAtOnce') == grown('OneByOne')
