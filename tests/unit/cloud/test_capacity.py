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
"""The cloud's measured disk capacity: rbd bench's summary, the LOCALRC."""

import pytest

from iosched.cloud import capacity
from iosched.cloud import devstack

RBD_OUT = """bench  type read io_size 16384 io_threads 8 bytes 67108864 \
    pattern random
  SEC       OPS   OPS/SEC   BYTES/SEC
    1      2816   2831.85    44 MiB/s
elapsed: 1   ops: 4096   ops/sec: 2904.61   bytes/sec: 45 MiB/s
"""


@pytest.mark.parametrize('text, want', [
    (RBD_OUT, 2904.61),
    ('elapsed: 3   ops: 10   ops/sec: 3.3   bytes/sec: 1 KiB/s', 3.3),
])
def test_parse_ops_per_s(text, want):
    assert capacity.parse_ops_per_s(text) == pytest.approx(want)


@pytest.mark.parametrize('text', ['', 'SEC OPS OPS/SEC\n', 'error'])
def test_parse_refuses_output_without_a_summary(text):
    with pytest.raises(capacity.CapacityError, match='ops/sec'):
        capacity.parse_ops_per_s(text)


@pytest.mark.parametrize('iops, want', [
    (2904.61, '2905'), (None, None), (0, None)])
def test_localrc_carries_the_measured_capacity(iops, want):
    rc = devstack.localrc(iops)
    assert rc.get('IOSCHED_DISK_CAPACITY_IOPS') == want
    for key, value in devstack.LOCALRC.items():
        assert rc[key] == value
