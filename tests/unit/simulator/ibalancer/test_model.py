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
"""The I-Balancer host model (iosched.simulator.ibalancer.model), small
runs.
"""

import pytest

from iosched.simulator.ibalancer import model


def _run(**kw):
    kw.setdefault('duration_s', 1.5)
    kw.setdefault('warmup_s', 0.5)
    return model.run(model.Scenario(**kw))


def test_same_seed_same_run_other_seed_other_run():
    a = _run(vms=('net',) * 6, seed=3)
    b = _run(vms=('net',) * 6, seed=3)
    c = _run(vms=('net',) * 6, seed=4)
    assert a.net == b.net and a.net != c.net


def test_credit1_mixed_is_unfair_and_credit2_is_not():
    """Scheduling dependency: identical mixed VMs, unequal bandwidth."""
    c1 = _run(vms=('mixed',) * 8, scheduler='credit').stats()
    c2 = _run(vms=('mixed',) * 8, scheduler='credit2').stats()
    assert c1['sd'] / c1['mean'] > 0.2 and c1['jain'] < 0.95
    assert c2['sd'] / c2['mean'] < 0.02


def test_ibalancer_lowers_union_sd_under_credit1_keeping_the_mean():
    """3 network VMs on 2 pCPUs: a persistent imbalance (CV ~5 %) that the
    controller sees and halves; the mean stays.
    """
    kw = dict(vms=('net',) * 3, pcpus=2, duration_s=2.0, warmup_s=1.0,
              seed=3)
    off, ib = _run(mode='off', **kw), _run(mode='ib', **kw)
    a, b = off.stats(), ib.stats()
    assert a['sd'] / a['mean'] > 0.04
    assert any(t[2] for t in ib.triggers) and ib.deferred > 0
    assert b['sd'] < 0.5 * a['sd']
    assert abs(b['mean'] / a['mean'] - 1) < 0.02


def test_union_bound_by_the_round_trip_is_fair_and_never_fires():
    """10 union VMs whose per-VM round trip (wire 1357 us, the fit to the
    paper's panel (b)) sets the rate instead of the 5 pCPUs: each gets its
    uncontended rate, the spread is under 1 % and Eq. 2 never fires; on
    the default 200 us wire the same VMs share the CPU and spread more.
    """
    long = _run(vms=('net',) * 10, mode='ib', wire_us=1357)
    st = long.stats()
    assert st['sd'] / st['mean'] < 0.01 and st['mean'] > 150
    assert not any(t[2] for t in long.triggers) and long.deferred == 0
    short = _run(vms=('net',) * 10, mode='off').stats()
    assert short['sd'] / short['mean'] > 2 * st['sd'] / st['mean']


def test_a_rate_imbalance_outside_the_cpu_leaves_en_and_d_flat():
    """Odd VMs' events take 300 us more on the wire: their throughput is
    persistently lower, but EN per masked window is slice / CPU per event
    for every vCPU, so Eq. 2's D stays far under beta and nothing fires.
    """
    r = _run(vms=('net',) * 10, mode='ib', wire_us=1357, wire_skew_us=300)
    v = r.values()
    assert max(v[1::2]) < 0.9 * min(v[0::2])
    en = [s[0] for s in r.snaps.values()]
    assert max(en) < 1.1 * min(en)
    assert max(t[1] for t in r.triggers) < 5.0
    assert r.deferred == 0


def test_tav_triggers_but_never_delays():
    tav = _run(vms=('net',) * 10, mode='tav')
    off = _run(vms=('net',) * 10, mode='off')
    assert any(t[2] for t in tav.triggers)
    assert tav.deferred == 0 and tav.net == off.net


def test_network_vcpus_are_io_and_stress_vcpus_untracked():
    r = _run(vms=('mixed',) * 2 + ('cpu',), mode='tav')
    assert set(r.snaps) == {('vm00', 1), ('vm01', 1)}
    assert all(s[4] for s in r.snaps.values())      # VR/PR >= 30 %


def test_fixed_delay_bites_only_past_the_window_slack():
    base = _run(vms=('net',) * 2, pcpus=4).stats()['mean']
    d200 = _run(vms=('net',) * 2, pcpus=4, fixed_delay_us=200)
    d800 = _run(vms=('net',) * 2, pcpus=4, fixed_delay_us=800)
    assert d200.stats()['mean'] > 0.8 * base
    assert d800.stats()['mean'] < 0.7 * base


def test_busy_delay_costs_the_target_cpu():
    off = _run(vms=('mixed',) * 8, mode='off', seed=2)
    busy = _run(vms=('mixed',) * 8, mode='ib', delay_mode='busy', seed=2,
                beta=0.0)
    defer = _run(vms=('mixed',) * 8, mode='ib', seed=2, beta=0.0)
    assert sum(defer.cpu_us.values()) == pytest.approx(
        sum(off.cpu_us.values()), rel=0.01)
    assert sum(busy.cpu_us.values()) < sum(defer.cpu_us.values())


def test_large_blocks_make_rare_event_sets():
    small = _run(vms=('disk-mixed',) * 4, block_kb=4, mode='tav')
    large = _run(vms=('disk-mixed',) * 4, block_kb=1024, mode='tav')
    sets_small = small.events                  # 1 request per 4 KB set
    sets_large = large.events / 24             # ceil(1024 / 44) per set
    assert sets_small > 3 * sets_large
    assert large.events > sets_large           # but each set is a burst


@pytest.mark.parametrize('kw,match', [
    ({'scheduler': 'rtds'}, 'scheduler'), ({'mode': 'on'}, 'mode'),
    ({'vms': ('gpu',)}, 'vms'), ({'vms': ()}, 'vms'),
    ({'warmup_s': 9.0}, 'warmup_s'), ({'delay_mode': 'spin'}, 'delay_mode'),
    ({'block_kb': 0}, 'block_kb'), ({'wire_skew_us': -1}, 'wire_skew_us')])
def test_bad_scenario_fields_are_named(kw, match):
    with pytest.raises(ValueError, match=match):
        model.Scenario(**kw)


@pytest.mark.parametrize('sched,slice_us', [('credit', 30000),
                                             ('credit2', 10000)])
def test_rtm_windows_on_the_real_schedulers(sched, slice_us):
    """A masked window holds one slice of the vCPU's own run time and at
    most one run segment more (segments <= 30 ms Credit1, 10 ms Credit2);
    VR <= PR; every vCPU's PR is at most its run time.
    """
    h = model.Host(model.Scenario(vms=('mixed',) * 6, scheduler=sched,
                                  mode='tav', duration_s=2.0))
    seen = []
    orig = h.ctl.evaluate

    def evaluate(now, run_of=None):
        masked = [(t.pr, t.vr) for t in h.ctl.track if t.masked]
        seen.extend(masked)
        return orig(now, run_of)

    h.ctl.evaluate = evaluate
    h.run()
    assert seen
    for pr, vr in seen:
        assert slice_us <= pr <= 2 * slice_us + 1000
        assert 0 <= vr <= pr
    for t in h.ctl.track:
        e = h._by_key[t.key]
        assert t.pr <= e.run_us
