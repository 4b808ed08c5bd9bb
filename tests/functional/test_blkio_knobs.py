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
"""The vaio policy's device knobs on the real kernel: a loop device of
this test's own (a 16 MiB file), its scheduler switched to bfq and BFQ's
idling set through ``BlkioKnobs`` by the journaled ``DriverActuator``,
the device found under a disk source by ``block_devices.resolve`` on the
real sysfs, and both knobs restored by ``restore_all``.

The VM weight (libvirt blkiotune) is exercised on real guests in
tests/testbed/test_vaio_loop.py. Needs root and a kernel that offers bfq
for loop devices.
"""

import os
import subprocess

import pytest

from iosched.contract import knob_kinds
from iosched.host_agent.actuators import blkio_knobs
from iosched.host_agent.actuators import driver as driver_act
from iosched.host_agent.actuators import journal as journal_mod
from iosched.host_agent.actuators import knob_set
from iosched.host_agent.drivers.libvirt import block_devices
from iosched.host_agent import model
from iosched.host_agent.policies import vaio
from iosched.host_agent import policy_params
from tests import fixtures


def _requirements():
    if os.geteuid() != 0:
        return False, 'not root'
    if not os.path.exists('/sys/block/loop0/queue/scheduler'):
        return False, 'no loop devices'
    with open('/sys/block/loop0/queue/scheduler') as fh:
        if 'bfq' not in fh.read():
            return False, 'the kernel offers no bfq for loop devices'
    return True, ''


@pytest.fixture
def loop(tmp_path):
    ok, why = _requirements()
    fixtures.require('root + bfq', ok, why)
    img = tmp_path / 'vaio.img'
    with open(img, 'wb') as fh:
        fh.truncate(16 * 2**20)
    dev = subprocess.run(['losetup', '-f', '--show', str(img)],
                         capture_output=True, text=True, check=True
                         ).stdout.strip()
    name = os.path.basename(dev)
    path = '/sys/block/%s/queue/scheduler' % name
    with open(path) as fh:
        original = blkio_knobs.parse_scheduler(fh.read())[0]
    try:
        yield dev, name, original
    finally:
        with open(path, 'w') as fh:       # whatever happened above
            fh.write(original)
        subprocess.run(['losetup', '-d', dev], check=False)


class Knobs(knob_set.KnobSet):
    """The actuator's view: only the block I/O knobs, real sysfs."""

    def __init__(self):
        super().__init__(driver=None)
        self.w = blkio_knobs.BlkioKnobs(driver=None, sys_root='/sys')

    @classmethod
    def for_driver(cls, conf, driver):
        return cls()

    def running(self, uuid):
        return False

    def knobs(self):
        return self.w.knobs()

    def read_knob(self, *a):
        return self.w.read_knob(*a)

    def write_knob(self, *a):
        return self.w.write_knob(*a)


def test_switch_tune_and_restore_a_real_device(loop):
    dev, name, original = loop
    (found,) = block_devices.resolve([('a', 'vda', dev), ('b', 'vda', dev)])
    assert (found.name, found.scheduler) == (name, original)
    assert 'bfq' in found.schedulers and found.disks == (('a', 'vda'),
                                                         ('b', 'vda'))
    insts = [model.InstanceInfo('a', 'a'), model.InstanceInfo('b', 'b')]
    params = policy_params.params_for(
        'vaio', switch_scheduler=original != 'bfq', bfq_slice_idle_us=0)
    actions, notes, _ = vaio.plan_vaio(insts, [found], params)
    act = driver_act.DriverActuator(Knobs(), journal_mod.Journal())
    plan = model.Plan('vaio', actions=tuple(
        a for a in actions if a.kind != knob_kinds.VM_IO_WEIGHT))
    act.apply(plan, 1.0)
    assert act.errors == []
    (after,) = block_devices.resolve([('a', 'vda', dev)])
    assert after.scheduler == 'bfq'
    with open('/sys/block/%s/queue/iosched/slice_idle_us' % name) as fh:
        assert int(fh.read()) == 0
    held = act.decisions()
    assert held[(knob_kinds.BFQ_SLICE_IDLE, '', name)].before == 8000
    if original != 'bfq':
        d = held[(knob_kinds.BLOCK_SCHEDULER, '', name)]
        assert (d.before, d.after, d.rule) == (original, 'bfq',
                                               vaio.RULE_SCHEDULER)
    assert act.restore_all() == (2 if original != 'bfq' else 1)
    (back,) = block_devices.resolve([('a', 'vda', dev)])
    assert back.scheduler == original


def test_refusals_name_what_is_accepted(loop):
    dev, name, _ = loop
    k = blkio_knobs.BlkioKnobs(driver=None)
    with pytest.raises(Exception, match='not offered'):
        k.write_knob('block_scheduler', '', name, 'cfq')
    k.write_knob('block_scheduler', '', name, 'mq-deadline')
    with pytest.raises(Exception, match='is .* on bfq'):
        k.read_knob('bfq_slice_idle', '', name)
