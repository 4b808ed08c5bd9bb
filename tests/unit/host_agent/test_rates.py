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
"""Table-driven tests of the agent's counter math: rates, the E_n * I_bar
estimate from a wake-up count, classes (ISACS Eqs. 1-2 themselves:
tests/unit/contract/test_isacs.py).
"""

import math

import pytest

from iosched.host_agent.collectors import rates

MS = 1_000_000  # ns


@pytest.mark.parametrize('name,prev,cur,dt,want', [
    ('steady', 10, 30, 2.0, 10.0),
    ('backwards counter (VM restart)', 30, 10, 1.0, None),
    ('no previous sample', None, 10, 1.0, None),
    ('zero window', 10, 20, 0.0, None),
])
def test_rate(name, prev, cur, dt, want):
    assert rates.rate(prev, cur, dt) == want, name


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


# MIN_WAKEUPS_PER_REQUEST = 0.5 (iosched.contract.isacs)
@pytest.mark.parametrize('name,wakeups,requests,vcpus,want', [
    ('no request counter', 40, None, 1, (40, 'wakeups', 0.0)),
    ('no request in the window', 40, 0, 1, (40, 'wakeups', 0.0)),
    ('sleeping vCPU: a wake-up per request', 50, 50, 1,
     (50, 'wakeups', 50.0)),
    ('batched completions: 0.5 wake-up per request is still wake-ups',
     25, 50, 1, (25, 'wakeups', 50.0)),
    ('busy hybrid vCPU: no wake-up, 50 requests', 0, 50, 1,
     (50, 'requests', 50.0)),
    ('just under the ratio', 24, 50, 1, (50, 'requests', 50.0)),
    ('two vCPUs share the VM requests', 3, 50, 2, (25, 'requests', 25.0)),
    ('two vCPUs, the woken one keeps wake-ups', 20, 30, 2,
     (20, 'wakeups', 15.0)),
    ('no vCPU count', 0, 50, 0, (0, 'wakeups', 0.0)),
])
def test_request_events(name, wakeups, requests, vcpus, want):
    assert rates.request_events(wakeups, requests, vcpus) == want, name
