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
"""The I-Balancer policy (seed 003) against hand-computed cases."""

import dataclasses

import pytest

from iosched.contract import knob_kinds
from iosched.contract import slo as slo_contract
from iosched.host_agent import model
from iosched.host_agent.policies import ibalancer as ib
from iosched.host_agent.policies import ibalancer_equations as eq
from iosched.host_agent import policy_params

# The equations and the control law on given per-vCPU event counts (the
# vCPU's ``events``); the request-count source has its own tests below.
P = policy_params.params_for('ibalancer', event_source='wakeups')


def vcpu(uuid, events, run_share=0.3, burst_us=0.0, vcpu_=0):
    return model.VcpuIoStrength(
        instance_uuid=uuid, vcpu=vcpu_, pcpu=0, events=events,
        mean_gap_ns=0.0, io_strength=0.5, ivcredit=0.5, run_share=run_share,
        wait_share=0.0, klass='io', exact=True, burst_us=burst_us)


def snap(vms, window_s=1.0, qos=None, slos=None):
    """vms: {uuid: (events, disk ops/s[, run_share])} one vCPU, disk vda."""
    qos, slos = qos or {}, slos or {}
    insts, vcpus, disks = {}, [], []
    for uuid, spec in sorted(vms.items()):
        events, ops = spec[0], spec[1]
        share = spec[2] if len(spec) > 2 else 0.3
        insts[uuid] = model.InstanceInfo(uuid=uuid, name=uuid, disks=(
            model.DiskInfo('vda', qos=qos.get(uuid, {}),
                           slo=slos.get(uuid)),))
        vcpus.append(vcpu(uuid, events, share))
        disks.append(model.DiskRates(
            instance_uuid=uuid, target='vda', iops=ops,
            bytes_per_s=ops * 4096.0, mean_latency_ms=1.0, window_s=window_s,
            reqs=int(ops * window_s)))
    return model.HostSnapshot(host='h', ts=10.0, window_s=window_s,
                              pcpus=(0, 1), instances=insts,
                              vcpus=tuple(vcpus), disks=tuple(disks))


def caps(plan):
    return {a.instance_uuid: a.value for a in plan.actions}


# -- Eq. 1: classification, with hysteresis ------------------------------
@pytest.mark.parametrize('events, pr_s, burst_us, want', [
    (0, 0.5, 100.0, 0.0),          # no events: CPU
    (100, 0.0, 100.0, 0.0),        # never ran
    (1000, 0.5, 100.0, 20.0),      # 1000 x 100 us of 500 ms
    (1000, 0.1, 100.0, 100.0),     # capped at PR
    (5, 0.5, 0.0, 100.0),          # no burst figure: VR = PR
])
def test_vr_pr(events, pr_s, burst_us, want):
    assert eq.vr_pr(events, pr_s, burst_us) == pytest.approx(want)


@pytest.mark.parametrize('vrpr, was_io, want', [
    (30.0, False, True),           # >= alpha
    (29.9, False, False),
    (27.0, True, True),            # stays while >= alpha - 5
    (27.0, False, False),          # does not join below alpha
    (24.9, True, False),           # leaves below alpha - 5
])
def test_classify_hysteresis(vrpr, was_io, want):
    assert eq.classify(vrpr, was_io, P) is want


# -- masking -------------------------------------------------------------
@pytest.mark.parametrize('events, pr_s, window_s, s_ms, period_ms, want', [
    # ran 300 ms of 1 s, period 120 ms: 36 ms per period >= S 30 ms:
    # events of 30 ms of runtime = 1000 x 30/300
    (1000, 0.3, 1.0, 30.0, 120.0, 100.0),
    # ran 100 ms: 12 ms per period < S: events of one period, 1000 x 0.12
    (1000, 0.1, 1.0, 30.0, 120.0, 120.0),
    # S = 0: events per second
    (1000, 0.1, 2.0, 0.0, 0.0, 500.0),
])
def test_masked_en(events, pr_s, window_s, s_ms, period_ms, want):
    assert eq.masked_en(events, pr_s, window_s, s_ms, period_ms) == \
        pytest.approx(want)


def test_masking_hides_cpu_share_above_s():
    # Same events per own runtime, shares 0.3 and 0.6: both ran >= S per
    # period, so EN is equal (the paper's normalisation).
    a = eq.masked_en(300, 0.3, 1.0, 30.0, 120.0)
    b = eq.masked_en(600, 0.6, 1.0, 30.0, 120.0)
    assert a == pytest.approx(b) == pytest.approx(30.0)


# -- Eq. 2 -----------------------------------------------------------------
@pytest.mark.parametrize('ens, want', [
    ([100, 100, 100, 100], 0.0),
    ([150, 50], 50.0),             # |50|+|50| / (100 x 2)
    ([150, 150, 50, 50], 50.0),    # same relative deviation, n = 4
    ([100], 0.0),                  # fewer than 2
    ([0, 0], 0.0),
])
def test_deviation_per_vcpu_normalised(ens, want):
    assert eq.deviation(ens) == pytest.approx(want)


# -- Eqs. 4-5 ---------------------------------------------------------------
def test_worked_example_280_120():
    drv, pairs = eq.delays([300.0, 100.0, 450.0, 150.0], 200.0)
    assert drv == pytest.approx(250.0)
    got = {(t, r): d for t, r, d in pairs}
    # 100 (index 1) pairs with 450 (index 2), 150 (3) with 300 (0)
    assert got == {(1, 2): pytest.approx(280.0), (3, 0): pytest.approx(120.0)}
    assert sum(got.values()) / 2 == pytest.approx(200.0)


def test_odd_n_leaves_the_median_alone():
    drv, pairs = eq.delays([100.0, 200.0, 500.0], 200.0)
    assert [(t, r) for t, r, _ in pairs] == [(0, 2)]
    assert drv == pytest.approx(400.0)
    assert pairs[0][2] == pytest.approx(200.0)


@pytest.mark.parametrize('eis', [[200.0, 200.0], [300.0, 300.0, 300.0],
                                 [50.0]])
def test_drv_not_positive_gives_no_delay(eis):
    drv, pairs = eq.delays(eis, 200.0)
    assert drv <= 0 and pairs == []


# -- delay -> rate ------------------------------------------------------
@pytest.mark.parametrize('rate, d_us, want', [
    (2000.0, 200.0, 2000.0 / 1.4),     # digest 3: -29 %
    (1000.0, 0.0, 1000.0),
    (0.0, 500.0, 0.0),
    (100.0, 1000.0, 100.0 / 1.1),
])
def test_delayed_rate(rate, d_us, want):
    assert eq.delayed_rate(rate, d_us) == pytest.approx(want)


def test_vm_delay_weights_by_events_and_converts_at_the_disk_rate():
    vs = [ib.VcpuView('a', 0, 300, 0, 0, True, 0, True, 0, 300.0,
                      delay_us=200.0),
          ib.VcpuView('a', 1, 100, 0, 0, True, 0, True, 0, 100.0)]
    assert eq.vm_delay(vs) == pytest.approx(150.0)
    # digest 3: iops x 1 / (1 + iops d), 2000 IOPS and 200 us: / 1.4
    assert eq.vm_fraction(2000.0, 200.0) == pytest.approx(1 / 1.4)
    assert eq.vm_fraction(0.0, 200.0) == 1.0


# -- the plan: trigger, cap, hold, release --------------------------------
UNFAIR = {'a': (3000, 900.0), 'b': (2800, 850.0), 'c': (1000, 300.0),
          'd': (1200, 350.0)}


def test_trigger_caps_the_heavy_half_with_explanations():
    plan = ib.plan_ibalancer(snap(UNFAIR), P)
    facts = plan.facts['ibalancer']
    assert facts.verdict == 'trigger' and facts.n == 4
    assert facts.d_n > P.beta
    got = caps(plan)
    assert set(got) == {'a', 'b'}
    for uuid, used in (('a', 900.0), ('b', 850.0)):
        v = got[uuid]
        assert v['size_iops_sec'] == slo_contract.DEFAULT_REF_IO_BYTES
        # 16 KiB ops of 4 KiB requests: used x 4096/16384 < ops, so ref
        # ops = iops; capped below use
        assert 10 <= v['total_iops_sec'] < used
    a = [x for x in plan.actions if x.instance_uuid == 'a'][0]
    assert a.rule == ib.RULE_CAP
    for word in ('EN ', 'EI ', 'VR/PR', 'D/n', 'beta', 'DRV', 'pair ',
                 'delay', "r'", 'cap'):
        assert word in a.reason, (word, a.reason)
    # delays average the base over the targets
    delays = [v.delay_us for v in facts.vcpus if v.delay_us > 0]
    assert sum(delays) / len(delays) == pytest.approx(200.0)
    # the VM fraction is r'/r at its disk's request rate (900/s)
    va = [v for v in facts.vcpus if v.instance_uuid == 'a'][0]
    assert facts.vm_fraction['a'] == pytest.approx(
        1 / (1 + 900 * va.delay_us * 1e-6))


def test_fair_pool_does_not_trigger():
    plan = ib.plan_ibalancer(snap({'a': (1000, 300.0), 'b': (1040, 310.0),
                                   'c': (980, 290.0)}), P)
    assert plan.actions == ()
    assert plan.facts['ibalancer'].verdict == 'idle'


def test_first_tick_without_a_window_does_nothing():
    plan = ib.plan_ibalancer(snap(UNFAIR, window_s=0.0), P)
    assert plan.actions == ()


def test_cap_is_the_delayed_natural_rate_not_a_compound_cut():
    p1 = ib.plan_ibalancer(snap(UNFAIR), P)
    st = p1.state
    cap1 = st.caps[('a', 'vda')]
    f1 = p1.facts['ibalancer'].vm_fraction['a']
    assert cap1 == pytest.approx(f1 * 900.0)
    assert st.free[('a', 'vda')] == 900.0
    # still unfair next tick, disk at its cap (binds): the cap is taken
    # from the use before the cap (900), the events scaled to it
    again = dict(UNFAIR, a=(3000, cap1))
    p2 = ib.plan_ibalancer(snap(again), P, st)
    st2 = p2.state
    f2 = p2.facts['ibalancer'].vm_fraction['a']
    assert st2.free[('a', 'vda')] == 900.0
    if st2.caps[('a', 'vda')] != cap1:      # min_change keeps the old one
        assert st2.caps[('a', 'vda')] == pytest.approx(f2 * 900.0)
    assert st2.caps[('a', 'vda')] > f1 * cap1       # no compounding
    # deviation in the band (7 % < D/n <= 10 %): held, rule hold
    band = {'a': (1100, 300.0), 'b': (1100, 300.0), 'c': (900, 300.0),
            'd': (900, 300.0)}
    assert 7.0 < eq.deviation([1100, 1100, 900, 900]) <= 10.0
    p3 = ib.plan_ibalancer(snap(band), P, st2)
    assert p3.facts['ibalancer'].verdict == 'hold'
    assert {a.rule for a in p3.actions} == {ib.RULE_HOLD}
    assert p3.state.caps == st2.caps


def test_a_capped_vm_that_is_no_longer_a_target_is_released():
    st = ib.plan_ibalancer(snap(UNFAIR), P).state
    # now c and d are the heavy ones (and EI has caught up: reseeded)
    st = dataclasses.replace(st, ei_us={})
    flipped = {'a': (1000, 300.0), 'b': (1200, 350.0), 'c': (3000, 900.0),
               'd': (2800, 850.0)}
    p = ib.plan_ibalancer(snap(flipped), P, st)
    got = {a.instance_uuid: (a.rule, a.value) for a in p.actions}
    assert got['a'] == (ib.RULE_RELEASE, knob_kinds.ORIGINAL)
    assert got['b'] == (ib.RULE_RELEASE, knob_kinds.ORIGINAL)
    assert got['c'][0] == got['d'][0] == ib.RULE_CAP
    assert set(p.state.caps) == {('c', 'vda'),
                                                    ('d', 'vda')}


def test_band_without_a_trigger_does_nothing():
    band = {'a': (1100, 300.0), 'b': (1100, 300.0), 'c': (900, 300.0),
            'd': (900, 300.0)}
    plan = ib.plan_ibalancer(snap(band), P)
    assert plan.actions == ()


def test_termination_gives_back_then_releases_every_cap():
    st = ib.plan_ibalancer(snap(UNFAIR), P).state
    held = dict(st.caps)
    fair = {'a': (1000, held[('a', 'vda')]), 'b': (1000, held[('b', 'vda')]),
            'c': (1000, 300.0), 'd': (1000, 300.0)}
    # calm tick 1 of 2: held
    p = ib.plan_ibalancer(snap(fair), P, st)
    assert {a.rule for a in p.actions} == {ib.RULE_HOLD}
    assert p.state.caps == held
    # calm tick 2: give back x1.1 while the disk still reaches its cap
    p = ib.plan_ibalancer(snap(fair), P, p.state)
    st = p.state
    assert st.caps[('a', 'vda')] == pytest.approx(held[('a', 'vda')] * 1.1)
    # the disks no longer reach their caps: every cap removed (ORIGINAL)
    low = {'a': (1000, 100.0), 'b': (1000, 100.0), 'c': (1000, 100.0),
           'd': (1000, 100.0)}
    p = ib.plan_ibalancer(snap(low), P, st)
    assert caps(p) == {'a': knob_kinds.ORIGINAL, 'b': knob_kinds.ORIGINAL}
    assert {a.rule for a in p.actions} == {ib.RULE_RELEASE}
    assert p.state.caps == {}
    assert not p.state.triggered


def test_flapping_vcpu_near_alpha_keeps_its_class():
    # burst 60 us: 1000 events x 60 us / 200 ms = 30 % -> I/O
    s1 = model.HostSnapshot(
        host='h', ts=1.0, window_s=1.0, pcpus=(0,), instances={},
        vcpus=(vcpu('a', 1000, 0.2, 60.0),))
    st = ib.plan_ibalancer(s1, P).state
    assert st.io[('a', 0)] is True
    # 28 %: below alpha but within the hysteresis: still I/O
    s2 = model.HostSnapshot(
        host='h', ts=2.0, window_s=1.0, pcpus=(0,), instances={},
        vcpus=(vcpu('a', 1000, 0.2, 56.0),))
    assert ib.plan_ibalancer(s2, P, st).state.io[
        ('a', 0)] is True
    assert ib.plan_ibalancer(s2, P).state.io[
        ('a', 0)] is False


def test_ei_is_an_ewma_of_the_interval():
    st = ib.plan_ibalancer(snap(UNFAIR), P).state
    assert st.ei_us[('a', 0)] == pytest.approx(1e6 / 3000)
    nxt = dict(UNFAIR, a=(1000, 900.0))
    st2 = ib.plan_ibalancer(snap(nxt), P, st).state
    assert st2.ei_us[('a', 0)] == pytest.approx(
        0.25 * 1000.0 + 0.75 * 1e6 / 3000)


def test_cap_respects_static_ceiling_and_slo_floor():
    slo = slo_contract.SLO(min_iops=800, latency_ms=10, ref_io_bytes=16384)
    plan = ib.plan_ibalancer(snap(UNFAIR, qos={'b': {'total_iops_sec': '50'}},
                                  slos={'a': slo}), P)
    got = caps(plan)
    assert got['a']['total_iops_sec'] >= 800      # its SLO's B
    assert got['b']['total_iops_sec'] == 50       # its static ceiling


def test_the_policy_reads_every_option_of_its_group():
    from oslo_config import cfg

    from iosched.host_agent.conf import ibalancer as opts
    conf = cfg.ConfigOpts()
    opts.register_opts(conf)
    conf([])
    assert ib.IBalancerPolicy(conf).params() == policy_params.params_for(
        'ibalancer')
    assert ib.IBalancerPolicy(conf).params().event_source == 'requests'
    conf.set_override('beta', 12.5, 'host_agent_policy.ibalancer')
    assert ib.IBalancerPolicy(conf).params() == policy_params.params_for(
        'ibalancer', beta=12.5)


def test_few_events_are_not_tracked_and_a_pool_of_one_is_calm():
    plan = ib.plan_ibalancer(snap({'a': (3000, 900.0), 'b': (5, 2.0)}), P)
    facts = plan.facts['ibalancer']
    assert [v.instance_uuid for v in facts.vcpus] == ['a']
    assert facts.n == 1 and plan.actions == ()


def test_without_masking_en_is_events_per_second():
    p0 = dataclasses.replace(P, mask_slice_ms=0.0)
    plan = ib.plan_ibalancer(snap(UNFAIR, window_s=2.0), p0)
    ens = {v.instance_uuid: v.en for v in plan.facts['ibalancer'].vcpus}
    assert ens == {'a': 1500.0, 'b': 1400.0, 'c': 500.0, 'd': 600.0}
    assert set(caps(plan)) == {'a', 'b'}


# -- the event source (contract.ibalancer) -------------------------------
# Equal throughputs (900 requests each), the slow pair with a third of the
# fast pair's wake-ups: wake-ups see D/n 50 % and cap the fast pair; the
# request counts see a fair pool. Unequal throughputs trigger under both.
@pytest.mark.parametrize('source, vms, verdict, capped', [
    ('wakeups', {'a': (300, 900.0), 'b': (300, 900.0), 'c': (100, 900.0),
                 'd': (100, 900.0)}, 'trigger', {'a', 'b'}),
    ('requests', {'a': (300, 900.0), 'b': (300, 900.0), 'c': (100, 900.0),
                  'd': (100, 900.0)}, 'idle', set()),
    ('requests', {'a': (300, 900.0), 'b': (300, 900.0), 'c': (300, 300.0),
                  'd': (300, 300.0)}, 'trigger', {'a', 'b'}),
])
def test_event_source_removes_the_wakeup_bias(source, vms, verdict, capped):
    p = dataclasses.replace(P, event_source=source)
    plan = ib.plan_ibalancer(snap(vms), p)
    assert plan.facts['ibalancer'].verdict == verdict
    assert set(caps(plan)) == capped


def test_request_events_are_shown_beside_wakeups_in_the_reason():
    p = dataclasses.replace(P, event_source='requests')
    plan = ib.plan_ibalancer(snap({'a': (300, 900.0), 'b': (300, 900.0),
                                   'c': (300, 300.0), 'd': (300, 300.0)}), p)
    v = {x.instance_uuid: x for x in plan.facts['ibalancer'].vcpus}
    assert (v['a'].events, v['a'].wakeups) == (900, 300)
    assert '(900 events, 300 wake-ups,' in plan.actions[0].reason
