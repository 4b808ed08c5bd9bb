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
"""Queue invariants of Credit, vSlicer and vTurbo under random operations.

A seeded sequence of VM arrivals and removals, pinning, weight and slice
changes, with every kind of workload; after each step every runnable
vCPU is either running on exactly one pCPU or queued on exactly one,
always where its affinity allows, and the per-pCPU vCPU counts match.
"""

import random

import pytest

from iosched.simulator import spec
from iosched.simulator import spec_paper
from iosched.simulator.xen import specs_credit
from tests.unit.simulator.xen import helpers as hp


def _check(h):
    s = h.sched
    where = {}
    for p in s.cpus:
        ents = ([p.curr] if p.curr is not None else []) + p.runq
        for e in ents:
            assert e.on_rq and e.alive and e.home is p
            assert e.running is (e is p.curr)
            assert e.allowed is None or p.id in e.allowed
            assert id(e) not in where
            where[id(e)] = p.id
    homes = [0] * len(s.cpus)
    for u in h.vm_uuids():
        for e in h._vm(u).ents:
            assert e.on_rq is (id(e) in where)
            if e.home is not None:
                homes[e.home.id] += 1
    assert homes == [p.nr_home for p in s.cpus]


def _workload(rng):
    return rng.choice([
        spec.CpuBound(), spec.Idle(),
        spec.RequestResponse(rate_per_s=300, burst_us=200),
        spec.Mixed(cpu_fraction=0.3, rate_per_s=100),
        spec.IoVcpu(
            sources=(spec_paper.Ping(interval_us=5000, mode='poisson'),),
            task=spec_paper.Lookbusy(0.4, period_us=20000))])


@pytest.mark.parametrize('sched_spec,pcpus', [
    (specs_credit.CreditSpec(), 3),
    (specs_credit.CreditSpec(ratelimit_us=1000, boost=False), 2),
    (specs_credit.VSlicerSpec(), 2),
    (specs_credit.VSlicerSpec(), 1),
    (specs_credit.VTurboSpec(turbo_pcpus=(1,)), 3),
])
@pytest.mark.parametrize('seed', [1, 2])
def test_random_operations_keep_the_queues_consistent(sched_spec, pcpus,
                                                      seed):
    rng = random.Random(seed)
    h = hp.make_host(sched_spec, pcpus=pcpus, cost=2, seed=seed)
    t = n = 0
    for _ in range(150):
        op = rng.random()
        uuids = h.vm_uuids()
        if op < 0.25 or not uuids:
            hp.add(h, 'v%d' % n, *[_workload(rng)
                                    for _ in range(rng.choice([1, 2, 3]))])
            n += 1
        else:
            u = rng.choice(uuids)
            i = rng.randrange(h.vcpu_count(u))
            if op < 0.35:
                h.remove_vm(u)
            elif op < 0.5:
                try:
                    h.set_vcpu_affinity(u, i, rng.choice(
                        [None, (rng.randrange(pcpus),)]))
                except ValueError as e:     # vTurbo: outside the pool
                    assert 'pool' in str(e)
            elif op < 0.6:
                h.set_vcpu_weight(u, i, rng.choice([50, 100, 400]))
            elif op < 0.7:
                try:
                    h.set_vcpu_slice(u, i, rng.choice([2500, 10000, 30000]))
                except ValueError as e:     # Credit, vTurbo: no slice knob
                    assert 'no per-vCPU slice' in str(e)
        t += rng.randrange(1, 40000)
        h.run_until(t)
        _check(h)
    total = sum(h.cpu_run_us(u) for u in h.vm_uuids())
    assert total <= t * pcpus
