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

"""Fuzzing the scenario files of the embedded default (issue 15, bad input).

``iosched.demo.scenario`` is the one loader of scenario files (the
simulator itself takes Python objects). Inputs: the embedded default and a
small scenario with one field replaced by anything (wrong types, NaN,
infinite, negative, huge numbers, text, nested lists), deleted, or an
unknown field added; whole documents of any YAML value; any bytes.
Properties: ``load``/``parse`` raise only ``ScenarioError``, whose message
names the field's path and what is accepted, shortened; an accepted
scenario is one the cloud can build without a later error: finite numbers,
every SLO text parses, every ``iosched:*`` extra spec is one the Nova API
accepts, every server's flavor and volume type exist. Examples:
``IOSCHED_INPUT_FUZZ_EXAMPLES``.
"""

import copy
import math

from hypothesis import given
from hypothesis import strategies as st
import yaml

from iosched.contract import flavor
from iosched.contract import slo as slo_mod
from iosched.demo import scenario
from tests import fault_campaign
from tests import fixtures
from tests.unit import input_fuzz as fz
from tests.unit.iosched_demo import test_scenario

CAMPAIGN = fault_campaign.Campaign('scenario files')
_tally = CAMPAIGN.fixture()

with open(scenario.DEFAULT_SCENARIO) as _fh:
    DEFAULT = yaml.safe_load(_fh)
BASES = (DEFAULT, test_scenario.GOOD)
SAYS = ('accepted', 'expected', 'missing (required)', 'must be unique',
        'at least one')


def _paths(data, prefix=()):
    """Every path of a mapping/list tree (the item itself included)."""
    yield prefix
    if isinstance(data, dict):
        for k, v in data.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            yield from _paths(v, prefix + (i,))


def _at(data, path):
    for key in path:
        data = data[key]
    return data


NEAR = st.one_of(
    st.integers(-3, 3), st.sampled_from([0, -1, 10 ** 9, 10 ** 30, 0.0,
                                         -0.5, 1e308]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(['500iops,10ms', '10ms', 'iosched:latency_ms', 'io',
                     'cpu', 'vslicer', 'linux-6.18-hz250', 'true', '2',
                     'nope', '', fz.HUGE]),
    st.sampled_from([{}, [], None, True, {'type': 'cpu'}, [1, 2],
                     {'slo': 5}, {'iosched:latency_ms': 'abc'},
                     {'iosched:io_profile': 'disk'},
                     {'iosched:unknown': 'x'}, {1: 2}, {'slo': fz.HUGE}]))


@st.composite
def mutated_scenarios(draw):
    base = draw(st.sampled_from(BASES))
    paths = [p for p in _paths(base) if p]
    data = copy.deepcopy(base)
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(paths))
        try:
            _at(data, path[:-1])
        except (KeyError, IndexError, TypeError):
            continue        # an earlier change removed the parent
        how = draw(st.integers(0, 9))
        parent = _at(data, path[:-1])
        if how == 0 and isinstance(parent, dict):
            if path[-1] in parent:
                data = fixtures.mutated(data, path, KeyError)
        elif how == 1 and isinstance(parent, dict):
            parent[draw(st.sampled_from(['extra', 'measure_S', 'Name',
                                         'pcpu', 7, None]))] = 1
        elif how == 2 and isinstance(parent, dict):   # a renamed key
            value = parent.pop(path[-1], None)
            parent[draw(st.sampled_from(['x', 1, True, fz.HUGE]))] = value
        else:
            value = draw(NEAR | fz.json_values)
            try:
                data = fixtures.mutated(data, path, value)
            except (KeyError, IndexError, TypeError):
                continue
    return data


def _refused(err):
    msg = str(err)
    assert msg.startswith('scenario field '), msg
    fz.check_message(msg, ['scenario field '], SAYS)


def _usable(sc):
    """What the cloud needs of an accepted scenario."""
    for name in ('arrival_interval_s', 'warmup_s', 'measure_s', 'tick_s'):
        assert math.isfinite(getattr(sc, name)), name
    for h in sc.hosts:
        assert h.pcpus >= 1 and math.isfinite(h.cpu_allocation_ratio)
    for text in sc.volume_types.values():
        slo_mod.parse(text)
    for f in sc.flavors.values():
        flavor.check_specs(f.extra_specs)
    for s in sc.servers:
        assert s.flavor.name in sc.flavors
        assert not s.volume_type or s.volume_type in sc.volume_types
        for v in s.workload.values():
            assert not isinstance(v, float) or math.isfinite(v)
    assert len(sc.servers) <= scenario.MAX_SERVERS


@fz.SETTINGS
@given(mutated_scenarios())
@CAMPAIGN.counted
def test_mutated_scenario_is_usable_or_refused_with_its_path(data):
    try:
        sc = scenario.parse(data)
    except scenario.ScenarioError as e:
        _refused(e)
        return
    _usable(sc)


@fz.SETTINGS
@given(fz.json_values)
@CAMPAIGN.counted
def test_any_document_is_refused_clearly(data):
    try:
        sc = scenario.parse(data)
    except scenario.ScenarioError as e:
        _refused(e)
        return
    _usable(sc)


@fz.SETTINGS
@given(st.one_of(
    st.binary(max_size=200),
    mutated_scenarios().map(lambda d: yaml.safe_dump(d).encode()),
    st.sampled_from([b'[' * 5000, b'{a: ' * 5000, b'\xff\xfe', b'- &a [*a]',
                     b'hosts: !!python/object:os.system {}', b'\x00',
                     b'seed: 1\nseed: 2\n', b'%YAML 9.9\n---\n'])))
@CAMPAIGN.counted
def test_any_file_is_refused_clearly(tmp_path_factory, content):
    path = fz.scratch(tmp_path_factory) / 'scenario.yaml'
    path.write_bytes(content)
    try:
        sc = scenario.load(str(path))
    except scenario.ScenarioError as e:
        _refused(e)
        return
    _usable(sc)


@CAMPAIGN.counted
def test_the_bases_are_valid():
    for base in BASES:
        _usable(scenario.parse(copy.deepcopy(base)))
