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
"""``iosched-placement`` over a real RabbitMQ.

* Real agents (simulated hosts, vSlicer) with their resync servers and a
  60 s report interval: their only report was cast before the command
  listened, so it can answer only because its resync request makes them
  re-send at once.
* A fake agent without resync casting hand-made reports every 0.3 s
  (1 s report interval): the command hears every host within one report
  interval and explains why not the busy one.
* No agent at all: exit 3 with what to check.

Topics are unique per test; thresholds come from a nova.conf file.
"""

import json
import threading

import pytest

from iosched.host_agent.reporter import messaging
from iosched.host_agent.reporter import resync
from iosched.host_agent.reporter import rpcapi
from iosched.nova_plugin.cmd import placement
from iosched.nova_plugin.cmd import placement_rules as rules_mod
from iosched.nova_plugin import scoring
from tests import fixtures
from tests.unit.nova_plugin import reports

HOSTS = ['compute-%d' % i for i in range(1, 4)]
IO = ['--vcpus', '2', '--property', 'iosched:io_profile=io']


@pytest.fixture
def topics(tmp_path):
    with fixtures.agent_topics() as (report_topic, agents_topic):
        nova_conf = tmp_path / 'nova.conf'
        nova_conf.write_text('[iosched]\nreport_topic = %s\n'
                             'agents_topic = %s\n'
                             'max_io_vcpus_per_pcpu = 1.0\n'
                             % (report_topic, agents_topic))
        yield report_topic, str(nova_conf)
    messaging.cleanup()


def _main(argv, capsys):
    code = placement.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_resync_brings_every_agents_report(topics, capsys):
    url = fixtures.rabbit_url()
    report_topic, nova_conf = topics
    transport = messaging.get_transport(fixtures.CONF, url)
    reporter = rpcapi.ReportAPI(transport, report_topic)
    agents, services = {}, []
    try:
        for i, host in enumerate(HOSTS):
            sim, driver = fixtures.sim_host_with_vms(name=host, seed=i + 1)
            agent = fixtures.make_agent(driver, reporter=reporter)
            assert agent.report_interval == 60.0
            services.append(resync.ResyncService(fixtures.CONF, agent,
                                                 transport).start())
            fixtures.run_ticks(sim, agent, 1)       # cast, nobody listens
            agents[host] = agent
        assert all(s.listening.wait(30) for s in services)

        code, out, err = _main(['--config-file', nova_conf,
                                '--transport-url', url, '--wait', '45',
                                '--json'] + IO, capsys)
        assert code == 0, err
        doc = json.loads(out)
        assert doc['source'] == 'bus' and doc['topic'] == report_topic
        # the agents answered the resync: no periodic report was due
        assert doc['stopped'] == 'settled'
        assert all(a.seq == 1 for a in agents.values())
        assert sum(s.endpoint.resent for s in services) == len(HOSTS)
        assert 'resync asked' in err

        # the command's answer is the pure rules' answer on the reports
        expected = rules_mod.evaluate(
            {h: a.last_report for h, a in agents.items()},
            rules_mod.Query(scoring.Request.from_extra_specs(
                2, {'iosched:io_profile': 'io'})),
            rules_mod.Thresholds())
        got = {h['host']: h for h in doc['hosts']}
        assert sorted(got) == HOSTS
        for result in expected:
            host = got[result.host]
            assert host['rank'] == result.rank
            assert host['candidate'] is result.candidate
            assert host['weigher']['raw'] == pytest.approx(result.raw)
            assert (host['report']['seq'] ==
                    agents[result.host].last_report.seq)
    finally:
        for s in services:
            s.stop()


class _FakeAgent(object):
    """Casts hand-made reports every ``period`` s until stopped."""

    def __init__(self, reporter, host_reports, period=0.3):
        self.reporter = reporter
        self.host_reports = host_reports
        self.period = period
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        seq = 0
        while not self.stopped.is_set():
            seq += 1
            for r in self.host_reports:
                self.reporter.report_host_io(reports.report(
                    host=r['host'], seq=seq, ts=1000.0 + seq,
                    io_vcpus=r['io_vcpus'], pcpus=4,
                    io_strength_total=r['strength'], report_interval=1.0))
            self.stopped.wait(self.period)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stopped.set()
        self.thread.join(10)


def test_why_not_the_busy_host(topics, capsys):
    url = fixtures.rabbit_url()
    report_topic, nova_conf = topics
    reporter = rpcapi.ReportAPI(messaging.get_transport(fixtures.CONF, url),
                                report_topic)
    hosts = [{'host': 'busy', 'io_vcpus': 3, 'strength': 3.0},
             {'host': 'light', 'io_vcpus': 0, 'strength': 0.2},
             {'host': 'middle', 'io_vcpus': 1, 'strength': 1.0}]
    with _FakeAgent(reporter, hosts):
        code, out, err = _main(['--config-file', nova_conf,
                                '--transport-url', url, '--wait', '45',
                                '--host', 'busy'] + IO, capsys)
    assert code == 0, err
    assert out.splitlines()[0].startswith(
        'reports: 3 host(s) heard on topic %s' % report_topic)
    assert 'host busy: NOT a candidate: filtered out by io_density' in out
    assert ('io_density (IoDensityFilter): FAIL: I/O vCPUs per pCPU after '
            'placement 1.250 > 1.000 (reported 3 + pending 0 + request 2 on '
            '4 pCPUs)') in out
    assert 'listening on topic %s' % report_topic in err


def test_no_agent_answers(topics, capsys):
    url = fixtures.rabbit_url()
    _, nova_conf = topics
    code, out, err = _main(['--config-file', nova_conf, '--transport-url',
                            url, '--wait', '1.5'] + IO, capsys)
    assert code == placement.EXIT_NO_REPORTS
    assert out == ''
    assert 'no host report received on topic' in err
    assert 'within 1.5 s' in err
