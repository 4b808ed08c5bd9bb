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
"""The Xen Credit model: slices, BOOST, accounting, stealing, knobs."""

import pytest

from iosched.simulator import spec
from iosched.simulator.xen import credit_accounting
from iosched.simulator.xen import specs_credit
from tests.unit.simulator.xen import helpers as hp


def test_three_hogs_take_30ms_turns_and_equal_shares():
    h = hp.make_host(specs_credit.CreditSpec(), cost=2)
    log = hp.trace(h.sched)
    for u in 'abc':
        hp.add(h, u)
    h.run_until(3 * hp.SEC)
    starts = [t for t, _, _, _ in log]
    # Each turn: 2 us of switch, then a 30 ms slice.
    assert {b - a for a, b in zip(starts, starts[1:])} == {30002}
    order = [u for t, _, u, _ in log if t > hp.SEC // 2]
    assert all(len(set(order[i:i + 3])) == 3 for i in range(len(order) - 2))
    for u in 'abc':
        assert h.cpu_run_us(u) == pytest.approx(hp.SEC, rel=0.02)


@pytest.mark.parametrize('n_vms', [2, 3, 4, 5])
def test_hogs_wait_n_minus_1_slices(n_vms):
    # Claim C1: (N - 1) x T_slice; an OVER/UNDER flip at an accounting
    # can reorder the queue once in a while (one slice more).
    h = hp.make_host(specs_credit.CreditSpec(), cost=2)
    log = hp.trace(h.sched)
    for i in range(n_vms):
        hp.add(h, 'v%d' % i)
    h.run_until(10 * hp.SEC)
    w = sorted(x for v in hp.waits(log, 10 * hp.SEC, hp.SEC).values()
               for x in v)
    assert w[len(w) // 2] == (n_vms - 1) * 30002
    assert w[-1] <= n_vms * 30002


def test_an_under_vcpu_runs_again_ahead_of_over_ones():
    # Credit is not strict round-robin: priority first, FIFO within it.
    loop, s = hp.sched_only(specs_credit.CreditSpec())
    a, b = hp.entity(s, 0), hp.entity(s, 1)
    s.wake(a, 0, initial=True)
    s.wake(b, 0, initial=True)
    loop.run_until(20000)
    a.pri, b.pri = credit_accounting.UNDER, credit_accounting.OVER
    loop.run_until(30000)           # a's slice ends: a continues
    assert s.cpus[0].curr is a and s.cpus[0].runq == [b]
    assert a.switches == 1


def test_switch_cost_is_lost_time_and_counted():
    h = hp.make_host(specs_credit.CreditSpec(), cost=100)
    for u in 'ab':
        hp.add(h, u)
    h.run_until(hp.SEC)
    total = h.cpu_run_us('a') + h.cpu_run_us('b')
    switches = sum(h.vcpu_counters(u, 0).switches for u in 'ab')
    assert total == hp.SEC - 100 * switches


def _hog_and_waker(boost, ratelimit_us=0):
    loop, s = hp.sched_only(specs_credit.CreditSpec(
        boost=boost, ratelimit_us=ratelimit_us))
    hog = hp.entity(s, 0)
    io = hp.entity(s, 1, hp.Work(100))
    s.wake(hog, 0, initial=True)
    loop.run_until(11000)           # the tick made the hog active
    return loop, s, hog, io


def test_waking_under_vcpu_boosts_and_preempts():
    loop, s, hog, io = _hog_and_waker(boost=True)
    s.wake(io, loop.now)
    assert io.pri == credit_accounting.BOOST
    assert s.cpus[0].curr is io
    assert s.cpus[0].runq == [hog]
    loop.run_until(12000)
    assert io.wl.done == [11100]    # ran at once, 100 us of work
    assert s.stats()['tickle_preemptions'] == 1


def test_without_boost_an_under_waker_waits_for_the_slice():
    loop, s, hog, io = _hog_and_waker(boost=False)
    s.wake(io, loop.now)
    assert io.pri == credit_accounting.UNDER
    assert s.cpus[0].curr is hog
    loop.run_until(40000)
    assert io.wl.done == [30100]    # after the hog's 30 ms slice


def test_ratelimit_defers_the_preemption():
    loop, s, hog, io = _hog_and_waker(boost=True, ratelimit_us=1000)
    s.wake(io, loop.now)            # the hog has run 11 ms: preempted
    loop.run_until(11300)           # io done at 11100, hog back since
    io.wl.work_left = 100
    s.wake(io, 11300)               # the hog has run 200 us < 1 ms
    assert s.cpus[0].curr is hog
    loop.run_until(13000)
    # Xen 4.2: the hog keeps the pCPU for ratelimit_us more, to 12300.
    assert io.wl.done == [11100, 12400]
    assert s.stats()['ratelimited'] == 1


def test_tick_demotes_a_running_boost_vcpu():
    loop, s, hog, io = _hog_and_waker(boost=True)
    io.wl = hp.Work(1 << 40)        # the waker turns CPU-bound
    s.wake(io, loop.now)
    assert io.pri == credit_accounting.BOOST
    loop.run_until(20000)           # tick at 20 ms
    assert io.pri == credit_accounting.UNDER
    assert io.active


def test_accounting_shares_by_weight():
    h = hp.make_host(specs_credit.CreditSpec())
    hp.add(h, 'a')
    hp.add(h, 'b')
    h.set_vcpu_weight('a', 0, 200)
    h.run_until(6 * hp.SEC)
    assert h.cpu_run_us('a') / h.cpu_run_us('b') == pytest.approx(2, rel=0.05)


def test_accounting_bounds_and_deactivation():
    loop, s = hp.sched_only(specs_credit.CreditSpec())
    rich, poor = hp.entity(s, 0), hp.entity(s, 1)
    for e in (rich, poor):
        s._acct_start(e)
    rich.credit = 40000             # above one slice after the grant
    poor.credit = -60000            # below minus one slice
    s._acct(0)
    # 30 ms x 1 pCPU shared by 2 equal weights: 15 ms each.
    assert poor.credit == -30000 and poor.pri == credit_accounting.OVER
    assert rich.credit == (40000 + 15000) // 2
    assert rich.pri == credit_accounting.UNDER
    assert not rich.active and s.active == [poor]
    assert s.weight_total == 100
    assert s.credit_balance == -30000 + 27500


def test_negative_balance_is_paid_back_next_period():
    loop, s = hp.sched_only(specs_credit.CreditSpec())
    a = hp.entity(s, 0)
    s._acct_start(a)
    s.credit_balance = -6000
    a.credit = -10000
    s._acct(0)
    # total = 30000 + 6000; peak = 30000 + 6000: a gets 36000.
    assert a.credit == 26000


def test_two_pcpus_three_hogs_share_by_stealing():
    h = hp.make_host(specs_credit.CreditSpec(), pcpus=2)
    for u in 'abc':
        hp.add(h, u)
    h.run_until(10 * hp.SEC)
    for u in 'abc':
        assert h.cpu_run_us(u) == pytest.approx(2 * 10 * hp.SEC / 3,
                                                rel=0.05)
    assert h.scheduler_stats()['steals'] > 0


def test_stealing_respects_hard_affinity():
    h = hp.make_host(specs_credit.CreditSpec(), pcpus=2)
    log = hp.trace(h.sched)
    for u in 'abc':
        hp.add(h, u)
    h.set_vcpu_affinity('a', 0, (0,))
    h.run_until(5 * hp.SEC)
    assert {p for _, p, u, _ in log if u == 'a'} == {0}


def test_idle_pcpu_is_tickled_and_steals_the_woken_vcpu():
    loop, s = hp.sched_only(specs_credit.CreditSpec(), pcpus=2)
    hog = hp.entity(s, 0)
    io = hp.entity(s, 1, hp.Work(100))
    s.wake(hog, 0, initial=True)
    s._set_home(io, s.cpus[0])      # assigned to the busy pCPU
    s.wake(io, 0)
    assert s.cpus[1].curr is io and io.home is s.cpus[1]
    assert s.stats()['steals'] == 1


def test_affinity_change_moves_waiting_and_running_vcpus():
    h = hp.make_host(specs_credit.CreditSpec(), pcpus=2)
    for u in 'abc':                 # a and c on pCPU 0, b on pCPU 1
        hp.add(h, u)
    h.run_until(1000)
    h.set_vcpu_affinity('c', 0, (1,))       # waiting
    h.set_vcpu_affinity('a', 0, (1,))       # running
    h.set_vcpu_affinity('b', 0, (0,))       # running
    h.run_until(hp.SEC)
    for u in 'ac':
        assert h.vcpu_counters(u, 0).pcpu == 1
    assert h.vcpu_counters('b', 0).pcpu == 0
    assert h.cpu_run_us('b') == pytest.approx(hp.SEC, rel=0.01)


def test_an_idle_pcpu_waits_for_a_tickle():
    # As Xen 4.1 on a flat topology: a running vCPU is never pulled at the
    # tick, so a pCPU left idle stays idle until a wake-up tickles it.
    h = hp.make_host(specs_credit.CreditSpec(), pcpus=2)
    for u in 'abc':
        hp.add(h, u)
    h.run_until(1000)
    h.set_vcpu_affinity('c', 0, (1,))
    h.set_vcpu_affinity('a', 0, (1,))       # pCPU 0 is left idle
    h.run_until(hp.SEC)
    assert h.cpu_run_us('b') == pytest.approx(hp.SEC / 3, rel=0.05)


def test_remove_running_and_waiting_vcpus():
    h = hp.make_host(specs_credit.CreditSpec())
    for u in 'abc':
        hp.add(h, u)
    h.run_until(45000)              # b is running, c waiting
    h.remove_vm('b')
    h.remove_vm('c')
    before = h.cpu_run_us('a')
    h.run_until(hp.SEC)
    assert h.cpu_run_us('a') - before == hp.SEC - 45000
    assert h.sched.cpus[0].nr_home == 1


def test_request_latency_under_boost_is_short():
    h = hp.make_host(specs_credit.CreditSpec())
    hp.add(h, 'hog')
    hp.add(h, 'rr', spec.RequestResponse(rate_per_s=50, burst_us=200))
    h.run_until(3 * hp.SEC)
    lat = h.request_latencies_us('rr', since_us=hp.SEC // 10)
    assert len(lat) > 50
    assert max(lat) < 2000          # preempts the hog on every wake-up


def test_slice_knob_is_refused():
    h = hp.make_host(specs_credit.CreditSpec())
    hp.add(h, 'a')
    with pytest.raises(ValueError, match='no per-vCPU slice'):
        h.set_vcpu_slice('a', 0, 1000)


@pytest.mark.parametrize('kw,field', [
    ({'tslice_us': 50}, 'CreditSpec.tslice_us'),
    ({'tick_us': 0}, 'CreditSpec.tick_us'),
    ({'acct_us': 'x'}, 'CreditSpec.acct_us'),
    ({'ratelimit_us': 40000}, 'CreditSpec.ratelimit_us'),
    ({'ratelimit_us': -1}, 'CreditSpec.ratelimit_us'),
    ({'boost': 1}, 'CreditSpec.boost'),
])
def test_spec_rejects_bad_fields(kw, field):
    with pytest.raises(ValueError, match=field.replace('.', r'\.')):
        specs_credit.CreditSpec(**kw)
