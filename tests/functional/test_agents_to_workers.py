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
"""Real host agents -> a real RabbitMQ -> forked scheduler workers.

Four ``iosched.host_agent.agent.Agent`` (simulated driver, vSlicer) report over
the broker, each with its resync server. Two scheduler workers are forked by
``scheduler_worker.py`` (their listeners start in the at-fork hook, with no
request at all) and each must hold every host. Then a third worker starts
late. The agents' report interval is 60 s and the test never ticks them
again, so the only way the late worker can hold every host is the resync
it asks for when its listener is up: the agents re-send their latest
report (once each, however many ask), the late worker stores it, and the
two first workers ignore the copy they already hold.

Run once on native threads and once monkey-patched by eventlet.
"""

import threading
import time

import pytest

from iosched.host_agent.reporter import messaging
from iosched.host_agent.reporter import resync
from iosched.host_agent.reporter import rpcapi
from tests import fixtures
from tests.functional import workers as workers_mod

HOSTS = ['compute-%d' % i for i in range(1, 5)]


@pytest.fixture
def topics():
    with fixtures.agent_topics(('resync_min_interval', 1.0, 'reporter')) as t:
        yield t


def _wait(predicate, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


@pytest.mark.parametrize('mode', workers_mod.MODES)
def test_every_worker_holds_every_host_and_a_late_one_resyncs(
        tmp_path, topics, mode):
    url = fixtures.rabbit_url()
    report_topic, agents_topic = topics
    transport = messaging.get_transport(fixtures.CONF, url)
    reporter = rpcapi.ReportAPI(transport, report_topic)
    sims, agents, services, procs = {}, {}, [], []
    try:
        for i, host in enumerate(HOSTS):
            sim, driver = fixtures.sim_host_with_vms(name=host, seed=i + 1)
            agent = fixtures.make_agent(driver, reporter=reporter)
            assert agent.host == host and agent.report_interval == 60.0
            sims[host], agents[host] = sim, agent
            services.append(resync.ResyncService(fixtures.CONF, agent,
                                                 transport).start())
        assert all(s.listening.wait(30) for s in services)

        first = workers_mod.Workers(tmp_path, url, report_topic,
                                    agents_topic, mode=mode, forks=2)
        procs.append(first)
        # Listening (and resync asked, with nothing built yet) with no
        # scheduling request at all: the at-fork start.
        statuses = first.wait(lambda s: s['listener'] is not None and
                              s['listener']['state'] == 'listening' and
                              s['listener']['resyncs'] == 1)
        assert len({s['pid'] for s in statuses}) == 2
        assert all(s['requests'] == 0 for s in statuses)

        # Both requests answered (one at once, one deferred to the end of
        # the 1 s coalescing window), with nothing to re-send yet.
        assert _wait(lambda: all(
            sv.endpoint.coalescer.counts['sent'] == 2 for sv in services)), [
                sv.endpoint.coalescer.counts for sv in services]
        assert all(sv.endpoint.resent == 0 for sv in services)
        for host in HOSTS:
            fixtures.run_ticks(sims[host], agents[host], 1)
            assert agents[host].seq == 1
        every_host = {h: 0 for h in HOSTS}
        first.wait(lambda s: s['hosts'] == every_host)

        # The late worker: no agent ticks any more (next report in 60 s).
        late = workers_mod.Workers(tmp_path, url, report_topic,
                                   agents_topic, mode=mode, forks=1,
                                   first_index=2)
        procs.append(late)
        s, = late.wait(lambda s: s['hosts'] == every_host, timeout=30)
        assert s['stats']['stored'] == len(HOSTS)
        assert s['listener']['resyncs'] == 1
        assert all(a.seq == 1 for a in agents.values())   # no new report
        # each agent re-sent exactly once; the first workers ignored it
        assert _wait(lambda: all(sv.endpoint.resent == 1
                                 for sv in services)), [
            (sv.endpoint.resent, sv.endpoint.coalescer.counts)
            for sv in services]
        first.wait(lambda s: s['stats']['ignored'] == len(HOSTS) and
                   s['stats']['stored'] == len(HOSTS))
        # three resync requests reached every agent: two found no report
        # yet, the late one got the single re-send
        assert all(sv.endpoint.coalescer.counts['requests'] == 3
                   for sv in services)
    finally:
        # oslo.messaging takes seconds to stop a rabbit server: in parallel
        stoppers = [threading.Thread(target=x.stop) for x in procs + services]
        for t in stoppers:
            t.start()
        for t in stoppers:
            t.join(60)
        for a in agents.values():
            a.shutdown()
        messaging.cleanup()
