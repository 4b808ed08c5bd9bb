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
"""The simulated disk's latency histogram (QEMU's, per guest disk)."""

import bisect

import pytest

from iosched.simulator import host as sim_host
from iosched.simulator import spec as S


def _host():
    h = sim_host.SimHost(S.HostSpec(
        name='h', pcpus=2, disk=S.DiskSpec(service_us=500, parallelism=2)),
        seed=3)
    h.add_vm(S.VmSpec(uuid='a', name='a', vcpus=(
        S.DiskClosedLoop(outstanding=4),), disks=('vda',)))
    return h


def test_histogram_counts_every_completion_after_it_is_set():
    h = _host()
    h.run_until(100000)
    before = h.disk_counters('a', 'vda')
    assert before.latency_hist is None
    bounds = (500.0, 1000.0, 2000.0, 4000.0)
    h.set_disk_latency_histogram('a', 'vda', bounds)
    h.run_until(1100000)
    c = h.disk_counters('a', 'vda')
    done = c.rd_reqs + c.wr_reqs - before.rd_reqs - before.wr_reqs
    assert sum(c.latency_hist) == done > 0
    lat = h.disk_latencies_us('a', 'vda', since_us=100000)
    want = [0] * (len(bounds) + 1)
    for v in lat[-done:]:
        want[bisect.bisect_left(bounds, v)] += 1
    assert list(c.latency_hist) == want


@pytest.mark.parametrize('bounds', [(), (2.0, 1.0), (1.0, 1.0)])
def test_bad_bounds_are_refused(bounds):
    with pytest.raises(ValueError, match='ascending'):
        _host().set_disk_latency_histogram('a', 'vda', bounds)
