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
"""Wake-up preemption of the calibrated 6.18 kernel (6.17+ rules):
PREEMPT_SHORT picks a shorter-slice waker against curr without curr's
protection, RUN_TO_PARITY protects only up to the shortest queued slice,
a failed short preemption shrinks curr's protection. What the LSVM
testbed's weight phase measured (a 100x weight with the microslice T_m
wakes at once) follows from them.
"""

import dataclasses

import pytest

from iosched.simulator import spec
from iosched.simulator import spec_kernel
from tests.unit.simulator import builders as b

K618 = spec_kernel.kernel('linux-6.18-hz250')
K612 = spec_kernel.kernel('linux-6.12-hrtick')
# the calibrated kernel as it was before the testbed's weight phase
K618_OLD = dataclasses.replace(K618, name='before', preempt_short=False,
                               protect_min_slice=False)
KERNELS = {'6.18': K618, '6.18-before': K618_OLD, '6.12': K612}


def _sched(kernel, **kw):
    loop, s = b.sched()
    s.__init__(loop, 1, 0, 0, 1400, dataclasses.replace(kernel, **kw)
               if kw else kernel)
    return loop, s


# A hog (slice 1400, weight 100) runs alone from 0; at 500 us, inside its
# protected request, a waker with (weight, slice) wakes with zero lag.
@pytest.mark.parametrize('kernel,weight,slice_us,preempts', [
    ('6.18', 10000, 1400, False),   # equal slices: the weight alone waits
    ('6.18', 10000, 1000, True),    # heavy + shorter slice: earliest deadline
    ('6.18', 100, 1000, False),     # shorter slice, later deadline: waits
    ('6.18', 100, 100, True),       # much shorter slice: earliest deadline
    ('6.18-before', 10000, 1000, False),    # no PREEMPT_SHORT: protected
    ('6.12', 10000, 1000, True),    # 6.12's PREEMPT_SHORT cancels it
    ('6.12', 100, 1000, False),
])
def test_wakeup_preemption_of_a_protected_hog(kernel, weight, slice_us,
                                              preempts):
    loop, s = _sched(KERNELS[kernel])
    hog = b.entity(0, slice_us=1400)
    waker = b.entity(1, slice_us=slice_us, weight=weight, work=b.Work(100))
    s.wake(hog, 0, initial=True)
    loop.run_until(500)
    s.wake(waker, 500)
    assert (s.cpus[0].curr is waker) is preempts


# x (slice 3000) and y (slice 1000) on one pCPU, exact slice ends; y runs
# first (PREEMPT_SHORT or the idle pick), then x is picked with y queued:
# 6.17 protects x for y's 1000 us only, so y (earlier deadline) is back at
# 2000 us; the older rule protects x's whole 3000 us request.
@pytest.mark.parametrize('min_slice,curr_at_2100,curr_at_4100', [
    (True, 'y', 'x'),
    (False, 'x', 'y'),
])
def test_protection_limited_to_the_shortest_queued_slice(
        min_slice, curr_at_2100, curr_at_4100):
    loop, s = _sched(K618, hrtick=True, idle_exit_us=0,
                     protect_min_slice=min_slice)
    ents = {'x': b.entity(0, slice_us=3000), 'y': b.entity(1, slice_us=1000)}
    s.wake(ents['x'], 0, initial=True)
    s.wake(ents['y'], 0, initial=True)
    assert s.cpus[0].curr is ents['y']
    loop.run_until(2100)
    assert s.cpus[0].curr is ents[curr_at_2100]
    loop.run_until(4100)
    assert s.cpus[0].curr is ents[curr_at_4100]


# x (slice 3000) runs alone; at 500 us a light waker y (weight 10, slice
# 1000: a later virtual deadline) does not preempt; 6.17 shrinks x's
# protection to 1000 us from now, so at 1500 us x (no longer eligible
# against y) gives way; the older rule keeps x to its request's end.
@pytest.mark.parametrize('min_slice,curr_at_1600', [
    (True, 'y'),
    (False, 'x'),
])
def test_a_failed_short_preemption_shrinks_the_protection(min_slice,
                                                          curr_at_1600):
    loop, s = _sched(K618, hrtick=True, idle_exit_us=0,
                     protect_min_slice=min_slice)
    ents = {'x': b.entity(0, slice_us=3000),
            'y': b.entity(1, slice_us=1000, weight=10)}
    s.wake(ents['x'], 0, initial=True)
    loop.run_until(500)
    s.wake(ents['y'], 500)
    assert s.cpus[0].curr is ents['x']
    loop.run_until(1600)
    assert s.cpus[0].curr is ents[curr_at_1600]


def test_protection_end_is_acted_on_at_the_tick_without_hrtick():
    # as the shrink above on the calibrated kernel: the resched comes
    # with the next 4 ms tick, not at 1500 us
    loop, s = _sched(K618, idle_exit_us=0)
    x, y = b.entity(0, slice_us=3000), b.entity(1, slice_us=1000, weight=10)
    s.wake(x, 0, initial=True)
    loop.run_until(500)
    s.wake(y, 500)
    loop.run_until(3999)
    assert s.cpus[0].curr is x
    loop.run_until(4000)
    assert s.cpus[0].curr is y


# The LSVM testbed's shared pCPU (1 pCPU, 3 CPU-bound VMs, an LSVM with
# Poisson requests of 200 us at 50/s) with the agent's knobs per
# mechanism: the share of requests that waited more than 500 us. Measured
# (bench/testbed_lsvm.py, two runs): weight (100x, cap, slice T_m) p99
# 0.39-0.53x stock, at the idle floor's tail; slice no gain.
def _late_share(kernel, phase, seconds=20):
    h = b.make_host(pcpus=1, default_slice_us=1400, switch_cost_us=2,
                    kernel=kernel)
    b.add(h, 'lsvm', spec.RequestResponse(rate_per_s=50, burst_us=200),
          disks=())
    for i in range(3):
        b.add(h, 'cpu%d' % i, disks=())
    if phase == 'slice':
        h.set_vcpu_slice('lsvm', 0, 1000)
        for i in range(3):
            h.set_vcpu_slice('cpu%d' % i, 0, 3000)
    elif phase in ('weight', 'weight-no-slice'):
        h.set_vm_weight('lsvm', 10000)
        h.set_vm_cap('lsvm', 0.25)
        if phase == 'weight':
            h.set_vcpu_slice('lsvm', 0, 1000)
    h.run_until(seconds * b.SEC)
    lat = h.request_latencies_us('lsvm', since_us=b.SEC)
    assert len(lat) > 500
    return sum(1 for x in lat if x > 200 + 500) / float(len(lat))


@pytest.mark.parametrize('kernel,phase,lo,hi', [
    ('6.18', 'stock', 0.15, 1.0),
    ('6.18', 'slice', 0.10, 1.0),           # a slice alone: no gain
    ('6.18', 'weight-no-slice', 0.05, 1.0),  # protection holds
    ('6.18', 'weight', 0.0, 0.03),          # what the testbed measured
    ('6.18-before', 'weight', 0.05, 1.0),   # what the model said before
])
def test_lsvm_on_the_testbeds_shared_pcpu(kernel, phase, lo, hi):
    assert lo <= _late_share(KERNELS[kernel], phase) <= hi
