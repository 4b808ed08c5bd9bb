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
"""EEVDF run-queue math and the scheduler's core decisions, with stubs."""

import pytest

from iosched.simulator import eevdf
from tests.unit.simulator import builders as b

VS = eevdf.VSCALE // 1024         # virtual ns per us at weight 100


@pytest.mark.parametrize('weight,expected', [
    (100, 1024), (200, 2048), (50, 512), (1, 10), (10000, 102400)])
def test_load_weight_from_cgroup_weight(weight, expected):
    assert eevdf.load_weight(weight) == expected


def test_avg_vruntime_eligibility_and_pick():
    p = eevdf.PCpu(0)
    x, y, z = b.entity(0), b.entity(1, weight=300), b.entity(2)
    x.v, y.v, z.v = 0, 4000 * VS, 1000 * VS
    for e in (x, y, z):
        e.new_request()
        p.enqueue(e)
    # weighted average: (0*1 + 4000*3 + 1000*1) / 5 = 2600 us virtual
    assert p.avg_v() == 2600 * VS
    # x and z are eligible (v <= V); x has the earliest deadline
    assert p.pick() is x
    x.deadline = 10 ** 12
    assert p.pick() is z
    p.dequeue(x)
    p.dequeue(z)
    assert p.pick() is y


def test_pick_keeps_protected_eligible_curr_only():
    p = eevdf.PCpu(0)
    cur, other = b.entity(0), b.entity(1, slice_us=300)
    cur.v, other.v = 0, 0
    cur.new_request()
    other.new_request()
    p.curr = cur
    p.enqueue(other)
    cur.protected = True
    assert p.pick() is cur              # RUN_TO_PARITY
    cur.protected = False
    assert p.pick() is other            # earlier deadline wins
    cur.protected = True
    cur.v = 500 * VS                    # ran ahead: not eligible any more
    assert p.pick() is other


@pytest.mark.parametrize('wake_at,slice_us,preempts', [
    (500, 300, True),       # eligible, shorter slice, earlier deadline
    (100, 2000, True),      # V + 2000 < 3000
    (500, 3000, False),     # equal slice: RUN_TO_PARITY keeps the hog
    (500, 2999, False),     # shorter but deadline 3499 > 3000
    (2900, 300, False),     # hog's deadline 3000 < 3200
])
def test_preempt_short_on_wakeup(wake_at, slice_us, preempts):
    loop, s = b.sched()
    hog = b.entity(0, slice_us=3000)
    s.wake(hog, 0, initial=True)
    loop.run_until(wake_at)
    short = b.entity(1, slice_us=slice_us, work=b.Work(100))
    s.wake(short, wake_at)
    p = s.cpus[0]
    assert (p.curr is short) == preempts
    loop.run_until(20000)
    expected_done = wake_at + 100 if preempts else 3000 + 100
    assert short.wl.done == [expected_done]


def test_wakeup_placement_has_zero_lag_and_fresh_deadline():
    loop, s = b.sched()
    hog = b.entity(0)
    s.wake(hog, 0, initial=True)
    loop.run_until(1234)
    e = b.entity(1, slice_us=1000, work=b.Work(50))
    s.wake(e, 1234)
    assert hog.v == 1234 * VS
    assert e.v == hog.v                 # V of a queue holding only the hog
    assert e.deadline == e.v + 1000 * VS
    assert e.wakeups == 1


def test_switch_cost_is_lost_time():
    loop, s = b.sched(cost=10)
    x, y = b.entity(0, slice_us=1000), b.entity(1, slice_us=1000)
    s.wake(x, 0, initial=True)
    s.wake(y, 0, initial=True)
    loop.run_until(b.SEC)
    run = sum(s.counters(e, b.SEC)[0] for e in (x, y))
    switches = x.switches + y.switches
    assert abs(b.SEC - run - 10 * switches) <= 10
    assert switches == pytest.approx(b.SEC / 1010, abs=2)


@pytest.mark.parametrize('busy,prev,allowed,expected', [
    ((), 2, None, 2),                   # previous pCPU is idle
    ((2,), 2, None, 0),                 # lowest idle pCPU
    ((0, 2), 2, None, 1),
    ((0, 1, 2, 3), 2, None, 2),         # none idle: previous pCPU
    ((0, 1, 2, 3), 2, (0, 1), 0),       # previous not allowed: first
    ((0, 2), 2, (2, 3), 3),             # idle within affinity
    ((), None, (3,), 3),
    ((0, 1, 2, 3), None, None, 0),      # never ran: least loaded
])
def test_select_cpu(busy, prev, allowed, expected):
    _, s = b.sched(pcpus=4)
    for i in busy:
        s.cpus[i].curr = b.entity(100 + i)
    e = b.entity(0)
    e.last_cpu, e.allowed = prev, allowed
    assert s.select_cpu(e).id == expected


def test_idle_pcpu_pulls_the_waiting_entity():
    loop, s = b.sched(pcpus=2)
    a = b.entity(0)
    x = b.entity(1, work=b.Work(500))
    c = b.entity(2)
    for e in (a, x, c):                 # a -> cpu0, x -> cpu1, c -> cpu0
        s.wake(e, 0, initial=True)
    assert c.cpu.id == 0 and not c.running
    loop.run_until(500)                 # x blocks: cpu1 goes idle
    assert c.running and c.cpu.id == 1
    assert c.wait_us == 500


def test_affinity_change_migrates_running_entity_at_once():
    loop, s = b.sched(pcpus=2)
    a = b.entity(0)
    s.wake(a, 0, initial=True)
    loop.run_until(100)
    s.set_affinity(a, (1,), 100)
    assert a.running and a.cpu.id == 1 and s.cpus[0].curr is None
    loop.run_until(1000)
    assert a.last_cpu == 1 and a.switches == 2


def test_reweight_keeps_running_entity_and_scales_deadline():
    loop, s = b.sched()
    x, y = b.entity(0), b.entity(1)
    s.wake(x, 0, initial=True)
    s.wake(y, 0, initial=True)
    loop.run_until(1000)
    s._settle(s.cpus[0], 1000)          # account x's run time up to now
    v_avg = s.cpus[0].avg_v()
    assert v_avg == 500 * VS
    rel = y.deadline - v_avg
    s.set_weight(y, 200, 1000)
    assert y.lw == 2048
    assert y.deadline - v_avg == rel // 2
