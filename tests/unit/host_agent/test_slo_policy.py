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
"""The SLO policy (Flubber VBC over iotune) against hand-computed cases."""

import pytest

from iosched.contract import knob_kinds
from iosched.contract import slo as slo_contract
from iosched.host_agent import model
from iosched.host_agent.policies import slo
from iosched.host_agent.policies import slo_caps
from iosched.host_agent.policies import slo_window
from iosched.host_agent import policy_params

P = policy_params.params_for('slo')
SLO_A = slo_contract.SLO(min_iops=200, latency_ms=10)          # mean
SLO_B = slo_contract.SLO(min_iops=100, latency_ms=20)
SLO_P99 = slo_contract.SLO(min_iops=200, latency_ms=10, latency_stat='p99')


def vol(uuid, slo_=None, ops=0.0, mean=0.0, n=0.0, reqs=None, pcts=None,
        qos=None):
    """(InstanceInfo, DiskRates) of one VM with one disk 'vda'."""
    info = model.InstanceInfo(uuid=uuid, name=uuid, disks=(
        model.DiskInfo('vda', serial='vol-' + uuid, qos=qos or {},
                       slo=slo_),))
    rates = model.DiskRates(
        instance_uuid=uuid, target='vda', iops=ops,
        bytes_per_s=ops * slo_contract.DEFAULT_REF_IO_BYTES,
        mean_latency_ms=mean,
        window_s=1.0, reqs=int(ops) if reqs is None else reqs,
        outstanding=n, latency_pcts_ms=pcts or {})
    return info, rates


def snap(*vols, capacity=1000.0):
    return model.HostSnapshot(
        host='h', ts=1.0, window_s=1.0, pcpus=(0, 1),
        instances={i.uuid: i for i, _ in vols}, vcpus=(),
        disks=tuple(r for _, r in vols), disk_capacity_iops=capacity)


def caps(plan):
    return {a.instance_uuid: a.value for a in plan.actions
            if a.kind == knob_kinds.DISK_IOTUNE}


@pytest.mark.parametrize('ops, lat, n, reqs, want', [
    # shortfall while backlogged: tp = (200 - 150) / 200
    (150, 8.0, 2.0, 150, 0.25),
    # the same shortfall with < min_outstanding in flight: asks for less
    (150, 8.0, 0.2, 150, -0.2),
    # throughput beaten, latency over: lat = (12 - 10) / 10
    (300, 12.0, 3.6, 300, 0.2),
    # both beaten: the worse of -0.5 and -0.5
    (300, 5.0, 1.5, 300, -0.5),
    # too few completions to judge latency, not backlogged: not judged
    (3, 50.0, 0.1, 3, None),
    # nothing completed
    (0, 0.0, 0.0, 0, None),
])
def test_indicator_eq2(ops, lat, n, reqs, want):
    got = slo_window.indicator(SLO_A, ops, lat, n, reqs, P)
    assert got == (None if want is None else pytest.approx(want))


def test_no_slo_volume_no_action():
    plan = slo.plan_slo(snap(vol('n', ops=800, mean=3.0, n=2.4)), P)
    assert plan.actions == () and plan.facts['slo'].allowance is None


def test_miss_holds_the_neighbour_back_to_what_is_left():
    # a: b = 150 < B = 200 backlogged, l = 15 > L = 10: Ind = max(.25, .5)
    # donors {n}: d = 800; need = max(200, 150) = 200; room = 1000 - 200
    # A = min(inf, 800, 800) * (1 - max(0.2, 0.5 * 0.5)) = 600
    s = snap(vol('a', SLO_A, ops=150, mean=15.0, n=2.25),
             vol('n', ops=800, mean=15.0, n=12.0))
    plan = slo.plan_slo(s, P)
    assert caps(plan) == {'n': {'total_iops_sec': 600,
                                'size_iops_sec': 16384}}
    st = plan.state
    # a miss before any hold-back sets no knee: it only says there is
    # contention, not which level is too high
    assert st.allowance == pytest.approx(600) and st.knee is None
    facts = plan.facts['slo']
    assert (facts.missed, facts.met, facts.held_back) == (1, 0, 1)
    (action,) = plan.actions
    assert action.rule == slo.RULE_HOLD
    assert 'a/vda missed' in action.reason and 'Ind +0.50' in action.reason
    assert len(action.reason) < 300     # fits a HostReport decision


def test_calm_windows_hold_then_give_back_within_the_knee():
    first = slo.plan_slo(snap(vol('a', SLO_A, ops=150, mean=15.0, n=2.25),
                              vol('n', ops=800, n=12.0)), P)

    def met(n_ops):     # n uses its whole cap: the caps bind
        return (vol('a', SLO_A, ops=210, mean=8.0, n=1.68),
                vol('n', ops=n_ops, n=12.0))
    # window 1 of calm: held at 600
    second = slo.plan_slo(snap(*met(590)), P, first.state)
    assert second.state.allowance == pytest.approx(600)
    assert caps(second)['n']['total_iops_sec'] == 600
    # window 2: +0.05 * C = 650, under room = 1000 - 210; 650 is within
    # min_change (10 %) of the cap 600: not rewritten
    third = slo.plan_slo(snap(*met(590)), P, second.state)
    assert third.state.allowance == pytest.approx(650)
    assert caps(third)['n']['total_iops_sec'] == 600
    # window 3: 700 -> written; window 4: 750
    fourth = slo.plan_slo(snap(*met(595)), P, third.state)
    assert caps(fourth)['n']['total_iops_sec'] == 700
    fifth = slo.plan_slo(snap(*met(690)), P, fourth.state)
    assert fifth.state.allowance == pytest.approx(750)
    # a miss while held at 750: the knee is 750, the cut 750 * 0.8 = 600,
    # and the give-back stops at 750 * 0.9 = 675
    miss = slo.plan_slo(snap(vol('a', SLO_A, ops=150, mean=15.0, n=2.25),
                             vol('n', ops=745, n=12.0)), P,
                        fifth.state)
    st = miss.state
    assert st.knee == pytest.approx(745) and st.allowance == pytest.approx(
        745 * 0.75)
    for n_ops in (555, 600, 640, 670, 675):
        st = slo.plan_slo(snap(*met(n_ops)), P, st).state
    assert st.allowance == pytest.approx(745 * 0.9)


def test_release_when_the_caps_no_longer_bind():
    first = slo.plan_slo(snap(vol('a', SLO_A, ops=150, mean=15.0, n=2.25),
                              vol('n', ops=800, n=12.0)), P)
    quiet = (vol('a', SLO_A, ops=210, mean=4.0, n=0.8),
             vol('n', ops=100, n=0.2))
    st = first.state
    for _ in range(2):
        plan = slo.plan_slo(snap(*quiet), P, st)
        st = plan.state
    # d = 100 < 600 * 0.9: the original iotune back, allowance free
    (action,) = plan.actions
    assert action.value == knob_kinds.ORIGINAL
    assert action.rule == slo.RULE_RELEASE
    assert st.allowance is None and st.caps == {}


def test_a_backlogged_neighbour_under_its_cap_keeps_it():
    # a closed-loop neighbour doing less than its cap still wants more:
    # freed, it would fill the device queue at once (measured on the
    # testbed); the allowance grows instead
    first = slo.plan_slo(snap(vol('a', SLO_A, ops=150, mean=15.0, n=2.25),
                              vol('n', ops=800, n=12.0)), P)
    st = first.state
    for _ in range(2):
        plan = slo.plan_slo(snap(vol('a', SLO_A, ops=210, mean=4.0, n=0.8),
                                 vol('n', ops=300, n=8.0)), P, st)
        st = plan.state
    assert st.allowance == pytest.approx(650)
    assert caps(plan)['n'] != knob_kinds.ORIGINAL


def test_released_when_the_slo_volumes_are_idle():
    first = slo.plan_slo(snap(vol('a', SLO_A, ops=150, mean=15.0, n=2.25),
                              vol('n', ops=800, n=12.0)), P)
    st = first.state
    for _ in range(2):
        plan = slo.plan_slo(snap(vol('a', SLO_A, ops=0, reqs=0),
                                 vol('n', ops=600, n=12.0)), P, st)
        st = plan.state
    assert caps(plan)['n'] == knob_kinds.ORIGINAL


def test_a_giver_running_at_its_cap_stops_giving():
    st = slo.State(allowance=600.0, caps={('b', 'vda'): 110.0})
    s = snap(vol('a', SLO_A, ops=210, mean=8.0, n=1.68),
             vol('b', SLO_B, ops=108, mean=5.0, n=0.54),
             vol('n', ops=490, n=12.0))
    plan = slo.plan_slo(s, P, st)
    assert ('b', 'vda') in plan.state.sticky
    assert caps(plan)['b'] == knob_kinds.ORIGINAL


def test_slo_volume_beating_its_slo_gives_down_to_its_floor():
    # b: Ind = max((100 - 300) / 100, (5 - 20) / 20) = -0.75: a giver
    # capped at its floor max(100, 1.5 / 0.02 = 75) * 1.1 = 110;
    # need = 200 (a) + 110 (b's floor); A = min(d = 800, 1000 - 310) * 0.75
    # = 517.5 for the neighbour
    s = snap(vol('a', SLO_A, ops=150, mean=15.0, n=2.25),
             vol('b', SLO_B, ops=300, mean=5.0, n=1.5),
             vol('n', ops=800, n=12.0))
    got = caps(slo.plan_slo(s, P))
    assert got['b']['total_iops_sec'] == 110
    assert got['n']['total_iops_sec'] == 518
    assert 'a' not in got


def test_a_volume_at_its_own_ceiling_is_not_helped_by_neighbours():
    qos = {'total_iops_sec': '150', 'size_iops_sec': '16384'}
    s = snap(vol('a', SLO_A, ops=150, mean=15.0, n=2.25, qos=qos),
             vol('n', ops=800, n=12.0))
    plan = slo.plan_slo(s, P)
    assert plan.actions == ()
    assert any('own QoS ceiling' in note for note in plan.notes)


def test_cap_never_above_the_static_ceiling_and_keeps_bandwidth_keys():
    qos = {'total_iops_sec': '300', 'total_bytes_sec': '9000000',
           'total_iops_sec_max': '300'}
    # b donor with a static ceiling of 300 and a floor 110 -> 110; the
    # burst key is dropped, the bandwidth ceiling kept
    s = snap(vol('a', SLO_A, ops=150, mean=15.0, n=2.25),
             vol('b', SLO_B, ops=290, mean=5.0, n=1.45, qos=qos),
             vol('n', ops=800, n=12.0))
    got = caps(slo.plan_slo(s, P))['b']
    assert got == {'total_iops_sec': 110, 'size_iops_sec': 16384,
                   'total_bytes_sec': 9000000}


def test_percentile_slo_without_histogram_is_judged_on_the_mean():
    s = snap(vol('a', SLO_P99, ops=150, mean=15.0, n=2.25),
             vol('n', ops=800, n=12.0))
    plan = slo.plan_slo(s, P)
    assert any('no latency histogram' in note for note in plan.notes)
    (v,) = [v for v in plan.facts['slo'].volumes if v.instance_uuid == 'a']
    assert v.stat == 'mean' and v.verdict == slo_window.MISSED


def test_percentile_slo_uses_the_histogram_figure():
    s = snap(vol('a', SLO_P99, ops=250, mean=4.0, n=1.0,
                 pcts={'p99': 9.0}),
             vol('n', ops=800, n=12.0))
    plan = slo.plan_slo(s, P)
    (v,) = [v for v in plan.facts['slo'].volumes if v.instance_uuid == 'a']
    # Ind = max((200 - 250) / 200, (9 - 10) / 10) = -0.1: met, no action
    assert v.stat == 'p99' and v.ind == pytest.approx(-0.1)
    assert plan.actions == () and plan.notes == ()


def test_a_donor_that_misses_stops_giving_for_knee_ticks():
    st = slo.State(allowance=600.0, caps={('b', 'vda'): 110.0})
    s = snap(vol('a', SLO_A, ops=210, mean=8.0, n=1.68),
             vol('b', SLO_B, ops=110, mean=25.0, n=2.75),
             vol('n', ops=490, n=12.0))
    plan = slo.plan_slo(s, P, st)
    assert plan.state.sticky == {('b', 'vda'): P.knee_ticks}
    assert caps(plan)['b'] == knob_kinds.ORIGINAL
    # later, beating its SLO again, it is still not a donor
    later = snap(vol('a', SLO_A, ops=210, mean=8.0, n=1.68),
                 vol('b', SLO_B, ops=300, mean=5.0, n=1.5),
                 vol('n', ops=490, n=12.0))
    again = slo.plan_slo(later, P, plan.state)
    assert 'b' not in caps(again)


def test_the_window_after_a_cut_waits_while_ind_falls():
    s = snap(vol('a', SLO_A, ops=150, mean=15.0, n=2.25),
             vol('n', ops=800, n=12.0))
    first = slo.plan_slo(s, P)                   # Ind 0.5: A = 600
    st = first.state
    assert st.settle and st.settle_ind == pytest.approx(0.5)
    # next window still a miss but better (Ind 0.2): held, no knee
    better = snap(vol('a', SLO_A, ops=190, mean=12.0, n=2.28),
                  vol('n', ops=640, n=12.0))
    held = slo.plan_slo(better, P, st).state
    assert held.allowance == pytest.approx(600) and not held.settle
    assert held.knee is None
    # and a miss after that cuts again: 600 * 0.8
    cut = slo.plan_slo(better, P, held).state
    assert cut.allowance == pytest.approx(480)


def test_unknown_capacity_cuts_from_the_donors_use():
    # C = 0: room = inf; A = 800 * 0.75 = 600
    s = snap(vol('a', SLO_A, ops=150, mean=15.0, n=2.25),
             vol('n', ops=800, n=12.0), capacity=0.0)
    assert caps(slo.plan_slo(s, P))['n']['total_iops_sec'] == 600


@pytest.mark.parametrize('allowance, asks, want', [
    # (ref ops used, cap held) per neighbour (no SLO); max-min fair
    (600, {'x': (800, None), 'y': (800, None)}, {'x': 300, 'y': 300}),
    # y uses 100 of a 300 cap: asks 110; x takes the rest
    (600, {'x': (300, 300), 'y': (100, 300)}, {'x': 490, 'y': 110}),
    # nobody asks for everything: the rest is spread evenly
    (600, {'x': (100, 300), 'y': (100, 300)}, {'x': 300, 'y': 300}),
    # below the floors: each gets min_cap_iops
    (5, {'x': (800, None), 'y': (800, None)}, {'x': 10, 'y': 10}),
])
def test_split_water_filling(allowance, asks, want):
    donors = [slo_window.Volume(k, 'vda', None, ops=u, ref_ops=u)
              for k, (u, _) in asks.items()]
    held = {(k, 'vda'): c for k, (_, c) in asks.items() if c is not None}
    got = slo_caps.split(allowance, donors, held, P)
    assert {k[0]: pytest.approx(v) for k, v in got.items()} == want
