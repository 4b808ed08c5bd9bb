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
"""Tests of iosched.nova_plugin.endpoint, direct and over oslo.messaging's
fake:/ bus.

The casts use exactly the agent side's client (fanout, namespace
``iosched``, version 1.0). The background listener is driven through
injected probe/start/wait functions, so no test waits on a real retry
delay. No nova import.
"""

import logging
import os
import socket
import time

from oslo_config import cfg
import oslo_messaging
import pytest

from iosched.contract import payload
from iosched.nova_plugin import conf as iosched_conf
from iosched.nova_plugin import endpoint
from iosched.nova_plugin import listener as listener_mod
from iosched.nova_plugin import store
from tests.unit.nova_plugin import reports


def _wait_for(predicate, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return predicate()


def _conf(**overrides):
    """A private ConfigOpts with [iosched]. Its own OptGroup: oslo.config
    keeps overrides on the group object, so registering the shared
    ``iosched_conf.iosched_group`` would leak them into every ConfigOpts
    (the global CONF included).
    """
    conf = cfg.ConfigOpts()
    for group, opts in iosched_conf.list_opts():
        conf.register_opts(opts, group=group)   # new OptGroups, by name
    iosched_conf.register_opts(conf)        # what the code does: a no-op
    conf([], default_config_files=[])
    for name, value in overrides.items():
        conf.set_override(name, value, group='iosched')
    return conf


def _malformed():
    bad = reports.report(host='bad-host').to_dict()
    bad['pcpus'] = 0
    return bad


@pytest.mark.parametrize('slim', [False, True])
def test_endpoint_stores_good_and_drops_malformed(caplog, slim):
    # slim: the scheduler's store, which the endpoint feeds with the
    # report's head only (HostReport.head_from_dict): same messages
    st = store.ReportStore(slim=slim)
    ep = endpoint.ReportEndpoint(st)
    assert ep._parse == (payload.HostReport.head_from_dict if slim
                         else payload.HostReport.from_dict)
    r = reports.report(host='h1', io_vcpus=3)
    ep.report_host_io({}, r.to_dict())
    assert st.get('h1') == r
    # an out-of-order copy is ignored, not dropped
    ep.report_host_io({}, reports.report(host='h1', ts=1.0).to_dict())
    with caplog.at_level(logging.WARNING,
                         logger='iosched.nova_plugin.endpoint'):
        ep.report_host_io({}, _malformed())
        ep.report_host_io({}, 'not a dict')
    assert ep.counts == {'stored': 1, 'ignored': 1, 'dropped': 2}
    stats = st.stats()
    assert (stats['received'], stats['stored'], stats['ignored'],
            stats['dropped']) == (4, 1, 1, 2)
    messages = [rec.getMessage() for rec in caplog.records
                if rec.levelno == logging.WARNING]
    assert any('bad-host' in m and "'pcpus'" in m and 'an integer > 0' in m
               for m in messages), messages
    assert any('<unknown>' in m and '<root>' in m for m in messages)
    assert st.get('bad-host') is None


@pytest.fixture
def listener():
    conf = _conf()
    st = store.ReportStore()
    server = endpoint.start_listener(conf, transport_url='fake:/', store=st,
                                     host='scheduler-1')
    yield server, st
    server.stop()
    server.wait()
    server.transport.cleanup()


def test_report_over_fake_transport(listener, caplog):
    server, st = listener
    client = oslo_messaging.get_rpc_client(
        server.transport, oslo_messaging.Target(
            topic='iosched-reports', namespace='iosched', version='1.0'))
    cctxt = client.prepare(fanout=True)
    r = reports.report(host='compute-7', io_vcpus=2, io_strength_total=0.8)
    cctxt.cast({}, 'report_host_io', report=r.to_dict())
    assert _wait_for(lambda: st.get('compute-7') is not None)
    assert st.get('compute-7') == r

    caplog.set_level(logging.WARNING, logger='iosched.nova_plugin.endpoint')
    cctxt.cast({}, 'report_host_io', report=_malformed())

    def dropped():
        return any('bad-host' in rec.getMessage() and
                   "'pcpus'" in rec.getMessage()
                   for rec in caplog.records)
    assert _wait_for(dropped)
    assert st.get('bad-host') is None
    assert st.hosts() == ['compute-7']


def test_resync_request_reaches_agents_topic(started):
    """The cast a worker sends: topic agents_topic, method resync."""
    conf = _conf(listen_for_reports=True, agents_topic='agents-x')
    listener = listener_mod.BackgroundListener(conf, store.ReportStore(),
                                               transport_url='fake:/',
                                               host='w1')
    got = []

    class Agentish(object):
        target = oslo_messaging.Target(namespace='iosched', version='1.0')

        def resync(self, ctxt, requester):
            got.append(requester)

    listener.start()
    assert listener.listening.wait(10)
    agent_server = oslo_messaging.get_rpc_server(
        listener.server.transport,
        oslo_messaging.Target(topic='agents-x', server='c1'), [Agentish()],
        executor='threading')
    agent_server.start()
    try:
        assert listener.resync()
        assert _wait_for(lambda: got)
        assert got == ['w1:%d' % os.getpid()]
    finally:
        agent_server.stop()
        agent_server.wait()


@pytest.mark.parametrize('failures, cap, delays', [
    (0, 30.0, []),
    (1, 30.0, [0.5]),
    (4, 30.0, [0.5, 1.0, 2.0, 4.0]),
    (6, 3.0, [0.5, 1.0, 2.0, 3.0, 3.0, 3.0]),   # capped
])
def test_retry_backoff_and_one_warning_per_outage(caplog, failures, cap,
                                                   delays):
    conf = _conf(listener_retry_interval_max=cap, resync_on_start=False)
    outcomes = ['connection refused'] * failures + [None]
    waits = []
    sentinel = object()

    listener = listener_mod.BackgroundListener(
        conf, transport_url='rabbit://u:p@127.0.0.1:1/', host='w',
        store=store.ReportStore(),
        probe=lambda url: outcomes.pop(0),
        start=lambda conf, **kw: sentinel, wait=waits.append)
    with caplog.at_level(logging.WARNING,
                         logger='iosched.nova_plugin.endpoint'):
        listener._run()
    assert listener.server is sentinel and listener.state == 'listening'
    assert waits == delays and listener.delays == delays
    assert listener.attempts == failures + 1
    assert listener.outages == (1 if failures else 0)
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == (2 if failures else 0), warnings
    if failures:
        assert 'no message broker at 127.0.0.1:1' in warnings[0]
        assert 'connection refused' in warnings[0]
        assert 'reachable again after %d attempts' % (failures + 1) in (
            warnings[1])
    listener.server = None


def test_start_errors_are_retried_like_a_dead_broker(caplog):
    conf = _conf(resync_on_start=False)
    calls = []

    def start(conf, **kwargs):
        calls.append(kwargs)
        if len(calls) < 3:
            raise oslo_messaging.MessagingException('auth refused')
        return 'server'
    listener = listener_mod.BackgroundListener(
        conf, transport_url='fake:/', probe=lambda url: None, start=start,
        wait=lambda delay: None, store=store.ReportStore(), host='w')
    with caplog.at_level(logging.WARNING,
                         logger='iosched.nova_plugin.endpoint'):
        listener._run()
    assert listener.server == 'server' and len(calls) == 3
    assert 'MessagingException: auth refused' in caplog.records[0].message
    listener.server = None


def test_stop_while_waiting_for_the_broker():
    conf = _conf()
    listener = listener_mod.BackgroundListener(
        conf, transport_url='fake:/', store=store.ReportStore(), host='w',
        probe=lambda url: 'refused')
    listener.start()
    assert _wait_for(lambda: listener.state == 'waiting')
    listener.stop()
    assert listener.state == 'stopped'
    assert listener._thread.join(10) is None
    assert not listener._thread.is_alive()


@pytest.mark.parametrize('url, addresses', [
    ('rabbit://u:p@h1:5673,u:p@h2/', [('h1', 5673), ('h2', 5672)]),
    ('rabbit://u:p@[::1]:5671/vhost', [('::1', 5671)]),
    ('fake:/', []),
    ('kafka://k1:9092/', []),
])
def test_broker_addresses(url, addresses):
    assert listener_mod.broker_addresses(url) == addresses


def test_broker_addresses_bad_url():
    with pytest.raises(oslo_messaging.InvalidTransportURL):
        listener_mod.broker_addresses('not a url')


def test_probe_broker_open_and_closed_port():
    srv = socket.socket()
    srv.bind(('127.0.0.1', 0))
    srv.listen(1)
    port = srv.getsockname()[1]
    try:
        assert listener_mod.probe_broker('rabbit://u:p@127.0.0.1:%d/' % port) \
            is None
    finally:
        srv.close()
    why = listener_mod.probe_broker('rabbit://u:p@127.0.0.1:%d/' % port)
    assert why.startswith('127.0.0.1:%d: ' % port), why
    assert listener_mod.probe_broker('fake:/') is None


@pytest.mark.parametrize('initial, cap, first', [
    (0.5, 30.0, [0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0]),
    (0.5, 0.5, [0.5, 0.5, 0.5]),
    (2.0, 1.0, [1.0, 1.0]),
])
def test_backoff(initial, cap, first):
    gen = listener_mod.backoff(initial, cap)
    assert [next(gen) for _ in first] == first


def test_test_confs_do_not_leak_overrides():
    _conf(listen_for_reports=True, agents_topic='leak')
    other = _conf()
    assert not other.iosched.listen_for_reports
    assert other.iosched.agents_topic == 'iosched-agents'
