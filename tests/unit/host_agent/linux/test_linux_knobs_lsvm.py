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
"""The LSVM mechanisms' knobs of LinuxKnobs: vcpu_deadline,
io_thread_deadline, vm_weight, vm_cap (fake trees, fake system calls,
privsep in-process), and their values through the journal.
"""

import errno
import os

import pytest

from iosched.contract import knob_kinds
from iosched.host_agent.actuators import driver as driver_act
from iosched.host_agent.actuators import journal as journal_mod
from iosched.host_agent.actuators import linux_knobs
from iosched.host_agent.drivers import base as driver_base
from iosched.host_agent import linux
from iosched.host_agent.linux import sched
from iosched.host_agent.linux import sched_deadline
from iosched.host_agent import model
from tests.unit.host_agent.linux import test_linux_knobs as base_tests

UUID = base_tests.UUID
VCPU_DL = knob_kinds.VCPU_DEADLINE
IO_DL = knob_kinds.IO_DEADLINE
VM_WEIGHT = knob_kinds.VM_WEIGHT
VM_CAP = knob_kinds.VM_CAP
EMULATOR, IOTHREAD, VHOST = 4249, 4260, 4270
R1 = {'runtime_us': 1000, 'deadline_us': 2000, 'period_us': 4000}
R2 = {'runtime_us': 200, 'deadline_us': 2000, 'period_us': 4000}


class Resolver(base_tests.FakeResolver):
    def __init__(self, tree):
        super().__init__(tree)
        self.io = {'IO iothread1': IOTHREAD, 'vhost-%d' % EMULATOR: VHOST}

    def io_threads(self, uuid):
        if uuid != UUID:
            raise KeyError(uuid)
        return {'emulator': EMULATOR, 'io': dict(self.io)}


class FakeSched(object):
    """Thread attributes by tid; ``fail[tid] = errno`` fails setattr."""

    def __init__(self, monkeypatch, tids):
        self.attrs = {t: sched.make_attr(runtime=1400000) for t in tids}
        self.fail = {}
        self.sets = []
        monkeypatch.setattr(sched, 'sched_getattr', self.getattr)
        monkeypatch.setattr(sched, 'sched_setattr', self.setattr)

    def getattr(self, tid):
        if tid not in self.attrs:
            raise linux.LinuxKnobError('sched_getattr(tid %d): No such '
                                       'process' % tid, errno.ESRCH)
        return self.attrs[tid]

    def setattr(self, tid, attr):
        if tid in self.fail:
            raise linux.LinuxKnobError('sched_setattr(tid %d) failed: %s'
                                       % (tid, os.strerror(self.fail[tid])),
                                       self.fail[tid])
        self.sets.append((tid, attr))
        self.attrs[tid] = attr

    def reservation(self, tid):
        return sched_deadline.get_deadline_us(tid)


@pytest.fixture
def fake(monkeypatch):
    return FakeSched(monkeypatch, (4250, 4251, EMULATOR, IOTHREAD, VHOST))


@pytest.fixture
def knobs(tree, conf, fake, in_process_privsep):
    return linux_knobs.LinuxKnobs(conf, Resolver(tree))


def _file(tree, cg, name):
    prefix = tree.cpu_dir + '/' if tree.cpu_dir else ''
    with open(os.path.join(tree.cgroup_root, prefix + cg, name)) as fh:
        return fh.read().strip()


def test_vcpu_deadline_round_trip(knobs, fake):
    assert knobs.read_knob(VCPU_DL, UUID, '1') is None
    knobs.write_knob(VCPU_DL, UUID, '1', R1)
    assert knobs.read_knob(VCPU_DL, UUID, '1') == R1
    attr = fake.attrs[4251]
    assert attr.policy == sched.SCHED_DEADLINE
    assert attr.flags & sched.SCHED_FLAG_RESET_ON_FORK
    assert knobs.read_knob(VCPU_DL, UUID, '0') is None      # untouched
    knobs.write_knob(VCPU_DL, UUID, '1', None)
    assert knobs.read_knob(VCPU_DL, UUID, '1') is None
    assert fake.attrs[4251].policy == sched.SCHED_OTHER


def test_writes_touch_only_what_differs(knobs, fake):
    knobs.write_knob(VCPU_DL, UUID, '0', None)      # fair: nice/slice kept
    knobs.write_knob(IO_DL, UUID, '', None)
    assert fake.sets == []
    knobs.write_knob(VCPU_DL, UUID, '0', R1)
    knobs.write_knob(VCPU_DL, UUID, '0', dict(R1))
    assert len(fake.sets) == 1
    fake.attrs[IOTHREAD] = fake.attrs[4250]          # already reserved
    fake.sets.clear()
    knobs.write_knob(IO_DL, UUID, '', R1)
    assert sorted(t for t, _ in fake.sets) == [EMULATOR, VHOST]


def test_io_thread_deadline_covers_every_io_thread(knobs, fake):
    assert knobs.read_knob(IO_DL, UUID, '') is None
    knobs.write_knob(IO_DL, UUID, '', R2)
    assert knobs.read_knob(IO_DL, UUID, '') == R2
    for tid in (EMULATOR, IOTHREAD, VHOST):
        assert fake.reservation(tid) == R2, tid
    assert fake.reservation(4250) is None           # vCPUs are not I/O
    knobs.write_knob(IO_DL, UUID, '', None)
    for tid in (EMULATOR, IOTHREAD, VHOST):
        assert fake.reservation(tid) is None


def test_io_thread_deadline_is_all_or_nothing(knobs, fake):
    fake.fail[VHOST] = errno.EBUSY
    with pytest.raises(driver_base.DriverError) as exc:
        knobs.write_knob(IO_DL, UUID, '', R2)
    text = str(exc.value)
    assert 'vhost-%d (tid %d)' % (EMULATOR, VHOST) in text, text
    assert 'Device or resource busy' in text
    for tid in (EMULATOR, IOTHREAD, VHOST):
        assert fake.reservation(tid) is None, tid
    # from one reservation to another, the previous one comes back
    del fake.fail[VHOST]
    knobs.write_knob(IO_DL, UUID, '', R2)
    fake.fail[IOTHREAD] = errno.EBUSY
    with pytest.raises(driver_base.DriverError, match='IO iothread1'):
        knobs.write_knob(IO_DL, UUID, '', R1)
    for tid in (EMULATOR, IOTHREAD, VHOST):
        assert fake.reservation(tid) == R2, tid


def test_an_io_thread_that_ended_is_skipped(knobs, fake):
    del fake.attrs[IOTHREAD]
    knobs.write_knob(IO_DL, UUID, '', R2)
    assert fake.reservation(EMULATOR) == fake.reservation(VHOST) == R2
    del fake.attrs[EMULATOR]                         # the VM is gone
    with pytest.raises(driver_base.DriverError, match='No such process'):
        knobs.write_knob(IO_DL, UUID, '', R1)


def test_a_real_time_thread_is_refused(knobs, fake):
    fake.attrs[4250] = sched.make_attr(policy=sched.SCHED_FIFO, priority=5)
    for value in (R1, None):
        with pytest.raises(driver_base.DriverError, match='real-time'):
            knobs.write_knob(VCPU_DL, UUID, '0', value)
    with pytest.raises(driver_base.DriverError, match='real-time'):
        knobs.read_knob(VCPU_DL, UUID, '0')
    assert fake.sets == []


@pytest.mark.parametrize('kind,target,value,words', [
    (VCPU_DL, '0', {'runtime_us': 1000}, 'a dict of exactly'),
    (VCPU_DL, '0', dict(R1, extra=1), 'a dict of exactly'),
    (VCPU_DL, '0', [1000, 2000, 4000], 'not None or a dict'),
    (VCPU_DL, '0', 1000, 'not None or a dict'),
    (VCPU_DL, '0', dict(R1, runtime_us=3000), 'does not hold'),
    (VCPU_DL, '0', dict(R1, runtime_us=1), 'sched_runtime >= 1024 ns'),
    (VCPU_DL, '0', dict(R1, runtime_us=1000.5), 'not an int'),
    (VCPU_DL, '0', dict(R1, runtime_us='1000'), 'not an int'),
    (VCPU_DL, 'x', R1, 'not a vCPU index'),
    (VCPU_DL, '', R1, 'not a vCPU index'),
    (VCPU_DL, '7', R1, 'resolve'),
    (IO_DL, '0', R1, "its target is ''"),
    (VM_WEIGHT, '0', 200, "its target is ''"),
    (VM_CAP, 'vda', 0.5, "its target is ''"),
    (VM_WEIGHT, '', 0, '1..10000'),
    (VM_WEIGHT, '', 2.5, 'not an int'),
    (VM_CAP, '', 0.001, 'kernel minimum'),
    (VM_CAP, '', -1, 'positive fraction'),
    ('vm_sched', '', {}, 'unknown knob'),
])
def test_refusals(knobs, fake, tree, kind, target, value, words):
    with pytest.raises(driver_base.DriverError) as exc:
        knobs.write_knob(kind, UUID, target, value)
    assert words in str(exc.value), str(exc.value)
    assert fake.sets == []
    assert knobs.read_knob(VM_WEIGHT, UUID, '') == 100
    assert knobs.read_knob(VM_CAP, UUID, '') is None


def test_integral_floats_are_ints(knobs, fake):
    knobs.write_knob(VCPU_DL, UUID, '0', {'runtime_us': 1000.0,
                                          'deadline_us': 2000.0,
                                          'period_us': 4000})
    assert knobs.read_knob(VCPU_DL, UUID, '0') == R1


def test_vm_weight_and_cap_round_trip(knobs, tree):
    assert knobs.read_knob(VM_WEIGHT, UUID, '') == 100
    assert knobs.read_knob(VM_CAP, UUID, '') is None
    knobs.write_knob(VM_WEIGHT, UUID, '', 10000)
    knobs.write_knob(VM_CAP, UUID, '', 0.5)
    assert knobs.read_knob(VM_WEIGHT, UUID, '') == 10000
    assert knobs.read_knob(VM_CAP, UUID, '') == 0.5
    if tree.version == 'v1':
        assert _file(tree, tree.vm, 'cpu.shares') == '102400'
        assert _file(tree, tree.vm, 'cpu.cfs_quota_us') == '50000'
    else:
        assert _file(tree, tree.vm, 'cpu.weight') == '10000'
        assert _file(tree, tree.vm, 'cpu.max') == '50000 100000'
    # the vCPU groups below are not the VM level
    assert knobs.read_knob(knob_kinds.VCPU_WEIGHT, UUID, '0') == 100
    assert knobs.read_knob(knob_kinds.VCPU_CAP, UUID, '0') is None
    knobs.write_knob(VM_CAP, UUID, '', None)
    knobs.write_knob(VM_WEIGHT, UUID, '', 100)
    assert knobs.read_knob(VM_CAP, UUID, '') is None
    assert knobs.read_knob(VM_WEIGHT, UUID, '') == 100


@pytest.mark.parametrize('cg', ['../../etc', '', None, 'machine//x'])
def test_hostile_vm_cgroup(knobs, monkeypatch, cg):
    monkeypatch.setattr(knobs.resolver, 'vm_cgroup', lambda u: cg)
    with pytest.raises(driver_base.DriverError):
        knobs.write_knob(VM_WEIGHT, UUID, '', 200)


def test_journaled_apply_and_restore(knobs, fake, tmp_path):
    """Through the actuator and a journal file, as the agent runs them:
    values are journaled as JSON and come back in the shape written.
    """
    path = str(tmp_path / 'journal.jsonl')
    act = driver_act.DriverActuator(knobs, journal_mod.Journal(path))
    plan = model.Plan(policy='vslicer', actions=(
        model.Action(VCPU_DL, UUID, '0', R1, 'r', 'why'),
        model.Action(VCPU_DL, UUID, '1', R1, 'r', 'why'),
        model.Action(IO_DL, UUID, '', R2, 'r', 'why'),
        model.Action(VM_WEIGHT, UUID, '', 400, 'r', 'why'),
        model.Action(VM_CAP, UUID, '', 0.75, 'r', 'why')))
    changes = act.apply(plan, ts=1.0)
    assert act.errors == []
    assert [(c.kind, c.before, c.after) for c in changes] == [
        (VCPU_DL, None, R1), (VCPU_DL, None, R1), (IO_DL, None, R2),
        (VM_WEIGHT, 100, 400), (VM_CAP, None, 0.75)]
    assert act.apply(plan, ts=2.0) == []            # idempotent
    # the journal file holds what a restart would restore
    pending = journal_mod.Journal(path).pending()
    assert pending[(VCPU_DL, UUID, '0')] is None
    assert pending[(VM_WEIGHT, UUID, '')] == 100
    held, _ = journal_mod.read_held(path)
    assert {(h.kind, h.target): h.current for h in held}[(IO_DL, '')] == R2
    assert act.restore_all() == 5
    for tid in (4250, 4251, EMULATOR, IOTHREAD, VHOST):
        assert fake.reservation(tid) is None
    assert knobs.read_knob(VM_WEIGHT, UUID, '') == 100
    assert knobs.read_knob(VM_CAP, UUID, '') is None


def test_journal_keeps_pins_as_tuples(tmp_path):
    path = str(tmp_path / 'journal.jsonl')
    j = journal_mod.Journal(path)
    for kind, before, after in (('vcpu_pin', [0], (0, 1)),
                                ('emulator_pin', (1,), (0, 1)),
                                (VCPU_DL, R1, None)):
        j.record(model.Change(kind, UUID, '0', tuple(before)
                              if isinstance(before, list) else before,
                              after, 'r', 1.0))
    j.close()
    pending = journal_mod.Journal(path).pending()
    assert pending[('vcpu_pin', UUID, '0')] == (0,)
    assert pending[('emulator_pin', UUID, '0')] == (1,)
    assert pending[(VCPU_DL, UUID, '0')] == R1
    held = {h.kind: h for h in journal_mod.read_held(path)[0]}
    assert held['emulator_pin'].current == (0, 1)
    assert held[VCPU_DL].current is None
