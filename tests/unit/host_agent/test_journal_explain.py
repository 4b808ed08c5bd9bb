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
"""The journal carries each change's reason; ``read_held`` replays it for
``iosched-explain``, old lines without a reason included.
"""

import json

import pytest

from iosched.contract import knob_kinds
from iosched.host_agent.actuators import driver as driver_act
from iosched.host_agent.actuators import journal as journal_mod
from iosched.host_agent import model
from tests.unit.host_agent import test_actuator as ta

SLICE = knob_kinds.VCPU_SLICE
PIN = knob_kinds.VCPU_PIN


def _lines(path):
    return [json.loads(x) for x in open(path) if x.strip()]


def test_reason_round_trips_through_the_journal(tmp_path):
    path = str(tmp_path / 'j.jsonl')
    d = ta.DictKnobs({(SLICE, 'u1', '0'): 3000, (PIN, 'u1', '0'): None})
    a = driver_act.DriverActuator(d, journal_mod.Journal(path))
    a.apply(ta.plan(model.Action(SLICE, 'u1', '0', 1000, 'vslicer.x',
                                 'L=2ms, k=1'),
                    model.Action(PIN, 'u1', '0', (1,), 'isacs.io_balance',
                                 'gap 0.5')), ts=4.0)
    a.apply(ta.plan(model.Action(SLICE, 'u1', '0', 500, 'vslicer.x',
                                 'L=1ms, k=1')), ts=9.0)
    a.journal.close()
    assert _lines(path)[0]['reason'] == 'L=2ms, k=1'
    held, warnings = journal_mod.read_held(path)
    assert warnings == []
    by_kind = {h.kind: h for h in held}
    s = by_kind[SLICE]
    assert (s.original, s.current, s.rule, s.reason) == (
        3000, 500, 'vslicer.x', 'L=1ms, k=1')
    assert (s.first_ts, s.ts, s.changes) == (4.0, 9.0, 2)
    p = by_kind[PIN]
    assert (p.original, p.current, p.reason) == (None, (1,), 'gap 0.5')


OLD = ('{"after": 1000, "before": 3000, "kind": "vcpu_slice", "op": '
       '"change", "rule": "vslicer.lsvm_microslice", "target": "0", '
       '"ts": 2.0, "uuid": "u1"}\n')


def test_old_lines_without_reason_are_read(tmp_path):
    path = tmp_path / 'old.jsonl'
    path.write_text(OLD)
    [h], _ = journal_mod.read_held(str(path))
    assert (h.reason, h.rule, h.original) == (
        '', 'vslicer.lsvm_microslice', 3000)
    assert journal_mod.Journal(str(path)).pending() == {
        (SLICE, 'u1', '0'): 3000}


def test_forget_clear_and_torn_lines(tmp_path):
    path = tmp_path / 'j.jsonl'
    path.write_text(
        OLD + OLD.replace('"u1"', '"u2"') +
        '{"op": "forget", "kind": "vcpu_slice", "uuid": "u2", '
        '"target": "0"}\n' + '{"op": "chan')
    held, warnings = journal_mod.read_held(str(path))
    assert [h.instance_uuid for h in held] == ['u1']
    assert len(warnings) == 1 and 'line 4' in warnings[0]
    with open(path, 'a') as fh:
        fh.write('\n{"op": "clear"}\n')
    assert journal_mod.read_held(str(path))[0] == []


@pytest.mark.parametrize('text,says', [
    ('[1, 2]\n', 'expected a JSON object'),
    ('{"op": "move"}\n', "'op'"),
    ('{"op": "change", "kind": "vcpu_slice", "target": "0", '
     '"before": 1, "after": 2}\n', "'uuid'"),
    ('{"op": "change", "kind": "vcpu_slice", "uuid": "u", "target": "0", '
     '"after": 2}\n', "'before': missing"),
    ('{"op": "change", "kind": "vcpu_slice", "uuid": "u", "target": "0", '
     '"before": 1, "after": 2, "ts": "noon"}\n', "'ts'"),
    ('[DEFAULT]\nhost = x\n', 'no line is a journal entry'),
])
def test_not_a_journal_is_an_error_naming_the_line(tmp_path, text, says):
    path = tmp_path / 'bad.jsonl'
    path.write_text(text)
    with pytest.raises(journal_mod.JournalError) as exc:
        journal_mod.read_held(str(path))
    assert says in str(exc.value) and 'line 1' in str(exc.value)


def test_empty_journal_holds_nothing(tmp_path):
    path = tmp_path / 'empty.jsonl'
    path.write_text('')
    assert journal_mod.read_held(str(path)) == ([], [])
