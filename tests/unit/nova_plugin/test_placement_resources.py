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
"""Table tests of iosched.nova_plugin.placement_resources.

``DERIVED`` rows are also booted through Nova in
tests/nova/test_placement_race.py (Nova's ``resources:`` validator at 2.86
accepts every derived key).
"""

import pytest

from iosched.contract import flavor
from iosched.nova_plugin import placement_resources as pr

IO = 'iosched:io_profile'
LS = 'iosched:latency_sensitive'
IO_KEY = 'resources:CUSTOM_IOSCHED_IO_VCPU'
BW_KEY = 'resources:CUSTOM_IOSCHED_LSVM_BW'
SLO_KEY = 'resources:CUSTOM_IOSCHED_SLO_IOPS'

# (vcpus, flavor extra specs, lsvm_vcpu_share, derived resources: keys)
DERIVED = [
    (2, {}, 0.5, {}),
    (2, None, 0.5, {}),
    (2, {IO: 'cpu'}, 0.5, {}),
    (2, {IO: 'io'}, 0.5, {IO_KEY: '2'}),
    (4, {IO: 'mixed'}, 0.5, {IO_KEY: '4'}),
    (3, {IO: ' IO '}, 0.5, {IO_KEY: '3'}),
    (1, {LS: 'true'}, 0.5, {BW_KEY: '500'}),
    (2, {LS: 'yes'}, 0.5, {BW_KEY: '1000'}),
    (2, {LS: 'false'}, 0.5, {}),
    (2, {LS: 'true'}, 0.25, {BW_KEY: '500'}),
    (3, {LS: 'true'}, 1.0 / 3, {BW_KEY: '999'}),     # round(333.3) * 3
    (1, {LS: 'on'}, 1, {BW_KEY: '1000'}),
    (2, {LS: 'true', IO: 'mixed'}, 0.5, {IO_KEY: '2', BW_KEY: '1000'}),
    # SLO IOPS are never derived (Cinder volume types carry the floors)
    (2, {'iosched:latency_ms': '5', 'iosched:turbo': 'true'}, 0.5, {}),
    (2, {'hw:cpu_policy': 'dedicated', IO: 'io'}, 0.5, {IO_KEY: '2'}),
]


@pytest.mark.parametrize('vcpus,specs,share,want', DERIVED)
def test_resources_for(vcpus, specs, share, want):
    assert pr.resources_for(vcpus, specs, share) == want
    # a flavor carrying them has nothing to fix
    assert pr.check(vcpus, dict(specs or {}, **want), share) == []


# (vcpus, share, fragment of the error)
BAD_ARGS = [
    (0, 0.5, 'vcpus must be a positive integer'),
    (-1, 0.5, 'vcpus must be a positive integer'),
    ('2', 0.5, "got '2'"),
    (True, 0.5, 'got True'),
    (2, 0, 'lsvm_vcpu_share must be a number from 0.0005 to 1'),
    (2, 0.0004, 'it would ask 0 milli-CPUs'),
    (2, 1.5, 'got 1.5'),
    (2, float('nan'), 'got nan'),
    (2, '0.5', "got '0.5'"),
]


@pytest.mark.parametrize('vcpus,share,fragment', BAD_ARGS)
def test_bad_arguments(vcpus, share, fragment):
    with pytest.raises(ValueError) as err:
        pr.resources_for(vcpus, {IO: 'io'}, share)
    assert fragment in str(err.value)


# A value the Nova API refuses sizes as unset, as the scheduler and the
# agent read it (issue 24: it raised here, while they read it as unset);
# check() refuses it, saying what is accepted.
@pytest.mark.parametrize('specs,sized,fragment', [
    ({IO: 'disk'}, {}, "'iosched:io_profile': accepted: one of io, cpu, "
     "mixed"),
    ({LS: 't'}, {}, "'iosched:latency_sensitive': accepted: true"),
    ({LS: 'true', IO: 'disk'}, {BW_KEY: '1000'}, "'iosched:io_profile'"),
    ({'IOSCHED:latency_sensitive': 'true'}, {},
     "keys are case-sensitive, accepted: 'iosched:latency_sensitive'"),
])
def test_bad_iosched_value_sizes_as_unset_and_check_refuses_it(
        specs, sized, fragment):
    assert pr.resources_for(2, specs) == sized
    with pytest.raises(flavor.InvalidExtraSpec) as err:
        pr.check(2, specs)
    assert fragment in str(err.value)


# (vcpus, flavor extra specs, [(key, kind)], fragment of the first message)
CHECKED = [
    (2, {IO: 'io'}, [(IO_KEY, 'missing')],
     'resources:CUSTOM_IOSCHED_IO_VCPU is missing: the iosched specs ask 2'),
    (2, {IO: 'io', IO_KEY: '1'}, [(IO_KEY, 'wrong')],
     "is '1': the iosched specs ask 2"),
    (2, {IO: 'io', IO_KEY: '02'}, [], None),
    (2, {IO: 'cpu', IO_KEY: '2'}, [(IO_KEY, 'unexpected')],
     'claims capacity the filters never count'),
    (2, {IO_KEY: '2'}, [(IO_KEY, 'unexpected')], None),
    (2, {IO_KEY: '0'}, [], None),            # 0: Nova asks nothing
    (2, {IO: 'io', IO_KEY: 'two'}, [(IO_KEY, 'invalid')],
     "is 'two': accepted: a non-negative integer"),
    (2, {IO_KEY: '-1'}, [(IO_KEY, 'invalid')], None),
    (2, {LS: 'true', BW_KEY: '500'}, [(BW_KEY, 'wrong')],
     "is '500': the iosched specs ask 1000"),
    (2, {LS: 'false', BW_KEY: '1000'}, [(BW_KEY, 'unexpected')], None),
    (2, {SLO_KEY: '300'}, [], None),           # opt-in: any amount
    (2, {SLO_KEY: 'lots'}, [(SLO_KEY, 'invalid')], None),
    (2, {IO: 'io', 'resources1:CUSTOM_IOSCHED_IO_VCPU': '2'},
     [('resources1:CUSTOM_IOSCHED_IO_VCPU', 'group'), (IO_KEY, 'missing')],
     'is in a numbered request group'),
    (2, {'resources:CUSTOM_OTHER': '7', 'resources:VCPU': '2'}, [], None),
    (2, {LS: 'true', IO: 'io'}, [(IO_KEY, 'missing'), (BW_KEY, 'missing')],
     None),
]


@pytest.mark.parametrize('vcpus,specs,problems,fragment', CHECKED)
def test_check(vcpus, specs, problems, fragment):
    found = pr.check(vcpus, specs)
    assert [(p.key, p.kind) for p in found] == problems
    if fragment:
        assert fragment in str(found[0])


# (flavor extra specs, with_resources of it at 2 vCPUs)
APPLIED = [
    ({IO: 'io', 'hw:mem_page_size': 'large'},
     {IO: 'io', 'hw:mem_page_size': 'large', IO_KEY: '2'}),
    ({IO: 'io', IO_KEY: '9'}, {IO: 'io', IO_KEY: '2'}),
    ({IO: 'cpu', IO_KEY: '2', BW_KEY: '1'}, {IO: 'cpu'}),
    ({SLO_KEY: '300'}, {SLO_KEY: '300'}),
    ({}, {}),
]


@pytest.mark.parametrize('specs,want', APPLIED)
def test_with_resources(specs, want):
    before = dict(specs)
    assert pr.with_resources(2, specs) == want
    assert specs == before                   # a new dict
    assert pr.check(2, want) == []
