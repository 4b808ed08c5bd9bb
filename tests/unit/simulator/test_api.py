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
"""The public API: the documented example, defaults, knobs, validation."""

import pytest

from iosched.contract import stats
from iosched.simulator import host
from iosched.simulator import spec
from tests.unit.simulator import builders as b


def test_documented_example():
    h = host.SimHost(spec.HostSpec(name='compute-1', pcpus=4,
                                   default_slice_us=3000, switch_cost_us=2,
                                   disk=spec.DiskSpec(service_us=100,
                                                      parallelism=8)),
                     seed=42)
    h.add_vm(spec.VmSpec(uuid='u1', name='instance-00000001',
                         vcpus=(spec.RequestResponse(rate_per_s=400,
                                                     burst_us=200),),
                         disks=('vda',)))
    h.add_vm(spec.VmSpec(uuid='u2', name='instance-00000002',
                         vcpus=[spec.CpuBound(), spec.DiskClosedLoop(2)]))
    h.run_until(1000000)
    assert h.now_us == 1000000
    assert h.vm_uuids() == ['u1', 'u2']
    assert h.spec.name == 'compute-1' and h.spec.pcpus == 4
    assert len(h.request_latencies_us('u1')) == pytest.approx(400, rel=0.15)
    assert h.cpu_run_us('u2') > 1000000
    assert isinstance(h.vcpu_counters('u1', 0), spec.VcpuCounters)
    assert isinstance(h.disk_counters('u2', 'vda'), spec.DiskCounters)
    h.remove_vm('u1')
    assert h.vm_uuids() == ['u2']
    h.run_until(1500000)


def test_knob_defaults_and_round_trip():
    h = b.make_host(pcpus=4, default_slice_us=2000)
    b.add(h, 'a', spec.CpuBound(), spec.Idle())
    assert h.get_vcpu_slice('a', 1) == 2000
    assert h.get_vcpu_weight('a', 1) == 100
    assert h.get_vcpu_affinity('a', 1) is None
    assert h.get_disk_iotune('a', 'vda') == {}
    h.set_vcpu_slice('a', 1, 100)
    h.set_vcpu_weight('a', 1, 10000)
    h.set_vcpu_affinity('a', 1, [3, 1, 3])
    h.set_disk_iotune('a', 'vda', {'read_iops_sec': 10, 'write_iops_sec': 0})
    assert h.get_vcpu_slice('a', 1) == 100
    assert h.get_vcpu_weight('a', 1) == 10000
    assert h.get_vcpu_affinity('a', 1) == (1, 3)
    assert h.get_disk_iotune('a', 'vda') == {'read_iops_sec': 10}
    assert h.get_vcpu_slice('a', 0) == 2000     # per vCPU


def _host_call_errors():
    return [
        (lambda h: h.vcpu_counters('nope', 0), "'nope'"),
        (lambda h: h.vcpu_counters('a', 2), 'vcpu: 2 out of range'),
        (lambda h: h.drain_io_events('a', -1), '0..1'),
        (lambda h: h.set_vcpu_slice('a', 0, 99), 'slice_us: 99'),
        (lambda h: h.set_vcpu_slice('a', 0, 100001), '100..100000'),
        (lambda h: h.set_vcpu_weight('a', 0, 0), 'weight: 0'),
        (lambda h: h.set_vcpu_weight('a', 0, 10001), '1..10000'),
        (lambda h: h.set_vcpu_weight('a', 0, 1.5), 'weight'),
        (lambda h: h.set_vcpu_affinity('a', 0, (4,)), 'pCPU id 4'),
        (lambda h: h.set_vcpu_affinity('a', 0, ()), 'affinity'),
        (lambda h: h.set_vcpu_affinity('a', 0, '0'), 'affinity'),
        (lambda h: h.disk_counters('a', 'vdz'), "'vdz'"),
        (lambda h: h.disk_latencies_us('a', 'sda'), 'vda'),
        (lambda h: h.remove_vm('zz'), "'zz'"),
        (lambda h: h.run_until(-5), 't_us: -5'),
        (lambda h: h.add_vm(spec.VmSpec(uuid='a', name='x')),
         'already on host'),
        (lambda h: h.add_vm('a'), 'VmSpec'),
    ]


@pytest.mark.parametrize('call,needle', _host_call_errors())
def test_host_rejects_bad_arguments(call, needle):
    h = b.make_host(pcpus=4)
    b.add(h, 'a', spec.CpuBound(), spec.Idle())
    with pytest.raises(ValueError, match=needle):
        call(h)


@pytest.mark.parametrize('build,needle', [
    (lambda: spec.RequestResponse(rate_per_s=-1, burst_us=10),
     'RequestResponse.rate_per_s: -1'),
    (lambda: spec.RequestResponse(rate_per_s=float('inf'), burst_us=10),
     'rate_per_s'),
    (lambda: spec.RequestResponse(rate_per_s=1, burst_us=0), 'burst_us'),
    (lambda: spec.RequestResponse(1, 10, burst_jitter=2), 'burst_jitter'),
    (lambda: spec.DiskClosedLoop(outstanding=0), 'outstanding'),
    (lambda: spec.DiskClosedLoop(1, io_bytes=0), 'io_bytes'),
    (lambda: spec.DiskClosedLoop(1, cpu_per_io_us=0), 'cpu_per_io_us'),
    (lambda: spec.DiskClosedLoop(1, write_ratio=1.5), 'write_ratio'),
    (lambda: spec.DiskClosedLoop(1, disk=''), 'DiskClosedLoop.disk'),
    (lambda: spec.Mixed(cpu_fraction=0), 'cpu_fraction'),
    (lambda: spec.Mixed(0.5, period_us=10), 'period_us'),
    (lambda: spec.DiskSpec(service_us=0), 'DiskSpec.service_us'),
    (lambda: spec.DiskSpec(parallelism=0), 'parallelism'),
    (lambda: spec.DiskSpec(per_byte_ns=-1.0), 'per_byte_ns'),
    (lambda: spec.DiskSpec(service_dist='normal'), 'service_dist'),
    (lambda: spec.HostSpec(name='', pcpus=1), 'HostSpec.name'),
    (lambda: spec.HostSpec(name='h', pcpus=0), 'HostSpec.pcpus: 0'),
    (lambda: spec.HostSpec(name='h', pcpus=2, default_slice_us=50),
     'default_slice_us'),
    (lambda: spec.HostSpec(name='h', pcpus=2, switch_cost_us=-1),
     'switch_cost_us'),
    (lambda: spec.HostSpec(name='h', pcpus=2, disk=4), 'HostSpec.disk'),
    (lambda: spec.VmSpec(uuid='', name='x'), 'VmSpec.uuid'),
    (lambda: spec.VmSpec(uuid='u', name='x', vcpus=()), 'VmSpec.vcpus'),
    (lambda: spec.VmSpec(uuid='u', name='x', vcpus=('cpu',)),
     r'VmSpec.vcpus\[0\]'),
    (lambda: spec.VmSpec(uuid='u', name='x', disks=('vda', 'vda')),
     'unique'),
    (lambda: spec.VmSpec(uuid='u', name='x',
                         vcpus=(spec.DiskClosedLoop(1, disk='vdb'),)),
     "'vdb' is not a disk"),
    (lambda: host.SimHost('compute-1'), 'HostSpec'),
])
def test_specs_validate_and_name_the_field(build, needle):
    with pytest.raises(ValueError, match=needle):
        build()


def test_request_alone_on_idle_host_costs_burst_plus_switch():
    h = b.make_host()
    b.add(h, 'rr', spec.RequestResponse(rate_per_s=50, burst_us=300))
    h.run_until(4 * b.SEC)
    lat = h.request_latencies_us('rr')
    assert len(lat) == pytest.approx(200, rel=0.2)
    assert stats.percentile(lat, 0.5) == 302
    c = h.vcpu_counters('rr', 0)
    assert c.run_us == 300 * len(lat)
    assert c.wakeups == c.switches


@pytest.mark.parametrize('fraction', [0.1, 0.3, 0.8])
def test_mixed_duty_cycle_and_requests(fraction):
    h = b.make_host()
    b.add(h, 'm', spec.Mixed(cpu_fraction=fraction, period_us=10000,
                             rate_per_s=100, burst_us=100))
    h.run_until(2 * b.SEC)
    expected = fraction * 2 * b.SEC + 100 * 2 * 100
    assert h.cpu_run_us('m') == pytest.approx(expected, rel=0.05)
    lat = h.request_latencies_us('m')
    assert len(lat) == pytest.approx(200, rel=0.2)
    assert len(h.drain_io_events('m', 0)) >= len(lat)
    # a request waits at most one batch chunk behind batch work
    assert max(lat) <= 100 + spec.MIXED_CHUNK_US + 2 * 100 + 10


def test_vcpus_are_independent_threads():
    h = b.make_host(pcpus=2)
    b.add(h, 'two', spec.CpuBound(), spec.CpuBound())
    h.run_until(b.SEC)
    assert {h.vcpu_counters('two', i).pcpu for i in (0, 1)} == {0, 1}
    assert h.cpu_run_us('two') == pytest.approx(2 * b.SEC, rel=0.001)


def test_forget_results_before_keeps_the_window_and_the_counters():
    h = b.make_host(pcpus=1)
    b.add(h, 'db', spec.DiskClosedLoop(outstanding=1))
    b.add(h, 'rr', spec.RequestResponse(rate_per_s=200, burst_us=100))
    h.run_until(2_000_000)
    disk_all = h.disk_latencies_us('db', 'vda')
    req_all = h.request_latencies_us('rr')
    counters = h.disk_counters('db', 'vda')
    late_disk = h.disk_latencies_us('db', 'vda', since_us=1_000_000)
    late_req = h.request_latencies_us('rr', since_us=1_000_000)
    assert len(late_disk) < len(disk_all) and len(late_req) < len(req_all)
    dropped = h.forget_results_before(1_000_000)
    assert dropped == (len(disk_all) - len(late_disk) +
                       len(req_all) - len(late_req))
    assert h.disk_latencies_us('db', 'vda') == late_disk
    assert h.request_latencies_us('rr') == late_req
    assert h.disk_counters('db', 'vda') == counters   # counters stay whole
    assert h.forget_results_before(1_000_000) == 0
