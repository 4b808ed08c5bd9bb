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
"""The Xen Credit2 model: credit, resets, runtime, wake-up, balance."""

import pytest

from iosched.simulator import host
from iosched.simulator import spec
from iosched.simulator.xen import credit2
from iosched.simulator.xen import specs_credit2
from tests.unit.simulator.xen import credit2_harness as hx

SEC = hx.SEC


def _host(pcpus, **kw):
    return host.SimHost(spec.HostSpec(
        name='h', pcpus=pcpus, switch_cost_us=0,
        scheduler=specs_credit2.Credit2Spec(**kw)), seed=1)


def _add(h, uuid, *wls):
    h.add_vm(spec.VmSpec(uuid=uuid, name=uuid,
                         vcpus=wls or (spec.CpuBound(),)))


@pytest.mark.parametrize('weight,expected', [
    (100, 256), (50, 128), (200, 512), (1, 3), (10000, 25600)])
def test_cgroup_weight_maps_proportionally(weight, expected):
    assert credit2.xen_weight(weight) == expected


# One shared run-queue shares exactly; per-pCPU run-queues only as evenly
# as whole vCPUs spread (7 on 3 stay 3 + 2 + 2: moving one does not shrink
# the load gap, so balance_load leaves them), hence 6 vCPUs there.
@pytest.mark.parametrize('runqueue,n,tol', [('all', 7, 0.01),
                                            ('cpu', 6, 0.05)])
def test_equal_cpu_bound_vcpus_share_equally(runqueue, n, tol):
    h = _host(3, runqueue=runqueue)
    for i in range(n):
        _add(h, 'v%d' % i)
    h.run_until(4 * SEC)
    runs = [h.cpu_run_us('v%d' % i) for i in range(n)]
    assert sum(runs) >= 0.999 * 3 * 4 * SEC        # work conserving
    for r in runs:
        assert r == pytest.approx(3 * 4 * SEC / n, rel=tol)
    hx.check_invariants(h.sched)


@pytest.mark.parametrize('w_a,w_b,ratio', [(200, 100, 2.0), (100, 300, 1 / 3)])
def test_weight_scales_the_burn(w_a, w_b, ratio):
    # burn = runtime * max_weight / weight: the heavier vCPU burns slower
    # and gets proportionally more time between resets.
    h = _host(1)
    _add(h, 'a')
    _add(h, 'b')
    h.set_vcpu_weight('a', 0, w_a)
    h.set_vcpu_weight('b', 0, w_b)
    h.run_until(3 * SEC)
    assert h.cpu_run_us('a') / h.cpu_run_us('b') == pytest.approx(
        ratio, rel=0.05)


# reset_credit: every vCPU of the run-queue (blocked too) gets
# credit += m * 10 ms, m = 1 + (-head) // 10 ms if head < -10 ms, then the
# clip to 10 ms + 500 us.
@pytest.mark.parametrize('head,other,head_after,other_after', [
    (0, 10000, 10000, 10500),
    (-500, 3000, 9500, 10500),
    (-500, -2000, 9500, 8000),
    (-10000, 0, 0, 10000),          # not below -10 ms: m = 1
    (-25000, 0, 5000, 10500),       # m = 1 + 2 = 3
    (-25000, -40000, 5000, -10000),
])
def test_reset_arithmetic(head, other, head_after, other_after):
    loop, s = hx.credit2_sched()
    a, b = hx.entity(s, 0), hx.entity(s, 1)     # b never woke: blocked
    a.credit, b.credit = head, other
    s._reset(s.rqs[0], a, 0)
    assert (a.credit, b.credit) == (head_after, other_after)
    assert s.rqs[0].resets == 1


def test_blocked_vcpu_is_topped_up_and_clipped_by_resets():
    loop, s = hx.credit2_sched()
    hog, = hx.hogs(s, 1)
    sleeper = hx.entity(s, 1)
    loop.run_until(25000)
    # the hog alone: reset when its credit reached 0 at 10 ms and 20 ms
    assert s.rqs[0].resets == 2
    assert sleeper.credit == credit2.CREDIT_INIT + credit2.CARRYOVER_MAX


# csched2_runtime: credit gap to the next waiter (if its credit > 0),
# else the whole credit; clamped to [max(500 us, ratelimit), 10 ms].
@pytest.mark.parametrize('ratelimit,mine,waiter,expected', [
    (1000, 10000, None, 10000),
    (1000, 20000, None, 10000),     # MAX_TIMER
    (1000, 10000, 7000, 3000),
    (1000, 10000, 9500, 1000),      # ratelimit floor
    (0, 10000, 9500, 500),          # MIN_TIMER floor
    (1000, 10000, -5, 10000),       # waiter without credit: ignored
    (1000, -300, None, 1000),
])
def test_runtime(ratelimit, mine, waiter, expected):
    loop, s = hx.credit2_sched(ratelimit_us=ratelimit)
    a = hx.entity(s, 0)
    a.credit = mine
    a.run_start = 0
    if waiter is not None:
        w = hx.entity(s, 1)
        w.credit = waiter
        s.rqs[0].runq.append(w)
    assert s._runtime(s.cpus[0], a, 0) == expected


def test_sleeper_keeps_credit_and_preempts_a_hog():
    loop, s = hx.credit2_sched()
    hog, = hx.hogs(s, 1)
    sleeper = hx.entity(s, 1, work=hx.Work(300))
    loop.run_until(5000)            # the hog burnt 5 ms of its 10
    s.wake(sleeper, 5000)
    loop.run_until(5000)
    assert sleeper.running and not hog.running
    assert hog.credit == 5000 and sleeper.credit == 10000
    loop.run_until(5300)
    assert sleeper.wl.done == [5300] and hog.running
    hx.check_invariants(s)


def test_no_preemption_within_the_ratelimit():
    loop, s = hx.credit2_sched()
    a = hx.entity(s, 0, work=hx.Work(200))
    hog = hx.entity(s, 1)
    s.wake(a, 0, initial=True)
    loop.run_until(200)             # a ran 200 us and blocked
    s.wake(hog, 200, initial=True)  # hog dispatched at 200
    loop.run_until(600)
    a.wl.work_left = 100
    s.wake(a, 600)                  # hog ran only 400 us < 1 ms - 50 us
    loop.run_until(600)
    assert hog.running and not a.running
    # No pCPU was tickled, so a waits for the hog's timer: armed at 200
    # for its whole credit (10 ms: nobody was waiting then).
    loop.run_until(10199)
    assert hog.running
    loop.run_until(10200)
    assert a.running


def test_wake_up_prefers_an_idle_pcpu():
    loop, s = hx.credit2_sched(pcpus=2)
    hog, = hx.hogs(s, 1)
    loop.run_until(3000)
    sleeper = hx.entity(s, 1, work=hx.Work(100))
    s.wake(sleeper, 3000)
    loop.run_until(3000)
    assert hog.running and sleeper.running
    assert hog.cpu is not sleeper.cpu


def test_idle_pcpu_picks_up_a_waiting_vcpu_at_once():
    loop, s = hx.credit2_sched(pcpus=2)
    hx.hogs(s, 3)
    loop.run_until(1)
    assert all(p.curr is not None for p in s.cpus)
    assert len(s.rqs[0].runq) == 1


def test_balance_load_evens_out_per_cpu_runqueues():
    # 3 hogs on 2 per-pCPU run-queues start 2 + 1: without balancing the
    # lone hog keeps twice the others' share; balance_load (after each
    # reset) moves vCPUs until the averages meet.
    shares = {}
    for balance in (False, True):
        loop, s = hx.credit2_sched(pcpus=2, runqueue='cpu', balance=balance)
        hs = hx.hogs(s, 3)
        loop.run_until(6 * SEC)
        runs = [s.counters(e, loop.now)[0] for e in hs]
        shares[balance] = max(runs) / min(runs)
        hx.check_invariants(s)
    assert shares[False] == pytest.approx(2.0, rel=0.02)
    assert shares[True] < 1.3


def test_runqueue_topology():
    for runqueue, n in (('all', 1), ('cpu', 4)):
        loop, s = hx.credit2_sched(pcpus=4, runqueue=runqueue)
        assert len(s.rqs) == n
        assert sorted(p.id for rq in s.rqs for p in rq.cpus) == [0, 1, 2, 3]


@pytest.mark.parametrize('runqueue', ['all', 'cpu'])
def test_hard_affinity_is_honoured(runqueue):
    h = _host(3, runqueue=runqueue)
    for i in range(4):
        _add(h, 'v%d' % i)
    h.set_vcpu_affinity('v0', 0, (2,))
    h.run_until(SEC // 2)
    before = h.vcpu_counters('v0', 0).run_us
    h.run_until(SEC)
    assert h.vcpu_counters('v0', 0).pcpu == 2
    assert h.vcpu_counters('v0', 0).run_us > before
    log = []
    s = h.sched
    take = s._take

    def traced(p, e, now):
        log.append((p.id, e.vm.uuid))
        take(p, e, now)
    s._take = traced
    h.run_until(2 * SEC)
    assert {p for p, u in log if u == 'v0'} == {2}
    hx.check_invariants(s)


def test_mixed_run_keeps_invariants_and_removal_works():
    h = _host(3, runqueue='cpu')
    for i in range(5):
        _add(h, 'c%d' % i)
    for i in range(3):
        _add(h, 'r%d' % i, spec.RequestResponse(rate_per_s=800, burst_us=150),
             spec.Mixed(cpu_fraction=0.3, rate_per_s=200))
    for t in range(1, 9):
        h.run_until(t * SEC // 4)
        hx.check_invariants(h.sched)
    h.remove_vm('c0')
    h.remove_vm('r1')
    h.run_until(3 * SEC)
    hx.check_invariants(h.sched)
    assert h.request_latencies_us('r0', since_us=2 * SEC)
    assert h.scheduler_stats()['scheduler'] == 'credit2'


@pytest.mark.parametrize('kw,field', [
    ({'runqueue': 'socket'}, 'Credit2Spec.runqueue'),
    ({'ratelimit_us': 50}, 'Credit2Spec.ratelimit_us'),
    ({'migrate_resist_us': -1}, 'Credit2Spec.migrate_resist_us'),
    ({'balance': 1}, 'Credit2Spec.balance'),
])
def test_spec_validation(kw, field):
    with pytest.raises(ValueError, match=field):
        specs_credit2.Credit2Spec(**kw)
