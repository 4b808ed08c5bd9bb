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
"""I-Balancer's event definition (contract.ibalancer), table-driven."""

import collections

import pytest

from iosched.contract import ibalancer as ib

V = collections.namedtuple('V', 'instance_uuid vcpu events')
D = collections.namedtuple('D', 'instance_uuid reqs')


@pytest.mark.parametrize('requests, wakeups, want', [
    (900, {0: 300}, {0: 900}),                  # one vCPU: all requests
    (900, {0: 100, 1: 200}, {0: 300, 1: 600}),  # by wake-ups
    (10, {0: 1, 1: 1, 2: 1}, {0: 4, 1: 3, 2: 3}),   # remainder, sums to 10
    (7, {0: 0, 1: 0}, {0: 4, 1: 3}),            # no wake-up: evenly
    (0, {0: 50}, {0: 0}),
    (5, {}, {}),                                # no vCPU
])
def test_share_requests(requests, wakeups, want):
    got = ib.share_requests(requests, wakeups)
    assert got == want
    if wakeups:
        assert sum(got.values()) == requests


# The bias the request source removes: two VMs with the same throughput
# (900 requests), the slow one with a third of the wake-ups (several
# completions found per run).
VCPUS = (V('slow', 0, 100), V('fast', 0, 300), V('fast', 1, 0),
         V('nodisk', 0, 40))
DISKS = (D('slow', 900), D('fast', 600), D('fast', 300), D('gone', 5))


@pytest.mark.parametrize('source, want', [
    ('requests', {('slow', 0): 900, ('fast', 0): 900, ('fast', 1): 0,
                  ('nodisk', 0): 0}),
    ('wakeups', {('slow', 0): 100, ('fast', 0): 300, ('fast', 1): 0,
                 ('nodisk', 0): 40}),
])
def test_vcpu_events(source, want):
    assert ib.vcpu_events(source, VCPUS, DISKS) == want


def test_vm_requests_sums_disks_and_ignores_negative():
    assert ib.vm_requests((D('a', 3), D('a', 4), D('b', -2))) == {
        'a': 7, 'b': 0}


def test_unknown_source_is_refused():
    with pytest.raises(ValueError, match='requests, wakeups'):
        ib.vcpu_events('kicks', VCPUS, DISKS)
