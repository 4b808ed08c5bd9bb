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
"""CPU sharing on a SimHost: fairness, weights, slices, latency, pinning."""

import pytest

from iosched.contract import stats
from iosched.simulator import spec
from tests.unit.simulator import builders as b


@pytest.mark.parametrize('w_a,w_b,ratio', [
    (100, 100, 1.0), (200, 100, 2.0), (100, 300, 1 / 3), (1000, 100, 10.0)])
def test_cpu_bound_pair_shares_by_weight(w_a, w_b, ratio):
    h = b.make_host()
    b.add(h, 'a')
    b.add(h, 'b')
    h.set_vcpu_weight('a', 0, w_a)
    h.set_vcpu_weight('b', 0, w_b)
    h.run_until(2 * b.SEC)
    run_a, run_b = h.cpu_run_us('a'), h.cpu_run_us('b')
    assert run_a / run_b == pytest.approx(ratio, rel=0.03)
    assert run_a + run_b > 0.99 * 2 * b.SEC         # work conserving


@pytest.mark.parametrize('slice_us', [3000, 1000, 300, 100])
def test_hogs_run_in_slice_sized_chunks(slice_us):
    h = b.make_host()
    b.add(h, 'a')
    b.add(h, 'b')
    for u in ('a', 'b'):
        h.set_vcpu_slice(u, 0, slice_us)
    h.run_until(10000)                  # the first request used 3 ms
    before = {u: h.vcpu_counters(u, 0) for u in 'ab'}
    h.run_until(b.SEC + 10000)
    for u in 'ab':
        c = h.vcpu_counters(u, 0)
        switches = c.switches - before[u].switches
        run = c.run_us - before[u].run_us
        assert switches == pytest.approx(run / slice_us, rel=0.05)
        assert run == pytest.approx(b.SEC / 2, rel=0.02)


def _rr_p99(rr_slice, hog_slice, hogs=2, seed=3):
    h = b.make_host(seed=seed)
    b.add(h, 'rr', spec.RequestResponse(rate_per_s=200, burst_us=100))
    for i in range(hogs):
        b.add(h, 'hog%d' % i)
        h.set_vcpu_slice('hog%d' % i, 0, hog_slice)
    h.set_vcpu_slice('rr', 0, rr_slice)
    h.run_until(3 * b.SEC)
    lat = h.request_latencies_us('rr', since_us=b.SEC // 10)
    hog_run = sum(h.cpu_run_us('hog%d' % i) for i in range(hogs))
    return stats.percentile(lat, 0.99), hog_run


@pytest.mark.parametrize('hogs', [1, 2, 3])
def test_short_slice_cuts_tail_latency_via_preempt_short(hogs):
    p99_equal, hog_run_equal = _rr_p99(3000, 3000, hogs)
    p99_short, hog_run_short = _rr_p99(300, 3000, hogs)
    assert p99_short * 3 < p99_equal
    assert p99_equal > 2000             # waits for a hog's 3 ms slice
    # the same share for the hogs: the short slice buys latency, not CPU
    assert hog_run_short == pytest.approx(hog_run_equal, rel=0.02)


def test_request_on_idle_pcpu_is_served_at_once():
    h = b.make_host(pcpus=2)
    b.add(h, 'hog')
    h.set_vcpu_affinity('hog', 0, (0,))
    b.add(h, 'rr', spec.RequestResponse(rate_per_s=100, burst_us=100))
    h.run_until(2 * b.SEC)
    c = h.vcpu_counters('rr', 0)
    assert c.pcpu == 1
    # + switch
    assert stats.percentile(h.request_latencies_us('rr'), 0.5) == 102
    assert h.vcpu_counters('hog', 0).run_us > 0.99 * 2 * b.SEC


def test_pinning_is_respected():
    h = b.make_host(pcpus=4)
    for i in range(4):
        b.add(h, 'hog%d' % i)
        h.set_vcpu_affinity('hog%d' % i, 0, (2,))
    assert h.get_vcpu_affinity('hog0', 0) == (2,)
    h.run_until(2 * b.SEC)
    runs = [h.vcpu_counters('hog%d' % i, 0) for i in range(4)]
    assert {c.pcpu for c in runs} == {2}
    total = sum(c.run_us for c in runs)
    assert total == pytest.approx(2 * b.SEC, rel=0.01)      # one pCPU
    for c in runs:
        assert c.run_us == pytest.approx(total / 4, rel=0.03)


def test_pinning_a_request_vcpu_onto_a_hog_raises_its_latency():
    def rr_p99(pin):
        h = b.make_host(pcpus=2)
        b.add(h, 'hog')
        h.set_vcpu_affinity('hog', 0, (0,))
        b.add(h, 'rr', spec.RequestResponse(rate_per_s=200, burst_us=100))
        h.set_vcpu_affinity('rr', 0, pin)
        h.run_until(2 * b.SEC)
        assert h.vcpu_counters('rr', 0).pcpu == (pin or (1,))[0]
        return stats.percentile(h.request_latencies_us('rr'), 0.99)
    assert rr_p99((0,)) > 10 * rr_p99(None)


@pytest.mark.parametrize('balance_us,expected_total', [
    (4000, 2.0), (0, 1.0)])
def test_periodic_balance_spreads_waiting_vcpus(balance_us, expected_total):
    h = b.make_host(pcpus=2, balance_us=balance_us)
    for i in range(4):
        b.add(h, 'hog%d' % i)
        h.set_vcpu_affinity('hog%d' % i, 0, (0,))
    h.run_until(b.SEC // 10)
    for i in range(4):
        h.set_vcpu_affinity('hog%d' % i, 0, None)
    h.run_until(b.SEC // 5)
    before = sum(h.cpu_run_us('hog%d' % i) for i in range(4))
    h.run_until(b.SEC + b.SEC // 5)
    total = sum(h.cpu_run_us('hog%d' % i) for i in range(4)) - before
    assert total == pytest.approx(expected_total * b.SEC, rel=0.02)


def test_moving_a_running_vcpu_away_frees_its_pcpu():
    h = b.make_host(pcpus=2)
    b.add(h, 'a')
    b.add(h, 'b')
    h.set_vcpu_affinity('b', 0, (0,))
    h.set_vcpu_affinity('a', 0, (0,))
    h.run_until(b.SEC)
    h.set_vcpu_affinity('a', 0, (1,))
    assert h.vcpu_counters('a', 0).pcpu == 1
    start = {u: h.cpu_run_us(u) for u in 'ab'}
    h.run_until(2 * b.SEC)
    for u in 'ab':
        assert h.cpu_run_us(u) - start[u] > 0.99 * b.SEC


def test_removing_a_vm_gives_its_cpu_to_the_others():
    h = b.make_host()
    b.add(h, 'a')
    b.add(h, 'b', spec.CpuBound(), spec.RequestResponse(400, 100))
    h.run_until(b.SEC)
    h.remove_vm('b')
    assert h.vm_uuids() == ['a']
    start = h.cpu_run_us('a')
    h.run_until(2 * b.SEC)
    assert h.cpu_run_us('a') - start > 0.999 * b.SEC
    with pytest.raises(ValueError, match="'b'"):
        h.cpu_run_us('b')
