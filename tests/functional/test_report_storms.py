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
"""A storm of stale and duplicate reports, and a worker killed in it.

Three agents (simulated hosts) report through the real RabbitMQ to a
scheduler worker process (``scheduler_worker.py``) while a client re-casts
their old reports and copies of their latest ones, hundreds per second.
The worker must hold each host's latest report all along; then it is
killed with SIGKILL mid-storm, and a new worker started in the storm must
resync (every agent re-sends its latest report) and converge to the same
latest reports, with every stale copy ignored.
"""

import random
import threading
import time

import pytest

from iosched.host_agent.reporter import messaging
from iosched.host_agent.reporter import resync
from iosched.host_agent.reporter import rpcapi
from tests import fixtures
from tests.functional import workers as workers_mod

HOSTS = ['storm-%d' % i for i in range(1, 4)]


@pytest.fixture
def topics():
    with fixtures.agent_topics(('resync_min_interval', 0.2, 'reporter')) as t:
        yield t


class Storm(threading.Thread):
    """Re-casts old reports and copies of the latest ones until stopped."""

    def __init__(self, reporter, history):
        super().__init__(daemon=True)
        self.reporter = reporter
        self.history = history          # host -> [reports, oldest first]
        self.sent = 0
        self.errors = []
        self.limit = None               # host -> reports the storm may use
        self._stop_event = threading.Event()

    def freeze(self):
        """From now on re-cast only the reports made so far."""
        self.limit = {h: len(r) for h, r in self.history.items()}

    def run(self):
        rnd = random.Random(15)
        while not self._stop_event.is_set():
            try:
                for host in HOSTS:
                    reports = list(self.history[host])
                    if self.limit is not None:
                        reports = reports[:self.limit[host]]
                    if not reports:
                        continue
                    # a stale one and a duplicate of the latest
                    self.reporter.report_host_io(rnd.choice(reports))
                    self.reporter.report_host_io(reports[-1])
                    self.sent += 2
            except Exception as e:          # pragma: no cover - the failure
                self.errors.append(e)
                return
            time.sleep(0.005)

    def stop(self):
        self._stop_event.set()
        self.join(30)


def _latest(agents):
    return {h: a.seq - 1 for h, a in agents.items()}


def test_a_worker_killed_in_a_storm_resyncs_to_the_latest_reports(
        tmp_path, topics):
    url = fixtures.rabbit_url()
    report_topic, agents_topic = topics
    transport = messaging.get_transport(fixtures.CONF, url)
    reporter = rpcapi.ReportAPI(transport, report_topic)
    sims, agents, services, procs = {}, {}, [], []
    history = {h: [] for h in HOSTS}
    storm = Storm(rpcapi.ReportAPI(transport, report_topic), history)

    def tick_all():
        for host in HOSTS:
            fixtures.run_ticks(sims[host], agents[host], 1)
            history[host].append(agents[host].last_report)

    try:
        for i, host in enumerate(HOSTS):
            sim, driver = fixtures.sim_host_with_vms(name=host, seed=i + 1)
            sims[host] = sim
            agents[host] = fixtures.make_agent(driver, reporter=reporter)
            services.append(resync.ResyncService(
                fixtures.CONF, agents[host], transport).start())
        assert all(s.listening.wait(30) for s in services)
        first = workers_mod.Workers(tmp_path, url, report_topic,
                                    agents_topic, forks=0, requests=1)
        procs.append(first)
        first.wait(lambda s: s['listener'] is not None and
                   s['listener']['state'] == 'listening')
        for _ in range(3):
            tick_all()
        first.wait(lambda s: s['hosts'] == _latest(agents))
        storm.start()
        for _ in range(5):
            tick_all()
            time.sleep(0.3)
        # through the storm, the worker holds each host's latest report
        s, = first.wait(lambda s: s['hosts'] == _latest(agents))
        assert s['stats']['ignored'] > 0

        first.proc.kill()                   # SIGKILL, mid-storm
        first.proc.wait(30)
        # reports no one receives; the storm never re-casts them, so only
        # a resync can bring them to the new worker
        storm.freeze()
        tick_all()
        late = workers_mod.Workers(tmp_path, url, report_topic,
                                   agents_topic, forks=0, requests=1,
                                   first_index=1)
        procs.append(late)
        # resync: every agent re-sends its latest report to the new worker
        s, = late.wait(lambda s: s['hosts'] == _latest(agents), timeout=60)
        storm.limit = None
        for _ in range(3):
            tick_all()
            time.sleep(0.3)
        s, = late.wait(lambda s: s['hosts'] == _latest(agents))
        storm.stop()
        assert not storm.errors
        assert storm.sent > 200
        s, = late.wait(lambda s: s['hosts'] == _latest(agents))
        assert s['stats']['ignored'] > 0
        assert s['stats']['dropped'] == 0
        assert all(sv.endpoint.resent >= 1 for sv in services)
    finally:
        storm.stop()
        stoppers = [threading.Thread(target=x.stop) for x in procs + services]
        for t in stoppers:
            t.start()
        for t in stoppers:
            t.join(60)
        for a in agents.values():
            a.shutdown()
        messaging.cleanup()
