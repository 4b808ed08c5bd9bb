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
"""The journal as input, fuzzed (issue 27): any bytes, and valid journals
with lines mutated, dropped, duplicated and torn. Properties: the agent's
loader never raises and keeps every valid entry's effect; the actuator
restores what it loaded; ``iosched-explain --journal`` exits 0 (with one
warning per skipped line) or 2 (one line: not a journal), never a
traceback. Examples per property: ``IOSCHED_INPUT_FUZZ_EXAMPLES``
(``tests/unit/input_fuzz.py``; ``make bench-faults`` runs more).
"""

import io
import json
import tempfile

from hypothesis import given
from hypothesis import HealthCheck
from hypothesis import settings
from hypothesis import strategies as st

from iosched.contract import knob_kinds
from iosched.host_agent.actuators import journal as journal_mod
from iosched.host_agent.actuators import journal_read
from iosched.host_agent.cmd import explain
from tests import fault_tally
from tests.unit import input_fuzz

SETTINGS = settings(max_examples=input_fuzz.EXAMPLES, deadline=None,
                    suppress_health_check=list(HealthCheck))
TALLY = {'cases': 0, 'escaped': 0}

values = st.one_of(st.none(), st.integers(-10**6, 10**6),
                   st.lists(st.integers(0, 7), max_size=4),
                   st.fixed_dictionaries({
                       'runtime_us': st.integers(1, 10**5),
                       'deadline_us': st.integers(1, 10**5),
                       'period_us': st.integers(1, 10**5)}))
entries = st.one_of(
    st.builds(lambda k, u, t, b, a: {
        'op': 'change', 'kind': k, 'uuid': u, 'target': t, 'before': b,
        'after': a, 'rule': 'r', 'reason': 'x', 'ts': 1.0, 'wall': 2.0},
        st.sampled_from(knob_kinds.KINDS), st.sampled_from(['u1', 'u2']),
        st.sampled_from(['0', '1', '']), values, values),
    st.builds(lambda k, u, t: {'op': 'forget', 'kind': k, 'uuid': u,
                               'target': t},
              st.sampled_from(knob_kinds.KINDS),
              st.sampled_from(['u1', 'u2']), st.sampled_from(['0', ''])),
    st.just({'op': 'clear'}))


def _mutate(draw, line):
    how = draw(st.sampled_from(['keep', 'keep', 'keep', 'torn', 'bytes',
                                'field', 'json']))
    if how == 'keep':
        return line
    if how == 'torn':
        return line[:draw(st.integers(0, max(len(line) - 1, 0)))]
    if how == 'bytes':
        return draw(st.binary(max_size=80))
    if how == 'json':
        return json.dumps(draw(st.recursive(
            st.none() | st.booleans() | st.floats() | st.text(max_size=5),
            lambda c: st.lists(c, max_size=3) | st.dictionaries(
                st.text(max_size=5), c, max_size=3), max_leaves=8))
        ).encode()
    entry = json.loads(line)
    key = draw(st.sampled_from(sorted(entry)))
    entry[key] = draw(st.one_of(st.none(), st.integers(), st.text(
        max_size=5), st.lists(st.integers(), max_size=2)))
    return json.dumps(entry).encode()


@st.composite
def journals(draw):
    lines = [json.dumps(e).encode() for e in draw(st.lists(entries,
                                                           max_size=12))]
    return [_mutate(draw, line) for line in lines]


def _explain(path):
    out, err = io.StringIO(), io.StringIO()
    try:
        code = explain.main(['--journal', path], out, err)
    except SystemExit as e:
        code = e.code
    return code, err.getvalue()


@SETTINGS
@given(journals())
def test_a_mutated_journal_never_stops_the_agent_nor_explain(lines):
    with tempfile.NamedTemporaryFile(suffix='.jsonl') as fh:
        fh.write(b'\n'.join(lines) + b'\n')
        fh.flush()
        TALLY['cases'] += 1
        try:
            journal = journal_mod.Journal(fh.name)
            journal.close()
            # the loader keeps exactly the effect of the valid entries
            valid = [e for e in (journal_read.parse(x.strip())[0]
                                 for x in b'\n'.join(lines).split(b'\n')
                                 if x.strip()) if e is not None]
            assert journal.pending() == journal_read.originals(valid)
            code, err = _explain(fh.name)
        except Exception:
            TALLY['escaped'] += 1
            raise
        assert code in (0, 2), err
        assert 'Traceback' not in err
        if code == 2:
            assert len(err.strip().splitlines()) == 1, err


@SETTINGS
@given(st.binary(max_size=400))
def test_any_bytes_as_a_journal(data):
    with tempfile.NamedTemporaryFile(suffix='.jsonl') as fh:
        fh.write(data)
        fh.flush()
        TALLY['cases'] += 1
        try:
            journal_mod.Journal(fh.name).close()
            code, err = _explain(fh.name)
        except Exception:
            TALLY['escaped'] += 1
            raise
        assert code in (0, 2) and 'Traceback' not in err, err


def test_tally():
    fault_tally.note('journal files fuzzed', **TALLY)
    assert TALLY['escaped'] == 0
