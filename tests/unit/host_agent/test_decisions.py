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
"""Every action leaves its explanation: model.Decision per knob, whatever
came of it (written, already set, failed, unsupported, dry run).
"""

import dataclasses

import pytest

from iosched.contract import knob_kinds
from iosched.host_agent.actuators import decisions
from iosched.host_agent.actuators import driver as driver_act
from iosched.host_agent.actuators import noop
from iosched.host_agent import model
from tests.unit.host_agent import test_actuator as ta

SLICE = knob_kinds.VCPU_SLICE
KEY = (SLICE, 'u1', '0')


def act(value, rule='vslicer.lsvm_microslice', reason='L=2ms, k=1',
        uuid='u1', kind=SLICE):
    return model.Action(kind=kind, instance_uuid=uuid, target='0',
                        value=value, rule=rule, reason=reason)


def plan(*actions):
    return model.Plan(policy='vslicer+isacs', actions=actions)


def test_decision_is_frozen_with_key_and_status():
    d = model.Decision(kind=SLICE, instance_uuid='u1', target='0',
                       before=3000, after=1000, rule='r', reason='x', ts=1.0)
    assert d.key == KEY and d.status == model.DECISION_APPLIED
    with pytest.raises(dataclasses.FrozenInstanceError):
        d.after = 5
    assert dataclasses.replace(d, applied=False).status == 'dry-run'
    assert dataclasses.replace(d, applied=False,
                               error='boom').status == 'failed'


def _actuator(value=3000, fail=()):
    d = ta.DictKnobs({KEY: value}, fail=fail)
    return d, driver_act.DriverActuator(d)


def test_written_knob_is_explained_with_before_and_after():
    _, a = _actuator()
    a.apply(plan(act(1000)), ts=5.0)
    d = a.decisions()[KEY]
    assert (d.before, d.after, d.rule, d.reason, d.ts) == (
        3000, 1000, 'vslicer.lsvm_microslice', 'L=2ms, k=1', 5.0)
    assert (d.policy, d.applied, d.error) == ('vslicer', True, '')


def test_repeat_is_not_a_new_decision():
    _, a = _actuator()
    a.apply(plan(act(1000)), ts=5.0)
    a.apply(plan(act(1000)), ts=6.0)
    assert a.decisions()[KEY].ts == 5.0


def test_new_reason_same_value_keeps_before_and_updates_explanation():
    _, a = _actuator()
    a.apply(plan(act(1000)), ts=5.0)
    a.apply(plan(act(1000, reason='L=2ms, k=1, m=2')), ts=6.0)
    d = a.decisions()[KEY]
    assert (d.before, d.after, d.reason, d.ts) == (
        3000, 1000, 'L=2ms, k=1, m=2', 6.0)


def test_value_already_there_is_explained_with_equal_before():
    _, a = _actuator(value=1000)
    a.apply(plan(act(1000)), ts=5.0)
    d = a.decisions()[KEY]
    assert (d.before, d.after, d.applied) == (1000, 1000, True)


def test_failed_write_is_explained_with_its_error():
    drv, a = _actuator(fail=('u1',))
    a.apply(plan(act(1000)), ts=5.0)
    d = a.decisions()[KEY]
    assert (d.before, d.applied, d.status) == (3000, False, 'failed')
    assert 'write failed for u1' in d.error
    a.apply(plan(act(1000)), ts=6.0)
    assert a.decisions()[KEY].ts == 5.0     # same failure: same decision
    drv.fail.clear()
    a.apply(plan(act(1000)), ts=7.0)
    d = a.decisions()[KEY]
    assert (d.applied, d.error, d.ts) == (True, '', 7.0)


def test_unsupported_knob_is_explained_not_applied():
    _, a = _actuator()
    a.apply(plan(act(1000, kind='emulator_slice')), ts=5.0)
    d = a.decisions()[('emulator_slice', 'u1', '0')]
    assert d.status == 'failed' and 'no emulator_slice knob' in d.error
    assert d.before is None


def test_rule_without_policy_prefix_takes_the_plan_policy():
    _, a = _actuator()
    a.apply(plan(act(1000, rule='test')), ts=5.0)
    assert a.decisions()[KEY].policy == 'vslicer+isacs'


def test_gone_instances_and_restored_knobs_are_forgotten():
    drv, a = _actuator()
    drv.values[(SLICE, 'u2', '0')] = 3000
    a.apply(plan(act(1000), act(1000, uuid='u2')), ts=5.0)
    a.forget_instances({'u2'})
    assert set(a.decisions()) == {KEY}
    a.restore_all()
    assert a.decisions() == {}


def test_noop_explains_a_dry_run():
    n = noop.NoopActuator()
    n.apply(plan(act(1000)), ts=5.0)
    d = n.decisions()[KEY]
    assert (d.before, d.after, d.status) == (None, 1000, 'dry-run')
    n.forget_instances({'u1'})
    assert n.decisions() == {}


def test_book_is_bounded_dropping_the_least_recent():
    book = decisions.DecisionBook(maxlen=2)
    for i, uuid in enumerate(('a', 'b', 'c')):
        book.note(act(1000, uuid=uuid), 'p', float(i))
    book.note(act(500, uuid='b'), 'p', 3.0)      # b decided again
    book.note(act(1000, uuid='d'), 'p', 4.0)
    assert [k[1] for k in book.latest()] == ['b', 'd']


@pytest.mark.parametrize('rule,default,want', [
    ('vslicer.lsvm_microslice', 'x', 'vslicer'),
    ('vturbo.io_thread', 'x', 'vturbo'),
    ('test', 'x', 'x'),
    ('.odd', 'x', 'x'),
])
def test_policy_of(rule, default, want):
    assert decisions.policy_of(rule, default) == want
