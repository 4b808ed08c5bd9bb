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
"""iosched.host_agent.metrics over a fake agent: what a scrape shows for a
given state (table rows), what ticks add up, and the endpoint's life.
"""

import socket
import types
import urllib.request

from oslo_config import cfg
import prometheus_client
from prometheus_client import exposition
from prometheus_client import parser
import pytest

from iosched.contract import knob_kinds
from iosched.contract import slo as slo_contract
from iosched.host_agent.conf import metrics as metrics_conf
from iosched.host_agent import metrics
from iosched.host_agent import model
from iosched.host_agent.policies import slo_window


def scrape(registry):
    """{(sample name, sorted label items): value} of one exposition."""
    text = exposition.generate_latest(registry).decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for f in parser.text_string_to_metric_families(text)
            for s in f.samples}


def value(samples, name, **labels):
    return samples.get((name, tuple(sorted(labels.items()))))


class FakeJournal(object):
    def __init__(self, pending=(), path=None):
        self._pending = {k: 0 for k in pending}
        self.path = path

    def pending(self):
        return dict(self._pending)


class FakeActuator(object):
    name = 'driver'

    def __init__(self, journal=None, decisions=None):
        self.journal = journal if journal is not None else FakeJournal()
        self.book = dict(decisions or {})

    def decisions(self):
        return dict(self.book)


class FakeClock(object):
    def __init__(self, now=1000.0):
        self.now = now

    def __call__(self):
        return self.now


def fake_agent(snapshot=None, actuator=None, every=1):
    conf = types.SimpleNamespace(host_agent=types.SimpleNamespace(
        report_every_ticks=every))
    return types.SimpleNamespace(
        conf=conf, host='compute-1', actuator=actuator or FakeActuator(),
        policies=[types.SimpleNamespace(name='vslicer'),
                  types.SimpleNamespace(name='slo')],
        host_sched=model.HostSched(mechanism='deadline'),
        last_snapshot=snapshot, last_plan=None, seq=0, ticks=0, reporter=None,
        report_interval=10.0)


def vcpu(uuid, n, strength, klass, run_share=0.5):
    return model.VcpuIoStrength(
        instance_uuid=uuid, vcpu=n, pcpu=0, events=10, mean_gap_ns=1e5,
        io_strength=strength, ivcredit=0.0, run_share=run_share,
        wait_share=0.0, klass=klass, exact=True)


def snapshot(vcpus=(), instances=None):
    return model.HostSnapshot(host='compute-1', ts=10.0, window_s=1.0,
                              pcpus=(0, 1), instances=instances or {},
                              vcpus=tuple(vcpus))


def decision(kind, uuid, target, rule, applied=True, error=''):
    return model.Decision(kind=kind, instance_uuid=uuid, target=target,
                          before=1, after=2, rule=rule, reason='r', ts=1.0,
                          policy=rule.split('.')[0], applied=applied,
                          error=error)


SLICE = knob_kinds.VCPU_SLICE
IOTUNE = knob_kinds.DISK_IOTUNE

# (name, agent state, {(sample, labels): value}, samples that must be absent)
SCRAPE_ROWS = [
    ('nothing measured yet',
     dict(),
     {('iosched_agent_report_age_seconds', ()): 0.0,
      ('iosched_agent_report_interval_seconds', ()): 10.0,
      ('iosched_agent_reports_total', ()): 0.0,
      ('iosched_agent_build_info', (
          ('actuator', 'driver'), ('host', 'compute-1'),
          ('mechanism', 'deadline'), ('policies', 'vslicer,slo'))): 1.0},
     ['iosched_agent_vcpu_io_strength', 'iosched_agent_knobs_held',
      'iosched_agent_last_report_timestamp_seconds',
      'iosched_agent_journal_size_bytes']),
    ('per-vCPU strength and classes from the last snapshot',
     dict(snapshot=snapshot([vcpu('a', 0, 0.75, 'io', 0.1),
                             vcpu('a', 1, 0.0, 'cpu', 0.9),
                             vcpu('b', 0, 0.2, 'io')])),
     {('iosched_agent_vcpu_io_strength',
       (('instance_uuid', 'a'), ('vcpu', '0'))): 0.75,
      ('iosched_agent_vcpu_io_strength',
       (('instance_uuid', 'a'), ('vcpu', '1'))): 0.0,
      ('iosched_agent_vcpu_run_share',
       (('instance_uuid', 'a'), ('vcpu', '1'))): 0.9,
      ('iosched_agent_vcpus', (('class', 'io'),)): 2.0,
      ('iosched_agent_vcpus', (('class', 'cpu'),)): 1.0},
     ['iosched_agent_instance']),
    ('knobs held are the journal entries, by kind',
     dict(actuator=FakeActuator(FakeJournal(
         [(SLICE, 'a', '0'), (SLICE, 'b', '0'), (IOTUNE, 'b', 'vda')]))),
     {('iosched_agent_knobs_held', (('kind', SLICE),)): 2.0,
      ('iosched_agent_knobs_held', (('kind', IOTUNE),)): 1.0},
     []),
    ('decisions held by kind and status',
     dict(actuator=FakeActuator(decisions={
         (SLICE, 'a', '0'): decision(SLICE, 'a', '0', 'vslicer.x'),
         (SLICE, 'a', '1'): decision(SLICE, 'a', '1', 'vslicer.x',
                                     error='EPERM'),
         (IOTUNE, 'b', 'vda'): decision(IOTUNE, 'b', 'vda', 'slo.hold',
                                        applied=False)})),
     {('iosched_agent_knob_decisions',
       (('kind', SLICE), ('status', 'applied'))): 1.0,
      ('iosched_agent_knob_decisions',
       (('kind', SLICE), ('status', 'failed'))): 1.0,
      ('iosched_agent_knob_decisions',
       (('kind', IOTUNE), ('status', 'dry-run'))): 1.0},
     []),
]


@pytest.mark.parametrize('name,state,want,absent', SCRAPE_ROWS,
                         ids=[r[0] for r in SCRAPE_ROWS])
def test_scrape_shows_the_state(name, state, want, absent):
    clock = FakeClock()
    m = metrics.AgentMetrics(fake_agent(**state), clock=clock)
    got = scrape(m.registry)
    for key, expected in want.items():
        assert got.get(key) == expected, key
    names = {k[0] for k in got}
    for sample in absent:
        assert sample not in names


def test_journal_size_is_the_file_size(tmp_path):
    path = tmp_path / 'journal.jsonl'
    path.write_text('{"op": "clear"}\n')
    m = metrics.AgentMetrics(fake_agent(
        actuator=FakeActuator(FakeJournal(path=str(path)))))
    assert value(scrape(m.registry),
                 'iosched_agent_journal_size_bytes') == 16.0


def test_decisions_are_counted_once_when_made():
    old = decision(SLICE, 'a', '0', 'vslicer.lsvm_microslice')
    act = FakeActuator(decisions={old.key: old})
    agent = fake_agent(actuator=act)
    m = metrics.AgentMetrics(agent)      # held before: not counted
    new = decision(SLICE, 'b', '0', 'vslicer.nlsvm_slice')
    failed = decision(IOTUNE, 'b', 'vda', 'slo.hold', error='gone')
    steps = [
        # (book after the tick, {(policy, rule, status): total})
        ({old.key: old, new.key: new},
         {('vslicer', 'vslicer.nlsvm_slice', 'applied'): 1}),
        ({old.key: old, new.key: new}, {}),       # same objects: no news
        ({old.key: old, new.key: new, failed.key: failed},
         {('slo', 'slo.hold', 'failed'): 1}),
        ({old.key: decision(SLICE, 'a', '0', 'vslicer.lsvm_microslice')},
         {('vslicer', 'vslicer.lsvm_microslice', 'applied'): 1}),
    ]
    total = {}
    for book, added in steps:
        act.book = book
        agent.ticks += 1
        m.tick_done(agent, 0.01)
        for k, n in added.items():
            total[k] = total.get(k, 0) + n
        got = scrape(m.registry)
        for (policy, rule, status), n in total.items():
            assert value(got, 'iosched_agent_decisions_total', policy=policy,
                         rule=rule, status=status) == n


def _slo_plan(verdicts):
    dslo = slo_contract.SLO(min_iops=100, latency_ms=5)
    vols = tuple(slo_window.Volume(instance_uuid=u, target='vda', slo=dslo,
                            verdict=v, ind=ind)
                 for u, (v, ind) in verdicts.items())
    vols += (slo_window.Volume(instance_uuid='noisy', target='vda', slo=None,
                        verdict=''),)
    facts = slo_window.SloFacts(volumes=vols, allowance=None,
                                capacity_iops=0.0,
                         need_iops=0.0)
    return model.Plan(policy='slo', facts={'slo': facts})


def test_slo_windows_per_volume():
    inst = {u: model.InstanceInfo(uuid=u, name=u, disks=(
        model.DiskInfo('vda', 'vol-' + u),)) for u in ('db', 'web')}
    agent = fake_agent(snapshot=snapshot(instances=inst))
    m = metrics.AgentMetrics(agent)
    ticks = [{'db': ('met', -0.2), 'web': ('missed', 0.5)},
             {'db': ('missed', 0.1), 'web': ('idle', None)},
             {'db': ('met', -0.1), 'web': ('met', -0.3)},
             None,                          # a tick that made no plan
             {'db': ('met', -0.4)}]         # web detached
    for verdicts in ticks:
        if verdicts is not None:
            agent.last_plan = _slo_plan(verdicts)
        agent.ticks += 1
        m.tick_done(agent, 0.01)
        if verdicts == ticks[2]:
            got = scrape(m.registry)
            web = dict(instance_uuid='web', target='vda', volume='vol-web')
            assert [value(got, 'iosched_agent_slo_windows_total',
                          verdict=v, **web)
                    for v in ('met', 'missed', 'idle')] == [1, 1, 1]
    got = scrape(m.registry)
    db = dict(instance_uuid='db', target='vda', volume='vol-db')
    assert [value(got, 'iosched_agent_slo_windows_total', verdict=v, **db)
            for v in ('met', 'missed', 'idle')] == [3, 1, 0]
    assert value(got, 'iosched_agent_slo_met', **db) == 1.0
    assert value(got, 'iosched_agent_slo_indicator', **db) == -0.4
    assert not any(dict(k[1]).get('instance_uuid') in ('web', 'noisy')
                   for k in got)


class FakeReporter(object):
    def __init__(self):
        self.fail = False
        self.topic = 'reports'

    def report_host_io(self, report):
        if self.fail:
            raise RuntimeError('bus down')


def test_reports_sent_failed_and_age():
    clock = FakeClock(1000.0)
    agent = fake_agent(snapshot=snapshot(), every=2)
    agent.reporter = inner = FakeReporter()
    m = metrics.AgentMetrics(agent, clock=clock).attach()
    assert agent.observer is m and agent.reporter.topic == 'reports'
    # (clock, what the tick's report does) per tick; one due every 2nd:
    # sent, not built (seq stays), cast raised, sent
    steps = [(1001.0, None), (1002.0, 'sent'), (1003.0, None),
             (1004.0, 'not built'), (1005.0, None), (1006.0, 'raised'),
             (1007.0, None), (1008.0, 'sent')]
    for now, what in steps:
        clock.now = now
        agent.ticks += 1
        if what in ('sent', 'raised'):
            agent.seq += 1
            inner.fail = what == 'raised'
            try:
                agent.reporter.report_host_io(object())
            except RuntimeError:
                pass
        m.tick_done(agent, 0.01)
    clock.now = 1010.0
    got = scrape(m.registry)
    assert value(got, 'iosched_agent_reports_total') == 2
    assert value(got, 'iosched_agent_report_failures_total') == 2
    assert value(got, 'iosched_agent_last_report_timestamp_seconds') == 1008
    assert value(got, 'iosched_agent_report_age_seconds') == 2.0
    assert value(got, 'iosched_agent_tick_duration_seconds_count') == 8


def test_tick_done_never_raises(caplog):
    class Broken(FakeActuator):
        def decisions(self):
            raise RuntimeError('boom')
    agent = fake_agent()
    m = metrics.AgentMetrics(agent)
    agent.actuator = Broken()
    m.tick_done(agent, 0.01)
    assert 'not accounted' in caplog.text


def test_each_agent_has_its_own_registry():
    a, b = metrics.AgentMetrics(fake_agent()), metrics.AgentMetrics(
        fake_agent())
    a.tick_done(a.agent, 0.5)
    assert value(scrape(a.registry),
                 'iosched_agent_tick_duration_seconds_count') == 1
    assert value(scrape(b.registry),
                 'iosched_agent_tick_duration_seconds_count') == 0
    default = exposition.generate_latest(prometheus_client.REGISTRY)
    assert b'iosched_agent_' not in default


def _conf(**overrides):
    conf = cfg.ConfigOpts()
    # A group of its own: a registered OptGroup object keeps overrides.
    conf.register_opts(metrics_conf.OPTS, group='metrics')
    conf([], default_config_files=[])
    for k, v in overrides.items():
        conf.set_override(k, v, 'metrics')
    return conf


def test_endpoint_off_busy_and_served():
    agent = fake_agent()
    assert metrics.start_from_conf(_conf(enabled=False), agent) is None
    assert not hasattr(agent, 'observer')
    busy = socket.socket()
    busy.bind(('127.0.0.1', 0))
    busy.listen()
    try:
        port = busy.getsockname()[1]
        assert metrics.start_from_conf(_conf(port=port), agent) is None
    finally:
        busy.close()
    exporter = metrics.start_from_conf(_conf(port=0), agent)
    try:
        assert agent.observer is exporter.metrics
        url = 'http://127.0.0.1:%d/metrics' % exporter.port
        body = urllib.request.urlopen(url, timeout=10).read().decode()
        assert 'iosched_agent_build_info{' in body
    finally:
        exporter.stop()
    with pytest.raises(OSError):
        urllib.request.urlopen(url, timeout=10)


def test_options_and_defaults():
    conf = _conf()
    assert (conf.metrics.enabled, conf.metrics.bind_host,
            conf.metrics.port) == (True, '127.0.0.1', 9487)
    for _, opts in metrics_conf.list_opts():
        for opt in opts:
            assert 'Possible values:' in opt.help, opt.name
            assert 'Related options:' in opt.help, opt.name
