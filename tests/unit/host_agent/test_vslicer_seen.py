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
"""The W the LSVM vCPUs saw: wake-to-run pairing (tracing.run_delays),
the vSlicer window (vslicer_seen) and the bound it raises or refuses.
"""

from oslo_config import cfg
import pytest

from iosched.contract import lsvm
from iosched.host_agent.conf import opts
from iosched.host_agent.drivers.libvirt import tracing
from iosched.host_agent import model
from iosched.host_agent.policies import vslicer
from iosched.host_agent.policies import vslicer_seen

# name, wake-ups (ns), switch-ins (ns), delays (ns)
PAIRS = [
    ('one wake, one run', [100], [130], (30,)),
    ('run before the wake is not its run', [100], [90, 150], (50,)),
    ('preempted then run again: first run counts', [100], [110, 120],
     (10,)),
    ('woken while running: no run before the next wake', [100, 200], [250],
     (50,)),
    ('last wake without a run (next drain)', [100, 200], [120], (20,)),
    ('no runs', [100], [], ()),
    ('no wakes', [], [100], ()),
    ('run at the very wake', [100], [100], (0,)),
    ('a run exactly at the next wake goes to the first', [100, 200], [200],
     (100,)),
    ('each run pairs once', [100, 200], [150, 260], (50, 60)),
]


@pytest.mark.parametrize('name,wakes,runs,want', PAIRS,
                         ids=[p[0] for p in PAIRS])
def test_run_delays(name, wakes, runs, want):
    assert tracing.run_delays(wakes, runs) == want


def test_switch_lines_are_parsed_by_next_pid():
    text = (
        '  <idle>-0 [001] d..2. 12.000100: sched_switch: prev_comm=swapper/1 '
        'prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=CPU 0/TCG '
        'next_pid=4242 next_prio=120\n'
        ' qemu-1-7 [000] d..3. 12.000050: sched_wakeup: comm=CPU 0/TCG '
        'pid=4242 prio=120 target_cpu=001\n')
    assert list(tracing.parse_switch_ins(text)) == [(4242, 12000100000)]
    assert list(tracing.parse_lines(text)) == [(4242, 12000050000)]
    assert tracing.filter_expr({3, 1}, 'next_pid') == (
        'next_pid == 1 || next_pid == 3')


def vcpu(uuid, delays_us, run_share=0.0):
    return model.VcpuIoStrength(
        instance_uuid=uuid, vcpu=0, pcpu=0, events=0, mean_gap_ns=0.0,
        io_strength=0.0, ivcredit=0.0, run_share=run_share, wait_share=0.0,
        klass='idle', exact=True,
        run_delays_ns=tuple(int(d * 1000) for d in delays_us))


def inst(uuid, lsvm_=False, latency_ms=None):
    specs = {'iosched:latency_sensitive': 'true'} if lsvm_ else {}
    if latency_ms is not None:
        specs['iosched:latency_ms'] = str(latency_ms)
    return model.InstanceInfo(uuid=uuid, name=uuid, extra_specs=specs)


def snap(ts, delays, other=(), mech=lsvm.MECH_WEIGHT, latency_ms=2,
         run_share=0.0):
    return model.HostSnapshot(
        host='h', ts=ts, window_s=1.0, pcpus=(0, 1),
        instances={'l': inst('l', True, latency_ms), 'n': inst('n')},
        vcpus=(vcpu('l', delays, run_share), vcpu('n', other)),
        sched=model.HostSched(mechanism=mech, wakeup_p99_us=100.0))


def test_the_window_keeps_lsvm_delays_of_its_mechanism_and_time():
    s = vslicer_seen.update(None, snap(0.0, [10] * 150, other=[9999]), 10)
    assert vslicer_seen.seen(s, 10) == vslicer_seen.Seen(wakes=150,
                                                         window_s=10)
    s = vslicer_seen.update(s, snap(5.0, [20] * 100), 10)
    got = vslicer_seen.seen(s, 10)
    assert (got.wakes, got.p99_us, got.w_us) == (250, 20.0, 20.0)
    s = vslicer_seen.update(s, snap(10.5, [30] * 100), 10)
    assert vslicer_seen.seen(s, 10).wakes == 200    # the t=0 tick expired
    s = vslicer_seen.update(s, snap(11.0, [], mech=lsvm.MECH_DEADLINE), 10)
    assert s.ticks == () and s.mechanism == lsvm.MECH_DEADLINE
    assert s.w_us == 0.0                            # a new measurement


# name, the LSVM vCPU's run share in the tick, whether its delays count
BUSY = [
    ('idle LSVM', 0.0, True),
    ('serving requests', 0.05, True),
    ('just below the busy share', lsvm.SEEN_BUSY_RUN_SHARE - 0.001, True),
    ('at the busy share', lsvm.SEEN_BUSY_RUN_SHARE, False),
    ('booting under its reservation (the cloud: 0.41)', 0.41, False),
    ('CPU-bound', 1.0, False),
]


@pytest.mark.parametrize('name,run_share,counted', BUSY,
                         ids=[b[0] for b in BUSY])
def test_a_busy_tick_adds_no_delays(name, run_share, counted):
    s = vslicer_seen.update(None, snap(0.0, [15000] * 300,
                                       run_share=run_share), 60)
    got = vslicer_seen.seen(s, 60)
    assert got.wakes == (300 if counted else 0)
    assert got.w_us == (15000.0 if counted else 0.0)


def test_the_seconds_around_a_busy_one_add_nothing():
    # a boot as the cloud traced it: a second of start-up at 0.14 whose
    # wake-ups already waited on the reservation, busy seconds at 0.41,
    # one at 0.3, the first idle second after them, then idle
    shares = [0.0, 0.14, 0.41, 0.41, 0.3, 0.01, 0.0]
    s = None
    for t, share in enumerate(shares):
        s = vslicer_seen.update(s, snap(float(t), [t + 1] * 10,
                                        run_share=share), 60)
    assert sorted({d for t in s.ticks for d in t[2]}) == [1.0, 7.0]


def test_the_window_is_bounded_newest_kept():
    s = None
    for t in range(4):
        s = vslicer_seen.update(s, snap(float(t), [t] * 20000), 60)
    assert sum(len(t[2]) for t in s.ticks) <= vslicer_seen.MAX_DELAYS
    assert s.ticks[-1][2][0] == 3


# name, p99 of each successive window (one tick each, 1 s window), the W
# in use after each
HOLD = [
    ('first figure taken', [100], [100]),
    ('within 25 %: held', [100, 120, 80, 124], [100, 100, 100, 100]),
    ('beyond 25 %: follows', [100, 130, 60], [100, 130, 60]),
    ('too few delays: none', [100, 0], [100, 0]),
]


@pytest.mark.parametrize('name,p99s,want', HOLD, ids=[h[0] for h in HOLD])
def test_the_w_in_use_moves_only_beyond_the_hysteresis(name, p99s, want):
    s, got = None, []
    for t, p in enumerate(p99s):
        s = vslicer_seen.update(
            s, snap(float(t), [p] * 300 if p else [5] * 10), 1)
        got.append(s.w_us)
    assert got == want


# name, seen p99 us, L ms, want bound ms, refused
SEEN = [
    ('below the self-test: the seen W', 50, 2, 0.05, False),
    ('above the self-test, below L', 1500, 2, 1.5, False),
    ('above L: refused, naming it', 2500, 2, 2.5, True),
]


@pytest.mark.parametrize('name,p99,lat,want,refused', SEEN,
                         ids=[s[0] for s in SEEN])
def test_the_seen_w_replaces_the_self_tests(name, p99, lat, want, refused):
    conf = cfg.ConfigOpts()
    opts.register_all(conf)
    conf([], default_config_files=[])
    conf.set_override('seen_window_s', 10, 'host_agent_policy.vslicer')
    policy = vslicer.VSlicerPolicy(conf)
    plain = policy.decide(snap(0.0, [], latency_ms=lat)).facts['lsvm']
    assert (plain.wakeup_us, plain.latency_bound_ms) == (100.0, 0.1)
    state = None
    for t in range(3):
        plan = policy.decide(snap(float(t), [p99] * 100, latency_ms=lat),
                             state)
        state = plan.state
    got = plan.facts['lsvm']
    assert got.seen_wakes == 300 and got.seen_us == p99
    assert got.wakeup_us == p99
    assert got.latency_bound_ms == pytest.approx(want)
    assert (got.refused == ('l',)) is refused
    assert any("LSVM vCPUs' own wake-to-run delays" in n
               for n in plan.notes) is refused
