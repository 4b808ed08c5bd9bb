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
"""I-Balancer's ITM/RTM/Algorithm 3
(iosched.simulator.ibalancer.controller).
"""

import pytest

from iosched.simulator.ibalancer import controller as ctl


def _c(**kw):
    kw.setdefault('slice_us', 30000)
    return ctl.Controller(**kw)


def test_itm_counts_tracks_and_smooths_intervals():
    c = _c(w=0.5)
    t = ctl.Tracker('a')
    assert c.on_event(t, 100) == 0.0
    assert t.tracked and c.track == [t] and t.en == 1 and t.ei is None
    c.on_event(t, 300)                      # first interval seeds EI
    assert t.ei == 200
    c.on_event(t, 700)                      # 200 + 0.5 * (400 - 200)
    assert t.ei == 300 and t.en == 3


def test_rtm_vr_counts_only_segments_with_new_events():
    c = _c()
    t = ctl.Tracker('a')
    c.on_event(t, 0)
    c.on_segment(t, 1000)       # segment with an event: PR and VR
    assert (t.pr, t.vr, t.last_en) == (1000, 1000, 1)
    c.on_segment(t, 3000)       # no new event: PR only
    assert (t.pr, t.vr) == (3000, 1000)
    c.on_event(t, 5000)
    c.on_segment(t, 4000)
    assert (t.pr, t.vr, t.en) == (4000, 2000, 2)   # counts not erased


def test_rtm_accounted_until_mark_does_not_double_count():
    c = _c()
    t = ctl.Tracker('a')
    c.on_event(t, 0)
    c.on_segment(t, 500)
    c.on_segment(t, 500)        # continue_running at the same run time
    c.on_segment(t, 800)
    assert t.pr == 800


def test_masking_after_one_slice_of_own_runtime_stops_tracking():
    c = _c(slice_us=1000)
    t = ctl.Tracker('a')
    c.on_event(t, 0)
    c.on_segment(t, 999)
    assert not t.masked
    c.on_segment(t, 1200)
    assert t.masked and t.pr == 1200
    c.on_event(t, 50)
    c.on_segment(t, 5000)
    assert t.en == 1 and t.pr == 1200       # ignored while MASKING
    c.evaluate(2000)
    assert not t.masked and t.en == 0 and t.snap[0] == 1


def test_untracked_vcpu_accumulates_nothing():
    c = _c()
    t = ctl.Tracker('a')
    c.on_segment(t, 40000)
    assert t.pr == 0 and not t.masked and c.track == []


def _window(c, t, events, run_us, t0):
    for i in range(events):
        c.on_event(t, t0 + i * 100)
    c.on_segment(t, t.run_mark + run_us)


def test_trigger_sorts_pairs_and_delays_the_frequent_half():
    c = _c(slice_us=1000, beta=5, w=1.0)
    ts = [ctl.Tracker(k) for k in 'abcd']
    gaps = {'a': 100, 'b': 150, 'c': 300, 'd': 450}
    for t in ts:
        for i in range(5):
            c.on_event(t, i * gaps[t.key])
        c.on_segment(t, 1000)
    ts[0].en = 40                           # make EN unequal
    c.evaluate(10000)
    fired = c.triggers[-1][2]
    assert fired
    d = {t.key: t.delay for t in ts}
    assert d['a'] == pytest.approx(280) and d['b'] == pytest.approx(120)
    assert d['c'] == 0 and d['d'] == 0


def test_termination_resets_delays_and_tav_never_delays():
    for mode in ('ib', 'tav'):
        c = _c(slice_us=1000, beta=5, w=1.0, mode=mode)
        ts = [ctl.Tracker(k) for k in 'ab']
        for n, t in zip((5, 20), ts):
            for i in range(n):
                c.on_event(t, i * (100 if t.key == 'a' else 50))
            c.on_segment(t, 1000)
        c.evaluate(5000)
        assert c.triggers[-1][2]
        assert (ts[1].delay > 0) == (mode == 'ib')
        for n, t in zip((10, 10), ts):       # equal windows: D = 0
            for i in range(n):
                c.on_event(t, 6000 + i * 100)
            c.on_segment(t, t.run_mark + 1000)
        c.evaluate(9000)
        assert not c.triggers[-1][2]
        assert all(t.delay == 0 for t in ts)
        assert c.counts() == (1, 1)


def test_cpu_type_vcpus_stay_out_of_the_control_pool():
    c = _c(slice_us=1000, beta=0, w=1.0)
    io, cpu = ctl.Tracker('io'), ctl.Tracker('cpu')
    c.on_event(io, 0)
    c.on_event(io, 10)
    c.on_segment(io, 1000)                  # VR/PR = 100 %
    c.on_event(cpu, 0)
    c.on_event(cpu, 10)
    c.on_segment(cpu, 200)                  # event segment: VR 200
    c.on_segment(cpu, 1200)                 # CPU segment: VR/PR = 17 %
    c.evaluate(2000)
    assert c.control == [io]


@pytest.mark.parametrize('kw,match', [
    ({'mode': 'x'}, 'mode'), ({'w': 0}, 'w'), ({'beta': -1}, 'beta')])
def test_bad_parameters_are_named(kw, match):
    with pytest.raises(ValueError, match=match):
        _c(**kw)
