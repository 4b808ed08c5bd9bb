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
"""The actuator skips an action equal to the one in force on its knob (no
read, no write, no note), and only then: a failed write, a restore, a
forgotten instance, a rebase, a release, another plan policy or a full
decision book make the same action count again.
"""

import pytest

from iosched.contract import knob_kinds
from iosched.host_agent.actuators import driver as driver_act
from iosched.host_agent import model
from tests.unit.host_agent import test_actuator as ta

SLICE = knob_kinds.VCPU_SLICE
KEY = (SLICE, 'u1', '0')


def act(value=1000, reason='L=2ms, k=1'):
    return model.Action(kind=SLICE, instance_uuid='u1', target='0',
                        value=value, rule='vslicer.lsvm_microslice',
                        reason=reason)


def plan(*actions, policy='vslicer+isacs'):
    return model.Plan(policy=policy, actions=actions)


class CountingKnobs(ta.DictKnobs):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.reads = 0

    def read_knob(self, kind, uuid, target):
        self.reads += 1
        return super().read_knob(kind, uuid, target)


def _fail_then_heal(a, knobs):
    knobs.fail.add('u1')
    a.apply(plan(act(2000)), ts=2.0)        # a failed write of another
    knobs.fail.clear()


def _full_book(a, knobs):
    a.book.maxlen = len(a.book)


# name, what happens between two applies of the same action, and whether
# the second one reaches the knob set or the book: (reads, writes, noted)
CASES = [
    ('the same action object', lambda a, k: None, (0, 0, False)),
    ('an equal action built again', 'rebuilt', (0, 0, False)),
    ('after a failed write of another value', _fail_then_heal,
     (0, 0, True)),
    ('after restore_all', lambda a, k: a.restore_all(), (1, 1, True)),
    ('after the instance was forgotten',
     lambda a, k: a.forget_instances({'u1'}), (1, 0, True)),
    ('after a rebase of the original',
     lambda a, k: a.rebase(act(3000), 'volume', 2.0), (0, 0, True)),
    ('after a release to the original',
     lambda a, k: a.apply(plan(act(knob_kinds.ORIGINAL)), ts=2.0),
     (1, 1, True)),
    ('another plan policy', 'policy', (0, 0, True)),
    ('a full decision book', _full_book, (0, 0, True)),
]


@pytest.mark.parametrize('name,between,want', CASES)
def test_same_action_again(name, between, want):
    knobs = CountingKnobs({KEY: 3000})
    a = driver_act.DriverActuator(knobs)
    first = act()
    a.apply(plan(first), ts=1.0)
    assert knobs.values[KEY] == 1000
    again, policy = first, 'vslicer+isacs'
    if between == 'rebuilt':
        again = act()
    elif between == 'policy':
        policy = 'vslicer'
    else:
        between(a, knobs)
    reads, writes = knobs.reads, len(knobs.writes)
    noted = []
    note = a.book.note
    a.book.note = lambda *args, **kw: noted.append(args) or note(*args,
                                                                 **kw)
    a.apply(plan(again, policy=policy), ts=3.0)
    assert (knobs.reads - reads, len(knobs.writes) - writes,
            bool(noted)) == want, name
    assert knobs.values[KEY] == 1000, name
    d = a.decisions()[KEY]
    assert (d.after, d.applied, d.error) == (1000, True, ''), name


def test_skipped_action_keeps_its_decision():
    knobs = CountingKnobs({KEY: 3000})
    a = driver_act.DriverActuator(knobs)
    for ts in (1.0, 2.0, 3.0):
        a.apply(plan(act()), ts=ts)
    d = a.decisions()[KEY]
    assert (d.before, d.after, d.ts, d.reason) == (3000, 1000, 1.0,
                                                    'L=2ms, k=1')
    a.apply(plan(act(reason='L=2ms, k=2')), ts=4.0)     # a new reason
    d = a.decisions()[KEY]
    assert (d.before, d.ts, d.reason) == (3000, 4.0, 'L=2ms, k=2')
    assert knobs.reads == 1 and len(knobs.writes) == 1


def test_rewrite_takes_before_from_the_last_write():
    knobs = CountingKnobs({KEY: 3000})
    a = driver_act.DriverActuator(knobs)
    a.apply(plan(act(1000)), ts=1.0)
    changes = a.apply(plan(act(2000)), ts=2.0)
    assert [(c.before, c.after) for c in changes] == [(1000, 2000)]
    assert knobs.reads == 1
    assert a.journal.pending() == {KEY: 3000}
    assert a.decisions()[KEY].before == 1000


def test_failed_action_is_retried_every_tick():
    knobs = CountingKnobs({KEY: 3000}, fail=('u1',))
    a = driver_act.DriverActuator(knobs)
    same = act()
    for ts in (1.0, 2.0):
        a.apply(plan(same), ts=ts)
        assert a.decisions()[KEY].applied is False
    assert knobs.reads == 2 and knobs.writes == []
    knobs.fail.clear()
    a.apply(plan(same), ts=3.0)
    assert knobs.writes == [(SLICE, 'u1', '0', 1000)]
    assert a.decisions()[KEY].applied is True
