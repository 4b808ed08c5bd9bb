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
"""Actuator and journal: idempotent writes, restore on stop and after a
crash, and the tick loop that never raises.
"""

import json

import pytest

from iosched.contract import knob_kinds
from iosched.host_agent.actuators import driver as driver_act
from iosched.host_agent.actuators import journal as journal_mod
from iosched.host_agent.actuators import knob_set
from iosched.host_agent.actuators import noop
from iosched.host_agent.drivers import base
from iosched.host_agent import model


class DictKnobs(knob_set.KnobSet):
    """A knob set over a dict of knobs: the smallest real KnobSet."""

    def __init__(self, knobs, instances=('u1',), fail=()):
        super().__init__(driver=None)
        self.values = dict(knobs)
        self.writes = []
        self.instances = list(instances)
        self.fail = set(fail)

    @classmethod
    def for_driver(cls, conf, driver):
        return cls({})

    def running(self, uuid):
        return uuid in self.instances

    def knobs(self):
        return (knob_kinds.VCPU_SLICE, knob_kinds.VCPU_PIN)

    def read_knob(self, kind, uuid, target):
        if (kind, uuid, target) not in self.values:
            raise base.DriverError('no such knob')
        return self.values[(kind, uuid, target)]

    def write_knob(self, kind, uuid, target, value):
        if uuid in self.fail or (kind, uuid, target) not in self.values:
            raise base.DriverError('write failed for %s' % uuid)
        self.writes.append((kind, uuid, target, value))
        self.values[(kind, uuid, target)] = value


def act(kind, uuid, target, value):
    return model.Action(kind=kind, instance_uuid=uuid, target=target,
                        value=value, rule='test', reason='because')


SLICE = knob_kinds.VCPU_SLICE
PIN = knob_kinds.VCPU_PIN


def plan(*actions):
    return model.Plan(policy='t', actions=actions)


def test_apply_is_idempotent_and_journaled():
    d = DictKnobs({(SLICE, 'u1', '0'): 3000})
    a = driver_act.DriverActuator(d)
    changes = a.apply(plan(act(SLICE, 'u1', '0', 1000)), ts=1.0)
    assert [(c.before, c.after) for c in changes] == [(3000, 1000)]
    assert a.apply(plan(act(SLICE, 'u1', '0', 1000)), ts=2.0) == []
    assert len(d.writes) == 1
    assert a.journal.pending() == {(SLICE, 'u1', '0'): 3000}


def test_value_already_there_is_not_written_or_journaled():
    d = DictKnobs({(SLICE, 'u1', '0'): 1000})
    a = driver_act.DriverActuator(d)
    assert a.apply(plan(act(SLICE, 'u1', '0', 1000)), ts=1.0) == []
    assert d.writes == [] and a.journal.pending() == {}


def test_restore_puts_first_value_back():
    d = DictKnobs({(SLICE, 'u1', '0'): 3000, (PIN, 'u1', '0'): None})
    a = driver_act.DriverActuator(d)
    a.apply(plan(act(SLICE, 'u1', '0', 1000), act(PIN, 'u1', '0', (1,))), 1)
    a.apply(plan(act(SLICE, 'u1', '0', 500)), 2)
    assert a.restore_all() == 2
    assert d.values == {(SLICE, 'u1', '0'): 3000, (PIN, 'u1', '0'): None}
    assert a.journal.pending() == {}


def test_failed_write_does_not_stop_the_others():
    d = DictKnobs({(SLICE, 'bad', '0'): 3000, (SLICE, 'u1', '0'): 3000},
                   instances=('bad', 'u1'), fail=('bad',))
    a = driver_act.DriverActuator(d)
    changes = a.apply(plan(act(SLICE, 'bad', '0', 1),
                           act(SLICE, 'u1', '0', 1000)), 1)
    assert [c.instance_uuid for c in changes] == ['u1']
    assert a.errors and 'bad' in a.errors[0]


def test_unsupported_knob_is_skipped():
    d = DictKnobs({})
    a = driver_act.DriverActuator(d)
    assert a.apply(plan(act(knob_kinds.DISK_IOTUNE, 'u1', 'vda', {})),
                   1) == []


def test_crash_recovery_from_the_journal_file(tmp_path):
    path = str(tmp_path / 'journal.jsonl')
    d = DictKnobs({(SLICE, 'u1', '0'): 3000, (PIN, 'u1', '1'): None})
    a = driver_act.DriverActuator(d, journal_mod.Journal(path))
    a.apply(plan(act(SLICE, 'u1', '0', 1000), act(PIN, 'u1', '1', (0, 1))),
            1)
    a.journal.close()      # the agent dies here without restoring
    with open(path, 'a') as fh:
        fh.write('{"op": "chan')   # torn last line
    assert d.values[(SLICE, 'u1', '0')] == 1000
    b = driver_act.DriverActuator(d, journal_mod.Journal(path))
    assert b.recover() == 2
    assert d.values == {(SLICE, 'u1', '0'): 3000, (PIN, 'u1', '1'): None}
    assert journal_mod.Journal(path).pending() == {}
    lines = [json.loads(x) for x in open(path) if x.strip().endswith('}')]
    assert lines[-1] == {'op': 'clear'}


def test_restore_of_a_vanished_instance_is_dropped(tmp_path):
    path = str(tmp_path / 'j.jsonl')
    d = DictKnobs({(SLICE, 'u1', '0'): 3000})
    a = driver_act.DriverActuator(d, journal_mod.Journal(path))
    a.apply(plan(act(SLICE, 'u1', '0', 1000)), 1)
    del d.values[(SLICE, 'u1', '0')]
    d.instances = []
    assert a.restore_all() == 0
    assert journal_mod.Journal(path).pending() == {}


def test_restore_failure_of_a_live_instance_is_kept(tmp_path):
    path = str(tmp_path / 'j.jsonl')
    d = DictKnobs({(SLICE, 'u1', '0'): 3000})
    a = driver_act.DriverActuator(d, journal_mod.Journal(path))
    a.apply(plan(act(SLICE, 'u1', '0', 1000)), 1)
    d.fail.add('u1')
    assert a.restore_all() == 0
    assert journal_mod.Journal(path).pending() == {(SLICE, 'u1', '0'): 3000}


def test_forget_instances_drops_their_journal_entries():
    d = DictKnobs({(SLICE, 'u1', '0'): 3000})
    a = driver_act.DriverActuator(d)
    a.apply(plan(act(SLICE, 'u1', '0', 1000)), 1)
    a.forget_instances({'u1'})
    assert a.journal.pending() == {}


def test_noop_writes_nothing():
    d = DictKnobs({(SLICE, 'u1', '0'): 3000})
    n = noop.NoopActuator(d)
    assert n.apply(plan(act(SLICE, 'u1', '0', 1000)), 1) == []
    assert d.writes == [] and n.restore_all() == 0
    assert (SLICE, 'u1', '0') in n.decisions()


@pytest.mark.parametrize('pin', [(0, 1), None])
def test_pin_round_trips_through_json(tmp_path, pin):
    path = str(tmp_path / 'j.jsonl')
    d = DictKnobs({(PIN, 'u1', '0'): pin})
    a = driver_act.DriverActuator(d, journal_mod.Journal(path))
    a.apply(plan(act(PIN, 'u1', '0', (1,))), 1)
    a.journal.close()
    assert journal_mod.Journal(path).pending() == {(PIN, 'u1', '0'): pin}


class StuckKnobs(DictKnobs):
    """A knob set whose deadline thread the kernel froze: the watchdog
    returns it to the fair class (None) and says so once.
    """
    freed = ['thread 7']

    def knobs(self):
        return (SLICE, DL)

    def unstick_deadline(self):
        freed, self.freed = self.freed, []
        if freed:
            self.values[(DL, 'u1', '0')] = None
        return freed


DL = knob_kinds.VCPU_DEADLINE
RES = {'runtime_us': 1000, 'deadline_us': 4000, 'period_us': 4000}


def test_a_thread_set_free_is_not_reserved_again():
    d = StuckKnobs({(DL, 'u1', '0'): None, (SLICE, 'u1', '0'): 3000})
    a = driver_act.DriverActuator(d)
    p = plan(act(DL, 'u1', '0', RES), act(SLICE, 'u1', '0', 1000))
    a.apply(p, ts=1.0)
    assert a.unstick_deadline() == ['thread 7']
    assert d.values[(DL, 'u1', '0')] is None       # freed: fair class
    a.apply(p, ts=2.0)                             # not re-applied
    assert d.values[(DL, 'u1', '0')] is None
    assert [w[0] for w in d.writes] == [DL, SLICE]
    assert a.restore_all() == 2                    # the journal still
    assert d.values[(SLICE, 'u1', '0')] == 3000    # restores both


def test_a_knob_set_without_a_watchdog_frees_nothing():
    a = driver_act.DriverActuator(DictKnobs({}))
    assert a.unstick_deadline() == []
