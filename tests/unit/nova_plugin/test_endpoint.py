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
"""Tests of nova_plugin.endpoint, direct and over oslo.messaging's fake:/ bus.

The casts use exactly the agent side's client (fanout, namespace
``iosched``, version 1.0). No nova import.
"""

import logging
import time

from oslo_config import cfg
import oslo_messaging
import pytest

from nova_plugin import conf as iosched_conf
from nova_plugin import endpoint
from nova_plugin import store
from tests.unit.nova_plugin import reports


def _wait_for(predicate, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return predicate()


def _malformed():
    bad = reports.report(host='bad-host').to_dict()
    bad['pcpus'] = 0
    return bad


def test_endpoint_stores_good_and_drops_malformed(caplog):
    st = store.ReportStore()
    ep = endpoint.ReportEndpoint(st)
    r = reports.report(host='h1', io_vcpus=3)
    ep.report_host_io({}, r.to_dict())
    assert st.get('h1') == r
    # an out-of-order copy is ignored, not dropped
    ep.report_host_io({}, reports.report(host='h1', ts=1.0).to_dict())
    with caplog.at_level(logging.WARNING, logger='nova_plugin.endpoint'):
        ep.report_host_io({}, _malformed())
        ep.report_host_io({}, 'not a dict')
    assert ep.counts == {'stored': 1, 'ignored': 1, 'dropped': 2}
    messages = [rec.getMessage() for rec in caplog.records
                if rec.levelno == logging.WARNING]
    assert any('bad-host' in m and "'pcpus'" in m and 'an integer > 0' in m
               for m in messages), messages
    assert any('<unknown>' in m and '<root>' in m for m in messages)
    assert st.get('bad-host') is None


@pytest.fixture
def listener():
    conf = cfg.ConfigOpts()
    iosched_conf.register_opts(conf)
    conf([], default_config_files=[])
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

    caplog.set_level(logging.WARNING, logger='nova_plugin.endpoint')
    cctxt.cast({}, 'report_host_io', report=_malformed())

    def dropped():
        return any('bad-host' in rec.getMessage() and
                   "'pcpus'" in rec.getMessage()
                   for rec in caplog.records)
    assert _wait_for(dropped)
    assert st.get('bad-host') is None
    assert st.hosts() == ['compute-7']


def test_ensure_listener_once_per_process(monkeypatch):
    conf = cfg.ConfigOpts()
    iosched_conf.register_opts(conf)
    conf([], default_config_files=[])
    monkeypatch.setattr(endpoint, '_LISTENER',
                        {'pid': None, 'server': None, 'warned': False})
    assert endpoint.ensure_listener(conf, transport_url='fake:/') is None
    assert endpoint._LISTENER['warned']
    conf.set_override('listen_for_reports', True, group='iosched')
    servers = []
    try:
        first = endpoint.ensure_listener(conf, transport_url='fake:/')
        servers.append(first)
        assert first is not None
        assert endpoint.ensure_listener(conf, transport_url='fake:/') is first
        # a forked worker (another pid) starts its own
        endpoint._LISTENER['pid'] = -1
        second = endpoint.ensure_listener(conf, transport_url='fake:/')
        servers.append(second)
        assert second is not first
        assert second.dispatcher.endpoints[0].store is store.get_store()
    finally:
        for server in servers:
            server.stop()
            server.wait()
            server.transport.cleanup()
