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
"""A scheduling request never waits for the bus, with and without eventlet.

Each test runs ``scheduler_worker.py`` (a scheduler-worker-like process:
the worker's state made and its listener started at load, then
``state.for_request()`` + ``store.get`` per "request") once monkey-patched by
eventlet and once on native threads:

* broker URL on a closed port: every request returns, the store stays
  empty, the listener retries in the background and logs one WARNING for
  the whole outage;
* the real RabbitMQ: the first request returns before anything is held,
  the reports cast afterwards arrive;
* eventlet with the hub replaced after fork (what oslo.service's eventlet
  ProcessLauncher does): the listener started by the at-fork hook is lost
  with the old hub and the first request starts a new one.
"""

import time
import uuid

import pytest

from iosched.host_agent.reporter import messaging
from iosched.host_agent.reporter import rpcapi
from tests import fixtures
from tests.functional import workers as workers_mod
from tests.unit.nova_plugin import reports


@pytest.fixture
def topics():
    tag = uuid.uuid4().hex[:8]
    return 'iosched-test-reports-%s' % tag, 'iosched-test-agents-%s' % tag


@pytest.mark.parametrize('mode', workers_mod.MODES)
def test_requests_do_not_wait_for_a_dead_broker(tmp_path, topics, mode):
    fixtures.rabbit_url()       # the closed port is only meaningful beside it
    url = 'rabbit://guest:guest@127.0.0.1:%d/' % workers_mod.closed_port()
    w = workers_mod.Workers(tmp_path, url, *topics, mode=mode, requests=40,
                            extra=['--retry-max', '0.5'])
    try:
        s, = w.wait(lambda s: s['requests'] == 40 and
                    s['listener']['attempts'] >= 3)
    finally:
        w.stop()
    first = s['first_request']
    assert first['returned'] and first['hosts'] == []
    assert first['state'] != 'listening'
    assert s['hosts'] == {} and s['stats']['received'] == 0
    listener = s['listener']
    assert listener['state'] in ('waiting', 'connecting')
    assert listener['outages'] == 1
    assert listener['delays'][:2] == [0.5, 0.5]      # capped at 0.5 s
    warnings = [m for level, m in s['messages'] if level == 'WARNING']
    assert len(warnings) == 1, warnings                # once per outage
    assert 'no message broker at 127.0.0.1:' in warnings[0]


def _cast_until(w, reporter, host, predicate, timeout=60.0):
    """Cast a report of ``host`` every 0.2 s until ``predicate(status)``."""
    deadline = time.monotonic() + timeout
    seq = 0
    while time.monotonic() < deadline:
        reporter.report_host_io(reports.report(host=host, ts=time.time(),
                                               seq=seq))
        seq += 1
        s = w.status(w.indexes[0])
        if s is not None and predicate(s):
            return s
        if w.proc.poll() is not None:
            break
        time.sleep(0.2)
    raise AssertionError('no report arrived: %s\n%s' % (
        w.status(w.indexes[0]), w.log()))


@pytest.mark.parametrize('mode, extra', [
    ('native', []),
    ('eventlet', []),
    ('eventlet', ['--forks', '1', '--reset-hub']),
], ids=['native', 'eventlet', 'eventlet-forked-hub-reset'])
def test_reports_arrive_after_the_request_returned(tmp_path, topics, mode,
                                                   extra):
    url = fixtures.rabbit_url()
    report_topic, agents_topic = topics
    w = workers_mod.Workers(tmp_path, url, report_topic, agents_topic,
                            mode=mode, requests=-1, extra=extra)
    reporter = rpcapi.ReportAPI(messaging.get_transport(None, url),
                                report_topic)
    try:
        s, = w.wait(lambda s: s['first_request'] is not None)
        assert s['first_request']['returned']
        assert s['first_request']['hosts'] == []
        s = _cast_until(w, reporter, 'compute-m1',
                        lambda s: 'compute-m1' in s['hosts'])
        assert s['listener']['state'] == 'listening'
        assert s['listener']['resyncs'] == 1
        assert s['requests'] >= 1
        messages = [m for _, m in s['messages']]
        if '--reset-hub' in extra:
            assert any('dropped with the eventlet hub' in m
                       for m in messages), messages
        else:
            assert not any('dropped with the eventlet hub' in m
                           for m in messages), messages
        # no WARNING but the listener's notice that reports are not
        # authenticated ([iosched] report_auth = none, the default)
        assert not any(level == 'WARNING' and 'report_auth' not in m
                       for level, m in s['messages']), s['messages']
    finally:
        w.stop()
        messaging.cleanup()
