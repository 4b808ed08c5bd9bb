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
"""Table-driven tests of the LSVM mechanisms: deadline reservations and
admission, the weight boost and cap (pure). The bound and the shares they
use: tests/unit/contract/test_lsvm.py.
"""

import pytest

from iosched.contract import knob_kinds
from iosched.contract import lsvm as lsvm_bound
from iosched.host_agent import model
from iosched.host_agent.policies import lsvm_bounds
from iosched.host_agent.policies import lsvm_mechanisms
from iosched.host_agent.policies import vslicer
from iosched.host_agent import policy_params

P = policy_params.params_for('vslicer')             # defaults
RR = policy_params.params_for('vslicer', wakeup_preemption=False)
D, W, S = (lsvm_bound.MECH_DEADLINE, lsvm_bound.MECH_WEIGHT,
           lsvm_bound.MECH_SLICE)


def inst(uuid, vcpus=1, lsvm=False, latency_ms=None, dedicated=False,
         io_threads=1):
    specs = {}
    if lsvm:
        specs['iosched:latency_sensitive'] = 'true'
    if latency_ms is not None:
        specs['iosched:latency_ms'] = str(latency_ms)
    if dedicated:
        specs['hw:cpu_policy'] = 'dedicated'
    return model.InstanceInfo(uuid=uuid, name=uuid, vcpus=vcpus,
                              extra_specs=specs, io_threads=io_threads)


def sched(mech, p99=0.0, cpus=(0, 1), limit=1.9, foreign=0.0, probes=()):
    return model.HostSched(mechanism=mech, wakeup_p99_us=p99, dl_cpus=cpus,
                           dl_bw_limit=limit, dl_bw_foreign=foreign,
                           probes=probes)


# name, vcpus, T_m, share, io us, n I/O-path threads, want (vCPU runtime,
# I/O runtime, period = deadline) (deadline = period: see
# lsvm_bounds.reservation). v * T_m + n * io fills v * share of a period.
RESERVATIONS = [
    ('1 vCPU at 0.5: period (1000+200)/0.5', 1, 1000, 0.5, 200, 1,
     (1000, 200, 2400)),
    ('1 vCPU, 2 I/O threads: (1000+2x200)/0.5', 1, 1000, 0.5, 200, 2,
     (1000, 200, 2800)),
    ('1 vCPU, 3 I/O threads: (1000+3x200)/0.5', 1, 1000, 0.5, 200, 3,
     (1000, 200, 3200)),
    ('1 vCPU at 0.25', 1, 1000, 0.25, 200, 1, (1000, 200, 4800)),
    ('1 vCPU at 0.25, 2 I/O threads', 1, 1000, 0.25, 200, 2,
     (1000, 200, 5600)),
    ('2 vCPUs at 0.5', 2, 500, 0.5, 200, 1, (500, 200, 1200)),
    ('2 vCPUs at 0.5, 3 I/O threads', 2, 500, 0.5, 200, 3, (500, 200, 1600)),
    ('2 vCPUs at 0.3, 2 x 1 ms I/O: period rounded up', 2, 1000, 0.3, 1000,
     2, (1000, 1000, 6667)),
    ('a tiny share: the longest period, shorter runtimes', 1, 1000,
     0.0001, 200, 1, (349, 69, 4194304)),
    ('a tiny share, 2 I/O threads: shorter still', 1, 1000, 0.0001, 200, 2,
     (299, 59, 4194304)),
    ('a tiny share, 3 I/O threads', 1, 1000, 0.0001, 200, 3,
     (262, 52, 4194304)),
    ('the I/O runtime floored at the kernel minimum', 1, 1000, 0.00001, 10,
     3, (40, lsvm_bounds.MIN_RUNTIME_US, 4194304)),
    ('no I/O-path thread counted is the main loop', 1, 1000, 0.5, 200, 0,
     (1000, 200, 2400)),
]


@pytest.mark.parametrize('name,vcpus,t_m,share,io,n_io,want', RESERVATIONS,
                         ids=[r[0] for r in RESERVATIONS])
def test_reservation_holds_the_vms_fair_share(name, vcpus, t_m, share, io,
                                              n_io, want):
    v, i = lsvm_bounds.reservation(vcpus, t_m, 2, share, io, n_io)
    q, q_io, period = want
    assert v == {'runtime_us': q, 'deadline_us': period, 'period_us': period}
    assert i == {'runtime_us': q_io, 'deadline_us': period,
                 'period_us': period}
    # every thread the knobs reserve, together: the VM's fair share,
    # within a microsecond per runtime (and the floors)
    used = (vcpus * q + max(1, n_io) * q_io) / period
    assert lsvm_bounds.reserved_cpus(vcpus, n_io, v, i) == used
    assert abs(used - vcpus * share) <= (
        (vcpus + max(1, n_io)) * lsvm_bounds.MIN_RUNTIME_US / period)
    assert lsvm_bounds.DL_PERIOD_MIN_US <= period <= (
        lsvm_bounds.DL_PERIOD_MAX_US)
    assert min(q, q_io) >= lsvm_bounds.MIN_RUNTIME_US
    assert v['runtime_us'] <= v['deadline_us'] <= v['period_us']


def test_reservation_within_the_shortest_period():
    # (50 + n x 10) / 0.9 < 100 us: the kernel's shortest period holds less
    for n_io in (1, 2, 3):
        v, i = lsvm_bounds.reservation(1, 50, 2, 0.9, 10, n_io)
        assert v['period_us'] == lsvm_bounds.DL_PERIOD_MIN_US
        assert (v['runtime_us'], i['runtime_us']) == (50, 10)
        assert lsvm_bounds.reserved_cpus(1, n_io, v, i) < 0.9


def kinds(actions, uuid):
    return sorted({a.kind for a in actions if a.instance_uuid == uuid})


def by(actions, kind, uuid, target):
    found = [a for a in actions if (a.kind, a.instance_uuid, a.target) ==
             (kind, uuid, target)]
    return found[0].value if found else 'absent'


def test_deadline_gives_reservations_and_widens_affinity():
    host = [inst('l', 1, True, 2), inst('c1'), inst('c2'), inst('c3')]
    actions, notes, st = vslicer.plan_slices(host, (0, 1), P,
                                             sched(D, p99=13))
    assert notes == ()
    assert by(actions, knob_kinds.VCPU_DEADLINE, 'l', '0') == {
        'runtime_us': 1000, 'deadline_us': 4000, 'period_us': 4000}
    assert by(actions, knob_kinds.IO_DEADLINE, 'l', '')['runtime_us'] == \
        1000
    assert by(actions, knob_kinds.VCPU_PIN, 'l', '0') == (0, 1)
    assert by(actions, knob_kinds.EMULATOR_PIN, 'l', '') == (0, 1)
    # affinity before the reservation (the kernel needs it first; restore
    # runs in reverse, so the reservation goes before the pin comes back)
    order = [a.kind for a in actions if a.instance_uuid == 'l']
    assert order.index(knob_kinds.VCPU_PIN) < order.index(
        knob_kinds.VCPU_DEADLINE)
    assert order.index(knob_kinds.EMULATOR_PIN) < order.index(
        knob_kinds.IO_DEADLINE)
    # no slices for the LSVM, and the other VMs are left stock
    assert by(actions, knob_kinds.VCPU_SLICE, 'l', '0') == 'absent'
    assert kinds(actions, 'c1') == [knob_kinds.VCPU_WEIGHT]
    assert st.mechanism == D and st.wakeup_us == 13
    assert st.latency_bound_ms == pytest.approx(0.013)
    assert st.dl_bw_reserved == pytest.approx(0.5)
    assert (st.dl_bw_limit, st.refused) == (1.9, ())


# name, T_m, burst us, headroom, max, want Q
RUNTIMES = [
    ('nothing measured yet: T_m', 1000, 0.0, 4.0, 10000, 1000),
    ('short bursts: T_m', 1000, 100.0, 4.0, 10000, 1000),
    ('0.5 ms bursts x 4 = 2 ms', 1000, 500.0, 4.0, 10000, 2000),
    ('rounded up to 500 us', 1000, 510.0, 4.0, 10000, 2500),
    ('capped', 1000, 5000.0, 4.0, 10000, 10000),
    ('the cap never goes below T_m', 2000, 5000.0, 4.0, 1000, 2000),
]


@pytest.mark.parametrize('name,t_m,burst,headroom,cap,want', RUNTIMES,
                         ids=[r[0] for r in RUNTIMES])
def test_deadline_runtime_covers_the_bursts(name, t_m, burst, headroom, cap,
                                           want):
    assert lsvm_bounds.deadline_runtime_us(t_m, burst, headroom, cap) == \
        want


def test_deadline_runtime_follows_the_measured_burst():
    # The TCG testbed's LSVM: ~0.5 ms of vCPU time per request.
    host = [inst('l', 1, True, 5), inst('c1'), inst('c2'), inst('c3')]
    actions, notes, st = vslicer.plan_slices(
        host, (0, 1), P, sched(D, p99=60), bursts={'l': 480.0, 'c1': 9e5})
    assert by(actions, knob_kinds.VCPU_DEADLINE, 'l', '0') == {
        'runtime_us': 2000, 'deadline_us': 6000, 'period_us': 6000}
    assert st.dl_runtime_us == 2000 and notes == ()
    # two LSVM vCPUs per pCPU: each may wait for the other's runtime
    host = [inst('l%d' % i, 1, True, 2) for i in range(4)]
    _, notes, st = vslicer.plan_slices(
        host, (0, 1), P, sched(D, p99=60),
        bursts={'l%d' % i: 480.0 for i in range(4)})
    assert st.latency_bound_ms == pytest.approx(0.06 + 2.0)
    assert st.refused and 'W=60us' in notes[0]


def test_deadline_admission_strictest_first_then_fallback_to_slices():
    # 4 LSVMs + 4 others on 2 pCPUs: s = min(0.5, 2/8) = 0.25; room 0.6
    # CPUs admits two (the strictest), the others get slices and a note.
    host = [inst('a', 1, True, 5), inst('b', 1, True, 1),
            inst('c', 1, True, 2), inst('d', 1, True, 3)] + [
        inst('n%d' % i) for i in range(4)]
    actions, notes, st = vslicer.plan_slices(
        host, (0, 1), P, sched(D, p99=13, limit=1.9, foreign=1.3))
    got = {u for u in 'abcd' if by(actions, knob_kinds.VCPU_DEADLINE, u,
                                   '0') not in (None, 'absent')}
    assert got == {'b', 'c'}
    for u in 'ad':
        assert by(actions, knob_kinds.VCPU_DEADLINE, u, '0') is None
        assert by(actions, knob_kinds.VCPU_SLICE, u, '0') != 'absent'
    assert sum('gets no SCHED_DEADLINE' in n for n in notes) == 2
    assert st.dl_bw_reserved <= 0.6 + 1e-9


def kernel_bw(actions, host):
    """CPUs the kernel is asked to reserve: each vCPU's reservation, and
    the I/O-path one once per thread the knob writes (io_threads).
    """
    n_io = {i.uuid: i.io_threads for i in host}
    total = 0.0
    for a in actions:
        if a.kind in (knob_kinds.VCPU_DEADLINE, knob_kinds.IO_DEADLINE) and (
                a.value):
            times = n_io[a.instance_uuid] if (
                a.kind == knob_kinds.IO_DEADLINE) else 1
            total += times * a.value['runtime_us'] / a.value['period_us']
    return total


# name, I/O-path threads of LSVMs a and b (1 vCPU each), want the
# period of a's reservations. Two LSVMs + 2 others on 2 pCPUs: s = 0.5,
# room 1.0 CPU: both admitted, and the kernel must be asked for no more
# (a Nova domain: the main loop and 'IO iothread1'; with vhost: 3).
IO_THREADS = [
    ('the testbed: the main loop only', 1, 1, 4000),
    ("Nova's <iothreads>1: two I/O-path threads each", 2, 2, 6000),
    ('one with vhost workers too', 3, 2, 8000),
]


@pytest.mark.parametrize('name,n_a,n_b,period', IO_THREADS,
                         ids=[r[0] for r in IO_THREADS])
def test_deadline_admission_counts_what_the_kernel_gets(name, n_a, n_b,
                                                        period):
    host = [inst('a', 1, True, 2, io_threads=n_a),
            inst('b', 1, True, 2, io_threads=n_b), inst('c1'), inst('c2')]
    s = sched(D, p99=13, limit=1.0, foreign=0.0)
    admitted, refused, need = lsvm_mechanisms.admit_deadline(
        host, 0.5, s, P)
    assert (admitted, refused, need) == ({'a', 'b'}, {}, 1.0)
    actions, notes, st = vslicer.plan_slices(host, (0, 1), P, s)
    assert notes == () and st.refused == ()
    want = {'runtime_us': 1000, 'deadline_us': period, 'period_us': period}
    assert by(actions, knob_kinds.VCPU_DEADLINE, 'a', '0') == want
    assert by(actions, knob_kinds.IO_DEADLINE, 'a', '') == want
    # what admission counted is what the kernel gets, within the room
    assert kernel_bw(actions, host) == pytest.approx(st.dl_bw_reserved)
    assert st.dl_bw_reserved == pytest.approx(need)
    assert lsvm_bound.admits(kernel_bw(actions, host), s.dl_bw_limit)


def test_deadline_actions_say_how_many_io_threads():
    lsvm = inst('a', 2, True, 2, io_threads=2)
    actions, used = lsvm_mechanisms.deadline_actions(
        lsvm, 1000, 2, 0.5, sched(D), P, 'why')
    io = [a for a in actions if a.kind == knob_kinds.IO_DEADLINE]
    assert len(io) == 1 and io[0].target == ''
    # (2 x 1000 + 2 x 1000) / (2 x 0.5) = 4000 us
    assert io[0].value == {'runtime_us': 1000, 'deadline_us': 4000,
                           'period_us': 4000}
    assert used == pytest.approx(1.0)
    assert 'x 2 vCPU(s) with 2 I/O-path thread(s) at 1000us' in (
        io[0].reason)


@pytest.mark.parametrize('name,host,s', [
    ('unknown root domain', [inst('l', 1, True)], sched(D, cpus=())),
    ('dedicated flavor', [inst('l', 1, True, dedicated=True)], sched(D)),
    ('no bandwidth left', [inst('l', 1, True)], sched(D, foreign=1.8)),
])
def test_deadline_refusals_release_the_thread(name, host, s):
    actions, notes, _ = vslicer.plan_slices(host, (0, 1), P, s)
    assert by(actions, knob_kinds.VCPU_DEADLINE, 'l', '0') is None
    assert by(actions, knob_kinds.IO_DEADLINE, 'l', '') is None
    assert any('gets no SCHED_DEADLINE' in n for n in notes)


def test_weight_boosts_and_caps_at_the_fair_share():
    host = [inst('l', 2, True, 2), inst('c1', 2)]
    actions, notes, st = vslicer.plan_slices(host, (0, 1, 2, 3), P,
                                             sched(W, p99=63))
    assert by(actions, knob_kinds.VM_WEIGHT, 'l', '') == 10000
    assert by(actions, knob_kinds.VM_CAP, 'l', '') == 2.0   # 2 x min(1,1)
    assert by(actions, knob_kinds.VCPU_SLICE, 'l', '0') == 1000
    assert by(actions, knob_kinds.VCPU_SLICE, 'c1', '0') == 'absent'
    assert kinds(actions, 'c1') == [knob_kinds.VCPU_WEIGHT]
    assert st.latency_bound_ms == pytest.approx(0.063)
    host = [inst('l', 1, True, 2)] + [inst('c%d' % i) for i in range(7)]
    actions, _, _ = vslicer.plan_slices(host, (0, 1), P, sched(W, p99=63))
    assert by(actions, knob_kinds.VM_CAP, 'l', '') == 0.25  # 2/8


def test_slice_with_a_measured_tick_refuses_a_2ms_bound():
    # This kernel: slices do not shorten the wake-up wait (p99 one tick).
    probes = (model.WakeupProbe(S, True, 55, 4000, 300),)
    _, notes, st = vslicer.plan_slices([inst('l', 1, True, 2)], (0, 1), P,
                                       sched(S, p99=4000, probes=probes))
    assert st.refused == ('l',) and st.latency_bound_ms == 4.0
    assert 'mechanism slice' in notes[0]


def test_unmeasured_slice_is_the_old_rule():
    host = [inst('l', 1, True, 2), inst('c')]
    a1, n1, s1 = vslicer.plan_slices(host, (0,), P)
    a2, n2, s2 = vslicer.plan_slices(host, (0,), P, model.HostSched())
    assert (a1, n1) == (a2, n2) and s1.latency_bound_ms == 1.0
    assert s1.mechanism == S and s1.wakeup_us == 0


def test_deadline_pins_to_none_when_the_root_domain_is_every_cpu():
    s = model.HostSched(mechanism=D, wakeup_p99_us=13, dl_cpus=(0, 1),
                        dl_all_cpus=True, dl_bw_limit=1.9)
    actions, _, _ = vslicer.plan_slices([inst('l', 1, True, 2)], (0, 1), P,
                                        s)
    assert by(actions, knob_kinds.VCPU_PIN, 'l', '0') is None
    assert by(actions, knob_kinds.EMULATOR_PIN, 'l', '') is None


# name, previous us, run ns, wake-ups, want us
BURSTS_EMA = [
    ('first window: run / wake-ups', 0.0, 25_000_000, 50, 500.0),
    ('no wake-up: keep the previous figure', 500.0, 10_000_000, 0, 500.0),
    ('then 0.3 on the newest', 500.0, 50_000_000, 50, 0.3 * 1000 + 0.7 * 500),
]


@pytest.mark.parametrize('name,prev,run,wakeups,want', BURSTS_EMA,
                         ids=[b[0] for b in BURSTS_EMA])
def test_burst_ema(name, prev, run, wakeups, want):
    from iosched.host_agent.collectors import vcpu_io_strength
    assert vcpu_io_strength.burst_ema(prev, run, wakeups) == \
        pytest.approx(want)
