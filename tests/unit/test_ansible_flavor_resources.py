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
"""Table tests of the role iosched_cloud_objects' filter
``iosched_flavor_resources`` (tests/nova/test_ansible_cloud_objects.py runs
it through ansible-playbook against Nova's API).
"""

import importlib.util
import os

import pytest

errors = pytest.importorskip('ansible.errors')

PATH = os.path.join(os.path.dirname(__file__), '..', '..', 'ansible',
                    'roles', 'iosched_cloud_objects', 'filter_plugins',
                    'iosched_resources.py')


def _plugin():
    spec = importlib.util.spec_from_file_location('iosched_resources', PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


PLUGIN = _plugin()
FILTER = PLUGIN.FilterModule().filters()['iosched_flavor_resources']
IO_KEY = 'resources:CUSTOM_IOSCHED_IO_VCPU'
BW_KEY = 'resources:CUSTOM_IOSCHED_LSVM_BW'

# (extra_specs, vcpus, share, result) -- vcpus and share as YAML/JSON vars
# may carry them
GOOD = [
    ({'iosched:io_profile': 'io'}, 2, 0.5,
     {'iosched:io_profile': 'io', IO_KEY: '2'}),
    ({'iosched:io_profile': 'io'}, '4', '0.5',
     {'iosched:io_profile': 'io', IO_KEY: '4'}),
    ({'iosched:latency_sensitive': 'true'}, 2, 0.25,
     {'iosched:latency_sensitive': 'true', BW_KEY: '500'}),
    (None, 2, 0.5, {}),
    ({'hw:cpu_policy': 'dedicated'}, 8, 0.5, {'hw:cpu_policy': 'dedicated'}),
    # a key the sizing does not read: Nova's validator refuses it (2.86)
    ({'iosched:latency_sensitive': 'true', 'iosched:latency_ms': '0'}, 2,
     0.5, {'iosched:latency_sensitive': 'true', 'iosched:latency_ms': '0',
           BW_KEY: '1000'}),
]


@pytest.mark.parametrize('specs,vcpus,share,want', GOOD)
def test_filter(specs, vcpus, share, want):
    assert FILTER(specs, vcpus, share) == want


BAD = [
    ({}, 'two', 0.5, "vcpus must be a positive integer, got 'two'"),
    ({}, True, 0.5, 'vcpus must be a positive integer, got True'),
    ({}, 0, 0.5, 'vcpus must be a positive integer'),
    ({}, 2, 'half',
     "lsvm_vcpu_share must be a number from 0.0005 to 1, got 'half'"),
    ({'iosched:io_profile': 'io'}, 2, 2.0, 'got 2.0'),
    ({'iosched:latency_sensitive': 'true'}, 2, 0.0001,
     'it would ask 0 milli-CPUs'),
    ({'iosched:io_profile': 'disk'}, 2, 0.5,
     "invalid value 'disk' for flavor extra spec 'iosched:io_profile'"),
    # Nova stores it; every reader ignores it: the LSVM would get no BW
    ({'IOSCHED:latency_sensitive': 'true'}, 2, 0.5,
     "keys are case-sensitive, accepted: 'iosched:latency_sensitive'"),
    (['iosched:io_profile'], 2, 0.5, 'extra_specs must be a mapping'),
]


@pytest.mark.parametrize('specs,vcpus,share,fragment', BAD)
def test_filter_refuses(specs, vcpus, share, fragment):
    with pytest.raises(errors.AnsibleFilterError) as err:
        FILTER(specs, vcpus, share)
    assert 'iosched_flavor_resources' in str(err.value)
    assert fragment in str(err.value)
