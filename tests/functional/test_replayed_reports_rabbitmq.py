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
"""Captured signed reports replayed through a real RabbitMQ (issue 27).

Reports are signed by the agent's own client (``ReportAPI``, the real
host key) and kept as sent; an attacker on the bus re-casts them as they
are to scheduler workers' listeners (``report_auth = hmac``, each with
``SchedulerState``'s store on a clock the test sets): a week-old report
after its host fell silent, into a fresh worker's empty store, and a
recent one into a fresh store before the host's real report arrives.
"""

import time
import uuid

import oslo_messaging
import pytest

from iosched.contract import rpc
from iosched.contract import signature
from iosched.host_agent.reporter import messaging
from iosched.host_agent.reporter import rpcapi
from iosched.nova_plugin import conf as plugin_conf
from iosched.nova_plugin import endpoint
from iosched.nova_plugin import state
from tests import fault_tally
from tests import fixtures
from tests.unit.nova_plugin import captured
from tests.unit.nova_plugin import reports

T0 = time.time()
DAY = captured.DAY


def _wait(predicate, timeout=60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()


class Worker(object):
    """A scheduler worker listening on its own topic, signed reports only,
    and an attacker's client casting captured reports to it.
    """

    def __init__(self, url, name):
        self.clock = reports.FakeClock(T0)
        self.state = state.SchedulerState(clock=self.clock)
        self.topic = 'iosched-replay-%s' % uuid.uuid4().hex[:8]
        conf = fixtures.CONF
        plugin_conf.register_opts(conf)
        for name_, value in (('report_topic', self.topic),
                             ('report_auth', 'hmac'),
                             ('report_master_key', captured.MASTER)):
            conf.set_override(name_, value, 'iosched')
        try:
            self.server = endpoint.start_listener(
                conf, transport_url=url, store=self.state.store,
                host=name, metrics=self.state.metrics)
        finally:
            for name_ in ('report_topic', 'report_auth',
                          'report_master_key'):
                conf.clear_override(name_, 'iosched')
        self.transport = messaging.get_transport(conf, url)
        self.attacker = oslo_messaging.get_rpc_client(
            self.transport, oslo_messaging.Target(
                topic=self.topic, namespace=rpc.NAMESPACE,
                version=rpc.REPORT_VERSION)).prepare(fanout=True)
        self.sent = 0

    def replay(self, sent, now=None):
        """Cast a captured report as it is; wait until it is handled."""
        if now is not None:
            self.clock.now = now
        self.attacker.cast({}, rpc.REPORT_METHOD, **sent)
        self.sent += 1
        assert _wait(lambda: self.state.store.stats()['received'] >=
                     self.sent), self.state.store.stats()

    def stop(self):
        self.server.stop()
        self.server.wait()


@pytest.fixture
def workers():
    url = fixtures.rabbit_url()
    made = []
    yield lambda name: made.append(Worker(url, name)) or made[-1]
    for w in made:
        w.stop()
    messaging.cleanup()


def test_captured_reports_replayed_over_rabbitmq(workers):
    week_old = captured.capture('c1', ts=T0 - 7 * DAY, seq=1)
    last = captured.capture('c1', ts=T0 - 3600, seq=60480)
    recent = captured.capture('c1', ts=T0 - 20, seq=60481)
    wrongly_stored = cases = 0

    # 1. a worker that heard the host until it fell silent an hour ago
    a = workers('worker-a')
    a.replay(week_old, now=T0 - 7 * DAY)
    a.replay(last, now=T0 - 3600)
    assert a.state.store.get('c1').seq == 60480
    for sent in (week_old, last, week_old):
        a.replay(sent, now=T0)
        cases += 1
        wrongly_stored += a.state.store.get('c1') is not None
    stats = a.state.store.stats()
    assert (stats['stored'], stats['too_old']) == (2, 3), stats

    # 2. a fresh worker (restarted): its store holds nothing of c1
    b = workers('worker-b')
    b.replay(week_old)
    cases += 1
    wrongly_stored += b.state.store.get('c1') is not None
    assert b.state.store.stats()['too_old'] == 1

    # 3. a fresh worker, a copy within the age bound, then the host's
    #    real report over the bus: the real one replaces the copy
    c = workers('worker-c')
    c.replay(recent)
    assert c.state.store.get('c1').seq == 60481
    agent = rpcapi.ReportAPI(c.transport, c.topic,
                             key=signature.derive_host_key(captured.MASTER,
                                                           'c1'))
    agent.report_host_io(captured.report('c1', ts=T0, seq=60482))
    assert _wait(lambda: c.state.store.get('c1').seq == 60482)
    c.sent += 1
    c.replay(recent)                # older than the held report: ignored
    cases += 1
    wrongly_stored += c.state.store.get('c1').seq != 60482
    c.replay(recent, now=T0 + 60)   # the host fell silent
    cases += 1
    wrongly_stored += c.state.store.get('c1') is not None
    assert c.state.store.stats()['replayed'] == 1

    fault_tally.note('replayed and implausible reports', cases=cases,
                     wrongly_stored=wrongly_stored)
    assert wrongly_stored == 0
