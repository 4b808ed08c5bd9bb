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
"""A journal that cannot be turned against the host (issue 27): damaged
lines, a journal the agent cannot write, a full disk at stop, reconciling
knobs whose record was lost. The real files, the real loader; the knobs
are a dict (``test_actuator.DictKnobs``).
"""

import errno
import json
import os

import pytest

from iosched.contract import knob_kinds
from iosched.host_agent.actuators import driver as driver_act
from iosched.host_agent.actuators import journal as journal_mod
from iosched.host_agent.actuators import journal_read
from iosched.host_agent.actuators import knob_set
from iosched.host_agent import model
from tests import fault_tally
from tests import fixtures
from tests.unit.host_agent import test_actuator as ta

SLICE = knob_kinds.VCPU_SLICE
DL = knob_kinds.VCPU_DEADLINE
PIN = knob_kinds.VCPU_PIN
RES = {'runtime_us': 1000, 'deadline_us': 2000, 'period_us': 4000}
TALLY = {'cases': 0, 'escaped': 0, 'knobs_left': 0}


def _change(kind, before, after, uuid='u1', target='0'):
    return json.dumps({'op': 'change', 'kind': kind, 'uuid': uuid,
                       'target': target, 'before': before, 'after': after,
                       'rule': 'r', 'reason': 'x', 'ts': 1.0,
                       'wall': 1.0}).encode() + b'\n'


VALID = _change(DL, None, RES) + _change(SLICE, 3000, 700, target='1')
# Each damaged line, put first, in the middle and last around VALID's
# two records; the cases first.
DAMAGED = [
    (b'{"op": "change", "kind": "vcpu_dead', 'not JSON'),
    (b'42', 'expected a JSON object'),
    (b'{}', "field 'op'"),
    (b'{"op": "change", "kind": "vcpu_slice", "uuid": "u1", "target": '
     b'"0", "after": 1}', "'before': missing"),
    (b'\xff\xfe{"op": "clear"}', 'not UTF-8'),
    (b'{"op": "change", "kind": ["vcpu_slice"], "uuid": "u1", "target": '
     b'"0", "before": 1, "after": 2}', "field 'kind'"),
    (b'null', 'expected a JSON object'),
    (b'[' * 100000, 'nested too deeply'),
    (b'{"op": "forget", "kind": "vcpu_slice", "uuid": 7, "target": "0"}',
     "field 'uuid'"),
    (b'{"op": "change", "kind": "vcpu_slice", "uuid": "u1", "target": "0",'
     b' "before": NaN, "after": 2}', 'not a knob value'),
    (b'{"op": "change", "kind": "vcpu_slice", "uuid": "u1", "target": "0",'
     b' "before": 1, "after": 2, "ts": Infinity}', "field 'ts'"),
    (b'{"op": "rebase", "kind": "vcpu_slice", "uuid": "u1", "target": '
     b'"0"}', "'before': missing"),
    (b'{"op": "change", "kind": "no_such_knob", "uuid": "u1", "target": '
     b'"0", "before": 1, "after": 2}', "field 'kind'"),
    (b'{"op": "undo"}', "field 'op'"),
    (b'\x00' * 40, 'not JSON'),
]
WHERE = ['first', 'middle', 'last']


def _text(bad, where):
    a, b = VALID.splitlines(keepends=True)
    return {'first': bad + b'\n' + a + b,
            'middle': a + bad + b'\n' + b,
            'last': a + b + bad + b'\n'}[where]


@pytest.mark.parametrize('where', WHERE)
@pytest.mark.parametrize('bad,says', DAMAGED)
def test_a_damaged_line_hides_no_valid_record(tmp_path, bad, says, where):
    """The agent's loader and iosched-explain's: the same knobs, every
    valid one, and one problem naming the damaged line.
    """
    path = tmp_path / 'journal.jsonl'
    path.write_bytes(_text(bad, where))
    lineno = {'first': 1, 'middle': 2, 'last': 3}[where]
    TALLY['cases'] += 1
    try:
        journal = journal_mod.Journal(str(path))
    except Exception:
        TALLY['escaped'] += 1
        raise
    assert journal.pending() == {(DL, 'u1', '0'): None,
                                 (SLICE, 'u1', '1'): 3000}
    assert len(journal.problems) == 1
    assert ('line %d: ' % lineno) in journal.problems[0]
    assert says in journal.problems[0]
    held, warnings = journal_read.read_held(str(path))
    assert {(h.kind, h.target): h.original for h in held} == {
        (DL, '0'): None, (SLICE, '1'): 3000}
    assert len(warnings) == 1 and says in warnings[0]
    # the actuator restores both
    knobs = _Knobs({(DL, 'u1', '0'): RES, (SLICE, 'u1', '1'): 700})
    act = driver_act.DriverActuator(knobs, journal)
    assert act.recover() == 2
    TALLY['knobs_left'] += sum(v != {(DL, 'u1', '0'): None,
                                     (SLICE, 'u1', '1'): 3000}[k]
                               for k, v in knobs.values.items())
    assert knobs.values == {(DL, 'u1', '0'): None,
                            (SLICE, 'u1', '1'): 3000}
    journal.close()
    # and the file now says so
    assert journal_mod.Journal(str(path)).pending() == {}


class _Knobs(ta.DictKnobs):
    def knobs(self):
        return (SLICE, PIN, DL)


def test_explain_reads_rebase_lines(tmp_path):
    """A retype or extend journals ``rebase``: iosched-explain used to
    refuse any such journal; now the rebased original shows.
    """
    path = str(tmp_path / 'journal.jsonl')
    iotune = knob_kinds.DISK_IOTUNE
    knobs = ta.DictKnobs({(iotune, 'u1', 'vdb'): {'total_iops_sec': 400}})
    knobs.knobs = lambda: (iotune,)
    act = driver_act.DriverActuator(knobs, journal_mod.Journal(path))
    act.apply(ta.plan(model.Action(iotune, 'u1', 'vdb',
                                   {'total_iops_sec': 150}, 'slo.cap', 'x')),
              ts=1.0)
    act.rebase(model.Action(iotune, 'u1', 'vdb', {'total_iops_sec': 800},
                            'slo.retune', 'extend'), 't', 2.0)
    act.journal.close()
    assert any(json.loads(x)['op'] == 'rebase' for x in open(path))
    [h], warnings = journal_read.read_held(path)
    assert warnings == []
    assert h.original == {'total_iops_sec': 800}
    assert h.current == {'total_iops_sec': 150}
    assert journal_mod.Journal(path).pending() == {
        (iotune, 'u1', 'vdb'): {'total_iops_sec': 800}}
    # through the CLI: exit 0, the rebased original shown
    import io
    from iosched.host_agent.cmd import explain
    out, err = io.StringIO(), io.StringIO()
    assert explain.main(['--journal', path, '--json'], out, err) == 0, \
        err.getvalue()
    [knob] = json.loads(out.getvalue())['knobs']
    assert '800' in json.dumps(knob) and err.getvalue() == ''


class _FailingWrites(object):
    """os.write that fails with ``errno`` after ``ok`` calls."""

    def __init__(self, monkeypatch, ok, err=errno.ENOSPC):
        self.ok, self.err, self.calls = ok, err, 0
        real = os.write

        def write(fd, data):
            self.calls += 1
            if self.calls > self.ok:
                raise OSError(self.err, os.strerror(self.err))
            return real(fd, data)
        monkeypatch.setattr(journal_mod.os, 'write', write)


def test_a_full_disk_at_stop_still_restores_every_knob(tmp_path,
                                                       monkeypatch):
    """Three knobs changed, then the disk fills: every knob is restored
    (the forgets that cannot be written are said once, not raised), and
    the next start restores the same originals again, harmlessly.
    """
    path = str(tmp_path / 'journal.jsonl')
    knobs = _Knobs({(SLICE, 'u1', '0'): 3000, (PIN, 'u1', '0'): None,
                    (DL, 'u1', '1'): None})
    act = driver_act.DriverActuator(knobs, journal_mod.Journal(path))
    act.apply(ta.plan(ta.act(SLICE, 'u1', '0', 700),
                      ta.act(PIN, 'u1', '0', (1,)),
                      ta.act(DL, 'u1', '1', RES)), ts=1.0)
    _FailingWrites(monkeypatch, ok=0)
    TALLY['cases'] += 1
    assert act.restore_all() == 3
    assert knobs.values == {(SLICE, 'u1', '0'): 3000,
                            (PIN, 'u1', '0'): None, (DL, 'u1', '1'): None}
    assert act.journal.write_error.errno == errno.ENOSPC
    assert act.journal_failed is not None
    monkeypatch.undo()
    act.journal.close()
    assert len(journal_mod.Journal(path).pending()) == 3


def test_a_journal_that_stops_taking_entries_stops_the_writes(tmp_path,
                                                              monkeypatch):
    """A change that cannot be journaled is not made, nor is any other of
    the plan: the agent never acts unjournaled.
    """
    path = str(tmp_path / 'journal.jsonl')
    knobs = _Knobs({(SLICE, 'u1', '0'): 3000, (PIN, 'u1', '0'): None})
    act = driver_act.DriverActuator(knobs, journal_mod.Journal(path))
    _FailingWrites(monkeypatch, ok=0)
    act.apply(ta.plan(ta.act(SLICE, 'u1', '0', 700),
                      ta.act(PIN, 'u1', '0', (1,))), ts=1.0)
    TALLY['cases'] += 1
    assert knobs.writes == []
    assert act.journal.pending() == {}
    assert act.journal_failed is not None
    assert any('journal' in e for e in act.errors)


def _read_only(monkeypatch):
    """The journal's filesystem read-only: opening for writing is EROFS."""
    real_open = os.open

    def ro_open(p, flags, *a):
        if flags & os.O_WRONLY:
            raise OSError(errno.EROFS, os.strerror(errno.EROFS))
        return real_open(p, flags, *a)
    monkeypatch.setattr(journal_mod.os, 'open', ro_open)


def test_a_read_only_journal_is_read_and_said(tmp_path, monkeypatch):
    """Opening for append fails (EROFS): the originals are still loaded
    and ``write_error`` says why; recover restores them.
    """
    path = tmp_path / 'journal.jsonl'
    path.write_bytes(VALID)
    _read_only(monkeypatch)
    journal = journal_mod.Journal(str(path))
    monkeypatch.undo()
    TALLY['cases'] += 1
    assert journal.write_error.errno == errno.EROFS
    assert not journal.writable
    knobs = _Knobs({(DL, 'u1', '0'): RES, (SLICE, 'u1', '1'): 700})
    act = driver_act.DriverActuator(knobs, journal)
    assert act.recover() == 2
    assert knobs.values[(DL, 'u1', '0')] is None
    assert act.journal_failed is not None


class _Desired(_Knobs):
    """DictKnobs with a desired state (``reconcile``)."""

    def __init__(self, values, desired):
        super().__init__(values)
        self.want = desired

    def reconciled_kinds(self):
        return (DL, SLICE, PIN, knob_kinds.DISK_IOTUNE)

    def desired(self, kind, uuid, target):
        if (kind, uuid, target) not in self.want:
            raise knob_set.NoDesired('nothing says')
        return self.want[(kind, uuid, target)]


INSTANCE = model.InstanceInfo(uuid='u1', name='vm', vcpus=2)


@pytest.mark.parametrize('live,want,held,put_back', [
    # a reservation no record explains: back to SCHED_OTHER
    ({(DL, 'u1', '0'): RES}, {(DL, 'u1', '0'): None}, {}, True),
    # already as desired: nothing written
    ({(DL, 'u1', '0'): None}, {(DL, 'u1', '0'): None}, {}, False),
    # the journal still holds it (its restore failed): left to it
    ({(DL, 'u1', '0'): RES}, {(DL, 'u1', '0'): None},
     {(DL, 'u1', '0'): None}, False),
    # nothing says what it should be: left alone
    ({(SLICE, 'u1', '1'): 700}, {}, {}, False),
    # a pin, as a list from JSON or a tuple from the driver: the same
    ({(PIN, 'u1', '1'): (0, 1)}, {(PIN, 'u1', '1'): [0, 1]}, {}, False),
    ({(PIN, 'u1', '1'): (1,)}, {(PIN, 'u1', '1'): None}, {}, True),
])
def test_reconcile_puts_back_what_no_record_explains(live, want, held,
                                                     put_back):
    knobs = _Desired(live, want)
    act = driver_act.DriverActuator(knobs)
    for key, value in held.items():
        act.journal._originals[key] = value
    got = act.reconcile([INSTANCE])
    TALLY['cases'] += 1
    assert bool(got) == put_back
    if put_back:
        [(key, before, after)] = got
        assert knobs.values[key] == want[key] == after
        assert before == live[key]
    else:
        assert knobs.writes == []


def test_reconcile_goes_on_past_a_knob_it_cannot_read():
    knobs = _Desired({(DL, 'u1', '1'): RES},
                     {(DL, 'u1', '0'): None, (DL, 'u1', '1'): None})
    act = driver_act.DriverActuator(knobs)
    got = act.reconcile([INSTANCE])       # vCPU 0 cannot be read
    assert [k for k, _, _ in got] == [(DL, 'u1', '1')]


def test_an_agent_whose_journal_cannot_be_opened_restores_and_stops(
        tmp_path, monkeypatch):
    """On a simulated host: the first run leaves knobs changed (killed);
    the next one finds its journal read-only: it restores them all and
    stops at start, before its first tick.
    """
    sim, driver = fixtures.sim_host_with_vms()
    path = str(tmp_path / 'journal.jsonl')
    agent = fixtures.make_agent(driver, journal_path=path)
    fixtures.run_ticks(sim, agent, 2)
    agent.actuator.journal.close()            # killed: no shutdown()
    assert sim.get_vcpu_slice('lsvm-1', 0) == 1000
    _read_only(monkeypatch)
    fresh = fixtures.make_agent(driver, journal_path=path)
    fresh.run()                               # returns: it stopped itself
    TALLY['cases'] += 1
    assert sim.get_vcpu_slice('lsvm-1', 0) == 3000
    assert fresh.ticks == 0
    assert 'cannot be written' in fresh.failure


def test_an_agent_whose_disk_fills_stops_unjournaled_writes(tmp_path,
                                                            monkeypatch):
    sim, driver = fixtures.sim_host_with_vms()
    path = str(tmp_path / 'journal.jsonl')
    agent = fixtures.make_agent(driver, journal_path=path)
    agent.start()
    _FailingWrites(monkeypatch, ok=0)
    agent.tick()                              # every change refused
    TALLY['cases'] += 1
    assert sim.get_vcpu_slice('lsvm-1', 0) == 3000
    assert agent.failure is not None
    assert agent._stop.is_set()


def test_tally():
    """Carry the module's figures to ``make bench-faults``."""
    fault_tally.note('damaged and unwritable journals', **TALLY)
    assert TALLY['escaped'] == TALLY['knobs_left'] == 0


class _Writer(object):
    """A knob writer of the given kinds (HostKnobs routes to it)."""

    def __init__(self, kinds, hierarchy=None, sched=None):
        self._kinds = kinds
        self.hierarchy = hierarchy
        self.sched = sched

    def knobs(self):
        return self._kinds

    def reconciled_kinds(self):
        return ()

    def marked_kinds(self):
        return ()

    def config_sched(self, uuid):
        return self.sched


@pytest.mark.parametrize('version,sched,want', [
    # nothing in the definition: the cgroup defaults
    ('v1', {'cpu_shares': 0, 'vcpu_quota': 0, 'global_quota': 0},
     {knob_kinds.VM_WEIGHT: 100, knob_kinds.VM_CAP: None,
      knob_kinds.VCPU_CAP: None}),
    # Nova's quota:cpu_shares / cpu_quota on cgroup v1
    ('v1', {'cpu_shares': 2048, 'vcpu_quota': 25000, 'vcpu_period': 100000,
            'global_quota': 50000, 'global_period': 0},
     {knob_kinds.VM_WEIGHT: 200, knob_kinds.VM_CAP: 0.5,
      knob_kinds.VCPU_CAP: 0.25}),
    # on v2 libvirt writes cpu_shares to cpu.weight as it is
    ('v2', {'cpu_shares': 300, 'vcpu_quota': -1},
     {knob_kinds.VM_WEIGHT: 300, knob_kinds.VCPU_CAP: None}),
    # libvirt's "unlimited" read back on some kernels
    ('v1', {'vcpu_quota': 17592186044415, 'vcpu_period': 100000},
     {knob_kinds.VCPU_CAP: None}),
])
def test_cgroup_settings_desired_from_the_definitions_schedinfo(
        version, sched, want):
    from iosched.host_agent.actuators import host_knobs
    from iosched.host_agent.linux import cgroups
    linux = _Writer((knob_kinds.VM_WEIGHT, knob_kinds.VM_CAP,
                     knob_kinds.VCPU_CAP),
                    hierarchy=cgroups.Hierarchy(version, '/x', 'cpu'))
    virt = _Writer((knob_kinds.VCPU_PIN,), sched=sched)
    knobs = host_knobs.HostKnobs(None, None, linux=linux, virt=virt,
                                 blkio=_Writer(()))
    assert set(want) <= set(knobs.reconciled_kinds())
    for kind, value in want.items():
        assert knobs.desired(kind, 'u1', '0') == value, kind
