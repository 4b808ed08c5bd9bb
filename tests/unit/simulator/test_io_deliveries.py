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
"""The simulator's I/O event buffer: E_n counted as events arrive is the
count ``iosched.contract.isacs.ema_gap`` takes from the times (issue 29:
the agent reads no event to count them), and a drain starts afresh.
"""

import pytest

from iosched.contract import isacs
from tests.unit.simulator import test_counters
from tests.unit.simulator.xen import credit2_harness as hx


@pytest.mark.parametrize('times,distinct', [
    ((), 0),
    ((5,), 1),
    ((5, 5), 1),
    ((0, 1000, 3000, 3000), 3),
    ((0, 0, 7, 7, 7, 9), 3),
    ((9, 7, 9), 3),                     # a step back is another delivery
])
def test_counted_as_they_come(times, distinct):
    loop, s = hx.isacs_sched()
    e = hx.entity(s, 0)
    for t in times:
        s.io_event(e, t)
    assert list(e.io_events) == list(times)
    assert e.io_distinct == distinct
    assert isacs.ema_gap(list(times))[0] == distinct


@pytest.mark.parametrize('seed', [7, 8])
def test_a_busy_host_counts_as_ema_gap_does(seed):
    h = test_counters._busy_host(seed)
    h.run_until(h.now_us + 1_000_000)
    seen = 0
    for u in h.vm_uuids():
        for i in range(h.vcpu_count(u)):
            times, distinct = h.drain_io_deliveries(u, i)
            seen += len(times)
            assert distinct == isacs.ema_gap(list(times))[0]
            assert isacs.ema_gap(times, 0.9, 10 ** 7, 1000, distinct) == \
                isacs.ema_gap([t * 1000 for t in times], 0.9, 10 ** 7)
            again = h.drain_io_deliveries(u, i)    # afresh after a drain
            assert (len(again[0]), again[1]) == (0, 0)
    assert seen > 0


def test_readings_of_a_vm_are_its_vcpus_counters_and_drains():
    one, two = test_counters._busy_host(7), test_counters._busy_host(7)
    for h in (one, two):
        h.run_until(h.now_us + 500_000)
    for u in one.vm_uuids():
        got = [(c, list(t), d) for c, t, d in one.drain_vcpu_readings(u)]
        want = [(two.vcpu_counters(u, i),
                 list(two.drain_io_deliveries(u, i)[0]), None)
                for i in range(two.vcpu_count(u))]
        assert [g[:2] for g in got] == [w[:2] for w in want]
        assert [g[2] for g in got] == [isacs.ema_gap(g[1])[0] for g in got]
        assert all(len(t) == 0 for _, t, _ in one.drain_vcpu_readings(u))
