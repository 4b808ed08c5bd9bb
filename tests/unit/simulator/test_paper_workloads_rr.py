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
"""The paper workloads on a non-EEVDF model: strict round-robin, 30 ms.

Closed forms of a Credit-like round-robin pCPU shared by N always-runnable
vCPUs (seed 001, claim C4): an echo arriving at a uniform random phase
waits for the pinged vCPU's next turn unless it is running: mean wait =
(N-1)/N * (N-1)*Q/2 = (N-1)^2 * Q / (2N); worst (N-1)*Q.
"""

import pytest

from iosched.simulator import host
from iosched.simulator import spec
from iosched.simulator import spec_paper
from tests.unit.simulator import builders as b
from tests.unit.simulator import rr_sched

SEC = b.SEC
Q = 30000
BASE = 2 * 10 + 20 + 100        # 2 backend passes + burst + wire


def make():
    return host.SimHost(spec.HostSpec(
        name='h', pcpus=1, switch_cost_us=0,
        scheduler=rr_sched.RoundRobinSpec(Q)), seed=7)


@pytest.mark.parametrize('n, mean_ms', [(3, 20.0), (4, 33.75), (5, 48.0)])
def test_credit_like_ping_rtt_matches_the_closed_form(n, mean_ms):
    h = make()
    b.add(h, 'p', spec.IoVcpu(sources=(spec_paper.Ping(
        interval_us=100000, burst_us=20, wire_us=100, jitter=0.5),),
        task=spec.CpuBound()))
    for i in range(n - 1):
        b.add(h, 'n%d' % i, spec.CpuBound())
    h.run_until(60 * SEC)
    rtts = h.request_latencies_us('p')
    assert len(rtts) == pytest.approx(600, abs=15)   # gaps U[50, 150] ms
    assert sum(rtts) / len(rtts) / 1000 == pytest.approx(
        mean_ms + BASE / 1000, rel=0.08)
    assert max(rtts) <= (n - 1) * Q + BASE + 100
    assert min(rtts) >= BASE


def test_lookbusy_vms_share_an_overloaded_round_robin_pcpu_equally():
    # 4 x 40 % > 100 %: each gets 1/4, the pinged one included
    h = make()
    b.add(h, 'p', spec.IoVcpu(sources=(spec_paper.Ping(interval_us=100000),),
                              task=spec_paper.Lookbusy(0.4)))
    for i in range(3):
        b.add(h, 'n%d' % i, spec_paper.Lookbusy(0.4))
    h.run_until(30 * SEC)
    for uuid in h.vm_uuids():
        assert h.cpu_run_us(uuid) / (30 * SEC) == pytest.approx(0.25,
                                                                 abs=0.01)


def test_sysbench_against_hogs_on_round_robin():
    # 2 vCPUs alternate 30 ms turns: a 90 ms run needs 3 turns and waits
    # 2 or 3 of the hog's; mean wall time near 2 * 90 ms.
    h = make()
    b.add(h, 's', spec_paper.Sysbench(work_us=90000))
    b.add(h, 'hog', spec.CpuBound())
    h.run_until(10 * SEC)
    runs = h.workload_stats('s', 0)['task']['run_times_us']
    assert all(90000 + 2 * Q <= r <= 90000 + 3 * Q for r in runs)
    assert sum(runs) / len(runs) == pytest.approx(2 * 90000, rel=0.1)


def test_udp_ring_overflows_while_the_receiver_waits_its_turn():
    # Receiver + 3 hogs, no BOOST: the receiver blocks once its ring is
    # empty and its next wake-up queues behind the 3 hogs (90 ms). At one
    # segment per 100 us, 900 arrive meanwhile and the 256-slot ring keeps
    # 256. Draining at 20 us each while 1 in 5 more arrives: it consumes
    # 256 / (1 - 0.2) = 320 in 256 * 20 / (1 - 0.2) = 6400 us, then
    # blocks again. Cycle 96.4 ms, 320 segments per cycle.
    h = make()
    b.add(h, 'r', spec_paper.Stream(rate_bytes_per_s=1000 / 100e-6,
                                    segment_bytes=1000, mode='udp',
                                    ring_slots=256, cpu_per_segment_us=20,
                                    wire_us=0))
    for i in range(3):
        b.add(h, 'n%d' % i, spec.CpuBound())
    h.run_until(12 * SEC)
    st = h.workload_stats('r', 0)['sources'][0]
    cycles = 12 * SEC / (3 * Q + 6400)
    assert st['segments'] == pytest.approx(cycles * 320, rel=0.02)
    assert st['drops'] == pytest.approx(cycles * (900 - 256), rel=0.02)
