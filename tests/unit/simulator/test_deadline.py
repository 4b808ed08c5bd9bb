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
"""SCHED_DEADLINE in the EEVDF host model: CBS rules, EDF, refusals."""

import pytest

from iosched.contract import stats
from iosched.simulator import deadline
from iosched.simulator import spec
from iosched.simulator import spec_kernel
from tests.unit.simulator import builders as b

K618 = spec_kernel.kernel('linux-6.18-hz250')


def dl(q, d, p):
    return {'runtime_us': q, 'deadline_us': d, 'period_us': p}


# -- parameters ---------------------------------------------------------------

@pytest.mark.parametrize('value,expected', [
    (None, None),
    (dl(300, 1000, 2000), (300, 1000, 2000)),
    (dl(100, 100, 100), (100, 100, 100)),
])
def test_validate_accepts(value, expected):
    assert deadline.validate(value) == expected


@pytest.mark.parametrize('value,needle', [
    (dl(0, 1000, 2000), '1 <= runtime_us'),
    (dl(2000, 1000, 2000), 'runtime_us <= deadline_us'),
    (dl(300, 3000, 2000), 'deadline_us <= period_us'),
    (dl(10, 50, 50), 'period_us in 100..4000000'),
    (dl(300, 1000, 5000000), 'period_us in 100..4000000'),
    ({'runtime_us': 300, 'deadline_us': 1000}, "missing key 'period_us'"),
    (dict(dl(300, 1000, 2000), slack=1), "unknown key 'slack'"),
    (dl(300.5, 1000, 2000), 'runtime_us: 300.5 is invalid'),
    ((300, 1000, 2000), 'accepted: None (SCHED_OTHER) or a dict'),
])
def test_validate_refuses_with_what_is_accepted(value, needle):
    with pytest.raises(ValueError) as err:
        deadline.validate(value)
    assert needle in str(err.value)


# -- CBS rules (pure) ---------------------------------------------------------

def state(q, d, p, abs_dl, left):
    s = deadline.DlState((q, d, p))
    s.abs_dl, s.left = abs_dl, left
    return s


@pytest.mark.parametrize('q,d,p,abs_dl,left,now,throttled,exp_dl,exp_left', [
    # no reservation yet: a new one from now
    (300, 1000, 2000, 0, 0, 500, False, 1500, 300),
    # deadline passed (implicit): new reservation
    (300, 2000, 2000, 1000, 200, 5000, False, 7000, 300),
    # runtime fits before the deadline: keep both
    (300, 2000, 2000, 4000, 100, 3000, False, 4000, 100),
    # overflow (200 / 500 > 300 / 2000), implicit: new reservation
    (300, 2000, 2000, 4000, 200, 3500, False, 5500, 300),
    # overflow, constrained, deadline ahead: revised runtime Q/D x laxity
    (300, 1000, 2000, 4000, 200, 3500, False, 4000, 150),
    # constrained, woken after its deadline, before its period ends
    (300, 1000, 2000, 4000, 200, 4500, True, 4000, 0),
    # constrained, woken after the period end: new reservation
    (300, 1000, 2000, 4000, 200, 5100, False, 6100, 300),
])
def test_cbs_wakeup_rule(q, d, p, abs_dl, left, now, throttled, exp_dl,
                         exp_left):
    s = state(q, d, p, abs_dl, left)
    assert s.on_wakeup(now) is throttled
    assert (s.abs_dl, s.left) == (exp_dl, exp_left)


@pytest.mark.parametrize('abs_dl,left,now,exp_dl,exp_left', [
    (1000, 0, 2000, 3000, 300),          # next period
    (1000, -400, 2000, 5000, 200),       # an overrun is paid back
    (1000, 0, 9000, 10000, 300),         # far behind: restart at now
])
def test_replenish(abs_dl, left, now, exp_dl, exp_left):
    s = state(300, 1000, 2000, abs_dl, left)
    s.replenish(now)
    assert (s.abs_dl, s.left) == (exp_dl, exp_left)


# -- in the host model --------------------------------------------------------

def host(pcpus=1, kernel=None, **kw):
    kw.setdefault('switch_cost_us', 0)
    if kernel is not None:
        kw['kernel'] = kernel
    return b.make_host(pcpus=pcpus, **kw)


@pytest.mark.parametrize('kernel', [None, K618])
@pytest.mark.parametrize('q,p', [(300, 1000), (1000, 4000), (2000, 10000)])
def test_cpu_bound_deadline_vcpu_gets_runtime_over_period(kernel, q, p):
    h = host(kernel=kernel)
    b.add(h, 'dl')
    b.add(h, 'hog')
    h.set_vcpu_deadline('dl', 0, dl(q, p, p))
    h.run_until(2 * b.SEC)
    share = h.cpu_run_us('dl') / (2 * b.SEC)
    # HZ=250 overruns a runtime by up to a tick and pays it back: the
    # share holds over many periods either way
    assert share == pytest.approx(q / p, abs=0.01)
    assert h.cpu_run_us('hog') == pytest.approx(2 * b.SEC * (1 - q / p),
                                                abs=0.01 * 2 * b.SEC)


def test_throttled_vcpu_never_falls_back_to_fair_even_on_an_idle_host():
    h = host()
    b.add(h, 'dl')
    h.set_vcpu_deadline('dl', 0, dl(100, 1000, 1000))
    h.run_until(b.SEC)
    assert h.cpu_run_us('dl') == pytest.approx(0.1 * b.SEC, abs=200)
    c = h.vcpu_counters('dl', 0)
    assert c.wait_us == pytest.approx(0.9 * b.SEC, abs=200)


def test_deadline_vcpu_preempts_fair_at_once_and_meets_its_deadline():
    h = host()
    b.add(h, 'hog')
    b.add(h, 'io', spec.RequestResponse(rate_per_s=200, burst_us=100))
    h.set_vcpu_deadline('io', 0, dl(300, 1000, 1000))
    h.run_until(2 * b.SEC)
    lat = h.request_latencies_us('io')
    assert len(lat) > 300
    # Poisson arrivals may queue behind each other, never behind the hog
    assert stats.percentile(lat, 0.5) == 100
    assert max(lat) <= 1000


def test_edf_order_among_deadline_vcpus():
    h = host()
    b.add(h, 'late')
    b.add(h, 'early')
    # both CPU-bound: 'early' has the shorter deadline each period
    h.set_vcpu_deadline('late', 0, dl(400, 2000, 2000))
    h.set_vcpu_deadline('early', 0, dl(400, 500, 2000))
    h.run_until(1000)
    # from t=0 'early' (deadline 500) ran first, then 'late'
    assert h.vcpu_counters('early', 0).run_us == 400
    assert h.vcpu_counters('late', 0).run_us == 400
    h.run_until(b.SEC)
    for uuid in ('late', 'early'):
        assert h.cpu_run_us(uuid) == pytest.approx(0.2 * b.SEC, abs=500)


def test_global_edf_pushes_to_a_pcpu_running_fair_work():
    h = host(pcpus=2)
    b.add(h, 'hog0')
    b.add(h, 'hog1')
    h.set_vcpu_affinity('hog0', 0, (0,))
    h.set_vcpu_affinity('hog1', 0, (1,))
    b.add(h, 'd1')
    b.add(h, 'd2')
    h.set_vcpu_deadline('d1', 0, dl(500, 1000, 1000))
    h.set_vcpu_deadline('d2', 0, dl(500, 1000, 1000))
    h.run_until(b.SEC)
    # each reservation gets its share though both want CPU at once
    assert h.cpu_run_us('d1') == pytest.approx(0.5 * b.SEC, abs=2000)
    assert h.cpu_run_us('d2') == pytest.approx(0.5 * b.SEC, abs=2000)
    assert h.cpu_run_us('hog0') + h.cpu_run_us('hog1') == pytest.approx(
        b.SEC, abs=4000)


@pytest.mark.parametrize('affinity', [(0,), (1, 2)])
def test_refused_when_affinity_does_not_span_all_pcpus(affinity):
    h = host(pcpus=3)
    b.add(h, 'a')
    h.set_vcpu_affinity('a', 0, affinity)
    with pytest.raises(ValueError) as err:
        h.set_vcpu_deadline('a', 0, dl(300, 1000, 2000))
    assert 'EPERM' in str(err.value) and 'every pCPU' in str(err.value)
    assert h.get_vcpu_deadline('a', 0) is None


def test_narrowing_a_deadline_vcpus_affinity_is_refused():
    h = host(pcpus=2)
    b.add(h, 'a')
    h.set_vcpu_deadline('a', 0, dl(300, 1000, 2000))
    with pytest.raises(ValueError) as err:
        h.set_vcpu_affinity('a', 0, (1,))
    assert 'EBUSY' in str(err.value)
    h.set_vcpu_affinity('a', 0, (0, 1))         # spans all: fine
    assert h.get_vcpu_affinity('a', 0) == (0, 1)


def test_admission_limit_and_state():
    h = host(pcpus=2)
    for u in ('a', 'b', 'c'):
        b.add(h, u)
    h.set_vcpu_deadline('a', 0, dl(800, 1000, 1000))
    h.set_vcpu_deadline('b', 0, dl(800, 1000, 1000))
    with pytest.raises(ValueError) as err:
        h.set_vcpu_deadline('c', 0, dl(400, 1000, 1000))
    assert 'EBUSY' in str(err.value) and 'at most 1.900' in str(err.value)
    st = h.deadline_state()
    assert st['cpus'] == (0, 1)
    assert st['limit'] == pytest.approx(1.9)
    assert st['reserved'] == pytest.approx(1.6)
    h.set_vcpu_deadline('a', 0, dl(500, 1000, 1000))   # shrink: fine
    assert h.deadline_state()['reserved'] == pytest.approx(1.3)
    h.set_vcpu_deadline('a', 0, None)
    h.remove_vm('b')
    assert h.deadline_state()['reserved'] == pytest.approx(0.0)


def test_leaving_deadline_returns_to_fair_sharing():
    h = host()
    b.add(h, 'a')
    b.add(h, 'hog')
    h.set_vcpu_deadline('a', 0, dl(100, 1000, 1000))
    h.run_until(b.SEC)
    assert h.get_vcpu_deadline('a', 0) == dl(100, 1000, 1000)
    h.set_vcpu_deadline('a', 0, None)
    assert h.get_vcpu_deadline('a', 0) is None
    run0 = h.cpu_run_us('a')
    h.run_until(3 * b.SEC)
    assert (h.cpu_run_us('a') - run0) == pytest.approx(b.SEC, rel=0.05)


def test_removing_a_running_deadline_vm_frees_its_pcpu():
    h = host()
    b.add(h, 'a')
    b.add(h, 'hog')
    h.set_vcpu_deadline('a', 0, dl(900, 1000, 1000))
    h.run_until(b.SEC // 2 + 100)
    h.remove_vm('a')
    run0 = h.cpu_run_us('hog')
    h.run_until(b.SEC)
    assert h.cpu_run_us('hog') - run0 == pytest.approx(b.SEC // 2 - 100,
                                                       abs=10)


def test_tick_kernel_overruns_a_runtime_by_up_to_a_tick():
    h = host(kernel=K618)
    b.add(h, 'a')
    b.add(h, 'hog')
    h.set_vcpu_deadline('a', 0, dl(1000, 10000, 10000))
    h.run_until(9000)
    # the runtime ends at 1000, noticed at the tick at 4000
    assert h.vcpu_counters('a', 0).run_us == 4000


def test_xen_models_have_no_deadline():
    from iosched.simulator import xen
    h = b.make_host(pcpus=1, scheduler=xen.CreditSpec())
    b.add(h, 'a')
    with pytest.raises(ValueError) as err:
        h.set_vcpu_deadline('a', 0, dl(300, 1000, 2000))
    assert 'no SCHED_DEADLINE' in str(err.value)
    assert h.deadline_state()['reserved'] == 0.0


def test_wait_counts_while_throttled_and_across_leaving_deadline():
    h = host()
    b.add(h, 'a')
    h.set_vcpu_deadline('a', 0, dl(100, 1000, 1000))
    h.run_until(550)                    # ran 0-100, throttled since
    h.set_vcpu_deadline('a', 0, None)   # back to fair: runs at once
    h.run_until(1000)
    c = h.vcpu_counters('a', 0)
    assert (c.run_us, c.wait_us) == (100 + 450, 450)
