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
"""A real agent (vSlicer + SLO policies, journaled driver actuator, on a
simulated host) with its metrics endpoint on an ephemeral port: scraped
over HTTP, parsed with prometheus_client's parser, and every value
checked against the agent's own state."""

import collections
import json
import os
import urllib.error
import urllib.request

from prometheus_client import parser
import pytest

from cinder_qos import slo as slo_mod
from cinder_qos import translate
from host_agent.actuators import driver as driver_act
from host_agent.actuators import journal as journal_mod
from host_agent import agent as agent_mod
from host_agent.drivers import simulated
from host_agent import metrics
from host_agent import model
from host_agent.policies import slo
from host_agent.policies import vslicer
from simulator import host as sim_host
from simulator import spec as S
from tests import fixtures

CONF = fixtures.CONF


class Reporter(object):
    """Keeps what the agent sends; fails while ``fail`` is set."""

    def __init__(self):
        self.sent = []
        self.fail = False

    def report_host_io(self, report):
        if self.fail:
            raise RuntimeError('bus down')
        self.sent.append(report)


@pytest.fixture
def served(tmp_path):
    qos = tmp_path / 'qos.json'
    qos.write_text(json.dumps({'vol-db': translate.translate(
        slo_mod.parse('500iops,20ms,p99,qd=4'))}))
    overrides = [('volume_qos_file', str(qos), 'host_agent'),
                 ('port', 0, 'metrics'), ('enabled', True, 'metrics')]
    for name, value, group in overrides:
        CONF.set_override(name, value, group)
    sim = sim_host.SimHost(S.HostSpec(
        name='compute-m', pcpus=2, default_slice_us=3000,
        disk=S.DiskSpec(service_us=1000, parallelism=4)), seed=7)
    drv = simulated.SimulatedDriver(sim)
    vms = [('lsvm-1', S.RequestResponse(rate_per_s=300, burst_us=200),
            fixtures.LSVM_SPECS, ''),
           ('db', S.DiskClosedLoop(outstanding=4), {}, 'vol-db'),
           ('nb', S.DiskClosedLoop(outstanding=32, io_bytes=16384), {},
            'vol-nb')]
    for uuid, wl, specs, serial in vms:
        sim.add_vm(S.VmSpec(uuid=uuid, name=uuid, vcpus=(wl, S.CpuBound()),
                            disks=('vda',)))
        drv.add_instance(model.InstanceInfo(
            uuid=uuid, name=uuid, vcpus=2, extra_specs=specs,
            disks=(model.DiskInfo('vda', serial),) if serial else ()))
    path = str(tmp_path / 'journal.jsonl')
    reporter = Reporter()
    agent = agent_mod.Agent(
        CONF, drv, [vslicer.VSlicerPolicy(CONF), slo.SloPolicy(CONF)],
        driver_act.DriverActuator(drv, journal_mod.Journal(path)),
        reporter=reporter)
    exporter = metrics.start_from_conf(CONF, agent)
    try:
        agent.start()
        yield sim, agent, reporter, exporter, path
    finally:
        if exporter is not None:
            exporter.stop()
        agent.shutdown()
        agent.actuator.journal.close()
        for name, _, group in overrides:
            CONF.clear_override(name, group)


def scrape(port):
    """{name: {labels tuple: value}} from GET /metrics."""
    url = 'http://127.0.0.1:%d/metrics' % port
    text = urllib.request.urlopen(url, timeout=10).read().decode()
    out = collections.defaultdict(dict)
    for family in parser.text_string_to_metric_families(text):
        for s in family.samples:
            out[s.name][tuple(sorted(s.labels.items()))] = s.value
    return out


def run(sim, agent, ticks):
    fixtures.run_ticks(sim, agent, ticks)


def test_scrape_matches_the_agent(served):
    sim, agent, reporter, exporter, path = served
    assert exporter is not None and exporter.port > 0
    run(sim, agent, 6)
    reporter.fail = True
    run(sim, agent, 1)
    reporter.fail = False
    run(sim, agent, 3)
    got = scrape(exporter.port)

    # knobs held == the journal's entries, by kind (and the file agrees)
    pending = collections.Counter(k[0] for k in agent.actuator.journal
                                  .pending())
    held = {dict(k)['kind']: v for k, v in
            got['iosched_agent_knobs_held'].items()}
    assert held == dict(pending) and sum(held.values()) > 0
    from_file, _ = journal_mod.read_held(path)
    assert len(from_file) == sum(held.values())
    assert got['iosched_agent_journal_size_bytes'][()] == \
        os.path.getsize(path)

    # per-vCPU I/O strength == the latest sample
    strength = got['iosched_agent_vcpu_io_strength']
    assert len(strength) == len(agent.last_snapshot.vcpus) == 6
    for v in agent.last_snapshot.vcpus:
        key = (('instance_uuid', v.instance_uuid), ('vcpu', str(v.vcpu)))
        assert strength[key] == v.io_strength
    assert strength[(('instance_uuid', 'lsvm-1'), ('vcpu', '0'))] > 0

    # every rule that holds a knob was counted as a decision
    made = {dict(k)['rule'] for k in got['iosched_agent_decisions_total']}
    book = agent.actuator.decisions().values()
    assert {d.rule for d in book} <= made
    assert sum(got['iosched_agent_decisions_total'].values()) >= len(book)
    assert slo.RULE_HOLD in made
    assert any(r.startswith('vslicer.lsvm_') for r in made), made
    statuses = collections.Counter((d.kind, d.status) for d in book)
    assert {(dict(k)['kind'], dict(k)['status']): v for k, v in
            got['iosched_agent_knob_decisions'].items()} == dict(statuses)

    # SLO windows: one per tick for the SLO volume, none for the donor
    windows = {dict(k)['verdict']: v for k, v in
               got['iosched_agent_slo_windows_total'].items()
               if dict(k)['volume'] == 'vol-db'}
    assert sum(windows.values()) == agent.ticks == 10
    assert not any(dict(k)['volume'] == 'vol-nb'
                   for k in got['iosched_agent_slo_windows_total'])
    (db,) = [v for v in agent.last_plan.facts['slo'].volumes
             if v.instance_uuid == 'db']
    key = (('instance_uuid', 'db'), ('target', 'vda'), ('volume', 'vol-db'))
    assert got['iosched_agent_slo_indicator'][key] == db.ind
    assert got['iosched_agent_slo_met'][key] == (1.0 if db.ind <= 0 else 0.0)

    # reports: sent == what the reporter got, the failed one counted
    assert got['iosched_agent_reports_total'][()] == len(reporter.sent) == 9
    assert got['iosched_agent_report_failures_total'][()] == 1
    assert agent.seq == 10         # the failed one was built
    assert got['iosched_agent_tick_duration_seconds_count'][()] == 10
    assert got['iosched_agent_report_age_seconds'][()] >= 0
    assert 'iosched_agent_last_report_timestamp_seconds' in got


def test_stop_restores_and_the_scrape_says_so(served):
    sim, agent, reporter, exporter, path = served
    run(sim, agent, 3)
    assert scrape(exporter.port)['iosched_agent_knobs_held']
    agent.shutdown()
    assert scrape(exporter.port)['iosched_agent_knobs_held'] == {}
    port = exporter.port
    exporter.stop()
    with pytest.raises(urllib.error.URLError):
        scrape(port)
