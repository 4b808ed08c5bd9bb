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
"""Damaged and lost journal records of real thread knobs (issue 27): a
real thread with a real SCHED_DEADLINE reservation, a custom EEVDF slice
and a cgroup weight, restored through the real loader and the Linux
knob writers (privsep), or found by reconciliation when no record is
left. The fixtures are ``test_deadline_knobs``'s (root, cgroup v1 cpu).
"""

import json

import pytest

from iosched.contract import knob_kinds
from iosched.host_agent.actuators import driver as driver_act
from iosched.host_agent.actuators import journal as journal_mod
from iosched.host_agent.actuators import linux_knobs
from iosched.host_agent.linux import sched_deadline
from iosched.host_agent import model
from tests import fault_tally
from tests.functional import test_deadline_knobs as tdk

child_group = tdk.child_group
UUID = tdk.UUID
DL = knob_kinds.VCPU_DEADLINE
SLICE = knob_kinds.VCPU_SLICE
WEIGHT = knob_kinds.VCPU_WEIGHT
TALLY = {'cases': 0, 'knobs_left': 0}


def _entry(kind, before, after):
    return json.dumps({'op': 'change', 'kind': kind, 'uuid': UUID,
                       'target': '0', 'before': before, 'after': after,
                       'rule': 'vslicer.deadline', 'reason': 'test',
                       'ts': 1.0, 'wall': 1.0}) + '\n'


def _changed(knobs, reserve=True):
    """The knobs set as a previous agent would have set them."""
    defaults = {k: knobs.read_knob(k, UUID, '0') for k in (SLICE, WEIGHT)}
    knobs.write_knob(SLICE, UUID, '0', 700)
    knobs.write_knob(WEIGHT, UUID, '0', 400)
    if reserve:
        knobs.write_knob(DL, UUID, '0', tdk.QUARTER)
        assert knobs.read_knob(DL, UUID, '0') == tdk.QUARTER
    return defaults


@pytest.mark.parametrize('first', [
    '{"op": "change", "kind": "vcpu_dead',       # torn
    '42',
    '{"op": "change", "kind": ["vcpu_deadline"], "uuid": "x"}',
])
def test_a_damaged_first_line_still_restores_the_reservation(
        child_group, tmp_path, first):
    """The issue's case: first line corrupt, second valid: the agent
    logged a WARNING and never restored the SCHED_DEADLINE setting (or,
    for ``42``, stopped with a traceback).
    """
    start, cgroup = child_group
    child = start('sleep')
    knobs = linux_knobs.LinuxKnobs(tdk.CONF, tdk.Resolver(child.pid, cgroup))
    _changed(knobs)
    path = tmp_path / 'journal.jsonl'
    path.write_text(first + '\n' + _entry(DL, None, tdk.QUARTER))
    act = driver_act.DriverActuator(knobs, journal_mod.Journal(str(path)))
    TALLY['cases'] += 1
    assert act.recover() == 1
    left = sched_deadline.get_deadline_us(child.pid)
    TALLY['knobs_left'] += left is not None
    assert left is None
    assert journal_mod.Journal(str(path)).pending() == {}


@pytest.mark.parametrize('reserve,put', [
    # ending the reservation also ends the custom slice (SCHED_OTHER,
    # default slice): two writes put all three back
    (True, {DL, WEIGHT}),
    (False, {SLICE, WEIGHT}),
])
def test_no_record_at_all_is_found_by_reconciling(child_group, tmp_path,
                                                  reserve, put):
    """Nothing in the journal: reconciliation compares the thread's
    live settings with the host's defaults and puts them back.
    """
    start, cgroup = child_group
    child = start('sleep')
    knobs = linux_knobs.LinuxKnobs(tdk.CONF, tdk.Resolver(child.pid, cgroup))
    defaults = _changed(knobs, reserve)
    act = driver_act.DriverActuator(knobs, journal_mod.Journal(
        str(tmp_path / 'journal.jsonl')))
    assert act.recover() == 0
    put_back = act.reconcile([model.InstanceInfo(uuid=UUID, name='vm',
                                                 vcpus=1)])
    TALLY['cases'] += 1
    assert {k[0] for k, _, _ in put_back} == put
    now = {k: knobs.read_knob(k, UUID, '0') for k in (DL, SLICE, WEIGHT)}
    TALLY['knobs_left'] += sum(now[k] != v for k, v in dict(
        defaults, **{DL: None}).items())
    assert now == dict(defaults, **{DL: None})
    # and nothing more to do the second time
    assert act.reconcile([model.InstanceInfo(uuid=UUID, name='vm',
                                             vcpus=1)]) == []


def test_tally():
    fault_tally.note('journal records of real thread knobs', **TALLY)
    assert TALLY['knobs_left'] == 0
