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
"""What makes a tick cheap without changing a plan: vSlicer and ISACS
give the very same Action objects for an unchanged turn (the actuator
skips them at once), and the per-pCPU placement is the round robin the
fewest-first rule amounts to.
"""

import pytest

from iosched.host_agent.policies import vslicer
from iosched.host_agent.policies import vslicer_bound
from tests.unit.host_agent import test_vslicer as tv

HOST = [tv.inst('l', 2, lsvm=True, latency_ms=2), tv.inst('c', 3),
        tv.inst('d', 1)]


def test_an_unchanged_plan_gives_the_same_objects():
    a, _, _ = vslicer.plan_slices(HOST, (0, 1), tv.P)
    b, _, _ = vslicer.plan_slices(list(HOST), (0, 1), tv.P)
    assert a == b
    assert all(x is y for x, y in zip(a, b))


def test_a_changed_turn_gives_new_actions():
    a, _, _ = vslicer.plan_slices(HOST, (0, 1), tv.P)
    # two more LSVM vCPUs: k=2, the LSVM's reason (m, k, budget) changes
    more = HOST + [tv.inst('l2', 2, lsvm=True, latency_ms=2)]
    b, _, _ = vslicer.plan_slices(more, (0, 1), tv.P)
    old = {x.key: x for x in a}
    for x in b:
        if x.instance_uuid == 'l' and x.kind == 'vcpu_slice':
            assert x != old[x.key] and 'k=2' in x.reason
        elif x.key in old and x.instance_uuid in ('c', 'd'):
            assert x is old[x.key]       # the others' turn is unchanged


def fewest_first(lsvms, ids):
    """The placement rule as written: each LSVM vCPU to the pCPU with the
    fewest so far, ties the lowest id.
    """
    placed = {p: [] for p in ids}
    for x in lsvms:
        p = min(ids, key=lambda q: (len(placed[q]), q))
        placed[p].append(x)
    return placed


@pytest.mark.parametrize('lsvm_vcpus,pcpus', [
    ((1,), (0,)), ((2, 3), (0, 1)), ((4, 4, 1), (3, 1, 2)),
    ((1,) * 40, tuple(range(32))), ((2,) * 9, (5, 7, 9)),
])
def test_round_robin_is_fewest_first(lsvm_vcpus, pcpus):
    insts = [tv.inst('l%02d' % i, n, lsvm=True, latency_ms=1 + i % 3)
             for i, n in enumerate(lsvm_vcpus)] + [tv.inst('c', 2)]
    plan = vslicer_bound.plan_pcpus(insts, pcpus, tv.P)
    lsvms = sorted((i.latency_ms or tv.P.default_latency_ms, i.uuid, v)
                   for i in insts if i.latency_sensitive
                   for v in range(i.vcpus))
    want = fewest_first(lsvms, tuple(sorted(pcpus)))
    assert {pp.pcpu: pp.lsvm_vcpus for pp in plan} == {
        p: tuple((u, v) for _, u, v in here) for p, here in want.items()}
