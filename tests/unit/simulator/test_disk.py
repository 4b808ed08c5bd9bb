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
"""The shared disk device, QEMU-like throttling and disk counters."""

import pytest

from iosched.contract import stats
from iosched.simulator import spec
from iosched.simulator import throttle
from tests.unit.simulator import builders as b


def _disk_host(outstanding=4, io_bytes=4096, write_ratio=0.0, iotune=None,
               service_us=100, dist='exp', parallelism=8, pcpus=2):
    h = b.make_host(pcpus=pcpus, disk=spec.DiskSpec(
        service_us=service_us, parallelism=parallelism, service_dist=dist))
    b.add(h, 'd', spec.DiskClosedLoop(outstanding=outstanding,
                                      io_bytes=io_bytes, cpu_per_io_us=10,
                                      write_ratio=write_ratio))
    if iotune is not None:
        h.set_disk_iotune('d', 'vda', iotune)
    return h


def _iops(h, start, end):
    """Completions per second in [start, end) (runs the host to end)."""
    h.run_until(start)
    n0 = len(h.disk_latencies_us('d', 'vda'))
    h.run_until(end)
    return (len(h.disk_latencies_us('d', 'vda')) - n0) * b.SEC / (end - start)


@pytest.mark.parametrize('iotune,io_bytes,write_ratio,expected', [
    ({'total_iops_sec': 200}, 4096, 0.0, 200),
    ({'read_iops_sec': 150}, 4096, 0.0, 150),
    ({'write_iops_sec': 150}, 4096, 1.0, 150),
    ({'total_bytes_sec': 409600}, 4096, 0.5, 100),
    ({'read_bytes_sec': 409600}, 16384, 0.0, 25),
    # size_iops_sec: a request of x > S bytes counts as x / S operations
    ({'total_iops_sec': 200, 'size_iops_sec': 4096}, 4096, 0.0, 200),
    ({'total_iops_sec': 200, 'size_iops_sec': 4096}, 2048, 0.0, 200),
    ({'total_iops_sec': 200, 'size_iops_sec': 4096}, 16384, 0.0, 50),
    ({'total_iops_sec': 200, 'size_iops_sec': 8192}, 12288, 0.0, 133.3),
])
def test_throttle_caps_the_rate(iotune, io_bytes, write_ratio, expected):
    h = _disk_host(io_bytes=io_bytes, write_ratio=write_ratio, iotune=iotune)
    assert _iops(h, b.SEC, 3 * b.SEC) == pytest.approx(expected, rel=0.1)


def test_unthrottled_is_far_faster_and_other_direction_is_free():
    assert _iops(_disk_host(), 0, b.SEC) > 20 * 200
    # a read limit does not slow writes down
    h = _disk_host(write_ratio=1.0, iotune={'read_iops_sec': 100})
    assert _iops(h, 0, b.SEC) > 20 * 100


def test_burst_max_allows_an_initial_burst():
    h = _disk_host(iotune={'total_iops_sec': 100,
                           'total_iops_sec_max': 1000})
    first = _iops(h, 0, b.SEC // 2) / 2
    assert 1000 <= first <= 1000 + 100
    assert _iops(h, 2 * b.SEC, 4 * b.SEC) == pytest.approx(100, rel=0.1)
    # without *_max the bucket holds avg/10: levels 0..10 admit 11 ops at
    # once; plus the 4 submitted at add_vm before the iotune was set, plus
    # 100/s for 0.5 s
    h = _disk_host(iotune={'total_iops_sec': 100})
    assert _iops(h, 0, b.SEC // 2) / 2 == pytest.approx(4 + 11 + 50, abs=2)


def test_latency_includes_throttle_wait():
    h = _disk_host(outstanding=4, iotune={'total_iops_sec': 200})
    h.run_until(3 * b.SEC)
    lat = h.disk_latencies_us('d', 'vda', since_us=b.SEC)
    # 4 requests queue at 5 ms each: ~20 ms per request
    assert stats.percentile(lat, 0.5) == pytest.approx(20000, rel=0.1)
    c = h.disk_counters('d', 'vda')
    assert c.total_time_us == sum(h.disk_latencies_us('d', 'vda'))


def test_changing_iotune_resets_and_releases_waiting_requests():
    h = _disk_host(iotune={'total_iops_sec': '100'})
    assert h.get_disk_iotune('d', 'vda') == {'total_iops_sec': 100}
    assert _iops(h, b.SEC, 2 * b.SEC) == pytest.approx(100, rel=0.1)
    h.set_disk_iotune('d', 'vda', {'total_iops_sec': 0})
    assert h.get_disk_iotune('d', 'vda') == {}
    assert _iops(h, 2 * b.SEC, 3 * b.SEC) > 20 * 100


@pytest.mark.parametrize('outstanding,parallelism,iops,latency', [
    (4, 8, 4 * 1e6 / 1012, 1000),       # service + cpu + switch
    (16, 8, 8000, 2000),                # device-bound, FIFO wait
    (8, 2, 2000, 4000),
])
def test_device_parallelism_and_fifo(outstanding, parallelism, iops,
                                     latency):
    h = _disk_host(outstanding=outstanding, parallelism=parallelism,
                   service_us=1000, dist='fixed')
    assert _iops(h, b.SEC // 10, b.SEC + b.SEC // 10) == pytest.approx(
        iops, rel=0.02)
    lat = h.disk_latencies_us('d', 'vda', since_us=b.SEC // 10)
    assert stats.percentile(lat, 0.5) == pytest.approx(latency, rel=0.03)


def test_disk_counters_split_reads_and_writes():
    h = _disk_host(io_bytes=8192, write_ratio=0.25)
    h.run_until(b.SEC)
    c = h.disk_counters('d', 'vda')
    n = c.rd_reqs + c.wr_reqs
    assert n == len(h.disk_latencies_us('d', 'vda'))
    assert c.wr_reqs / n == pytest.approx(0.25, abs=0.02)
    assert c.rd_bytes == 8192 * c.rd_reqs and c.wr_bytes == 8192 * c.wr_reqs
    assert h.disk_counters('d', 'vda') == c         # no time passed


@pytest.mark.parametrize('iotune,needle', [
    ({'total_iops': 5}, "unknown key 'total_iops'"),
    ({'bogus': 1}, 'size_iops_sec'),            # lists accepted keys
    ({'total_iops_sec': -1}, 'total_iops_sec'),
    ({'read_bytes_sec': 'fast'}, 'read_bytes_sec'),
    ({'read_bytes_sec': 1.5}, 'read_bytes_sec'),
    ({'total_iops_sec': 10, 'read_iops_sec': 5}, 'cannot be combined'),
    ({'total_iops_sec_max': 10}, 'requires total_iops_sec'),
    ({'total_iops_sec': 10, 'total_iops_sec_max': 5},
     'total_iops_sec_max'),
    ({'total_iops_sec': 10, 'total_iops_sec_max_length': 5},
     'total_iops_sec_max_length'),
    ('total_iops_sec=5', 'dict'),
])
def test_iotune_validation(iotune, needle):
    h = _disk_host()
    with pytest.raises(ValueError, match=needle):
        h.set_disk_iotune('d', 'vda', iotune)
    assert h.get_disk_iotune('d', 'vda') == {}


def test_iotune_keys_are_the_libvirt_ones():
    for key in ('total_bytes_sec', 'read_iops_sec_max', 'size_iops_sec',
                'write_bytes_sec_max_length'):
        assert key in throttle.KEYS
    assert len(throttle.KEYS) == 19
