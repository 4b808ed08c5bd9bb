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
"""One reading of every stored flavor extra spec (iosched.contract.flavor).

Whatever string a flavor holds (values stored below API microversion 2.86
or before the validators were installed), the scheduler
(``request_spec``/``scoring.Request``, ``lsvm_rule``), the host agent
(``model.InstanceInfo``, vSlicer, vTurbo, ISACS) and Placement sizing
(``placement_resources.resources_for``) give it the same meaning, or all
read it as unset with one warning naming the flavor, the key and the value.
``STORED`` holds the decisions of the module docstring; the property test
holds the rule for random strings. The strict table the Nova API applies:
tests/unit/nova_plugin/test_extra_specs_table.py.
"""

import ast
import glob
import logging
import os

from hypothesis import given
from hypothesis import strategies as st
import pytest

from iosched.contract import flavor
from iosched.contract import flavor_warnings
from iosched.contract import knob_kinds
from iosched.contract import lsvm as lsvm_bound
from iosched.host_agent import model
from iosched.host_agent.policies import lsvm_mechanisms
from iosched.host_agent.policies import vslicer
from iosched.host_agent.policies import vturbo
from iosched.host_agent import policy_params
from iosched.nova_plugin import lsvm_rule
from iosched.nova_plugin import placement_resources as pr
from iosched.nova_plugin import request_spec
from tests.unit import input_fuzz as fz
from tests.unit.nova_plugin import reports

IO, LS, MS, TU, CP = (flavor.IO_PROFILE, flavor.LATENCY_SENSITIVE,
                      flavor.LATENCY_MS, flavor.TURBO, flavor.CPU_POLICY)
PARAMS = policy_params.params_for('vslicer')   # default_latency_ms 2.0
REPORT = reports.report(pcpus=4, lsvm=reports.lsvm(pcpus=4))
IO_VCPU_KEY = pr.key(pr.IO_VCPU)
LSVM_BW_KEY = pr.key(pr.LSVM_BW)


class _Flavor(object):
    def __init__(self, name, vcpus, extra_specs):
        self.name, self.vcpus, self.extra_specs = name, vcpus, extra_specs


class _Spec(object):
    """A duck-typed Nova RequestSpec (what request_spec reads)."""

    def __init__(self, name, specs):
        self.flavor = _Flavor(name, 2, dict(specs))
        self.instance_uuid = None


def meanings(specs, name='f'):
    """{reader: (io vCPUs?, LSVM?, L ms, dedicated?, turbo?)}, each as that
    reader's own code computes it (None: the reader does not read it).
    """
    request = request_spec.to_request(_Spec(name, specs))
    report_l = lsvm_rule.figures(REPORT, None, request).latency_request_ms
    inst = model.InstanceInfo(uuid='u', name='d', flavor=name, vcpus=2,
                              extra_specs=dict(specs))
    sized = pr.resources_for(2, specs)
    reading = flavor.read(specs)
    return {
        'contract': (reading.has_io_vcpus, reading.latency_sensitive,
                     reading.latency_ms or PARAMS.default_latency_ms,
                     reading.dedicated, reading.latency_sensitive
                     or reading.turbo),
        'scheduler': (request.io_profile in ('io', 'mixed'),
                      request.latency_sensitive, report_l,
                      request.dedicated, None),
        'agent': (None, inst.latency_sensitive,
                  lsvm_mechanisms.latency_ms(inst, PARAMS),
                  lsvm_mechanisms.dedicated(inst), vturbo.is_turbo(inst)),
        'placement': (IO_VCPU_KEY in sized, LSVM_BW_KEY in sized, None,
                      None, None),
    }


def agree(found):
    """Every reader's meaning equals the contract's where it reads."""
    want = found['contract']
    for reader, got in found.items():
        for i, value in enumerate(got):
            if value is not None:
                assert value == want[i], (reader, i, found)


# The decisions of iosched.contract.flavor's docstring: stored specs, what
# every reader makes of them (io vCPUs, LSVM, L ms, dedicated, turbo) and
# the keys warned about. Before issue 24: 0.5 was 0.5 ms to the agent and
# unset to the scheduler; 2.5 and 1e1 were 2.5 and 10 ms to the agent only;
# +3, 1_000, \u0663 and 10001 were int() to the scheduler only; Dedicated
# was dedicated to the scheduler only.
U = (False, False, 2.0, False, False)       # nothing set
STORED = [
    ({}, U, []),
    ({MS: '0.5'}, U, [MS]),
    ({LS: 'true', MS: '0.5'}, (False, True, 2.0, False, True), [MS]),
    ({LS: 'true', MS: '2.5'}, (False, True, 2.0, False, True), [MS]),
    ({LS: 'true', MS: '1e1'}, (False, True, 2.0, False, True), [MS]),
    ({LS: 'true', MS: '+3'}, (False, True, 2.0, False, True), [MS]),
    ({LS: 'true', MS: '1_000'}, (False, True, 2.0, False, True), [MS]),
    ({LS: 'true', MS: '\u0663'}, (False, True, 2.0, False, True), [MS]),
    ({LS: 'true', MS: '\uff15'}, (False, True, 2.0, False, True), [MS]),
    ({LS: 'true', MS: '10001'}, (False, True, 2.0, False, True), [MS]),
    ({LS: 'true', MS: '9' * 5000}, (False, True, 2.0, False, True), [MS]),
    ({LS: 'true', MS: ' 5 '}, (False, True, 5, False, True), []),
    ({LS: 'true', MS: '\t5\n'}, (False, True, 5, False, True), []),
    ({LS: 'true', MS: '0005'}, (False, True, 5, False, True), []),
    ({LS: ' TRUE '}, (False, True, 2.0, False, True), []),
    ({LS: 't'}, U, [LS]),
    ({LS: '\u2003yes'}, (False, True, 2.0, False, True), []),
    ({IO: 'IO'}, (True, False, 2.0, False, False), []),
    ({IO: 'disk'}, U, [IO]),
    ({CP: 'dedicated'}, (False, False, 2.0, True, False), []),
    ({CP: 'shared'}, U, []),
    ({CP: 'mixed'}, U, []),
    ({CP: 'Dedicated'}, U, [CP]),
    ({CP: ' dedicated'}, U, [CP]),
    ({'HW:CPU_POLICY': 'dedicated'}, U, []),      # Nova's; Nova ignores it
    ({'IOSCHED:latency_sensitive': 'true'}, U,
     ['IOSCHED:latency_sensitive']),
    ({' iosched:latency_sensitive': 'true'}, U,
     [' iosched:latency_sensitive']),
    ({'iosched:latency_ms ': '2', LS: 'true'},
     (False, True, 2.0, False, True), ['iosched:latency_ms ']),
    ({'iosched:nonsense': 'x'}, U, ['iosched:nonsense']),
    ({TU: 'on'}, (False, False, 2.0, False, True), []),
    ({TU: 'maybe', LS: 'yes'}, (False, True, 2.0, False, True), [TU]),
]


@pytest.mark.parametrize('specs,want,warned', STORED,
                         ids=[repr(s)[:60] for s, _, _ in STORED])
def test_every_reader_reads_a_stored_value_the_same_way(specs, want,
                                                        warned):
    found = meanings(specs)
    agree(found)
    assert found['contract'] == want
    assert [i.key for i in flavor.read(specs).ignored] == sorted(warned)


def test_the_agent_reserves_for_2_5_what_it_reserves_for_unset():
    """Issue 24: '2.5' made the agent reserve 1500/6250 us instead of
    1000/5000 (as for the default L=2).
    """
    sched = model.HostSched(mechanism=lsvm_bound.MECH_DEADLINE,
                            wakeup_p99_us=13.0, dl_cpus=(0, 1),
                            dl_bw_limit=1.9)

    def reservation(value):
        specs = {LS: 'true'}
        if value is not None:
            specs[MS] = value
        lsvms = [model.InstanceInfo(uuid='l%d' % i, name='l', flavor='f',
                                    vcpus=1, extra_specs=specs)
                 for i in range(3)]
        actions, _, _ = vslicer.plan_slices(lsvms, (0, 1), PARAMS, sched)
        return [a.value for a in actions
                if a.kind == knob_kinds.VCPU_DEADLINE]

    assert reservation('2.5') == reservation(None) == reservation('2')


def _warnings(caplog):
    return [r.getMessage() for r in caplog.records
            if r.name == flavor_warnings.LOG.name
            and r.levelno == logging.WARNING]


def test_one_warning_per_flavor_key_and_value_whoever_reads_it(caplog):
    flavor_warnings.forget()
    caplog.set_level(logging.WARNING, flavor_warnings.LOG.name)
    specs = {LS: 'true', MS: '0.5', CP: 'Dedicated'}
    for _ in range(3):                  # ticks, hosts, scheduler workers
        meanings(specs, name='lsvm.old')
    got = _warnings(caplog)
    assert len(got) == 2, got
    assert all(m.startswith('flavor lsvm.old: ') for m in got)
    assert "'hw:cpu_policy'" in got[0] and "'Dedicated'" in got[0]
    assert "'iosched:latency_ms'" in got[1] and "'0.5'" in got[1]
    assert "an integer from 1 to 10000" in got[1]
    assert ('the scheduler, the host agent and Placement sizing read it as '
            "unset (the host's default_latency_ms)") in got[1]
    caplog.clear()
    meanings(specs, name='lsvm.other')          # another flavor
    meanings(dict(specs, **{MS: '0.25'}), name='lsvm.old')  # another value
    got = _warnings(caplog)
    assert len(got) == 3, got
    assert sum('lsvm.other' in m for m in got) == 2
    assert "'0.25'" in got[2]


def test_a_huge_value_is_warned_about_shortened(caplog):
    flavor_warnings.forget()
    caplog.set_level(logging.WARNING, flavor_warnings.LOG.name)
    meanings({MS: '9' * 100000}, name='x' * 5000)
    (msg,) = _warnings(caplog)
    assert len(msg) < 600 and '(100002 characters)' in msg


def test_the_warning_memory_is_bounded():
    flavor_warnings.forget()
    reading = flavor.read({MS: 'x'})
    for i in range(flavor_warnings.WARN_MEMORY + 10):
        flavor_warnings.warn_ignored('f%d' % i, reading,
                                     log=logging.getLogger('q'))
    assert len(flavor_warnings._WARNED) == flavor_warnings.WARN_MEMORY


def test_check_specs_raises_what_read_ignores():
    with pytest.raises(flavor.InvalidExtraSpec, match="'hw:cpu_policy'"):
        flavor.check_specs({CP: 'Dedicated', LS: 'true'})
    with pytest.raises(flavor.MiscasedExtraSpec, match='case-sensitive'):
        flavor.check_specs({'IOSCHED:turbo': 'true'})
    assert flavor.check_specs({LS: 'true', CP: 'dedicated'}).dedicated


# Random stored specs: keys near ours, values near the accepted ones and
# anything else.
EDGE_VALUES = (
    '0.5', '2.5', '1e1', '1E1', '+3', '-3', '1_000', '10001', '10000', '1',
    '0', '007', ' 5 ', '\t5\n', '\u0663', '\uff15', '9' * 5000, '', ' ',
    'true', 'TRUE', ' yes ', 't', 'y', 'on', 'oN', 'false', '0', 'off',
    'io', 'IO', ' mixed ', 'cpu', 'disk', 'dedicated', 'Dedicated',
    ' dedicated', 'shared', 'mixed', 'nan', 'inf', '\x00', '\u2003io',
    '\u00a0true', 'ｔｒｕｅ', '\u0130o')
KEYS = tuple(flavor.READ) + (
    'IOSCHED:latency_sensitive', 'Iosched:io_profile', ' iosched:latency_ms',
    'iosched:latency_ms ', 'iosched:nonsense', 'HW:CPU_POLICY',
    'hw:cpu_policy ', 'resources:VCPU', 'iosched:', 'IOSCHED:turbo')
values = (st.sampled_from(EDGE_VALUES) | fz.numbers_text | fz.junk_text
          | st.text(max_size=12))
keys = (st.sampled_from(KEYS) | st.text(max_size=10).map(
    lambda t: 'iosched:' + t) | st.text(max_size=10))
flavor_specs = st.dictionaries(keys, values, max_size=6)


@fz.SETTINGS
@given(flavor_specs)
def test_scheduler_agent_and_placement_agree_on_any_stored_strings(specs):
    agree(meanings(specs))
    reading = flavor.read(specs)
    # a key is read iff the strict check accepts its value; else ignored
    for key, value in specs.items():
        ignored = [i for i in reading.ignored if i.key == key]
        spec = flavor.READ.get(key)
        if spec is None:
            assert bool(ignored) is flavor.looks_like_namespace(key)
            continue
        try:
            want = spec.check(value)
        except flavor.InvalidExtraSpec:
            assert len(ignored) == 1
            assert getattr(reading, spec.field) in (None, False)
        else:
            assert not ignored and getattr(reading, spec.field) == want


@fz.SETTINGS
@given(flavor_specs)
def test_each_ignored_value_is_warned_about_once(specs):
    flavor_warnings.forget()
    records = []

    class _Log(object):
        def warning(self, msg, args):
            records.append(msg % args)

    reading = flavor.read(specs)
    for _ in range(2):
        flavor_warnings.warn_ignored('the flavor', reading, log=_Log())
    assert len(records) == len({(i.key, str(i.value))
                                for i in reading.ignored})
    for msg, item in zip(records, reading.ignored):
        fz.check_message(msg, ['flavor the flavor: '], ('accepted',))
        assert 'read it as unset' in msg


# --- one definition: no second spelling list, no direct read of a key ----

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
SOURCES = ('iosched', 'bench',
           'ansible')
HOME = os.path.join('iosched', 'contract', 'flavor.py')


def _source_files():
    for top in SOURCES:
        for path in glob.glob(os.path.join(ROOT, top, '**', '*.py'),
                              recursive=True):
            rel = os.path.relpath(path, ROOT)
            if rel != HOME and '/tests/' not in rel:
                yield rel


def _second_readings(tree):
    """Spelling lists and reads of a flavor key outside the contract."""
    spellings = (set(flavor.TRUE_SPELLINGS[2:]),        # yes, on
                 set(flavor.FALSE_SPELLINGS[2:]))       # no, off
    keys = set(flavor.READ)
    for node in ast.walk(tree):
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            words = {e.value for e in node.elts
                     if isinstance(e, ast.Constant)}
            if any(words >= spelling for spelling in spellings):
                yield node.lineno, 'a boolean spelling list'
        key = None
        if isinstance(node, ast.Subscript) and isinstance(node.ctx,
                                                          ast.Load):
            key = node.slice
        elif (isinstance(node, ast.Call) and node.args
              and isinstance(node.func, ast.Attribute)
              and node.func.attr in ('get', 'pop')):
            key = node.args[0]
        if isinstance(key, ast.Constant) and key.value in keys:
            yield node.lineno, 'reads %s' % key.value
        if (isinstance(node, ast.Assign)
                and isinstance(node.value, ast.Constant)
                and node.value.value in keys):
            yield node.lineno, 'names %s again' % node.value.value


def test_no_second_reading_of_a_flavor_spec_in_the_source():
    found = []
    for rel in _source_files():
        with open(os.path.join(ROOT, rel), encoding='utf-8') as f:
            tree = ast.parse(f.read())
        found += ['%s:%d: %s' % (rel, line, what)
                  for line, what in _second_readings(tree)]
    assert found == [], ('read flavor extra specs with '
                         'iosched.contract.flavor.read: %s' % found)


@pytest.mark.parametrize('code,caught', [
    ("x = ('true', '1', 'yes', 'on')", True),
    ("x = {'no', 'off', 'yes', 'on'}", True),
    ("specs.get('iosched:latency_ms')", True),
    ("specs['hw:cpu_policy']", True),
    ("specs['iosched:turbo'] = 'true'", False),     # writing a flavor
    ("x = {'iosched:latency_sensitive': 'true'}", False),
    ("specs.get(flavor.LATENCY_MS)", False),
    ("SPEC_LATENCY_MS = 'iosched:latency_ms'", True),
])
def test_the_source_check_can_fail(code, caught):
    assert bool(list(_second_readings(ast.parse(code)))) is caught
