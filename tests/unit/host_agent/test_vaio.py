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
"""The vaio policy (table-driven, pure), its block device resolution and
knobs (fakes), and its explanations on a simulated host: the log line, the
HostReport's decisions and ``iosched-explain``.
"""

import dataclasses
import json
import logging
import os

import pytest

from iosched.contract import knob_kinds
from iosched.host_agent.actuators import blkio_knobs
from iosched.host_agent import assembly
from iosched.host_agent.cmd import explain
from iosched.host_agent.conf import CONF
from iosched.host_agent.drivers import base as driver_base
from iosched.host_agent.drivers.libvirt import block_devices
from iosched.host_agent import model
from iosched.host_agent.policies import vaio
from iosched.host_agent import policy_params
from tests import fixtures

OFFERED = ('none', 'mq-deadline', 'kyber', 'bfq')


def inst(uuid):
    return model.InstanceInfo(uuid=uuid, name=uuid,
                              disks=(model.DiskInfo('vda'),))


def dev(name, sched, *uuids, offered=OFFERED):
    return model.BlockDevice(name=name, devno='7:0', scheduler=sched,
                             schedulers=offered,
                             disks=tuple((u, 'vda') for u in uuids))


def weights(actions):
    return {a.instance_uuid: a.value for a in actions
            if a.kind == knob_kinds.VM_IO_WEIGHT}


def rules(actions):
    return {a.instance_uuid or a.target: a.rule for a in actions}


O = knob_kinds.ORIGINAL
P = policy_params.params_for('vaio')
# name, instances, devices, params, want weights, want scheduler actions
# {device: value}, want notes
CASES = [
    ('shared BFQ device: every VM there gets the equal weight',
     'abc', [dev('loop0', 'bfq', 'a', 'b', 'c')], P,
     {'a': 100, 'b': 100, 'c': 100}, {}, 0),
    ('weight option applies to all',
     'ab', [dev('loop0', 'bfq', 'a', 'b')], dataclasses.replace(P, weight=500),
     {'a': 500, 'b': 500}, {}, 0),
    ('a VM alone on its device is released, the shared ones weighted',
     'abc', [dev('loop0', 'bfq', 'a', 'b'), dev('sda', 'bfq', 'c')], P,
     {'a': 100, 'b': 100, 'c': O}, {}, 0),
    ('two disks of one VM on a device: one VM, not shared',
     'a', [model.BlockDevice('loop0', scheduler='bfq',
                             disks=(('a', 'vda'), ('a', 'vdb')))], P,
     {'a': O}, {}, 0),
    ('shared device without BFQ, switch off: note, no weight',
     'ab', [dev('loop0', 'none', 'a', 'b')], P,
     {'a': O, 'b': O}, {}, 1),
    ('shared device without BFQ, switch on: scheduler to bfq and weights',
     'ab', [dev('loop0', 'mq-deadline', 'a', 'b')],
     dataclasses.replace(P, switch_scheduler=True),
     {'a': 100, 'b': 100}, {'loop0': 'bfq'}, 0),
    ('switch on but BFQ not offered: note, no weight',
     'ab', [dev('nvme0n1', 'none', 'a', 'b', offered=('none',))],
     dataclasses.replace(P, switch_scheduler=True), {'a': O, 'b': O}, {}, 1),
    ('VMs the driver lists on a device but that are gone do not count',
     'a', [dev('loop0', 'bfq', 'a', 'gone')], P, {'a': O}, {}, 0),
    ('min_vms=1: a VM alone on a BFQ device is weighted too',
     'a', [dev('sda', 'bfq', 'a')], dataclasses.replace(P, min_vms=1),
     {'a': 100}, {}, 0),
    ('no devices known (driver without block_devices): release all',
     'ab', [], P, {'a': O, 'b': O}, {}, 0),
]


@pytest.mark.parametrize('name,uuids,devices,params,want_w,want_s,notes',
                         CASES, ids=[c[0] for c in CASES])
def test_plan(name, uuids, devices, params, want_w, want_s, notes):
    actions, got_notes, state = vaio.plan_vaio(
        [inst(u) for u in uuids], devices, params)
    assert weights(actions) == want_w
    assert {a.target: a.value for a in actions
            if a.kind == knob_kinds.BLOCK_SCHEDULER} == want_s
    assert len(got_notes) == notes
    assert set(state.weighted) == {u for u, w in want_w.items() if w != O}
    for a in actions:      # every action explained by rule and inputs
        assert a.rule in (vaio.RULE_WEIGHT, vaio.RULE_SCHEDULER,
                          vaio.RULE_RELEASE) and a.reason
        assert a.kind != knob_kinds.BFQ_SLICE_IDLE   # off by default
        assert explain.describe(a.rule)
        if a.rule == vaio.RULE_WEIGHT:
            assert 'device' in a.reason and 'VMs' in a.reason
        if a.kind == knob_kinds.BLOCK_SCHEDULER:
            assert a.instance_uuid == '' and 'switch_scheduler' in a.reason


@pytest.mark.parametrize('sched,switch,want', [
    ('bfq', False, {'loop0': 0}),
    ('none', True, {'loop0': 0}),      # after the switch, in plan order
    ('none', False, {}),               # not on bfq: no BFQ tunable
])
def test_slice_idle_only_on_bfq_devices(sched, switch, want):
    actions, _, _ = vaio.plan_vaio(
        [inst('a'), inst('b')], [dev('loop0', sched, 'a', 'b')],
        dataclasses.replace(P, bfq_slice_idle_us=0, switch_scheduler=switch))
    got = {a.target: a.value for a in actions
           if a.kind == knob_kinds.BFQ_SLICE_IDLE}
    assert got == want
    kinds = [a.kind for a in actions]
    if switch:
        assert kinds.index(knob_kinds.BLOCK_SCHEDULER) < kinds.index(
            knob_kinds.BFQ_SLICE_IDLE)
    for a in actions:
        if a.kind == knob_kinds.BFQ_SLICE_IDLE:
            assert a.rule == vaio.RULE_SLICE_IDLE
            assert explain.describe(a.rule) and 'loop0' in a.reason


def test_note_names_device_scheduler_and_the_way_out():
    _, notes, _ = vaio.plan_vaio([inst('a'), inst('b')],
                                 [dev('loop0', 'none', 'a', 'b')], P)
    assert 'loop0' in notes[0] and 'none' in notes[0]
    assert 'switch_scheduler' in notes[0]


def test_policy_reads_its_options_group():
    CONF.set_override('weight', 300, 'host_agent_policy.vaio')
    try:
        snap = model.HostSnapshot(
            host='h', ts=0.0, window_s=1.0, pcpus=(0,),
            instances={'a': inst('a'), 'b': inst('b')}, vcpus=(),
            block_devices=(dev('loop0', 'bfq', 'a', 'b'),))
        plan = vaio.VaioPolicy(CONF).decide(snap)
    finally:
        CONF.clear_override('weight', 'host_agent_policy.vaio')
    assert weights(plan.actions) == {'a': 300, 'b': 300}
    assert plan.facts['vaio'].shared == (('loop0', 'bfq', ('a', 'b')),)


def test_default_options():
    p = vaio.VaioPolicy(CONF).params()
    assert (p.weight, p.min_vms, p.switch_scheduler,
            p.bfq_slice_idle_us) == (100, 2, False, -1)


# -- block devices of the libvirt driver ----------------------------------
def test_resolve_groups_disks_by_device_and_reads_the_scheduler(tmp_path):
    sysfs = tmp_path / 'sys'
    q = sysfs / 'devices' / 'virtual' / 'block' / 'loop5'
    (q / 'queue').mkdir(parents=True)
    (q / 'queue' / 'scheduler').write_text('none mq-deadline [bfq]\n')
    (sysfs / 'dev' / 'block').mkdir(parents=True)
    # any real block device node: its devno points at our fake sysfs entry
    node = '/dev/loop0' if os.path.exists('/dev/loop0') else None
    if node is None:
        pytest.skip('no /dev/loop0 to stat')
    st = os.stat(node)
    key = '%d:%d' % (os.major(st.st_rdev), os.minor(st.st_rdev))
    (sysfs / 'dev' / 'block' / key).symlink_to(q)
    got = block_devices.resolve(
        [('b', 'vda', node), ('a', 'vda', node), ('a', 'vdb', 'rbd/vol'),
         ('c', 'vda', str(tmp_path / 'missing.img'))], str(sysfs))
    assert got == (model.BlockDevice(
        name='loop5', devno=key, scheduler='bfq',
        schedulers=('none', 'mq-deadline', 'bfq'),
        disks=(('a', 'vda'), ('b', 'vda'))),)


def test_a_partition_is_governed_by_its_disk(tmp_path):
    disk = tmp_path / 'devices' / 'sda'
    (disk / 'sda1').mkdir(parents=True)
    (disk / 'sda1' / 'partition').write_text('1\n')
    (disk / 'queue').mkdir()
    (disk / 'queue' / 'scheduler').write_text('[mq-deadline] bfq none\n')
    (tmp_path / 'dev' / 'block').mkdir(parents=True)
    (tmp_path / 'dev' / 'block' / '8:1').symlink_to(disk / 'sda1')
    assert block_devices.queue_of(str(tmp_path), (8, 1)) == (
        'sda', 'mq-deadline', ('mq-deadline', 'bfq', 'none'))
    assert block_devices.queue_of(str(tmp_path), (9, 9)) == ('9:9', '', ())


# -- knobs (fake libvirt domain, fake sysfs) -------------------------------
class FakeDom(object):
    def __init__(self):
        self.params = {'weight': 100, 'device_weight': ''}

    def blkioParameters(self, flags):
        return dict(self.params)

    def setBlkioParameters(self, params, flags):
        self.params.update(params)


class FakeDriver(object):
    def __init__(self):
        self.doms = {'a': FakeDom()}

    def domain(self, uuid):
        try:
            return self.doms[uuid]
        except KeyError:
            raise driver_base.DriverError('no domain %s' % uuid)


@pytest.fixture
def knobs(tmp_path, monkeypatch):
    class FakeLibvirt(object):
        VIR_DOMAIN_AFFECT_LIVE = 1

        class libvirtError(Exception):
            pass
    monkeypatch.setattr(blkio_knobs, 'libvirt', FakeLibvirt)
    q = tmp_path / 'block' / 'loop0' / 'queue'
    q.mkdir(parents=True)
    (q / 'scheduler').write_text('[none] mq-deadline kyber bfq\n')
    (q / 'iosched').mkdir()
    (q / 'iosched' / 'slice_idle_us').write_text('8000\n')
    return blkio_knobs.BlkioKnobs(FakeDriver(), str(tmp_path)), q


def test_weight_round_trip_and_bad_values(knobs):
    k, _ = knobs
    assert k.read_knob('vm_io_weight', 'a', '') == 100
    k.write_knob('vm_io_weight', 'a', '', 500)
    assert k.read_knob('vm_io_weight', 'a', '') == 500
    for bad in (50, 1001, '500', True):
        with pytest.raises(driver_base.DriverError, match='100..1000'):
            k.write_knob('vm_io_weight', 'a', '', bad)
    with pytest.raises(driver_base.DriverError, match="target is ''"):
        k.write_knob('vm_io_weight', 'a', '0', 500)


def test_scheduler_round_trip_and_refusals(knobs):
    k, q = knobs
    assert k.read_knob('block_scheduler', '', 'loop0') == 'none'
    k.write_knob('block_scheduler', '', 'loop0', 'bfq')
    assert (q / 'scheduler').read_text() == 'bfq'
    with pytest.raises(driver_base.DriverError, match='not offered'):
        k.write_knob('block_scheduler', '', 'loop0', 'cfq')
    with pytest.raises(driver_base.DriverError, match='kernel name'):
        k.write_knob('block_scheduler', '', '../etc', 'bfq')
    assert k.read_knob('bfq_slice_idle', '', 'loop0') == 8000
    k.write_knob('bfq_slice_idle', '', 'loop0', 0)
    assert k.read_knob('bfq_slice_idle', '', 'loop0') == 0
    with pytest.raises(driver_base.DriverError, match='0..1000000'):
        k.write_knob('bfq_slice_idle', '', 'loop0', -1)
    with pytest.raises(driver_base.DriverError, match='on bfq'):
        k.read_knob('bfq_slice_idle', '', 'loop1')
    assert blkio_knobs.parse_scheduler('none [bfq] kyber') == (
        'bfq', ('none', 'bfq', 'kyber'))


# -- explanations end to end on a simulated host ---------------------------
class BfqSim(object):
    """The simulated driver, its device reported as BFQ (the model's
    FIFO device reads no weight; here only the explanation path is
    under test).
    """

    def __init__(self, driver):
        self._d = driver

    def __getattr__(self, name):
        return getattr(self._d, name)

    def block_devices(self):
        return tuple(d.__class__(name='loop0', devno='7:0', scheduler='bfq',
                                 schedulers=OFFERED, disks=d.disks)
                     for d in self._d.block_devices())


def test_explained_in_log_report_and_iosched_explain(tmp_path, caplog,
                                                     capsys):
    sim, sdriver = fixtures.sim_host_with_vms()
    driver = BfqSim(sdriver)
    # the example host has one VM with a disk: min_vms=1 makes it count
    CONF.set_override('weight', 200, 'host_agent_policy.vaio')
    CONF.set_override('min_vms', 1, 'host_agent_policy.vaio')
    path = str(tmp_path / 'journal.jsonl')
    agent = assembly.build_agent(CONF, driver,
                                 policies=[vaio.VaioPolicy(CONF)],
                                 journal_path=path)
    knobs = fixtures.sim_knobs_of(sdriver)
    try:
        with caplog.at_level(logging.INFO):
            fixtures.run_ticks(sim, agent, 3)
    finally:
        CONF.clear_override('weight', 'host_agent_policy.vaio')
        CONF.clear_override('min_vms', 'host_agent_policy.vaio')
    uuids = sorted({u for d in driver.block_devices() for u, _ in d.disks})
    assert uuids == ['db-1']
    for u in uuids:
        assert knobs.read_knob('vm_io_weight', u, '') == 200
    # the log: knob, before -> after, rule and inputs
    line = [r.getMessage() for r in caplog.records
            if 'vm_io_weight' in r.getMessage()][0]
    assert '100 -> 200' in line and 'vaio.equal_weight' in line
    assert 'device loop0' in line and 'scheduler bfq' in line
    # the HostReport
    sent = {(d.kind, d.instance_uuid): d for d in agent.last_report.decisions}
    d = sent[('vm_io_weight', uuids[0])]
    assert (d.before, d.after, d.rule) == (100, 200, 'vaio.equal_weight')
    assert 'loop0' in d.reason
    # iosched-explain over the journal, text and JSON
    assert explain.main(['--journal', path]) == 0
    out = capsys.readouterr().out
    assert 'vaio.equal_weight' in out and '100 -> 200' in out
    assert explain.RULES['vaio.equal_weight'][:30] in out.replace(
        '\n      ', ' ').replace('\n           ', ' ')
    assert explain.main(['--journal', path, '--json', '--kind',
                         'vm_io_weight']) == 0
    data = json.loads(capsys.readouterr().out)
    assert {k['instance_uuid'] for k in data['knobs']} == set(uuids)
    assert all(k['original'] == 100 and k['current'] == 200
               for k in data['knobs'])
    # stop: restored
    assert agent.shutdown() == len(uuids)
    for u in uuids:
        assert knobs.read_knob('vm_io_weight', u, '') == 100


def test_simulated_fifo_device_gets_a_note_not_weights(caplog):
    sim, driver = fixtures.sim_host_with_vms()
    agent = fixtures.make_agent(driver, policies=[vaio.VaioPolicy(CONF)])
    CONF.set_override('min_vms', 1, 'host_agent_policy.vaio')
    try:
        with caplog.at_level(logging.WARNING):
            fixtures.run_ticks(sim, agent, 2)
    finally:
        CONF.clear_override('min_vms', 'host_agent_policy.vaio')
    said = [r.getMessage() for r in caplog.records
            if r.getMessage().startswith('vaio: device sim-disk')]
    assert len(said) == 1 and 'runs fifo' in said[0]    # once, 2 ticks
    assert any('sim-disk' in n and 'fifo' in n
               for n in agent.last_plan.notes)
    assert not agent.actuator.journal.pending()
