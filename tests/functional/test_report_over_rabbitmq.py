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
"""Agent reporter -> a real RabbitMQ -> Nova plugin report stores.

Two scheduler workers listen (two RPC servers on one topic); the agent's
fanout cast (RPC 1.3: the report's head and its tail counts) must reach
both, and a malformed payload must be dropped with its reason while the
good ones are kept. The whole report (vCPU records, decisions) goes to one
reader that asks, as ``iosched-status`` does (``ReportAPI.send_whole``),
and comes back identical.
"""

import time
import uuid

import pytest

from iosched.contract import payload
from iosched.contract import payload_sections
from iosched.host_agent.reporter import messaging
from iosched.host_agent.reporter import rpcapi
from iosched.nova_plugin.cmd import status_collect
from iosched.nova_plugin import conf as plugin_conf
from iosched.nova_plugin import endpoint
from iosched.nova_plugin import store as store_mod
from tests import fixtures


def _wait(predicate, timeout=20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return False


@pytest.fixture
def topic():
    plugin_conf.register_opts(fixtures.CONF)
    name = 'iosched-test-%s' % uuid.uuid4().hex[:8]
    fixtures.CONF.set_override('report_topic', name, 'iosched')
    fixtures.CONF.set_override('topic', name, 'reporter')
    yield name
    fixtures.CONF.clear_override('report_topic', 'iosched')
    fixtures.CONF.clear_override('topic', 'reporter')


def test_agent_reports_reach_every_scheduler_worker(topic):
    url = fixtures.rabbit_url()
    stores = [store_mod.ReportStore(), store_mod.ReportStore()]
    servers = [endpoint.start_listener(fixtures.CONF, transport_url=url,
                                       store=s, host='worker-%d' % i)
               for i, s in enumerate(stores)]
    reader = status_collect.Collector()
    servers.append(endpoint.start_listener(
        fixtures.CONF, transport_url=url, store=reader, host='status-1'))
    try:
        # start() returns once the fanout queues are declared and bound
        transport = messaging.get_transport(fixtures.CONF, url)
        reporter = rpcapi.ReportAPI(transport, topic)
        sim, driver = fixtures.sim_host_with_vms()
        agent = fixtures.make_agent(driver, reporter=reporter)
        fixtures.run_ticks(sim, agent, 3)
        assert agent.seq == 3
        for s in stores:
            assert _wait(lambda: s.get('compute-1') is not None and
                         s.get('compute-1').seq == 2), s.stats()
        got = stores[1].get('compute-1')
        # the head: everything but the vCPU records and decisions
        assert got == store_mod.slim(agent.last_report)
        assert got.vcpus == () and got.decisions == ()
        assert _wait(lambda: 'compute-1' in reader.reports and
                     reader.reports['compute-1'][0].seq == 2)
        assert reader.tails['compute-1'] == {
            'vcpus': len(agent.last_report.vcpus),
            'decisions': len(agent.last_report.decisions)}
        # the whole report, to the reader alone
        reporter.send_whole(agent.last_report, 'status-1')
        assert _wait(lambda: reader.tails['compute-1'] is None)
        got = reader.reports['compute-1'][0]
        assert got == agent.last_report      # identical after the trip
        assert got.pcpus == 2
        assert got.lsvm.count == 1 and got.lsvm.latency_bound_ms == 1.0
        assert got.disk.reserved_iops == 100.0
        klass = {(v.instance_uuid, v.vcpu): v.klass for v in got.vcpus}
        assert klass[('lsvm-1', 0)] == 'io'
        assert klass[('cpu-1', 0)] == 'cpu'
        assert got.io_vcpus >= 1

        # A malformed report is dropped by every worker; good ones stay.
        bad = agent.last_report.to_dict()
        bad['host'] = 'compute-9'
        bad['vcpus'][0]['klass'] = 'heavy'
        reporter.client.prepare(fanout=True).cast({}, 'report_host_io',
                                                  report=bad)
        fixtures.run_ticks(sim, agent, 1)
        for s in stores:
            assert _wait(lambda: s.get('compute-1').seq == 3)
            assert s.get('compute-9') is None
        agent.shutdown()
    finally:
        for server in servers:
            server.stop()
            server.wait()
        messaging.cleanup()


def test_payload_survives_the_broker_unchanged(topic):
    """Every field of a full report comes back equal through RabbitMQ."""
    url = fixtures.rabbit_url()
    s = status_collect.Collector()
    server = endpoint.start_listener(fixtures.CONF, transport_url=url,
                                     store=s, host='worker-x')
    try:
        report = payload.HostReport(
            host='compute-7', ts=time.time(), seq=0, report_interval=1.0,
            pcpus=8,
            vcpus=(payload_sections.VcpuEntry('u', 3, 5, 0.25, 'mixed', 0.7),),
            io_vcpus=1, io_strength_total=0.25, io_strength_per_pcpu=0.03125,
            io_strength_max_pcpu=0.25,
            lsvm=payload_sections.LsvmState(True, 0, 0.0, 24, 0.0),
            disk=payload_sections.DiskState(1000.0, 500.0, 0.8, 3.5),
            health=payload_sections.Health('degraded', ('x: y',)))
        api = rpcapi.ReportAPI(messaging.get_transport(fixtures.CONF, url),
                               topic)
        api.report_host_io(report)
        assert _wait(lambda: 'compute-7' in s.reports)
        assert s.reports['compute-7'][0] == store_mod.slim(report)
        api.send_whole(report, 'worker-x')
        assert _wait(lambda: s.tails['compute-7'] is None)
        assert s.reports['compute-7'][0] == report
    finally:
        server.stop()
        server.wait()
        messaging.cleanup()


def test_signed_reports_survive_the_broker_and_spoofs_do_not(topic):
    """report_auth = hmac over RabbitMQ: the agent's full report (vCPUs,
    decisions, floats) still verifies after the broker's JSON round trip;
    a report for compute-1 signed with another host's key is dropped.
    """
    from iosched.contract import signature
    master = 'a5' * 32
    plugin_conf.register_opts(fixtures.CONF)
    fixtures.CONF.set_override('report_auth', 'hmac', 'iosched')
    fixtures.CONF.set_override('report_master_key', master, 'iosched')
    url = fixtures.rabbit_url()
    s = store_mod.ReportStore()
    reader = status_collect.Collector()
    try:
        server = endpoint.start_listener(fixtures.CONF, transport_url=url,
                                         store=s, host='worker-signed')
        status_server = endpoint.start_listener(
            fixtures.CONF, transport_url=url, store=reader,
            host='status-signed')
    finally:
        fixtures.CONF.clear_override('report_auth', 'iosched')
        fixtures.CONF.clear_override('report_master_key', 'iosched')
    try:
        transport = messaging.get_transport(fixtures.CONF, url)
        spoofer = rpcapi.ReportAPI(
            transport, topic,
            key=signature.derive_host_key(master, 'compute-2'))
        reporter = rpcapi.ReportAPI(
            transport, topic,
            key=signature.derive_host_key(master, 'compute-1'))
        sim, driver = fixtures.sim_host_with_vms()
        agent = fixtures.make_agent(driver, reporter=reporter)
        fixtures.run_ticks(sim, agent, 2)
        assert _wait(lambda: s.get('compute-1') is not None and
                     s.get('compute-1').seq == 1), s.stats()
        assert s.get('compute-1') == store_mod.slim(agent.last_report)
        assert agent.last_report.decisions      # signed with decisions
        # the whole report verifies whole (tail digest) at the reader
        reporter.send_whole(agent.last_report, 'status-signed')
        assert _wait(lambda: reader.tails.get('compute-1', 0) is None)
        assert reader.reports['compute-1'][0] == agent.last_report
        assert reader.dropped == 0
        forged = payload.HostReport.from_dict(dict(
            agent.last_report.to_dict(), seq=99, ts=time.time() + 1,
            io_vcpus=0))
        spoofer.report_host_io(forged)
        assert _wait(lambda: s.stats()['dropped'] == 1), s.stats()
        assert s.get('compute-1').seq == 1
        agent.shutdown()
    finally:
        for srv in (server, status_server):
            srv.stop()
            srv.wait()
        messaging.cleanup()
