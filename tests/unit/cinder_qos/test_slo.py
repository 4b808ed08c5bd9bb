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

"""Table tests of iosched.contract.slo: parse(), SLO validation,
from_specs().
"""

import pytest

from iosched.contract import qos_keys
from iosched.contract import slo

# name, text, expected fields (others keep their defaults)
GOOD = [
    ('iops_ms_stat', '500iops,10ms,p99',
     dict(min_iops=500, latency_ms=10, latency_stat='p99')),
    ('bandwidth_default_ref', '40MB/s,20ms',
     dict(min_iops=40e6 / 16384, min_bytes_sec=40e6, latency_ms=20)),
    ('named_fields', 'throughput=500iops latency=10ms stat=p99 ref_io=16KiB',
     dict(min_iops=500, latency_ms=10, latency_stat='p99')),
    ('spaces_between_number_and_unit', '500 iops, 10 ms, p99, qd=8',
     dict(min_iops=500, latency_ms=10, latency_stat='p99', expected_qd=8)),
    ('spaces_around_equals', 'throughput = 500iops latency = 10 ms',
     dict(min_iops=500, latency_ms=10)),
    ('order_free', 'p95 10ms 500iops',
     dict(min_iops=500, latency_ms=10, latency_stat='p95')),
    ('case_insensitive', '500IOPS,10MS,P99',
     dict(min_iops=500, latency_ms=10, latency_stat='p99')),
    ('microseconds', '5000iops,500us', dict(min_iops=5000, latency_ms=0.5)),
    ('micro_sign', '5000iops,500µs', dict(min_iops=5000, latency_ms=0.5)),
    ('seconds_exact', '100iops,1.1s,window=2s',
     dict(min_iops=100, latency_ms=1100, window_s=2)),
    ('fractional_iops', '0.5iops,10ms', dict(min_iops=0.5, latency_ms=10)),
    ('kib_bandwidth_ref_io_4k', '4MiB/s,5ms,ref_io=4KiB',
     dict(min_iops=1024, min_bytes_sec=4 * 1024 ** 2, latency_ms=5,
          ref_io_bytes=4096)),
    ('gb_bandwidth', '1GB/s,5ms,ref_io=1MiB',
     dict(min_iops=1e9 / 2 ** 20, min_bytes_sec=1e9, latency_ms=5,
          ref_io_bytes=2 ** 20)),
    ('bare_size_is_ref_io', '500iops 10ms 8KiB',
     dict(min_iops=500, latency_ms=10, ref_io_bytes=8192)),
    ('ref_io_plain_bytes', '500iops 10ms ref_io=4096',
     dict(min_iops=500, latency_ms=10, ref_io_bytes=4096)),
    ('tolerance_percent', '500iops,10ms,tolerance=10%',
     dict(min_iops=500, latency_ms=10, tolerance=0.1)),
    ('tolerance_zero', '500iops,10ms,tolerance=0',
     dict(min_iops=500, latency_ms=10, tolerance=0)),
    ('window_ms', '500iops,10ms,window=250ms',
     dict(min_iops=500, latency_ms=10, window_s=0.25)),
    ('class_named', '500iops,10ms,class=throughput',
     dict(min_iops=500, latency_ms=10, slo_class='throughput')),
    ('class_bare', '500iops,10ms,latency',
     dict(min_iops=500, latency_ms=10, slo_class='latency')),
    ('stat_max', '500iops,10ms,max',
     dict(min_iops=500, latency_ms=10, latency_stat='max')),
    ('p999_long_enough', '120iops,60ms,p999,window=9s',
     dict(min_iops=120, latency_ms=60, latency_stat='p999', window_s=9)),
    ('latency_floor', '500iops,0.05ms', dict(min_iops=500, latency_ms=0.05)),
    ('paper_seq_read', '1000iops,80ms', dict(min_iops=1000, latency_ms=80)),
]


@pytest.mark.parametrize('text,want', [g[1:] for g in GOOD],
                         ids=[g[0] for g in GOOD])
def test_parse_good(text, want):
    got = slo.parse(text)
    assert got == slo.SLO(**want)


def test_parse_default_ref_io_argument():
    got = slo.parse('8MB/s,10ms', default_ref_io_bytes=4000)
    assert got.ref_io_bytes == 4000
    assert got.min_iops == 2000


def test_parse_defaults():
    got = slo.parse('500iops,10ms')
    assert got.latency_stat == 'mean'
    assert got.ref_io_bytes == 16384
    assert got.window_s == 1.0
    assert got.tolerance == 0.05
    assert got.expected_qd is None
    assert got.slo_class is None
    assert got.min_bytes_sec is None


# name, text, substrings the message must contain (field, then accepted)
BAD = [
    ('unknown_latency_unit', 'latency=10 parsecs, 500iops',
     ["latency '10 parsecs': unknown unit 'parsecs'; accepted: ms, us, s"]),
    ('unknown_bare_unit', '500iops, 10 parsecs',
     ["'10 parsecs'", "unknown unit 'parsecs'", 'accepted:', 'latency in ms',
      'throughput in iops']),
    ('unknown_throughput_unit', 'throughput=5furlongs/s 10ms',
     ["throughput '5furlongs/s'", "unknown unit 'furlongs/s'",
      'accepted: <n>iops, <n>B/s', '<n>GiB/s']),
    ('latency_without_unit', 'latency=10 500iops',
     ["latency '10': missing unit", 'accepted: ms, us, s']),
    ('throughput_without_unit', 'throughput=500 10ms',
     ["throughput '500': missing unit", 'accepted: <n>iops']),
    ('bare_number', '500iops 10',
     ["'10'", 'missing unit', 'accepted:']),
    ('zero_throughput', '0iops,10ms',
     ["throughput '0iops': must be greater than 0", 'accepted:']),
    ('negative_throughput', '-5iops,10ms',
     ["throughput '-5iops': must be greater than 0"]),
    ('negative_latency', '5iops,-10ms',
     ["latency '-10ms': must be greater than 0", 'ms, us, s']),
    ('zero_bandwidth', '0MB/s,10ms', ["throughput '0MB/s'"]),
    ('missing_throughput', '10ms,p99',
     ['missing throughput', 'accepted: <n>iops']),
    ('missing_latency', '500iops,p99',
     ['missing latency', 'accepted: <n>ms']),
    ('empty', '', ['missing throughput']),
    ('duplicate_latency', '500iops,10ms,20ms',
     ["duplicate field latency: '10ms' and '20ms'"]),
    ('duplicate_throughput_kinds', '500iops,40MB/s,10ms',
     ['duplicate field throughput']),
    ('duplicate_stat', '500iops,10ms,stat=p99,p95', ['duplicate field stat']),
    ('unknown_stat', '500iops,10ms,stat=p42',
     ["stat 'p42': unknown statistic",
      'accepted: mean, p50, p90, p95, p99, p999, max']),
    ('unknown_field', '500iops,10ms,speed=3',
     ["field 'speed': unknown field", 'accepted: throughput, latency']),
    ('unknown_word', '500iops,10ms,fast', ["'fast'", 'accepted:']),
    ('empty_value', '500iops,latency=', ["latency '': empty value"]),
    ('latency_below_floor', '500iops,0.01ms',
     ['latency 0.01 ms', 'accepted: latency >= 0.05 ms']),
    ('window_shorter_than_latency', '500iops,2s',
     ['window 1 s is shorter than latency 2000 ms',
      'accepted: window >= latency']),
    ('p999_too_few_requests', '120iops,60ms,p999',
     ['stat p999', 'needs 1000', 'window=9s']),
    ('p99_too_few_requests', '50iops,10ms,p99', ['stat p99', 'needs 100']),
    ('qd_fraction', '500iops,10ms,qd=2.5',
     ["qd '2.5': not a whole number", 'accepted: an integer >= 1']),
    ('qd_zero', '500iops,10ms,qd=0', ["qd '0': must be at least 1"]),
    ('ref_io_fraction', '500iops,10ms,ref_io=0.3KiB',
     ["ref_io '0.3KiB': not a whole number of bytes", 'KiB']),
    ('ref_io_unit', '500iops,10ms,ref_io=3GiB',
     ["ref_io '3GiB': unknown unit 'GiB'", 'accepted: B, KB, KiB, MB, MiB']),
    ('ref_io_too_small', '500iops,10ms,ref_io=100', ['ref_io_bytes 100',
                                                     'accepted: 512..']),
    ('tolerance_one', '500iops,10ms,tolerance=1',
     ["tolerance '1': out of range", 'accepted: a fraction in [0, 1)']),
    ('tolerance_word', '500iops,10ms,tolerance=lots',
     ["tolerance 'lots': not a number"]),
    ('window_no_unit', '500iops,10ms,window=2',
     ["window '2': missing unit", 'ms, us, s']),
    ('unknown_class', '500iops,10ms,class=besteffort',
     ["class 'besteffort': unknown class", 'accepted: latency, throughput']),
    ('exponent_not_accepted', '5e2iops,10ms', ["'5e2iops'"]),
]


@pytest.mark.parametrize('text,needles', [b[1:] for b in BAD],
                         ids=[b[0] for b in BAD])
def test_parse_bad(text, needles):
    with pytest.raises(slo.SLOError) as ctx:
        slo.parse(text)
    for needle in needles:
        assert needle in str(ctx.value)


def test_slo_error_is_value_error():
    assert issubclass(slo.SLOError, ValueError)


@pytest.mark.parametrize('kwargs,needle', [
    (dict(min_iops=0, latency_ms=10), 'throughput 0 IOPS'),
    (dict(min_iops=float('nan'), latency_ms=10), 'not a finite number'),
    (dict(min_iops='5', latency_ms=10), 'not a number'),
    (dict(min_iops=True, latency_ms=10), 'not a number'),
    (dict(min_iops=5, latency_ms=10, ref_io_bytes=4096.5), 'whole number'),
    (dict(min_iops=5, latency_ms=10, expected_qd=0), 'expected_qd 0'),
    (dict(min_iops=5, latency_ms=10, min_bytes_sec=1000), 'disagree'),
    (dict(min_iops=5, latency_ms=10, tolerance=-0.1), 'tolerance'),
    (dict(min_iops=5, latency_ms=10, latency_stat='avg'), "stat 'avg'"),
])
def test_slo_rejects(kwargs, needle):
    with pytest.raises(slo.SLOError) as ctx:
        slo.SLO(**kwargs)
    assert needle in str(ctx.value)


def test_slo_is_frozen_and_normalised():
    s = slo.SLO(min_iops=500, latency_ms=10, ref_io_bytes=4096.0)
    assert isinstance(s.min_iops, float)
    assert isinstance(s.ref_io_bytes, int)
    with pytest.raises(AttributeError):
        s.min_iops = 3


@pytest.mark.parametrize('text', [g[1] for g in GOOD],
                         ids=[g[0] for g in GOOD])
def test_to_text_round_trips(text):
    s = slo.parse(text)
    assert slo.parse(s.to_text()) == s


def test_from_specs_reads_strings_and_numbers():
    specs = {qos_keys.MIN_IOPS: '120', qos_keys.LATENCY_MS: 60,
             qos_keys.LATENCY_STAT: 'P99', qos_keys.REF_IO_BYTES: '4096',
             qos_keys.EXPECTED_QD: '8', qos_keys.WINDOW_S: '2',
             qos_keys.TOLERANCE: '0.1',
             qos_keys.CLASS: 'latency', 'total_iops_sec': '400',
             'consumer': 'front-end'}
    assert slo.SLO.from_specs(specs) == slo.SLO(
        min_iops=120, latency_ms=60, latency_stat='p99', ref_io_bytes=4096,
        expected_qd=8, window_s=2, tolerance=0.1, slo_class='latency')


@pytest.mark.parametrize('specs,needles', [
    ({qos_keys.LATENCY_MS: '10'}, ['lacks iosched:min_iops']),
    ({}, ['iosched:min_iops, iosched:latency_ms']),
    ({qos_keys.MIN_IOPS: 'lots', qos_keys.LATENCY_MS: '10'},
     ["iosched:min_iops 'lots': not a number"]),
    ({qos_keys.MIN_IOPS: '5', qos_keys.LATENCY_MS: '10',
      qos_keys.EXPECTED_QD: '1.5'},
     ["iosched:expected_qd '1.5': not a whole number"]),
    ({qos_keys.MIN_IOPS: '5', qos_keys.LATENCY_MS: '0'},
     ['QoS spec: latency 0 ms']),
    ({qos_keys.MIN_IOPS: '5', qos_keys.LATENCY_MS: '10',
      qos_keys.CLASS: 'gold'},
     ["class 'gold'"]),
])
def test_from_specs_rejects(specs, needles):
    with pytest.raises(slo.SLOError) as ctx:
        slo.SLO.from_specs(specs)
    for needle in needles:
        assert needle in str(ctx.value)
