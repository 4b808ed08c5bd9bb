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
"""Head-only reports (RPC 1.3) at the scheduler's endpoint, the rolling
upgrade (1.0 - 1.2 whole reports still taken by a 1.3 server), and what
``iosched-status``'s collector holds when heads and whole reports mix.
"""

import time

import oslo_messaging
import pytest

from iosched.contract import payload
from iosched.contract import rpc
from iosched.contract import signature
from iosched.nova_plugin.cmd import status
from iosched.nova_plugin.cmd import status_collect
from iosched.nova_plugin import endpoint
from iosched.nova_plugin import metrics
from iosched.nova_plugin import state
from iosched.nova_plugin import store
from tests.unit.nova_plugin import captured
from tests.unit.nova_plugin import test_endpoint

T0 = 1_700_000_000.0


def _sent(change=None, **kwargs):
    sent = captured.capture('c1', ts=T0, seq=1, **kwargs)
    if change is not None:
        change(sent)
    return sent


def _counts(**kw):
    return lambda s: s['tail_counts'].update(kw)


CASES = [
    # (case, change to the cast, auth, dropped as: None = stored)
    ('signed head', None, 'hmac', None),
    ('unsigned head', None, 'none', None),
    ('head claiming a vCPU more', _counts(vcpus=5), 'hmac',
     metrics.DROP_UNAUTHENTICATED),
    ('head claiming fewer decisions', _counts(decisions=3), 'hmac',
     metrics.DROP_UNAUTHENTICATED),
    ('counts beyond the bound', _counts(vcpus=10 ** 6), 'hmac',
     metrics.DROP_IMPLAUSIBLE),
    ('counts beyond the bound, unsigned', _counts(vcpus=10 ** 6), 'none',
     metrics.DROP_IMPLAUSIBLE),
    ('no vCPU count', lambda s: s['tail_counts'].pop('vcpus'), 'none',
     metrics.DROP_MALFORMED),
    ('counts not an object', lambda s: s.update(tail_counts=[4, 0]),
     'none', metrics.DROP_MALFORMED),
    ('counts not an object, signed', lambda s: s.update(tail_counts=[4, 0]),
     'hmac', metrics.DROP_UNAUTHENTICATED),
    ('records left in the head',
     lambda s: s['report'].update(vcpus=[]), 'none',
     metrics.DROP_MALFORMED),
    ('head without a signature', lambda s: s.pop('signature'), 'hmac',
     metrics.DROP_UNAUTHENTICATED),
    ('whole report, v2 signature (agent 1.2)', None, 'hmac', None),
    ('whole report, unsigned (agent 1.0)',
     lambda s: s.pop('signature'), 'none', None),
]


@pytest.mark.parametrize('change, auth, dropped', [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_scheduler_endpoint_takes_heads_and_whole_reports(change, auth,
                                                         dropped, request):
    whole = 'whole report' in request.node.callspec.id
    sent = _sent(change, whole=whole)
    worker = state.SchedulerState(clock=lambda: T0)
    ep = endpoint.ReportEndpoint(
        worker.store, auth=auth,
        master_key=captured.MASTER if auth == 'hmac' else None,
        metrics=worker.metrics)
    ep.report_host_io({}, **sent)
    got = worker.store.get('c1')
    if dropped is not None:
        assert got is None and ep.counts['dropped'] == 1
        assert _dropped(worker, dropped) == 1
        return
    expected = store.slim(captured.report('c1', ts=T0, seq=1))
    assert got == expected
    assert got.lsvm.nlsvm_vcpus == expected.lsvm.nlsvm_vcpus


def _dropped(worker, reason):
    return worker.metrics.registry.get_sample_value(
        metrics.PREFIX + 'reports_dropped_total', {'reason': reason}) or 0


def test_a_store_of_whole_reports_keeps_a_head_as_it_came():
    st = store.ReportStore(clock=lambda: T0)
    ep = endpoint.ReportEndpoint(st)
    ep.report_host_io({}, **_sent())
    assert st.get('c1') == payload.HostReport.head_from_dict(
        _sent()['report'], _sent()['tail_counts'])
    assert st.get('c1').vcpus == ()


@pytest.mark.parametrize('version, whole, signed', [
    ('1.0', True, False),       # an agent before signatures
    ('1.1', True, True),        # v1 signature
    ('1.2', True, True),        # v2 signature, whole report
    ('1.3', False, True),       # the head (what agents send now)
    ('1.3', False, False),
])
def test_rolling_upgrade_a_1_3_server_takes_every_agent(version, whole,
                                                       signed):
    """Schedulers upgrade first: agents of every older version, casting
    whole reports as they did, are still stored by a 1.3 server.
    """
    auth = 'hmac' if signed else 'none'
    conf = test_endpoint._conf(report_auth=auth,
                               report_master_key=captured.MASTER)
    st = store.ReportStore(slim=True)
    server = endpoint.start_listener(conf, transport_url='fake:/', store=st,
                                     host='scheduler-1')
    try:
        client = oslo_messaging.get_rpc_client(
            server.transport, oslo_messaging.Target(
                topic='iosched-reports', namespace=rpc.NAMESPACE,
                version=version)).prepare(fanout=True)
        sent = captured.capture('c1', ts=time.time(), seq=1, whole=whole)
        if version == '1.1':
            sent['signature'] = signature.sign(
                sent['report'], signature.derive_host_key(
                    captured.MASTER, 'c1'))
        if not signed:
            sent.pop('signature')
        client.cast({}, rpc.REPORT_METHOD, **sent)
        assert test_endpoint._wait_for(lambda: st.get('c1') is not None)
        assert st.get('c1').io_vcpus == 4
    finally:
        server.stop()
        server.wait()
        server.transport.cleanup()


def _report(seq, ts=None):
    return captured.report('c1', ts=T0 + seq if ts is None else ts, seq=seq)


HEAD = {'vcpus': 4, 'decisions': 0}
# (steps: (seq, head?), held (seq, whole?), asked seqs)
COLLECT = [
    ('a head, then its whole report',
     [(1, True), (1, False)], (1, True), [1]),
    ('a whole report first (an agent before 1.3): nothing asked',
     [(1, False), (1, True)], (1, True), []),
    ('a newer head does not hide the whole report',
     [(1, True), (1, False), (2, True)], (1, True), [1]),
    ('a newer whole report replaces the older one',
     [(1, True), (1, False), (2, True), (2, False)], (2, True), [1]),
    ('heads only: the newest, asked once per head',
     [(1, True), (2, True), (2, True)], (2, False), [1, 2]),
    ('an older head after a newer head is not asked for',
     [(2, True), (1, True)], (2, False), [2]),
]


@pytest.mark.parametrize('steps, held, asked', [c[1:] for c in COLLECT],
                         ids=[c[0] for c in COLLECT])
def test_collector_prefers_whole_reports(steps, held, asked):
    seqs = []
    c = status_collect.Collector(watch=['c1'], clock=lambda: T0 + 100)
    c.ask = lambda host: seqs.append(c.asked[host])
    for seq, head in steps:
        c.admit(_report(seq), dict(HEAD) if head else None)
    report, _ = c.reports['c1']
    assert (report.seq, c.tails['c1'] is None) == held
    assert seqs == asked
    assert c.heard.is_set()
    assert c.done.is_set() is held[1]
    assert c.newest['c1'] == T0 + max(s for s, _ in steps)


def test_status_rows_of_a_head_say_what_is_unknown():
    head = store.slim(_report(1))
    row = status.row(head, T0, T0 + 5, dict(HEAD))
    assert row['vcpus'] == 4 and not row['whole']
    assert row['policies'] is None and row['knobs'] is None
    cells = {h: f(row) for h, f in status.COLUMNS}
    assert (cells['POLICIES'], cells['KNOBS']) == ('?', '?')
    whole = status.row(_report(1), T0, T0 + 5)
    assert whole['whole'] and whole['vcpus'] == 4
    assert whole['policies'] == [] and whole['knobs'] == 0
