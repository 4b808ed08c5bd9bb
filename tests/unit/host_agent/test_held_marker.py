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
"""The held-knobs marker: its text, and the actuator keeping it equal to
the journal and putting back what another agent left (a fake marked
writer; the real domain's metadata is in
``tests/functional/test_libvirt_agent.py``).
"""

import logging

import pytest

from iosched.contract import knob_kinds
from iosched.host_agent.actuators import driver as driver_act
from iosched.host_agent.actuators import held_marker
from iosched.host_agent.actuators import journal as journal_mod
from iosched.host_agent.drivers import base
from iosched.host_agent import model


@pytest.mark.parametrize('held', [
    {},
    {('vcpu_pin', '0'): [0, 1]},
    {('vcpu_pin', '0'): None, ('vm_sched', ''): {'cpu_shares': 1024}},
    {('disk_iotune', 'vda'): {}, ('emulator_pin', ''): [3]},
    {('disk_iotune', 'v<&>"'): {'total_iops_sec': 5}},
])
def test_round_trip(held):
    assert held_marker.from_xml(held_marker.to_xml('h-1', held)) == (
        'h-1', held)


@pytest.mark.parametrize('text, problem', [
    ('', 'not XML'),
    ('<held>', 'not XML'),
    ('<other host="h"/>', 'expected <held'),
    ('<held/>', 'expected <held'),
    ('<held host="h"><x kind="a" target="0">1</x></held>', 'expected <knob'),
    ('<held host="h"><knob target="0">1</knob></held>', 'expected <knob'),
    ('<held host="h"><knob kind="a" target="0">{</knob></held>',
     'not JSON'),
])
def test_what_is_not_a_marker_is_refused(text, problem):
    with pytest.raises(held_marker.MarkerError, match=problem):
        held_marker.from_xml(text)


class Knobs(object):
    """Two marked kinds and one unmarked, values in a dict; the marker
    per domain as libvirt would keep it.
    """

    def __init__(self):
        self.values = {}
        self.markers = {}
        self.mark_calls = 0
        self.broken = set()

    def knobs(self):
        return ('vcpu_pin', 'vm_sched', 'vcpu_slice')

    def marked_kinds(self):
        return ('vcpu_pin', 'vm_sched')

    def read_knob(self, kind, uuid, target):
        return self.values.get((kind, uuid, target), 'default')

    def write_knob(self, kind, uuid, target, value):
        if uuid in self.broken:
            raise base.DriverError('instance %s is not running here' % uuid)
        self.values[(kind, uuid, target)] = value

    def mark_held(self, uuid, held):
        self.mark_calls += 1
        if held:
            self.markers[uuid] = ('here', dict(held))
        else:
            self.markers.pop(uuid, None)

    def read_held(self, uuid):
        return self.markers.get(uuid)


def _plan(*actions):
    return model.Plan('t', actions=tuple(
        model.Action(k, u, t, v, 'rule', 'why') for k, u, t, v in actions))


def test_the_marker_follows_the_journal():
    knobs = Knobs()
    act = driver_act.DriverActuator(knobs, journal_mod.Journal())
    act.apply(_plan(('vcpu_pin', 'vm1', '0', (1,)),
                    ('vcpu_slice', 'vm1', '0', 700)), 1.0)
    assert knobs.markers['vm1'] == ('here', {('vcpu_pin', '0'): 'default'})
    calls = knobs.mark_calls
    act.apply(_plan(('vcpu_pin', 'vm1', '0', (1,))), 2.0)
    assert knobs.mark_calls == calls           # unchanged: not rewritten
    act.apply(_plan(('vm_sched', 'vm1', '', {'cpu_shares': 9})), 3.0)
    assert set(knobs.markers['vm1'][1]) == {('vcpu_pin', '0'),
                                            ('vm_sched', '')}
    act.apply(_plan(('vcpu_pin', 'vm1', '0', knob_kinds.ORIGINAL)), 4.0)
    assert set(knobs.markers['vm1'][1]) == {('vm_sched', '')}
    act.restore_all()
    assert 'vm1' not in knobs.markers


def test_first_sight_puts_back_what_no_decision_here_explains(caplog):
    knobs = Knobs()
    # Left by the source host's agent: pinned and weighted.
    knobs.values.update({('vcpu_pin', 'vm1', '0'): (1,),
                         ('vm_sched', 'vm1', ''): {'cpu_shares': 9}})
    knobs.markers['vm1'] = ('source', {('vcpu_pin', '0'): None,
                                       ('vm_sched', ''): {'cpu_shares': 1}})
    act = driver_act.DriverActuator(knobs, journal_mod.Journal())
    with caplog.at_level(logging.WARNING):
        assert act.adopt('vm1') == 2
    assert knobs.values[('vcpu_pin', 'vm1', '0')] is None
    assert knobs.values[('vm_sched', 'vm1', '')] == {'cpu_shares': 1}
    assert 'vm1' not in knobs.markers
    said = [r.getMessage() for r in caplog.records]
    assert sum('the agent on source had changed it' in m for m in said) == 2
    assert act.adopt('vm2') == 0               # no marker: nothing


def test_what_the_journal_holds_is_left_to_the_journal():
    knobs = Knobs()
    act = driver_act.DriverActuator(knobs, journal_mod.Journal())
    act.apply(_plan(('vcpu_pin', 'vm1', '0', (1,))), 1.0)
    assert act.adopt('vm1') == 0               # ours: a restart, not lost
    assert knobs.values[('vcpu_pin', 'vm1', '0')] == (1,)
    assert 'vm1' in knobs.markers


def test_a_failed_put_back_keeps_the_marker():
    knobs = Knobs()
    knobs.markers['vm1'] = ('source', {('vcpu_pin', '0'): None})
    knobs.broken.add('vm1')
    act = driver_act.DriverActuator(knobs, journal_mod.Journal())
    assert act.adopt('vm1') == 0
    assert 'vm1' in knobs.markers              # kept for the next start


def test_the_agent_adopts_at_first_sight_only():
    from tests import fixtures
    sim, driver = fixtures.sim_host_with_vms()
    agent = fixtures.make_agent(driver)
    seen = []
    agent.actuator.adopt = seen.append
    fixtures.run_ticks(sim, agent, 3)
    assert sorted(seen) == sorted(i.uuid for i in driver.list_instances())
