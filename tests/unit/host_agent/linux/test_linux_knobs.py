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
"""LinuxKnobs on fake v1/v2 trees, a fake resolver, privsep in-process."""

import os

import pytest

from iosched.contract import knob_kinds
from iosched.host_agent.actuators import driver as driver_act
from iosched.host_agent.actuators import linux_knobs
from iosched.host_agent.drivers import base as driver_base
from iosched.host_agent.linux import sched
from iosched.host_agent import model
from tests.unit.host_agent.linux import conftest

UUID = '6a1f0c9e-0d7e-4f43-9a57-3c1b1e0e2f10'
CAP = knob_kinds.VCPU_CAP
SLICE = knob_kinds.VCPU_SLICE
WEIGHT = knob_kinds.VCPU_WEIGHT


class FakeResolver(object):
    """What the libvirt driver provides, for one domain of two vCPUs."""

    def __init__(self, tree, tids=(4250, 4251)):
        self.tree = tree
        self.tids = tids

    def vcpu_tid(self, uuid, vcpu):
        if uuid != UUID:
            raise KeyError(uuid)
        return self.tids[vcpu]

    def io_threads(self, uuid):
        if uuid != UUID:
            raise KeyError(uuid)
        return {'emulator': 4249, 'io': {}}

    def vcpu_cgroup(self, uuid, vcpu):
        if uuid != UUID:
            raise driver_base.DriverError('instance %s is not here' % uuid)
        return '%s/vcpu%d' % (self.tree.threads, vcpu)

    def vm_cgroup(self, uuid):
        return self.tree.vm


class FakeSched(object):
    """sched_getattr/sched_setattr over a dict of tid -> SchedAttr."""

    def __init__(self, monkeypatch, tids):
        self.attrs = {t: sched.make_attr(runtime=1400000) for t in tids}
        monkeypatch.setattr(sched, 'sched_getattr', self.attrs.__getitem__)
        monkeypatch.setattr(sched, 'sched_setattr', self.attrs.__setitem__)


@pytest.fixture
def knobs(tree, conf, monkeypatch, in_process_privsep):
    resolver = FakeResolver(tree)
    FakeSched(monkeypatch, resolver.tids)
    return linux_knobs.LinuxKnobs(conf, resolver)


def _file(tree, cg, name):
    prefix = tree.cpu_dir + '/' if tree.cpu_dir else ''
    with open(os.path.join(tree.cgroup_root, prefix + cg, name)) as fh:
        return fh.read().strip()


THREAD_KINDS = (SLICE, knob_kinds.EMULATOR_SLICE,
                knob_kinds.VCPU_DEADLINE, knob_kinds.IO_DEADLINE)


def test_knobs_and_defaults(knobs):
    assert knobs.knobs() == THREAD_KINDS + (WEIGHT, CAP,
                                            knob_kinds.VM_WEIGHT,
                                            knob_kinds.VM_CAP)
    assert knobs.read_knob(SLICE, UUID, '0') == 1400
    assert knobs.read_knob(WEIGHT, UUID, '1') == 100
    assert knobs.read_knob(CAP, UUID, '1') is None


def test_slice_round_trip(knobs):
    knobs.write_knob(SLICE, UUID, '1', 300)
    assert knobs.read_knob(SLICE, UUID, '1') == 300
    assert knobs.read_knob(SLICE, UUID, '0') == 1400
    assert sched.sched_getattr(4251).runtime == 300000


def test_weight_round_trip(knobs, tree):
    knobs.write_knob(WEIGHT, UUID, '0', 250)
    assert knobs.read_knob(WEIGHT, UUID, '0') == 250
    vcpu0 = tree.threads + '/vcpu0'
    if tree.version == 'v1':
        assert _file(tree, vcpu0, 'cpu.shares') == '2560'
    else:
        assert _file(tree, vcpu0, 'cpu.weight') == '250'
    assert knobs.read_knob(WEIGHT, UUID, '1') == 100     # untouched


def test_cap_round_trip(knobs, tree):
    vcpu1 = tree.threads + '/vcpu1'
    knobs.write_knob(CAP, UUID, '1', 0.25)
    assert knobs.read_knob(CAP, UUID, '1') == 0.25
    if tree.version == 'v1':
        assert _file(tree, vcpu1, 'cpu.cfs_quota_us') == '25000'
        assert _file(tree, vcpu1, 'cpu.cfs_period_us') == '100000'
    else:
        assert _file(tree, vcpu1, 'cpu.max') == '25000 100000'
    knobs.write_knob(CAP, UUID, '1', None)
    assert knobs.read_knob(CAP, UUID, '1') is None


@pytest.mark.parametrize('kind,target,value,words', [
    (SLICE, '0', 50, '100..100000'),
    (SLICE, '0', 100001, '100..100000'),
    (SLICE, '0', '300', '100..100000'),
    (WEIGHT, '0', 0, '1..10000'),
    (WEIGHT, '0', 10001, '1..10000'),
    (WEIGHT, '0', 2.5, 'not an int'),
    (CAP, '0', 0, 'positive fraction'),
    (CAP, '0', 0.001, 'kernel minimum'),
    (CAP, '0', float('nan'), 'positive fraction'),
    (CAP, '0', '0.5', 'positive fraction'),
    (WEIGHT, 'x', 200, 'not a vCPU index'),
    (WEIGHT, '-1', 200, 'not a vCPU index'),
    (WEIGHT, '01', 200, 'not a vCPU index'),
    (WEIGHT, '7', 200, 'vcpu7'),
    (SLICE, '7', 200, 'resolve'),
    ('vcpu_pin', '0', (1,), 'unknown knob'),
])
def test_write_refusals(knobs, tree, kind, target, value, words):
    before = open(os.path.join(tree.cgroup_root, 'cgroup.procs')
                  if tree.version == 'v2' else
                  os.path.join(tree.cgroup_root, 'cpu', 'cpu.shares')).read()
    with pytest.raises(driver_base.DriverError) as exc:
        knobs.write_knob(kind, UUID, target, value)
    assert words in str(exc.value), str(exc.value)
    assert knobs.read_knob(WEIGHT, UUID, '0') == 100
    assert knobs.read_knob(SLICE, UUID, '0') == 1400
    assert before  # the tree is still there


def test_resolver_errors_become_driver_errors(knobs):
    with pytest.raises(driver_base.DriverError, match='vCPU thread'):
        knobs.read_knob(SLICE, 'other-uuid', '0')      # KeyError inside
    with pytest.raises(driver_base.DriverError, match='not here'):
        knobs.read_knob(WEIGHT, 'other-uuid', '0')     # DriverError as is


@pytest.mark.parametrize('cg', ['../../../etc', '/etc/../..', 'a b/vcpu0',
                                '', None, 'machine/./vcpu0'])
def test_hostile_cgroup_from_the_resolver(knobs, cg, monkeypatch):
    monkeypatch.setattr(knobs.resolver, 'vcpu_cgroup', lambda u, v: cg)
    with pytest.raises(driver_base.DriverError):
        knobs.write_knob(WEIGHT, UUID, '0', 200)


def test_without_cgroup_cpu_controller_only_the_slice(conf, tmp_path,
                                                      monkeypatch,
                                                      in_process_privsep):
    (tmp_path / 'cgroup').mkdir()
    resolver = FakeResolver(None)
    FakeSched(monkeypatch, resolver.tids)
    knobs = linux_knobs.LinuxKnobs(conf, resolver)
    assert knobs.knobs() == THREAD_KINDS
    knobs.write_knob(SLICE, UUID, '0', 500)
    with pytest.raises(driver_base.DriverError, match='cpu controller'):
        knobs.read_knob(WEIGHT, UUID, '0')


def test_daemon_failure_is_a_driver_error(tree, conf, monkeypatch):
    ctx = conftest.privsep.sys_admin_pctxt
    conf.set_override('helper_command', '/bin/false', ctx.cfg_section)
    try:
        knobs = linux_knobs.LinuxKnobs(conf, FakeResolver(tree))
        with pytest.raises(driver_base.DriverError,
                           match='privileged write_cgroup_file'):
            knobs.write_knob(WEIGHT, UUID, '0', 200)
    finally:
        conf.clear_override('helper_command', ctx.cfg_section)
        ctx.stop()


def test_under_the_journaled_actuator(knobs, tree):
    """DriverActuator drives LinuxKnobs: apply, skip no-ops, restore."""
    act = driver_act.DriverActuator(knobs)
    plan = model.Plan(policy='t', actions=(
        model.Action(WEIGHT, UUID, '0', 400, 'r', 'why'),
        model.Action(CAP, UUID, '1', 0.5, 'r', 'why'),
        model.Action(SLICE, UUID, '0', 300, 'r', 'why'),
        model.Action(WEIGHT, UUID, '1', 100, 'r', 'already 100')))
    changes = act.apply(plan, ts=1.0)
    assert [(c.kind, c.before, c.after) for c in changes] == [
        (WEIGHT, 100, 400), (CAP, None, 0.5), (SLICE, 1400, 300)]
    assert act.errors == []
    assert act.apply(plan, ts=2.0) == []
    assert act.restore_all() == 3
    assert knobs.read_knob(WEIGHT, UUID, '0') == 100
    assert knobs.read_knob(CAP, UUID, '1') is None
    assert knobs.read_knob(SLICE, UUID, '0') == 1400
