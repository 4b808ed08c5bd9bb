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
"""The VM-level weight and CFS bandwidth cap in the EEVDF host model."""

import pytest

from iosched.simulator import spec
from iosched.simulator import spec_kernel
from tests.unit.simulator import builders as b

K618 = spec_kernel.kernel('linux-6.18-hz250')
PERIOD = 100000


def host(pcpus=1, kernel=None):
    kw = {'kernel': kernel} if kernel is not None else {}
    return b.make_host(pcpus=pcpus, switch_cost_us=0, **kw)


@pytest.mark.parametrize('kernel', [None, K618])
@pytest.mark.parametrize('cap,expected', [
    (0.1, 0.1), (0.25, 0.25), (0.4, 0.4),
    (0.75, 0.5),                # above its fair share: the cap never binds
])
def test_capped_vm_gets_at_most_its_cap(kernel, cap, expected):
    h = host(kernel=kernel)
    b.add(h, 'capped')
    b.add(h, 'hog')
    h.set_vm_cap('capped', cap)
    h.run_until(2 * b.SEC)
    assert h.cpu_run_us('capped') / (2 * b.SEC) == pytest.approx(
        expected, abs=0.01)
    assert h.get_vm_cap('capped') == cap


def test_throttled_until_the_period_refill_even_on_an_idle_host():
    h = host()
    b.add(h, 'capped')
    h.set_vm_cap('capped', 0.25)
    h.run_until(PERIOD - 1)
    assert h.cpu_run_us('capped') == PERIOD // 4
    c = h.vcpu_counters('capped', 0)
    assert c.wait_us == PERIOD - 1 - PERIOD // 4     # throttled = waiting
    h.run_until(PERIOD + PERIOD // 8)
    assert h.cpu_run_us('capped') == PERIOD // 4 + PERIOD // 8


def test_tick_kernel_overruns_by_up_to_a_tick_and_pays_it_back():
    h = host(kernel=K618)
    b.add(h, 'capped')
    h.set_vm_cap('capped', 0.01)        # 1 ms per 100 ms
    h.run_until(PERIOD - 1)
    # the quota ends at 1 ms (+ the idle exit), noticed at the 4 ms tick
    assert h.cpu_run_us('capped') == 4000 - K618.idle_exit_us
    h.run_until(2 * b.SEC)
    assert h.cpu_run_us('capped') / (2 * b.SEC) == pytest.approx(0.01,
                                                                abs=0.003)


def test_removing_and_changing_the_cap():
    h = host()
    b.add(h, 'capped')
    b.add(h, 'hog')
    h.set_vm_cap('capped', 0.1)
    h.run_until(b.SEC)
    h.set_vm_cap('capped', None)
    assert h.get_vm_cap('capped') is None
    run0 = h.cpu_run_us('capped')
    h.run_until(2 * b.SEC)
    assert (h.cpu_run_us('capped') - run0) / b.SEC == pytest.approx(0.5,
                                                                   abs=0.02)
    h.set_vm_cap('capped', 0.2)
    run0 = h.cpu_run_us('capped')
    h.run_until(3 * b.SEC)
    assert (h.cpu_run_us('capped') - run0) / b.SEC == pytest.approx(0.2,
                                                                   abs=0.01)


def test_one_pool_for_all_vcpus_of_a_vm():
    h = host(pcpus=2)
    b.add(h, 'big', spec.CpuBound(), spec.CpuBound())
    h.set_vm_cap('big', 1.0)
    h.run_until(2 * b.SEC)
    assert h.cpu_run_us('big') / (2 * b.SEC) == pytest.approx(1.0, abs=0.05)


def test_a_member_waking_while_throttled_waits_for_the_refill():
    h = host()
    b.add(h, 'vm', spec.CpuBound(), spec.RequestResponse(rate_per_s=1000,
                                                         burst_us=10))
    h.set_vm_cap('vm', 0.5)
    h.run_until(2 * b.SEC)
    lat = h.request_latencies_us('vm')
    # requests arriving in the throttled half of a period wait for it
    assert max(lat) > PERIOD // 4
    assert h.cpu_run_us('vm') / (2 * b.SEC) == pytest.approx(0.5, abs=0.01)


@pytest.mark.parametrize('bad', [0, -0.5, 3.0, float('nan'), 'half'])
def test_cap_validation(bad):
    h = host(pcpus=2)
    b.add(h, 'a')
    with pytest.raises(ValueError) as err:
        h.set_vm_cap('a', bad)
    assert 'vm_cap' in str(err.value)


# -- VM-level weight ---------------------------------------------------------

@pytest.mark.parametrize('vm_w,vcpu_w,effective', [
    (100, 100, 100), (300, 100, 300), (200, 200, 400),
    (10000, 100, 10000), (10000, 10000, 10000),     # clamped to the max
    (1, 1, 1),
])
def test_vm_weight_applies_to_each_vcpu(vm_w, vcpu_w, effective):
    h = host()
    b.add(h, 'a', spec.CpuBound(), spec.CpuBound())
    h.set_vcpu_weight('a', 1, vcpu_w)
    h.set_vm_weight('a', vm_w)
    assert h.get_vm_weight('a') == vm_w
    assert h.get_vcpu_weight('a', 1) == vcpu_w
    ent = h._vm('a').ents[1]
    assert ent.weight == effective


def test_vm_weight_shares_cpu():
    h = host()
    b.add(h, 'heavy')
    b.add(h, 'light')
    h.set_vm_weight('heavy', 300)
    h.run_until(2 * b.SEC)
    assert h.cpu_run_us('heavy') / h.cpu_run_us('light') == pytest.approx(
        3.0, rel=0.05)


def test_xen_models_have_no_cap():
    from iosched.simulator import xen
    h = b.make_host(pcpus=1, scheduler=xen.CreditSpec())
    b.add(h, 'a')
    with pytest.raises(ValueError) as err:
        h.set_vm_cap('a', 0.5)
    assert 'no CFS bandwidth cap' in str(err.value)
    h.set_vm_weight('a', 200)           # weights exist everywhere
    assert h.get_vm_weight('a') == 200
