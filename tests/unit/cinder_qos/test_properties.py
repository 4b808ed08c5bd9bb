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

"""Property tests: every valid SLO gives a QEMU-valid, reversible spec."""

import dataclasses
import fractions
import math

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from iosched.cinder_qos import translate
from iosched.contract import qos_keys
from iosched.contract import slo

SETTINGS = settings(max_examples=300, deadline=None, database=None)

_decimals = st.decimals(min_value='0.05', max_value='100000', places=3,
                        allow_nan=False, allow_infinity=False)


@st.composite
def slos(draw):
    """Valid SLOs over the whole syntax: IOPS or bandwidth, every stat."""
    ref_io = draw(st.sampled_from([512, 4096, 10000, 16384, 65536, 2 ** 20]))
    if draw(st.booleans()):
        bps = float(draw(_decimals) * 1000)
        iops = bps / ref_io
    else:
        bps, iops = None, float(draw(_decimals))
    latency = float(draw(_decimals))
    stat = draw(st.sampled_from(qos_keys.LATENCY_STATS))
    need = slo.STAT_MIN_SAMPLES.get(stat, 0)
    # A window long enough for the latency and for the statistic.
    window = max(float(draw(st.sampled_from(['0.25', '1', '2', '10']))),
                 math.ceil(latency) / 1000, math.ceil(need / iops))
    return slo.SLO(
        min_iops=iops, latency_ms=latency, latency_stat=stat,
        ref_io_bytes=ref_io, min_bytes_sec=bps,
        expected_qd=draw(st.none() | st.integers(1, 1024)),
        window_s=window,
        tolerance=draw(st.sampled_from([0, 0.01, 0.05, 0.5])),
        slo_class=draw(st.none() | st.sampled_from(qos_keys.CLASSES)))


_headroom = st.sampled_from([1, 1.1, 1.25, 1.5, 2, 3.7, 10])
_threshold = st.sampled_from([0.5, 16, 16.0, 100])


@SETTINGS
@given(slos(), _headroom, st.none() | st.integers(1, 4096), _threshold)
def test_translate_is_always_qemu_valid(s, headroom, qd, threshold):
    specs = translate.translate(s, headroom=headroom, expected_qd=qd,
                                latency_class_threshold=threshold)
    assert translate.check(specs) == []
    assert set(specs) <= (set(qos_keys.FRONTEND_KEYS)
                          | set(qos_keys.IOSCHED_KEYS))


@SETTINGS
@given(slos(), _headroom, _threshold)
def test_ceiling_never_below_b_or_little(s, headroom, threshold):
    d = translate.derive(s, headroom=headroom,
                         latency_class_threshold=threshold)
    assert d.total_iops_sec >= s.min_iops * headroom * (1 - 1e-12)
    # exact: the derivation works in fractions, so compare in fractions
    # (100000 * 1.1 is 110000.00000000001 in floats)
    assert d.total_iops_sec >= d.little_iops * fractions.Fraction(
        str(headroom))
    # ... and at most one operation above h * max(B, N/L).
    assert d.total_iops_sec < headroom * max(s.min_iops,
                                             float(d.little_iops)) + 1 + 1e-6


@SETTINGS
@given(slos(), _threshold)
def test_round_trip(s, threshold):
    specs = translate.translate(s, latency_class_threshold=threshold)
    back = slo.SLO.from_specs(specs)
    assert back == dataclasses.replace(s, slo_class=specs[qos_keys.CLASS])
    assert translate.translate(back) == translate.translate(
        dataclasses.replace(s, slo_class=specs[qos_keys.CLASS]))


@SETTINGS
@given(slos())
def test_text_round_trip(s):
    assert slo.parse(s.to_text()) == s
