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
"""Tests of iosched.host_agent.reporter.resync and Agent.resend_last_report.

The coalescer runs on an injected clock and scheduler (no sleeping); the
RPC path uses oslo.messaging's fake:/ bus with the scheduler side's real
client (``iosched.nova_plugin.rpcapi.AgentAPI``).
"""

import threading
import time

from oslo_config import cfg
import oslo_messaging
import pytest

from iosched.host_agent.conf import reporter as reporter_conf
from iosched.host_agent.reporter import resync
from iosched.nova_plugin import rpcapi
from tests import fixtures
from tests.unit.nova_plugin import reports


class FakeScheduler(object):
    """schedule(delay, fn) that runs only when the test says so."""

    def __init__(self):
        self.calls = []

    def __call__(self, delay, fn):
        handle = _Handle(delay, fn)
        self.calls.append(handle)
        return handle


class _Handle(object):
    def __init__(self, delay, fn):
        self.delay, self.fn, self.cancelled = delay, fn, False

    def cancel(self):
        self.cancelled = True

    def fire(self):
        if not self.cancelled:
            self.fn()


# (time of the request, expected outcome, sends so far)
@pytest.mark.parametrize('steps', [
    # the first request is answered at once
    [(0.0, 'sent', 1)],
    # 50 workers in the same second: one at once, one deferred for all others
    [(0.0, 'sent', 1), (0.1, 'scheduled', 1)] +
    [(0.1 + i * 0.01, 'coalesced', 1) for i in range(48)],
    # requests a second apart are each answered at once
    [(0.0, 'sent', 1), (1.0, 'sent', 2), (2.5, 'sent', 3)],
])
def test_coalescer_at_most_one_per_interval(steps):
    clock = reports.FakeClock(0.0)
    sched = FakeScheduler()
    sent = []
    co = resync.Coalescer(lambda: sent.append(clock.now), 1.0, clock, sched)
    for t, outcome, n_sent in steps:
        clock.now = t
        assert co.request() == outcome
        assert len(sent) == n_sent
    deferred = [h for h in sched.calls]
    assert len(deferred) <= 1
    if deferred:
        # due at the end of the interval that began with the last send
        assert deferred[0].delay == pytest.approx(1.0 - 0.1)
        clock.now = 1.0
        deferred[0].fire()
        assert sent[-1] == 1.0 and len(sent) == steps[-1][2] + 1
        # the next request inside the new interval is deferred again
        clock.now = 1.5
        assert co.request() == 'scheduled'
    c = co.counts
    assert c['requests'] == len(steps) + (1 if deferred else 0)
    assert c['sent'] == len(sent)


def test_coalescer_stop_cancels_the_pending_send():
    clock = reports.FakeClock(0.0)
    sched = FakeScheduler()
    sent = []
    co = resync.Coalescer(lambda: sent.append(1), 1.0, clock, sched)
    co.request()
    clock.now = 0.5
    assert co.request() == 'scheduled'
    co.stop()
    assert sched.calls[0].cancelled
    sched.calls[0].fn()             # a timer that fired anyway: nothing
    assert co.request() == 'coalesced'
    assert sent == [1]


def test_coalescer_survives_a_failing_send():
    calls = []

    def fail():
        calls.append(1)
        raise oslo_messaging.MessageDeliveryFailure('bus down')
    co = resync.Coalescer(fail, 0.0)
    assert co.request() == 'sent'
    assert co.request() == 'sent'
    assert co.counts['failed'] == 2 and co.counts['sent'] == 0


def test_coalescer_real_timer_fires_once():
    sent = threading.Event()
    count = []

    def send():
        count.append(1)
        if len(count) == 2:
            sent.set()
    co = resync.Coalescer(send, 0.2)
    assert co.request() == 'sent'
    assert co.request() == 'scheduled'
    assert co.request() == 'coalesced'
    assert sent.wait(10)
    assert co.counts == {'requests': 3, 'sent': 2, 'coalesced': 1,
                         'failed': 0}


class RecordingReporter(object):
    def __init__(self):
        self.sent = []

    def report_host_io(self, report):
        self.sent.append(report)


def test_resend_last_report():
    sim, driver = fixtures.sim_host_with_vms()
    reporter = RecordingReporter()
    agent = fixtures.make_agent(driver, reporter=reporter)
    assert not agent.resend_last_report()       # nothing built yet
    fixtures.run_ticks(sim, agent, 2)
    assert len(reporter.sent) == 2
    assert agent.resend_last_report()
    assert reporter.sent[-1] is agent.last_report
    assert reporter.sent[-1].seq == 1           # unchanged copy
    agent.reporter = None
    assert not agent.resend_last_report()


def test_resend_is_thread_safe_with_ticks():
    sim, driver = fixtures.sim_host_with_vms()
    reporter = RecordingReporter()
    agent = fixtures.make_agent(driver, reporter=reporter)
    fixtures.run_ticks(sim, agent, 1)
    stop = threading.Event()
    resent = []

    def resender():
        while not stop.is_set():
            resent.append(agent.resend_last_report())
    t = threading.Thread(target=resender)
    t.start()
    try:
        fixtures.run_ticks(sim, agent, 5)
    finally:
        stop.set()
        t.join(30)
    assert resent and all(resent)
    seqs = {r.seq for r in reporter.sent}
    assert seqs == set(range(6))


def _conf(**overrides):
    conf = cfg.ConfigOpts()
    # a private group: overrides live on the OptGroup object, and the
    # shared reporter_conf.GROUP would leak them into the global CONF
    conf.register_group(cfg.OptGroup('reporter'))
    conf.register_opts(reporter_conf.OPTS, group='reporter')
    conf([], default_config_files=[])
    for name, value in overrides.items():
        conf.set_override(name, value, group='reporter')
    return conf


class FakeAgent(object):
    host = 'compute-5'
    reporter = object()

    def __init__(self):
        self.resent = 0
        self.last_report = reports.report(host='compute-5', seq=4)

    def resend_last_report(self):
        self.resent += 1
        return True


def test_resync_service_over_fake_bus():
    conf = _conf(resync_topic='agents-t', resync_min_interval=60.0)
    transport = oslo_messaging.get_rpc_transport(cfg.CONF, url='fake:/')
    agent = FakeAgent()
    service = resync.start_from_conf(conf, agent, transport)
    try:
        assert service.listening.wait(10)
        api = rpcapi.AgentAPI(transport, 'agents-t')
        for i in range(5):          # five workers start at once
            api.resync('worker-%d' % i)
        counts = service.endpoint.coalescer.counts
        deadline = time.monotonic() + 10
        while ((counts['requests'] < 5 or counts['sent'] < 1) and
               time.monotonic() < deadline):
            time.sleep(0.01)
        assert counts['requests'] == 5
        assert agent.resent == 1        # one now, one pending (60 s)
        assert counts['coalesced'] == 3
    finally:
        service.stop()
        transport.cleanup()
    assert service.server is None
    assert not service.listening.is_set()


@pytest.mark.parametrize('listen, has_reporter, started', [
    (True, True, True),
    (False, True, False),
    (True, False, False),
])
def test_start_from_conf(listen, has_reporter, started):
    conf = _conf(listen_for_resync=listen)
    agent = FakeAgent()
    if not has_reporter:
        agent.reporter = None
    transport = oslo_messaging.get_rpc_transport(cfg.CONF, url='fake:/')
    service = resync.start_from_conf(conf, agent, transport)
    try:
        assert (service is not None) is started
    finally:
        if service is not None:
            service.listening.wait(10)
            service.stop()
        transport.cleanup()


def test_test_confs_do_not_leak_overrides():
    _conf(resync_min_interval=60.0)
    assert _conf().reporter.resync_min_interval == 1.0
