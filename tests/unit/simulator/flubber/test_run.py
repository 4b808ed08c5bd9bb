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
"""Scenarios end to end: determinism, fixed work, VBC's split, guests."""

import pytest

from iosched.simulator.flubber import clients
from iosched.simulator.flubber import run as frun


def _pair(sched, seed=1, **kw):
    vms = (frun.VmSpec('SeqR', clients.seq_read(0.05), 1000, 80),
           frun.VmSpec('RndR', clients.rnd('r', 150), 120, 60, True))
    return frun.run(frun.Scenario(vms, scheduler=sched, seed=seed, **kw))


def _key(r):
    return (r.finish, dict(r.metrics.bins),
            {v: len(d) for v, d in r.metrics.done.items()})


@pytest.mark.parametrize('sched', frun.SCHEDULERS)
def test_every_scheduler_finishes_the_work_deterministically(sched):
    a, b = _pair(sched), _pair(sched)
    assert all(t is not None for t in a.finish.values())
    assert _key(a) == _key(b)


def test_another_seed_gives_another_run():
    assert _key(_pair('flubber', 1)) != _key(_pair('flubber', 2))


def test_fixed_work_is_done_exactly():
    r = _pair('flubber')
    g = r.guests['SeqR']
    sectors = int(0.05 * (1 << 30) / 512) // 32 * 32
    assert g.done_sect == g.total_sect == sectors
    assert r.guests['RndR'].ops_done == 150


def test_flubber_uses_the_eq1_split_and_leaves_on_finish():
    r = _pair('flubber', feedback=False)
    assert r.vbc.c0 == {}                      # both left: membership
    assert r.vbc.events['member'] == 2
    r = frun.build(frun.Scenario(_pair('cfq').scenario.vms))[1]
    assert r.a == {'SeqR': 256, 'RndR': 32}


def test_fsync_writes_go_data_journal_commit():
    vms = (frun.VmSpec('W', clients.rnd('w', 20), 600, 100),)
    r = frun.run(frun.Scenario(vms, scheduler='noop'))
    g = r.guests['W']
    assert g.ops_done == 20 and g.commits >= 1
    assert len(r.metrics.done['W']) == 20 + 2 * g.commits


def test_backup_copies_everything_as_background():
    vms = (frun.VmSpec('R', clients.rnd('r', 20), 120, 60),)
    r = frun.run(frun.Scenario(vms, scheduler='flubber', backup_gb=0.01))
    assert r.finish['backup'] is not None
    n = int(0.01 * 1e9 / 512) // 256 + 1
    assert len(r.metrics.done['backup']) in (2 * n - 2, 2 * n - 1, 2 * n)


def test_unknown_scheduler_is_refused():
    with pytest.raises(ValueError, match='accepted'):
        _pair('bfq')


def test_ssd_device_runs():
    r = _pair('flubber', device='ssd')
    assert r.finish['RndR'] < _pair('flubber').finish['RndR']


@pytest.mark.parametrize('kw, attr, want', [
    ({}, 'fb_min_ms', 250.0),
    ({'fb_min_ms': 1000.0}, 'fb_min_ms', 1000.0),
])
def test_scenario_options_reach_vbc(kw, attr, want):
    vbc = frun.build(frun.Scenario(_pair('cfq').scenario.vms,
                                   scheduler='flubber', **kw))[1]
    assert getattr(vbc, attr) == want


@pytest.mark.parametrize('kw, want', [
    ({}, (True, 1, 'thread')),
    ({'sync_unplug': False, 'fsync_every': 100, 'fsync_scope': 'guest'},
     (False, 100, 'guest')),
])
def test_scenario_options_reach_the_guests(kw, want):
    g = frun.build(frun.Scenario(_pair('cfq').scenario.vms, **kw))[3]
    for guest in g.values():
        assert (guest.sync_unplug, guest.fsync_every,
                guest.fsync_scope) == want


@pytest.mark.parametrize('kw, want', [({}, 256), ({'merge_max': 0}, 0)])
def test_scenario_merge_max_reaches_the_engine(kw, want):
    eng = frun.build(frun.Scenario(_pair('cfq').scenario.vms, **kw))[0]
    assert eng.merge_max == want


@pytest.mark.parametrize('kw, want', [({}, 0.0), ({'bd_hold_ms': 250.0},
                                                  250.0)])
def test_scenario_bd_hold_reaches_bd_edf(kw, want):
    low = frun.build(frun.Scenario(_pair('cfq').scenario.vms,
                                   scheduler='flubber', **kw))[2]
    assert low.hold_ms == want


def test_a_hold_cuts_image_changes():
    rule, held = _pair('flubber'), _pair('flubber', bd_hold_ms=250.0)
    assert held.metrics.changes < rule.metrics.changes


@pytest.mark.parametrize('sched, kw, want', [
    ('cfq', {}, False), ('cfq', {'cfq_shared_async': True}, True),
    ('cfq-prio', {'cfq_shared_async': True}, True),
])
def test_scenario_cfq_shared_async_reaches_cfq(sched, kw, want):
    low = frun.build(frun.Scenario(_pair('cfq').scenario.vms,
                                   scheduler=sched, **kw))[2]
    assert low.shared_async is want
