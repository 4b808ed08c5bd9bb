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
checked against the agent's own state.
"""

import collections
import json
import multiprocessing
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid as uuid_mod

from oslo_config import cfg
from prometheus_client import parser
import pytest

from iosched.cinder_qos import translate
from iosched.contract import slo as slo_mod
from iosched.host_agent.actuators import journal as journal_mod
from iosched.host_agent import assembly
from iosched.host_agent import metrics
from iosched.host_agent import model
from iosched.host_agent.policies import slo
from iosched.host_agent.policies import vslicer
from iosched.host_agent.reporter import messaging
from iosched.host_agent.reporter import rpcapi
from iosched.nova_plugin import conf as iosched_conf
from iosched.nova_plugin import endpoint
from iosched.simdriver import driver as sim_driver
from iosched.simulator import host as sim_host
from iosched.simulator import spec as S
from tests import fixtures
from tests.unit.nova_plugin import reports

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
    drv = sim_driver.SimulatedDriver(sim)
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
    agent = assembly.build_agent(
        CONF, drv, policies=[vslicer.VSlicerPolicy(CONF), slo.SloPolicy(CONF)],
        journal_path=path, reporter=reporter)
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


def _scheduler_worker(url, topic, base, ready, stop):
    """A forked scheduler worker: its report listener (which starts its
    metrics endpoint) on RabbitMQ until ``stop``.
    """
    conf = cfg.ConfigOpts()
    for group, opts in iosched_conf.list_opts():
        conf.register_opts(opts, group=group)
    conf([], default_config_files=[])
    conf.set_override('report_topic', topic, 'iosched')
    for name, value in (('enabled', True), ('port', base),
                        ('max_workers', 4)):
        conf.set_override(name, value, 'iosched_metrics')
    # the worker's state: its store is what the gauges read
    from iosched.nova_plugin import state
    worker = state.SchedulerState()
    server = endpoint.start_listener(conf, worker.store, transport_url=url,
                                     host='worker-%d' % os.getpid(),
                                     metrics=worker.metrics)
    exporter = worker.metrics.ensure_exporter(conf)
    ready.put(exporter.port if exporter is not None else None)
    stop.wait(60)
    server.stop()
    server.wait()
    worker.metrics.stop_exporter()


def _free_base(n):
    for _ in range(50):
        s = socket.socket()
        s.bind(('127.0.0.1', 0))
        base = s.getsockname()[1]
        s.close()
        if base + n < 65536 and all(_free(p) for p in range(base, base + n)):
            return base
    pytest.fail('no %d consecutive free ports' % n)


def _free(port):
    s = socket.socket()
    try:
        s.bind(('127.0.0.1', port))
        return True
    except OSError:
        return False
    finally:
        s.close()


def test_two_scheduler_workers_one_port_each(tmp_path):
    """The multi-worker scheme: forked workers take consecutive ports of
    [iosched_metrics] port..port+max_workers-1, and each counts every
    report an agent fanout-casts over RabbitMQ.
    """
    url = fixtures.rabbit_url()
    topic = 'iosched-test-metrics-%s' % uuid_mod.uuid4().hex[:8]
    base = _free_base(4)
    ctx = multiprocessing.get_context('fork')
    ready, stop = ctx.Queue(), ctx.Event()
    procs = [ctx.Process(target=_scheduler_worker,
                         args=(url, topic, base, ready, stop))
             for _ in range(2)]
    for p in procs:
        p.start()
    try:
        ports = sorted(ready.get(timeout=60) for _ in procs)
        assert ports == [base, base + 1]
        time.sleep(0.5)     # the fanout queues are bound: the casts reach
        # counters are per worker state (each starts at 0): compare with
        # a scrape before the casts all the same
        name = 'iosched_scheduler_reports_received_total'
        before = {port: scrape(port)[name][()] for port in ports}
        api = rpcapi.ReportAPI(messaging.get_transport(cfg.CONF, url), topic)
        for host in ('compute-a', 'compute-b', 'compute-c'):
            api.report_host_io(reports.report(host=host, ts=time.time()))
        seen = {}
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            seen = {port: scrape(port)[name][()] - before[port]
                    for port in ports}
            if all(v >= 3 for v in seen.values()):
                break
            time.sleep(0.1)
        assert seen == {base: 3.0, base + 1: 3.0}
        for port in ports:
            assert scrape(port)['iosched_scheduler_hosts'][
                (('state', 'fresh'),)] == 3
    finally:
        stop.set()
        for p in procs:
            p.join(30)
            if p.is_alive():
                p.terminate()
                p.join(5)
        messaging.cleanup()


GREEN_SCRIPT = '''
import eventlet
eventlet.monkey_patch()
import json, sys, urllib.request
from eventlet import hubs
from oslo_config import cfg
from iosched.nova_plugin import conf as iosched_conf
from iosched.nova_plugin import state

conf = cfg.ConfigOpts()
for group, opts in iosched_conf.list_opts():
    conf.register_opts(opts, group=group)
conf([], default_config_files=[])
metrics = state.SchedulerState().metrics
conf.set_override('enabled', True, 'iosched_metrics')
conf.set_override('port', int(sys.argv[1]), 'iosched_metrics')
conf.set_override('max_workers', 2, 'iosched_metrics')

def scrape(port):
    url = 'http://127.0.0.1:%d/metrics' % port
    return 'iosched_scheduler_hosts' in urllib.request.urlopen(
        url, timeout=10).read().decode()

out = {}
first = metrics.ensure_exporter(conf)
out['kind'] = type(first).__name__
out['first'] = [first.port, scrape(first.port)]
out['same'] = metrics.ensure_exporter(conf) is first
hubs.use_hub()          # what oslo.service's eventlet launcher does after fork
out['alive_after_new_hub'] = first.alive()
again = metrics.ensure_exporter(conf)
out['again'] = [again.port, scrape(again.port)]
print(json.dumps(out))
'''


def test_scheduler_endpoint_under_eventlet(tmp_path):
    """Monkey-patched by eventlet, the worker's endpoint is a green WSGI
    server that answers while the process runs on; a hub replaced after
    fork drops it, and the next ensure_exporter binds the same port.
    """
    root = os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    base = _free_base(2)
    out = subprocess.run([sys.executable, '-c', GREEN_SCRIPT, str(base)],
                         cwd=root, capture_output=True, text=True,
                         timeout=120, env=dict(os.environ, PYTHONPATH=root))
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got == {'kind': 'GreenExporter', 'first': [base, True],
                   'same': True, 'alive_after_new_hub': False,
                   'again': [base, True]}


MAIN_SCRIPT = '''
import json, sys, urllib.request
from iosched.host_agent import agent as agent_mod
from iosched.host_agent.cmd import agent as cmd
from tests import fixtures

sim, driver = fixtures.sim_host_with_vms()
fixtures.use_driver_in_main(driver)
url = 'http://127.0.0.1:%s/metrics' % sys.argv[2]
seen = {}


def run(agent):
    agent.start()
    fixtures.run_ticks(sim, agent, 3)
    seen['body'] = urllib.request.urlopen(url, timeout=10).read().decode()
    agent.shutdown()


agent_mod.Agent.run = run
rc = cmd.main(['--config-file', sys.argv[1]])
try:
    urllib.request.urlopen(url, timeout=10)
    closed = False
except OSError:
    closed = True
print(json.dumps({'rc': rc, 'closed': closed, 'body': seen['body']}))
'''


def test_io_host_agent_serves_metrics_and_closes_the_port(tmp_path):
    """``io-host-agent`` (its main(), simulated driver) starts the endpoint
    from [metrics], serves the agent's metrics while it runs, and closes
    the port when it stops.
    """
    port = _free_base(1)
    path = tmp_path / 'host-agent.conf'
    path.write_text('[host_agent]\njournal_path = %s\n[reporter]\n'
                    'transport_url = fake:/\nlisten_for_resync = false\n'
                    '[metrics]\nport = %d\n'
                    % (tmp_path / 'journal.jsonl', port))
    root = os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    out = subprocess.run(
        [sys.executable, '-c', MAIN_SCRIPT, str(path), str(port)], cwd=root,
        capture_output=True, text=True, timeout=300,
        env=dict(os.environ, PYTHONPATH=root))
    assert out.returncode == 0, (out.stdout + out.stderr)[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got['rc'] == 0 and got['closed'] is True
    families = {f.name: f for f in
                parser.text_string_to_metric_families(got['body'])}
    assert families['iosched_agent_tick_duration_seconds'].samples
    (reports,) = families['iosched_agent_reports'].samples[:1]
    assert reports.value == 3
    held = families['iosched_agent_knobs_held'].samples
    assert sum(s.value for s in held) > 0
