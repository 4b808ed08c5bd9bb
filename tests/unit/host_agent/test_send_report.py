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
"""The agent's two report casts (RPC 1.3): the head fanout to every
scheduler, and the whole report to one reader that asks for it
(``send_report``, Agent API 1.1), rate-limited per reader.
"""

import json
import time

from oslo_config import cfg
import oslo_messaging
import pytest

from iosched.contract import payload
from iosched.contract import rpc
from iosched.contract import signature
from iosched.host_agent.reporter import resync
from iosched.host_agent.reporter import rpcapi
from iosched.nova_plugin import rpcapi as agent_rpcapi
from tests.unit.host_agent import test_resync
from tests.unit.nova_plugin import captured
from tests.unit.nova_plugin import reports


class _Client(object):
    """Stands for the oslo.messaging client: each cast's target and
    kwargs, as the broker carries them (JSON).
    """

    def __init__(self, cap=None):
        self.casts = []
        self._prepared = {}
        self.cap = cap

    def can_send_version(self, version):
        return self.cap is None or tuple(map(int, version.split('.'))) <= \
            tuple(map(int, self.cap.split('.')))

    def prepare(self, **kwargs):
        self._prepared = kwargs
        return self

    def cast(self, ctxt, method, **kwargs):
        self.casts.append((dict(self._prepared), method,
                           json.loads(json.dumps(kwargs))))


def _api(key, cap=None):
    api = captured.agent_client('compute-1')
    api.key = key
    api.client = _Client(cap)
    return api


KEY = signature.derive_host_key(captured.MASTER, 'compute-1')


@pytest.mark.parametrize('key', [None, KEY], ids=['unsigned', 'signed'])
def test_the_fanout_carries_the_head_and_the_tail_counts(key):
    api = _api(key)
    report = captured.report('compute-1', ts=1000.0, seq=3, vcpus=6)
    api.report_host_io(report)
    ((target, method, kw),) = api.client.casts
    assert method == rpc.REPORT_METHOD
    assert target['fanout'] and target['version'] == rpc.REPORT_VERSION_HEAD
    assert kw['tail_counts'] == {'vcpus': 6, 'decisions': 0}
    assert not set(signature.TAIL) & set(kw['report'])
    assert payload.HostReport.head_from_dict(
        kw['report'], kw['tail_counts']) == \
        payload.HostReport.head_from_dict(report.to_dict())
    if key is None:
        assert 'signature' not in kw
    else:
        assert signature.verify(kw['report'], kw['signature'], key,
                                counts=kw['tail_counts'])


@pytest.mark.parametrize('key, version', [
    (None, rpc.REPORT_VERSION_UNSIGNED), (KEY, rpc.REPORT_VERSION_SIGNED)],
    ids=['unsigned', 'signed'])
def test_the_whole_report_goes_to_one_reader(key, version):
    api = _api(key)
    report = captured.report('compute-1', ts=1000.0, seq=3, vcpus=6)
    api.send_whole(report, 'iosched-status-x-1')
    ((target, method, kw),) = api.client.casts
    assert target == {'server': 'iosched-status-x-1', 'version': version,
                      'retry': None}
    assert payload.HostReport.from_dict(kw['report']) == report
    if key is not None:
        assert signature.verify(kw['report'], kw['signature'], key)


# [reporter] version_cap: an agent upgraded before the schedulers casts
# what they take (a 1.2 server refuses a 1.3 cast).
@pytest.mark.parametrize('key, cap, version, signed', [
    (KEY, '1.2', rpc.REPORT_VERSION_SIGNED, True),
    (None, '1.2', rpc.REPORT_VERSION_UNSIGNED, False),
    (KEY, '1.0', rpc.REPORT_VERSION_UNSIGNED, False),
    (None, '1.0', rpc.REPORT_VERSION_UNSIGNED, False),
])
def test_a_capped_agent_fanouts_whole_reports(key, cap, version, signed):
    api = _api(key, cap)
    report = captured.report('compute-1', ts=1000.0, seq=3, vcpus=6)
    api.report_host_io(report)
    ((target, method, kw),) = api.client.casts
    assert target == {'fanout': True, 'version': version, 'retry': None}
    assert payload.HostReport.from_dict(kw['report']) == report
    assert ('signature' in kw) is signed
    assert 'tail_counts' not in kw


def test_the_cap_option_reaches_the_client():
    from iosched.host_agent.reporter import rpcapi
    from oslo_config import cfg
    import oslo_messaging
    transport = oslo_messaging.get_rpc_transport(cfg.CONF, url='fake:/')
    api = rpcapi.ReportAPI(transport, 't', version_cap='1.2')
    assert not api.client.can_send_version(rpc.REPORT_VERSION_HEAD)
    assert api.client.can_send_version(rpc.REPORT_VERSION_SIGNED)


class _Details(object):
    def __init__(self):
        self.sent = []

    def send_whole(self, report, server):
        self.sent.append((report.seq, server))


# (time of the ask, reply_to, sent so far)
@pytest.mark.parametrize('steps', [
    [(0.0, 'a', 1)],
    # the same reader within the interval: not re-sent
    [(0.0, 'a', 1), (0.5, 'a', 1), (1.0, 'a', 2)],
    # other readers are answered at once
    [(0.0, 'a', 1), (0.1, 'b', 2), (0.2, 'c', 3), (0.3, 'a', 3)],
    # no reader named: nothing sent
    [(0.0, '', 0), (0.1, None, 0)],
    # a new reader each time: at most MAX_WHOLE_PER_INTERVAL per interval
    [(0.01 * i, 'r%d' % i, min(i + 1, resync.MAX_WHOLE_PER_INTERVAL))
     for i in range(20)] + [(1.5, 'again', resync.MAX_WHOLE_PER_INTERVAL + 1)],
])
def test_send_report_at_most_once_per_reader_per_interval(steps):
    clock = reports.FakeClock(0.0)
    details = _Details()
    ep = resync.ResyncEndpoint(test_resync.FakeAgent(), 1.0, clock,
                               test_resync.FakeScheduler(), details=details)
    for t, reply_to, n in steps:
        clock.now = t
        ep.send_report({}, requester='status', reply_to=reply_to)
        assert len(details.sent) == n
    assert all(seq == 4 for seq, _ in details.sent)


def test_send_report_without_a_report_or_a_client_sends_nothing():
    agent = test_resync.FakeAgent()
    agent.last_report = None
    details = _Details()
    resync.ResyncEndpoint(agent, details=details).send_report(
        {}, 'status', 'a')
    resync.ResyncEndpoint(test_resync.FakeAgent()).send_report(
        {}, 'status', 'a')
    assert details.sent == []


def test_readers_remembered_are_bounded():
    clock = reports.FakeClock(0.0)
    ep = resync.ResyncEndpoint(test_resync.FakeAgent(), 1.0, clock,
                               details=_Details())
    for i in range(resync.MAX_READERS + 10):
        clock.now = float(i)
        ep.send_report({}, 'status', 'reader-%d' % i)
    assert len(ep._readers) == resync.MAX_READERS
    assert ep.whole_sent == resync.MAX_READERS + 10


def test_send_report_over_fake_bus_reaches_only_the_named_agent():
    conf = test_resync._conf(resync_topic='agents-s', resync_min_interval=60)
    transport = oslo_messaging.get_rpc_transport(cfg.CONF, url='fake:/')
    agents = []
    for host in ('compute-5', 'compute-6'):
        agent = test_resync.FakeAgent()
        agent.host = host
        details = _Details()
        agents.append((agent, details, resync.start_from_conf(
            conf, agent, transport, details=details)))
    try:
        for _, _, service in agents:
            assert service.listening.wait(10)
        api = agent_rpcapi.AgentAPI(transport, 'agents-s')
        api.send_report('compute-6', 'status', 'status-1')
        api.resync('worker-1')      # 1.0, still answered alongside
        deadline = time.monotonic() + 10
        while not agents[1][1].sent and time.monotonic() < deadline:
            time.sleep(0.01)
        assert agents[1][1].sent == [(4, 'status-1')]
        assert agents[0][1].sent == []
        assert _resent(agents, deadline)    # both answered the resync
    finally:
        for _, _, service in agents:
            service.stop()
        transport.cleanup()


def _resent(agents, deadline):
    while time.monotonic() < deadline:
        if all(a.resent == 1 for a, _, _ in agents):
            return True
        time.sleep(0.01)
    return False


def test_start_from_conf_answers_with_the_agents_report_client():
    conf = test_resync._conf(listen_for_resync=True)
    agent = test_resync.FakeAgent()
    agent.reporter = rpcapi.ReportAPI(
        oslo_messaging.get_rpc_transport(cfg.CONF, url='fake:/'), 't')
    transport = oslo_messaging.get_rpc_transport(cfg.CONF, url='fake:/')
    service = resync.start_from_conf(conf, agent, transport)
    try:
        assert service.endpoint.details is agent.reporter
    finally:
        service.listening.wait(10)
        service.stop()
        transport.cleanup()
