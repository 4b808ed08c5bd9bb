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
"""The figures shared by a request's filters and weigher
(``request_view``) give the decisions of reading the store at each call.

Two scheduler states see the same generated reports (``bench.nova_scale.
reports``), the same HostStates and the same events (reports, placements
noted, Nova's ``consume_from_request``, the clock, a new option value,
a RequestSpec used again); one shares its figures, the other reads them
anew at every call (``Unshared``: ``prepared.fresh`` and
``prepared.pendings``, the path before ``request_view``). At every
request each filter keeps the same hosts with the same reasons and the
weigher gives the same raw weights. Example count:
IOSCHED_VIEW_EXAMPLES (default 60).
"""

import os
import random
import threading
import types

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from bench.nova_scale import reports as fake_reports
from iosched.contract import payload
from iosched.contract import payload_sections
from iosched.nova_plugin import prepared
from iosched.nova_plugin import report_checks
from iosched.nova_plugin import request_view
from iosched.nova_plugin import scoring
from iosched.nova_plugin import slo_check
from iosched.nova_plugin import slo_lookup
from iosched.nova_plugin import state as state_mod
from iosched.nova_plugin import weighing
from tests.unit.nova_plugin import reports

EXAMPLES = int(os.environ.get('IOSCHED_VIEW_EXAMPLES', '60'))


class Unshared(object):
    """``Views`` without sharing: every call reads the store again."""

    def clear(self):
        pass

    def rows(self, reports_, cache, spec_obj, host_states, profile):
        preps = prepared.fresh(reports_, host_states, cache)
        return [request_view.Row(
            h, 0, 0, prep, scoring.NO_PENDING if prep is None
            else reports_.pending(h.host))
            for h, prep in zip(host_states, preps)]


def _report(rng, i, now, seq):
    data = fake_reports.report_dict(
        i, ts=now, seq=seq, report_interval=rng.choice((1.0, 5.0)),
        vcpus=rng.randint(1, 40), decisions=0, seed=rng.randrange(1000))
    data['version'] = '1.5'
    data['disk'].update(
        capacity_iops=rng.choice((0.0, 800.0, 1600.0)),
        slo_source=rng.choice(payload_sections.SLO_SOURCES + ('',)))
    return payload.HostReport.from_dict(data)


def _settings(rng):
    return prepared.Settings(
        missing_report_policy=rng.choice(('pass', 'reject')),
        missing_report_weight=rng.choice(('lowest', 'highest', 'neutral')),
        inflight_vcpu_profile=rng.choice(('mixed', 'io', 'cpu')),
        max_io_vcpus_per_pcpu=rng.choice((0.5, 1.0, 2.0)),
        slo_capacity_fraction=rng.choice((0.8, 1.0)),
        slo_lookup_failure_policy='pass',
        slo_unknown_source_policy=rng.choice(('pass', 'reject')))


def _request(rng):
    return scoring.Request(
        vcpus=rng.randint(0, 8),
        io_profile=rng.choice((None, 'io', 'cpu', 'mixed')),
        latency_sensitive=rng.random() < 0.4,
        latency_ms=rng.choice((None, 1, 2, 5)), dedicated=rng.random() < 0.2)


def _schedule(worker, hosts, spec, request, iops, conf, multiplier,
              bump=None):
    """What each stage keeps (host, reason) and the raw weights;
    ``bump``: (stage, host) whose counters grow after that stage, as
    another thread's placement would, taken back at the end.
    """
    out = []
    bumped = None
    for stage, check in enumerate((report_checks.DENSITY,
                                   report_checks.LSVM)):
        v = report_checks.judge(worker, hosts, request, 'r', check, conf,
                                check.name, spec_obj=spec)
        if v is not None:
            out.append([(h.host, ok, v.reason_of(i)) for i, (h, ok) in
                        enumerate(zip(hosts, v.oks))])
            hosts = v.passed
        if bump is not None and bump[0] == stage:
            bumped = bump[1]
            bumped.num_instances += 1
            bumped.vcpus_used += 2
    v = slo_check.judge(worker, hosts, slo_lookup.Demand(iops=iops), 'r',
                        conf, 'slo', spec_obj=spec)
    if v is not None:
        out.append([(h.host, ok, v.reason_of(i)) for i, (h, ok) in
                    enumerate(zip(hosts, v.oks))])
        hosts = v.passed
    weights, reason_of = weighing.weigh(
        worker, hosts, request, 'r', conf, lambda h: multiplier, 'w',
        spec_obj=spec)
    out.append([(h.host, w, reason_of(i))
                for i, (h, w) in enumerate(zip(hosts, weights))])
    if hosts:           # Nova's per-host path, after the whole list
        out.append(weighing.assess(worker, hosts[0], request, conf,
                                   spec_obj=spec))
    if bumped is not None:
        bumped.num_instances -= 1
        bumped.vcpus_used -= 2
    return out


@settings(max_examples=EXAMPLES, deadline=None)
@given(st.integers(0, 2 ** 32))
def test_shared_figures_decide_as_reading_each_time(seed):
    rng = random.Random(seed)
    clock = reports.FakeClock(1000.0)
    shared = state_mod.SchedulerState(clock=clock)
    unshared = state_mod.SchedulerState(clock=clock)
    unshared.views = Unshared()
    workers = (shared, unshared)
    n = rng.randint(1, 25)
    hosts = [types.SimpleNamespace(host=fake_reports.host_name(i),
                                   nodename='n%d' % i,
                                   num_instances=rng.randint(0, 4),
                                   vcpus_used=rng.randint(0, 16),
                                   aggregates=[])
             for i in range(n)]
    seqs = [0] * n

    def new_report(i):
        seqs[i] += 1
        report = _report(rng, i, clock.now, seqs[i])
        for w in workers:
            w.store.update(report)

    for i in range(n):
        if rng.random() < 0.85:
            new_report(i)
    conf = _settings(rng)
    spec = None
    for _ in range(rng.randint(3, 20)):
        event = rng.choice(('request', 'request', 'request', 'note',
                            'consume', 'report', 'tick', 'options'))
        i = rng.randrange(n)
        if event == 'request':
            if spec is None or rng.random() < 0.6:
                spec = types.SimpleNamespace(
                    instance_uuid='u%d' % rng.randrange(10 ** 6),
                    flavor=object())
            request, iops = _request(rng), rng.choice((0.0, 100.0, 500.0))
            multiplier = rng.choice((1.0, -1.0))
            bump = (rng.randrange(2), hosts[i]) if rng.random() < 0.3 else None
            got, want = (_schedule(w, list(hosts), spec, request, iops,
                                   conf, multiplier, bump) for w in workers)
            assert got == want
        elif event == 'note':
            io_vcpus, lsvm_vcpus = rng.randint(0, 2), rng.randint(0, 1)
            for w in workers:
                w.store.note_placement(hosts[i].host, io_vcpus=io_vcpus,
                                       lsvm_vcpus=lsvm_vcpus)
        elif event == 'consume':        # Nova's, or a compute refresh
            hosts[i].num_instances += rng.randint(0, 1)
            hosts[i].vcpus_used += rng.randint(-1, 4)
        elif event == 'report':
            new_report(i)
        elif event == 'tick':
            clock.now += rng.choice((0.5, 2.0, 4.0, 20.0))
        else:
            conf = _settings(rng)


def test_a_view_is_one_request_and_one_thread():
    clock = reports.FakeClock(1000.0)
    worker = state_mod.SchedulerState(clock=clock)
    worker.store.update(reports.report(host='h', ts=clock.now))
    host = types.SimpleNamespace(host='h', nodename='n', num_instances=0,
                                 vcpus_used=0)
    spec = types.SimpleNamespace(instance_uuid='a', flavor=object())
    views, store, cache = worker.views, worker.store, worker.prepared
    reads = []
    real = store.read_many
    store.read_many = lambda hosts: reads.append(hosts) or real(hosts)

    def row(spec_obj, profile='mixed'):
        return views.rows(store, cache, spec_obj, [host], profile)[0]

    first = row(spec)
    assert (row(spec), len(reads)) == (first, 1)    # one read a request
    spec.instance_uuid = 'b'                    # the next of a multi-create
    assert (row(spec), len(reads)) == (first, 2)    # read, still the same
    assert row(spec, 'io').profile == 'io'      # another option value
    store.note_placement('h', io_vcpus=1)       # the store moved on
    assert row(spec).exact.io_vcpus == 1
    host.vcpus_used = 2                         # Nova consumed the host
    assert row(spec).used == 2
    clock.now += 10                             # the report went stale
    assert row(spec).prep is None
    seen = []
    t = threading.Thread(target=lambda: seen.append(
        (row(spec), views._local.view)))
    t.start()
    t.join()
    assert seen[0][1] is not views._local.view  # one view per thread
