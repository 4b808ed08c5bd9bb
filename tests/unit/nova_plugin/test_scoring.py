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
"""Table tests of iosched.nova_plugin.scoring; every number is computed by
hand.
"""

import pytest

from iosched.nova_plugin import scoring
from tests.unit.nova_plugin import reports

R = scoring.Request
P = scoring.Pending

# host: 4 pCPUs, 2 I/O vCPUs, I/O strength 1.2 in total (0.3 per pCPU)
HOST = reports.report(pcpus=4, io_vcpus=2, io_strength_total=1.2)


@pytest.mark.parametrize('specs, want', [
    ({}, R(2)),
    (None, R(2)),
    ({'iosched:io_profile': 'io'}, R(2, 'io')),
    ({'iosched:io_profile': ' MIXED '}, R(2, 'mixed')),
    ({'iosched:io_profile': 'disk'}, R(2)),
    ({'iosched:latency_sensitive': 'True'}, R(2, latency_sensitive=True)),
    ({'iosched:latency_sensitive': 'maybe'}, R(2)),
    ({'iosched:latency_ms': '5'}, R(2, latency_ms=5)),
    ({'iosched:latency_ms': '0'}, R(2)),
    ({'iosched:latency_ms': '-3'}, R(2)),
    ({'iosched:latency_ms': '2.5'}, R(2)),
    ({'iosched:latency_ms': 'fast'}, R(2)),
    ({'hw:mem_page_size': 'large', 'iosched:io_profile': 'cpu'},
     R(2, 'cpu')),
    ({'hw:cpu_policy': 'dedicated', 'iosched:io_profile': 'cpu'},
     R(2, 'cpu', dedicated=True)),
], ids=['empty', 'none', 'io', 'mixed-padded', 'bad-profile', 'lsvm',
        'bad-bool', 'latency', 'latency-zero', 'latency-negative',
        'latency-float', 'latency-word', 'other-keys', 'dedicated'])
def test_request_from_extra_specs(specs, want):
    assert scoring.Request.from_extra_specs(2, specs) == want


@pytest.mark.parametrize('request_, io_vcpus, strength', [
    (R(4, 'io'), 4, 4.0),
    (R(4, 'mixed'), 4, 2.0),
    (R(4, 'cpu'), 0, 0.0),
    (R(4), 0, 0.0),
], ids=['io', 'mixed', 'cpu', 'unset'])
def test_request_io_vcpus_and_strength(request_, io_vcpus, strength):
    assert scoring.request_io_vcpus(request_) == io_vcpus
    assert scoring.request_io_strength(request_) == strength


@pytest.mark.parametrize('request_, pending, bound, density, passes', [
    # (2 + 0 + 2) / 4 = 1.0 <= 1.0
    (R(2, 'io'), None, 1.0, 1.0, True),
    # (2 + 0 + 3) / 4 = 1.25 > 1.0
    (R(3, 'io'), None, 1.0, 1.25, False),
    # mixed counts every vCPU: (2 + 1 + 2) / 4 = 1.25 > 1.0
    (R(2, 'mixed'), P(io_vcpus=1), 1.0, 1.25, False),
    # (2 + 1 + 2) / 4 = 1.25 <= 1.5
    (R(2, 'mixed'), P(io_vcpus=1), 1.5, 1.25, True),
    # no I/O vCPUs: fits even at bound 0 and far over it,
    # (2 + 40 + 0) / 4 = 10.5 and (2 + 0 + 0) / 4 = 0.5
    (R(8, 'cpu'), P(io_vcpus=40), 0.0, 10.5, True),
    (R(8), None, 0.0, 0.5, True),
    # bound 0 admits no I/O request: (2 + 0 + 1) / 4 = 0.75 > 0
    (R(1, 'io'), None, 0.0, 0.75, False),
], ids=['at-bound', 'over-bound', 'pending-tips-over', 'looser-bound',
        'cpu-always-fits', 'unset-always-fits', 'zero-bound'])
def test_fits(request_, pending, bound, density, passes):
    assert scoring.io_density_after(HOST, pending, request_) == density
    ok, reason = scoring.fits(HOST, pending, request_, bound)
    assert ok is passes
    assert reason
    if scoring.request_io_vcpus(request_):
        assert ('%.3f' % density) in reason
        assert ('>' in reason) is (not passes)


@pytest.mark.parametrize('request_, pending, want', [
    # no I/O vCPUs in the request: indifferent, 0 for every host
    (R(2, 'cpu'), None, 0.0),
    (R(2), None, 0.0),
    # -(1.2 + 0 + 2 * 1.0) / 4
    (R(2, 'io'), None, -0.8),
    # -(1.2 + 0 + 2 * 0.5) / 4
    (R(2, 'mixed'), None, -0.55),
    # -(1.2 + 0.5 + 2 * 1.0) / 4
    (R(2, 'io'), P(placements=1, io_vcpus=1, io_strength=0.5), -0.925),
], ids=['cpu', 'unset', 'io', 'mixed', 'io-with-pending'])
def test_score(request_, pending, want):
    assert scoring.score(HOST, pending, request_) == pytest.approx(want)
    if want:
        assert ('%.3f' % -want) in scoring.score_reason(HOST, pending,
                                                        request_)


def test_less_io_strength_scores_higher():
    light = reports.report(pcpus=8, io_strength_total=1.0)
    heavy = reports.report(pcpus=4, io_strength_total=1.0)
    request = R(2, 'io')
    assert scoring.score(light, None, request) > scoring.score(
        heavy, None, request)


@pytest.mark.parametrize('request_, needs', [
    (R(2), False), (R(2, 'cpu'), False), (R(2, 'io'), True),
    (R(2, 'mixed'), True), (R(2, 'cpu', latency_sensitive=True), True),
], ids=['unset', 'cpu', 'io', 'mixed', 'lsvm'])
def test_needs_report(request_, needs):
    assert scoring.needs_report(request_) is needs


@pytest.mark.parametrize('raw, multipliers, mode, want', [
    # lo=-0.5 hi=-0.3 gap=0.1*0.2=0.02: below lo
    ([-0.5, -0.3, None], [1, 1, 1], 'lowest', [-0.5, -0.3, -0.52]),
    # a negative multiplier turns the highest raw value into the lowest
    ([-0.5, -0.3, None], [-1, -1, -1], 'lowest', [-0.5, -0.3, -0.28]),
    ([-0.5, -0.3, None], [0, 0, 0], 'lowest', [-0.5, -0.3, -0.52]),
    ([-0.5, -0.3, None], [1, 1, 1], 'neutral', [-0.5, -0.3, -0.4]),
    # one reported value: no spread, gap 1.0
    ([-0.5, None], [1, 1], 'lowest', [-0.5, -1.5]),
    ([None, None], [1, 1], 'lowest', [0.0, 0.0]),
    ([-0.5, -0.3], [1, 1], 'lowest', [-0.5, -0.3]),
], ids=['lowest', 'lowest-negative', 'lowest-zero', 'neutral', 'one-known',
        'none-known', 'all-known'])
def test_missing_weights(raw, multipliers, mode, want):
    got = scoring.missing_weights(raw, multipliers, mode)
    assert got == pytest.approx(want)


def _nova_like_scores(raw, multipliers):
    """Nova's handler: min-max normalise, then times the multiplier."""
    lo, hi = min(raw), max(raw)
    norm = [(w - lo) / (hi - lo) if hi > lo else 0.0 for w in raw]
    return [m * n for m, n in zip(multipliers, norm)]


@pytest.mark.parametrize('multiplier', [1.0, 2.5, -1.0])
def test_lowest_holds_after_normalisation(multiplier):
    raw = [-0.9, -0.4, -0.1, None, None]
    mults = [multiplier] * len(raw)
    scores = _nova_like_scores(scoring.missing_weights(raw, mults), mults)
    reported, missing = scores[:3], scores[3:]
    # every host without a report is strictly below every reported host
    assert max(missing) < min(reported)
    # and the reported hosts keep most of their spread (> 80 %)
    assert abs(max(reported) - min(reported)) > 0.8 * abs(multiplier)
