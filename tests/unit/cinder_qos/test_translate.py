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

"""Table tests of iosched.cinder_qos.translate: translate(), derive(),
consumer().
"""

import dataclasses

import pytest

from iosched.cinder_qos import translate
from iosched.contract import qos_keys
from iosched.contract import slo

# The Flubber paper's five SLOs (Table 1) with N = sysbench threads, h = 1.5,
# S = 16 KiB. Hand-computed (digest 002 section 4.3):
#   seq read   max(1000, 16/0.080 = 200)   * 1.5 = 1500, B*L = 80  -> tput
#   seq write  max(1200, 16/0.150 = 106.7) * 1.5 = 1800, B*L = 180 -> tput
#   rand read  max(120,  8/0.060 = 133.3)  * 1.5 = 200,  B*L = 7.2 -> lat
#   rand write max(600,  8/0.100 = 80)     * 1.5 = 900,  B*L = 60  -> tput
#   rand r/w   max(100,  8/0.060 = 133.3)  * 1.5 = 200,  B*L = 6   -> lat
PAPER = [
    ('seq_read', '1000iops,80ms', 16, '1500', '1500', 'throughput'),
    ('seq_write', '1200iops,150ms', 16, '1800', '1800', 'throughput'),
    ('rand_read', '120iops,60ms', 8, '200', None, 'latency'),
    ('rand_write', '600iops,100ms', 8, '900', '900', 'throughput'),
    ('rand_rw', '100iops,60ms', 8, '200', None, 'latency'),
]


def _front(specs):
    return {k: v for k, v in specs.items() if k in qos_keys.FRONTEND_KEYS}


@pytest.mark.parametrize('text,qd,total,burst,klass',
                         [p[1:] for p in PAPER], ids=[p[0] for p in PAPER])
def test_paper_slos(text, qd, total, burst, klass):
    specs = translate.translate(slo.parse(text), headroom=1.5,
                                expected_qd=qd)
    want = {'total_iops_sec': total, 'size_iops_sec': '16384'}
    if burst:
        want['total_iops_sec_max'] = burst
    assert _front(specs) == want
    assert specs[qos_keys.CLASS] == klass
    assert specs[qos_keys.EXPECTED_QD] == str(qd)
    assert translate.check(specs) == []


@pytest.mark.parametrize('text,qd', [(p[1], p[2]) for p in PAPER],
                         ids=[p[0] for p in PAPER])
def test_paper_slos_qd_in_slo_text_is_the_same(text, qd):
    by_arg = translate.translate(slo.parse(text), expected_qd=qd)
    by_text = translate.translate(slo.parse('%s,qd=%d' % (text, qd)))
    assert by_arg == by_text


# Without N the default 16 applies: the latency SLOs get a looser ceiling.
@pytest.mark.parametrize('text,total', [
    ('1000iops,80ms', '1500'),      # 16/0.08 = 200 < 1000
    ('120iops,60ms', '400'),        # 1.5 * 16/0.06 = 400
    ('100iops,60ms', '400'),
    ('600iops,100ms', '900'),       # 16/0.1 = 160 < 600
    ('500iops,10ms,p99', '2400'),   # 1.5 * 16/0.01 = 2400
])
def test_default_expected_qd(text, total):
    specs = translate.translate(slo.parse(text))
    assert specs['total_iops_sec'] == total
    assert qos_keys.EXPECTED_QD not in specs


def test_all_keys_of_a_latency_slo():
    specs = translate.translate(slo.parse('500iops,10ms,p99'))
    assert specs == {
        'total_iops_sec': '2400', 'size_iops_sec': '16384',
        'iosched:min_iops': '500', 'iosched:latency_ms': '10',
        'iosched:latency_stat': 'p99', 'iosched:ref_io_bytes': '16384',
        'iosched:class': 'latency', 'iosched:window_s': '1',
        'iosched:tolerance': '0.05'}


def test_bandwidth_slo_keeps_bytes_and_counts_ops_of_ref_io():
    specs = translate.translate(slo.parse('40MB/s,20ms'))
    # B = 40e6 / 16384 = 2441.40625 > 16/0.02 = 800; ceil(1.5 * B) = 3663
    assert specs['total_iops_sec'] == '3663'
    assert specs['total_iops_sec_max'] == '3663'    # B*L = 48.8 >= 16
    assert specs[qos_keys.MIN_IOPS] == '2441.40625'
    assert specs[qos_keys.MIN_BYTES_SEC] == '40000000'
    assert 'total_bytes_sec' not in specs


def test_size_iops_sec_is_ref_io():
    specs = translate.translate(slo.parse('500iops,10ms,ref_io=4KiB'))
    assert specs['size_iops_sec'] == '4096'
    assert specs[qos_keys.REF_IO_BYTES] == '4096'


@pytest.mark.parametrize('headroom,total', [
    (1.0, '1000'), (1.1, '1100'), (1.5, '1500'), (2, '2000'), (1.23, '1230'),
])
def test_headroom_is_exact(headroom, total):
    # 1.1 * 1000 is 1100.0000000000002 in floats; the ceiling must be 1100.
    specs = translate.translate(slo.parse('1000iops,80ms'), headroom=headroom)
    assert specs['total_iops_sec'] == total


def test_ceiling_rounds_up():
    # 1.5 * 16 / 0.007 = 3428.57...
    specs = translate.translate(slo.parse('10iops,7ms'))
    assert specs['total_iops_sec'] == '3429'


def test_argument_qd_overrides_slo_qd():
    d = translate.derive(slo.parse('120iops,60ms,qd=4'), expected_qd=8)
    assert (d.expected_qd, d.qd_source, d.total_iops_sec) == (8, 'argument',
                                                              200)


def test_default_expected_qd_argument():
    d = translate.derive(slo.parse('120iops,60ms'), default_expected_qd=8)
    assert (d.expected_qd, d.qd_source, d.total_iops_sec) == (8, 'default',
                                                              200)
    assert qos_keys.EXPECTED_QD not in translate.specs_of(d)


@pytest.mark.parametrize('text,threshold,klass', [
    ('100iops,159ms', 16, 'latency'),        # B*L = 15.9
    ('100iops,160ms', 16, 'throughput'),     # B*L = 16: not below
    ('120iops,60ms', 5, 'throughput'),       # B*L = 7.2
    ('1000iops,80ms', 100, 'latency'),       # B*L = 80
    ('1000iops,80ms,class=latency', 16, 'latency'),
    ('5iops,10ms,class=throughput', 16, 'throughput'),
])
def test_class(text, threshold, klass):
    specs = translate.translate(slo.parse(text),
                                latency_class_threshold=threshold)
    assert specs[qos_keys.CLASS] == klass
    assert ('total_iops_sec_max' in specs) == (klass == 'throughput')


def test_never_mixes_total_with_read_write():
    for text in ('1000iops,80ms', '120iops,60ms', '40MB/s,20ms'):
        specs = translate.translate(slo.parse(text))
        assert not any(k.startswith(('read_', 'write_')) for k in specs)


@pytest.mark.parametrize('text', [p[1] for p in PAPER] + [
    '500iops,10ms,p99', '40MB/s,20ms', '5iops,10ms,class=throughput',
    '0.5iops,10ms', '4MiB/s,5ms,ref_io=4KiB,qd=32,window=2s,tolerance=1%'])
def test_emits_only_frontend_and_iosched_keys(text):
    specs = translate.translate(slo.parse(text))
    allowed = set(qos_keys.FRONTEND_KEYS) | set(qos_keys.IOSCHED_KEYS)
    assert set(specs) <= allowed
    assert all(isinstance(v, str) for v in specs.values())
    assert set(qos_keys.REQUIRED_IOSCHED_KEYS) <= set(specs)


@pytest.mark.parametrize('text', [p[1] for p in PAPER] + [
    '500iops,10ms,p99', '40MB/s,20ms', '120iops,60ms,qd=8,class=throughput',
    '0.5iops,10ms', '4MiB/s,5ms,ref_io=4KiB,qd=32,window=2s,tolerance=1%',
    '3KB/s,0.05ms,ref_io=1000,stat=max', '7iops,1.1s,window=1.1s'])
def test_round_trip_parse_translate_from_specs(text):
    original = slo.parse(text)
    specs = translate.translate(original)
    back = slo.SLO.from_specs(specs)
    # from_specs returns the SLO with its class resolved.
    assert back == dataclasses.replace(original,
                                       slo_class=specs[qos_keys.CLASS])
    assert translate.translate(back) == specs


def test_consumer():
    assert translate.consumer() == 'front-end'
    assert translate.consumer() in qos_keys.CONSUMERS


@pytest.mark.parametrize('kwargs,needle', [
    (dict(headroom=0.9), "headroom '0.9': must be at least 1.0"),
    (dict(headroom=float('inf')), "headroom 'inf'"),
    (dict(headroom=float('nan')), "headroom 'nan'"),
    (dict(expected_qd=0), "qd '0': must be at least 1"),
    (dict(default_expected_qd=-1), "default_expected_qd '-1'"),
    (dict(latency_class_threshold=0), 'latency_class_threshold'),
])
def test_derive_rejects(kwargs, needle):
    with pytest.raises(slo.SLOError) as ctx:
        translate.derive(slo.parse('120iops,60ms'), **kwargs)
    assert needle in str(ctx.value)


def test_ceiling_above_qemu_limit_is_rejected():
    with pytest.raises(slo.SLOError) as ctx:
        translate.translate(slo.parse('1000000000000000iops,10ms'))
    assert "above QEMU's limit" in str(ctx.value)


def test_translate_is_pure():
    s = slo.parse('120iops,60ms')
    assert translate.translate(s) == translate.translate(s)
    assert s == slo.parse('120iops,60ms')
