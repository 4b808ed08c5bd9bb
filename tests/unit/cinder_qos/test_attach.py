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
"""Cinder's per-GB QoS arithmetic at attach (iosched.contract.qos_attach)."""

import pytest

from iosched.contract import qos_attach


@pytest.mark.parametrize('specs, consumer, size, want', [
    ({'total_iops_sec': '500'}, 'front-end', 10, {'total_iops_sec': '500'}),
    ({'total_iops_sec': '500'}, 'back-end', 10, None),
    ({'total_iops_sec_per_gb': '30'}, 'both', 10, {'total_iops_sec': 300}),
    # the floor wins on a small volume
    ({'total_iops_sec_per_gb': '30', 'total_iops_sec_per_gb_min': '500'},
     'front-end', 10, {'total_iops_sec': 500}),
    # the _max caps a big one (and is consumed)
    ({'total_iops_sec_per_gb': '30', 'total_iops_sec_max': '1000'},
     'front-end', 100, {'total_iops_sec': 1000}),
    # other keys pass through
    ({'read_bytes_sec_per_gb': '1000', 'iosched:min_iops': '100'},
     'front-end', 2, {'read_bytes_sec': 2000, 'iosched:min_iops': '100'}),
])
def test_specs_at_attach(specs, consumer, size, want):
    assert qos_attach.specs_at_attach(specs, consumer, size) == want


def test_iotune_keeps_novas_keys_as_ints():
    got = qos_attach.iotune({'total_iops_sec': '750', 'size_iops_sec': '16384',
                         'iosched:min_iops': '500', 'totl_iops_sec': '9',
                         'read_bytes_sec': '0'})
    assert got == {'total_iops_sec': 750, 'size_iops_sec': 16384}
