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
"""Hostile reports through a real RabbitMQ to a scheduler worker's listener.

The hypothesis payloads of ``tests/unit/nova_plugin/test_hostile_payloads``
are cast over the broker, as any client of the bus could, to a listener
with ``report_auth = none`` and to one with ``hmac``. After the storm the
listeners still serve (a genuine report sent last is stored: the queue is
FIFO, so every hostile one was handled before it), the known hosts'
reports are unchanged, and the hmac listener stored nothing hostile.
``IOSCHED_HOSTILE_RPC_EXAMPLES`` (default 1,000) sets the storm's size.
"""

import os
import time
import uuid

from hypothesis import given
from hypothesis import HealthCheck
from hypothesis import settings
from hypothesis import strategies as st
import oslo_messaging
import pytest

from iosched.contract import signature
from iosched.host_agent.reporter import messaging
from iosched.host_agent.reporter import rpcapi
from iosched.nova_plugin import conf as plugin_conf
from iosched.nova_plugin import endpoint
from tests import fault_tally
from tests import fixtures
from tests.unit.nova_plugin import reports
from tests.unit.nova_plugin import test_hostile_payloads as hostile

EXAMPLES = int(os.environ.get('IOSCHED_HOSTILE_RPC_EXAMPLES', '1000'))
MASTER = hostile.MASTER


def _wait(predicate, timeout=120.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


@pytest.fixture
def listeners():
    url = fixtures.rabbit_url()
    topic = 'iosched-hostile-%s' % uuid.uuid4().hex[:8]
    plugin_conf.register_opts(fixtures.CONF)
    fixtures.CONF.set_override('report_topic', topic, 'iosched')
    servers, stores = [], []
    try:
        for auth in ('none', 'hmac'):
            fixtures.CONF.set_override('report_auth', auth, 'iosched')
            fixtures.CONF.set_override('report_master_key', MASTER,
                                       'iosched')
            s = hostile._victim_store()
            servers.append(endpoint.start_listener(
                fixtures.CONF, transport_url=url, store=s,
                host='worker-%s' % auth))
            stores.append(s)
    finally:
        for name in ('report_auth', 'report_master_key', 'report_topic'):
            fixtures.CONF.clear_override(name, 'iosched')
    yield url, topic, stores
    for server in servers:
        server.stop()
        server.wait()
    messaging.cleanup()


def test_a_storm_of_hostile_reports_over_rabbitmq(listeners):
    url, topic, (open_store, signed_store) = listeners
    before = [hostile._snapshot(s) for s in (open_store, signed_store)]
    transport = messaging.get_transport(fixtures.CONF, url)
    client = oslo_messaging.get_rpc_client(transport, oslo_messaging.Target(
        topic=topic, namespace='iosched', version='1.1')).prepare(
            fanout=True)
    sent = {'n': 0}

    @settings(max_examples=EXAMPLES, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(data=hostile.any_payload,
           sig=st.one_of(st.none(), st.text(max_size=40)))
    def storm(data, sig):
        try:
            client.cast({}, 'report_host_io', report=data, signature=sig)
        except (TypeError, ValueError, OverflowError, RecursionError):
            return      # the client's serializer refused it: never sent
        sent['n'] += 1

    storm()
    assert sent['n'] >= EXAMPLES * 0.8
    # last, genuine reports: once stored, every hostile one was handled
    key = signature.derive_host_key(MASTER, 'canary')
    canary = reports.report(host='canary', ts=time.time(), seq=7)
    rpcapi.ReportAPI(transport, topic, key=key).report_host_io(canary)
    for s in (open_store, signed_store):
        assert _wait(lambda: s.get('canary') is not None), s.stats()
    for s, snap in zip((open_store, signed_store), before):
        for host, report in snap.items():
            got = s.get(host)
            # without auth a hostile report may speak for a victim (that
            # is what hmac is for), but never for another host
            if s is signed_store:
                assert got is report, host
    stats = signed_store.stats()
    fault_tally.note('hostile reports over RabbitMQ', cases=sent['n'],
                     wrongly_stored=max(0, stats['stored']
                                        - len(hostile.VICTIMS) - 1))
    assert set(signed_store.hosts()) == set(hostile.VICTIMS) | {'canary'}
    assert stats['stored'] == len(hostile.VICTIMS) + 1
    assert stats['dropped'] >= sent['n']
