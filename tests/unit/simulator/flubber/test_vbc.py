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
"""Flubber's VBC: Eq. 1-4 against hand-computed cases, and the rounds."""

import pytest

from iosched.simulator.flubber import request
from iosched.simulator.flubber import vbc


@pytest.mark.parametrize('bs,want', [
    ((1000, 120), [8, 1]),          # the paper's rounding: 8.33 -> 8
    ((1200, 600), [2, 1]),
    ((1000, 1200, 100), [10, 12, 1]),
    ((120, 120), [1, 1]),
    ((400, 200, 200), [2, 1, 1]),
    ((600, 400), [2, 1]),           # 1.5 rounds half up
])
def test_ratios_lowest_terms(bs, want):
    assert vbc.ratios(bs) == want


@pytest.mark.parametrize('c,beta,cap,want', [
    ([8, 1], 32, 1152, [256, 32]),
    ([8, 1], 1, 1152, [8, 1]),
    ([8, 1], 128, 1152, [1024, 128]),     # at the cap: Eq. 4's 2nd case
    ([8, 1], 256, 1152, [1024, 128]),     # capped at max_interval
    ([2, 1], 32, 1152, [64, 32]),
])
def test_credits_eq4(c, beta, cap, want):
    assert vbc.credits(c, beta, cap) == want


@pytest.mark.parametrize('B,b,L,l,want', [
    (1000, 1000, 80, 80, 0.0),
    (1000, 800, 80, 40, 0.2),            # throughput short by 20 %
    (120, 137.5, 60, 90, 0.5),           # latency 50 % over
    (600, 1200, 100, 50, -0.5),          # beaten on both: negative
    (600, 300, 100, None, 0.5),          # no completion latency known
])
def test_indicator_eq2(B, b, L, l, want):
    assert vbc.indicator(B, b, L, l) == pytest.approx(want)


@pytest.mark.parametrize('a,inds,want', [
    ([64, 32], [0.0, -0.3], [64, 32]),   # nobody violates: no action
    ([64, 32], [0.5, -0.5], [80, 16]),   # w = 64+16, 32-16; size 96
    ([64, 32], [3.0, 0.0], [72, 24]),    # Ind clamped to 1: w = 96, 32
    ([64, 32], [0.2, -2.0], [95, 1]),    # w = 70.4, max(1, 0) -> 1
])
def test_feedback_eq3(a, inds, want):
    assert vbc.feedback(a, inds, 32, 96, 1152) == want


def test_feedback_keeps_the_round_within_max_interval():
    assert sum(vbc.feedback([800, 352], [0.5, 0.0], 128, 1152 * 2,
                            1152)) == 1152


def _ctl(slos, beta=1, **kw):
    v = vbc.Vbc(slos, beta=beta, max_interval=1000, **kw)
    out = []
    v.forward = out.append
    return v, out


def _req(vm):
    return request.Req(vm, 0, 8, False)


def test_credits_gate_and_turn_round():
    v, out = _ctl({'A': (200, 80), 'B': (100, 60)})     # 2:1, beta 1
    assert v.a == {'A': 2, 'B': 1}
    for _ in range(3):
        v.submit(_req('A'))
    assert len(out) == 2 and v.blocked('A')
    v.submit(_req('B'))              # every VM spent: event 1
    assert v.events['turn'] == 1
    assert len(out) == 4 and not v.blocked('A')        # queued A went
    assert v.left == {'A': 1, 'B': 1}


def test_idle_replenishment_unblocks_a_backlogged_vm():
    v, out = _ctl({'A': (200, 80), 'B': (100, 60)})
    for _ in range(3):
        v.submit(_req('A'))
    v.idle_check(low_level_has_vm=True)      # disk still has work
    assert v.events['idle'] == 0
    v.idle_check(low_level_has_vm=False)     # B idle with its credit
    assert v.events['idle'] == 1 and len(out) == 3
    assert v.left == {'A': 1, 'B': 1}


def test_leave_is_a_membership_event_and_reshares():
    v, out = _ctl({'A': (200, 80), 'B': (100, 60)}, beta=4)
    v.leave('B')
    assert v.events['member'] == 1 and v.a == {'A': 4}


def test_imposed_ratio_overrides_eq1():
    v, _ = _ctl({'A': (1200, 150), 'B': (600, 100)}, beta=32,
                ratio={'A': 1, 'B': 2})
    assert v.a == {'A': 32, 'B': 64}


def test_round_on_completion_waits_for_the_round_to_finish():
    v, out = _ctl({'A': (200, 80), 'B': (100, 60)}, on_completion=True)
    reqs = [_req('A'), _req('A'), _req('B'), _req('A')]
    for r in reqs:
        v.submit(r)
    assert len(out) == 3 and v.events['turn'] == 0    # spent, in flight
    for r in out[:2]:
        v.on_complete(r, 1.0)
    assert v.events['turn'] == 0
    v.on_complete(out[2], 1.0)                         # last one done
    assert v.events['turn'] == 1 and len(out) == 4


def test_idle_event_can_wait_for_a_grace_period():
    v, out = _ctl({'A': (200, 80), 'B': (100, 60)}, idle_ms=4.0)
    t = [0.0]
    v.now = lambda: t[0]
    wakes = []
    v.wake = wakes.append
    for _ in range(3):
        v.submit(_req('A'))
    v.idle_check(False)
    assert v.events['idle'] == 0 and wakes == [4.0]
    t[0] = 4.0
    v.idle_check(False)
    assert v.events['idle'] == 1
