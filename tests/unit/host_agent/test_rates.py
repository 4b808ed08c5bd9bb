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
"""Table-driven tests of the pure I/O strength math (ISACS Eqs. 1-2)."""

import math

import pytest

from host_agent.collectors import rates

MS = 1_000_000  # ns


@pytest.mark.parametrize('name,prev,cur,dt,want', [
    ('steady', 10, 30, 2.0, 10.0),
    ('backwards counter (VM restart)', 30, 10, 1.0, None),
    ('no previous sample', None, 10, 1.0, None),
    ('zero window', 10, 20, 0.0, None),
])
def test_rate(name, prev, cur, dt, want):
    assert rates.rate(prev, cur, dt) == want, name


# Hand-computed: EMA with w = 0.9 on the newest gap, gaps > 10 ms dropped,
# the first kept gap seeds the average.
@pytest.mark.parametrize('name,events,want_n,want_ibar', [
    ('no events', (), 0, 0.0),
    ('one event: no gap', (5 * MS,), 1, 0.0),
    ('two events 2 ms apart', (0, 2 * MS), 2, 2 * MS),
    ('three events, gaps 2 then 4 ms', (0, 2 * MS, 6 * MS), 3,
     0.9 * 4 * MS + 0.1 * 2 * MS),
    ('gap of 20 ms dropped, clock restarts', (0, 20 * MS, 23 * MS), 3,
     3 * MS),
    ('only long gaps', (0, 11 * MS, 30 * MS), 3, 0.0),
    ('exactly the cutoff is kept', (0, 10 * MS), 2, 10 * MS),
    ('simultaneous events are one delivery', (0, 0, 0, 2 * MS, 2 * MS), 2,
     2 * MS),
    ('four events, gaps 1, 2, 3 ms', (0, 1 * MS, 3 * MS, 6 * MS), 4,
     0.9 * 3 * MS + 0.1 * (0.9 * 2 * MS + 0.1 * 1 * MS)),
])
def test_ema_gap(name, events, want_n, want_ibar):
    n, ibar = rates.ema_gap(events, 0.9, 10 * MS)
    assert n == want_n, name
    assert ibar == pytest.approx(want_ibar), name


def test_io_strength_and_ivcredit():
    # 400 events with I_bar = 2.5 ms in a 1 s window: active the whole time
    assert rates.io_strength(400, 2.5 * MS, 1000 * MS) == pytest.approx(1.0)
    assert rates.io_strength(10, 1 * MS, 1000 * MS) == pytest.approx(0.01)
    assert rates.io_strength(10, 1 * MS, 0) == 0.0
    # Eq. 2: consumption relative to the mean scales the strength
    assert rates.ivcredit(0.5, 20, 10) == pytest.approx(1.0)
    assert rates.ivcredit(0.5, 5, 10) == pytest.approx(0.25)
    assert rates.ivcredit(0.5, 5, 0) == 0.0


@pytest.mark.parametrize('n,window_ms,want_ibar_ms', [
    (0, 1000, 0.0),
    (1, 1000, 0.0),
    # lam = 0.4/ms, c = 10 ms: 1/lam - c e^-4 / (1 - e^-4)
    (400, 1000, 2.5 - 10 * math.exp(-4) / (1 - math.exp(-4))),
    # lam = 0.05/ms: most gaps exceed 10 ms
    (50, 1000, 20 - 10 * math.exp(-0.5) / (1 - math.exp(-0.5))),
])
def test_estimate_ema_gap(n, window_ms, want_ibar_ms):
    got_n, ibar = rates.estimate_ema_gap(n, window_ms * MS, 10 * MS)
    assert got_n == n
    assert ibar == pytest.approx(want_ibar_ms * MS, rel=1e-9, abs=1e-6)


@pytest.mark.parametrize('strength,share,want', [
    (0.5, 0.1, 'io'),
    (0.5, 0.9, 'mixed'),
    (0.0, 0.9, 'cpu'),
    (0.0, 0.3, 'cpu'),
    (0.0, 0.01, 'idle'),
    (0.1, 0.0, 'io'),       # threshold is inclusive
    (0.09, 0.0, 'idle'),
])
def test_classify(strength, share, want):
    assert rates.classify(strength, share, 0.1, 0.5, 0.02) == want


@pytest.mark.parametrize('values,p,want', [
    ([], 50, 0.0),
    ([5], 99, 5.0),
    ([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 50, 5.0),
    ([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 99, 10.0),
    ([3, 1, 2], 0, 1.0),
])
def test_percentile(values, p, want):
    assert rates.percentile(values, p) == want
