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
"""The papers' workloads and the dom0-like backend, hand-computed cases.

Hosts have no context-switch cost and a fixed backend service time, so
every figure below is exact arithmetic on the model's path.
"""

import pytest

from iosched.simulator import host
from iosched.simulator import spec
from iosched.simulator import spec_paper
from tests.unit.simulator import builders as b

SEC = b.SEC


def make(pcpus=1, cpus=2, service_us=10, per_byte_ns=0.0, disk=None,
         seed=1):
    kw = {'disk': disk} if disk is not None else {}
    return host.SimHost(spec.HostSpec(
        name='h', pcpus=pcpus, switch_cost_us=0,
        backend=spec_paper.BackendSpec(cpus=cpus, service_us=service_us,
                                       per_byte_ns=per_byte_ns),
        **kw), seed=seed)


def source(h, uuid, vcpu=0, i=0):
    return h.workload_stats(uuid, vcpu)['sources'][i]


# -- ping ---------------------------------------------------------------------

# RTT = wire + backend(echo) + burst + backend(reply); a backend pass is
# service_us + nbytes * per_byte_ns / 1000.
@pytest.mark.parametrize('service, per_byte_ns, burst, wire, rtt', [
    (10, 0.0, 50, 100, 2 * 10 + 50 + 100),
    (0, 0.0, 20, 0, 20),
    (25, 0.0, 1, 1001, 2 * 25 + 1 + 1001),
    (10, 1000.0, 50, 100, 2 * (10 + 64) + 50 + 100),   # 64-byte echo
])
def test_ping_rtt_on_an_idle_host_is_exact(service, per_byte_ns, burst,
                                           wire, rtt):
    h = make(service_us=service, per_byte_ns=per_byte_ns)
    b.add(h, 'a', spec_paper.Ping(interval_us=10000, burst_us=burst,
                                  wire_us=wire, count=50))
    h.run_until(SEC)
    st = source(h, 'a')
    assert st['sent'] == st['received'] == 50
    assert set(st['rtt_us']) == {rtt}
    assert h.request_latencies_us('a') == st['rtt_us']
    # one I/O response event per echo reached the vCPU
    assert len(h.drain_io_events('a', 0)) == st['received']


def test_ping_count_and_random_phase():
    h = make()
    b.add(h, 'a', spec_paper.Ping(interval_us=10000, count=7))
    h.run_until(SEC)
    st = source(h, 'a')
    assert st['sent'] == st['received'] == 7
    ends = st['rtt_at_us']
    assert [y - x for x, y in zip(ends, ends[1:])] == [10000] * 6
    # the first echo leaves at a uniform phase in [0, interval)
    assert 0 <= ends[0] - st['rtt_us'][0] < 10000


def test_ping_poisson_mean_gap():
    h = make()
    b.add(h, 'a', spec_paper.Ping(interval_us=1000, mode='poisson'))
    h.run_until(10 * SEC)
    assert source(h, 'a')['sent'] == pytest.approx(10000, rel=0.05)


def test_pings_share_the_backend_fifo():
    # 1 backend server, 30 us each; two VMs pinged at the same instants
    # would queue, so RTTs differ from the idle figure for some echoes.
    h = make(cpus=1, service_us=30, pcpus=2)
    b.add(h, 'a', spec_paper.Ping(interval_us=1000, burst_us=10, wire_us=0))
    b.add(h, 'c', spec_paper.Ping(interval_us=1000, burst_us=10, wire_us=0))
    h.run_until(SEC)
    assert min(h.request_latencies_us('a')) >= 2 * 30 + 10
    assert h.backend_stats()['items'] >= 2 * 2 * 999


# -- streams ------------------------------------------------------------------

# TCP with window W on an idle host, no link limit: each segment's cycle is
# wire + backend(segment) + cpu + backend(ACK) = RTT; W segments per RTT
# while W * cpu < RTT (the guest CPU is not the bottleneck).
@pytest.mark.parametrize('window, expected', [
    (1, SEC // 1120),          # RTT = 1000 + 10 + 100 + 10
    (4, 4 * SEC // 1120),
    (20, SEC // 100),          # W * cpu > RTT: the guest CPU limits
])
def test_tcp_window_limits_throughput(window, expected):
    h = make()
    b.add(h, 'a', spec_paper.Stream(rate_bytes_per_s=1e12, segment_bytes=1000,
                                    window=window, cpu_per_segment_us=100,
                                    wire_us=1000))
    h.run_until(SEC)
    st = source(h, 'a')
    assert st['segments'] == pytest.approx(expected, abs=window + 1)
    assert st['bytes'] == 1000 * st['segments']
    assert st['drops'] == 0


def test_tcp_link_rate_limits_throughput():
    # 1000-byte segments at 1e6 B/s: one every 1000 us, whatever W
    h = make()
    b.add(h, 'a', spec_paper.Stream(rate_bytes_per_s=1e6, segment_bytes=1000,
                                    window=64, cpu_per_segment_us=10,
                                    wire_us=0))
    h.run_until(SEC)
    assert source(h, 'a')['segments'] == pytest.approx(1000, abs=2)


def test_udp_full_ring_drops():
    # sender: one 1000-byte segment every 50 us; guest: 100 us each. The
    # guest consumes one per 100 us; the rest beyond the ring is dropped.
    h = make()
    b.add(h, 'a', spec_paper.Stream(rate_bytes_per_s=1000 / 50e-6,
                                    segment_bytes=1000, mode='udp',
                                    ring_slots=16, cpu_per_segment_us=100,
                                    wire_us=1000))
    h.run_until(SEC)
    st = source(h, 'a')
    assert st['sent'] == SEC // 50 + 1
    # the first segment reaches the guest after wire_us / 2 + 10 us
    assert st['segments'] == pytest.approx((SEC - 500 - 10) // 100, abs=1)
    # at the end the ring is full; what is neither delivered nor dropped
    # is on the wire (500 us = 10 segments) or in the backend
    assert st['delivered'] - st['segments'] == 16
    assert 10 <= st['sent'] - st['delivered'] - st['drops'] <= 11
    assert st['max_ring_used'] == 16


def test_udp_below_capacity_drops_nothing_and_has_no_jitter():
    h = make()
    b.add(h, 'a', spec_paper.Stream(rate_bytes_per_s=1000 / 200e-6,
                                    segment_bytes=1000, mode='udp',
                                    cpu_per_segment_us=100, wire_us=100))
    h.run_until(SEC)
    st = source(h, 'a')
    assert st['drops'] == 0
    # one way: wire_us / 2 + backend + guest CPU
    assert st['mean_latency_us'] == 50 + 10 + 100
    assert st['jitter_us'] == 0


def test_tcp_ring_smaller_than_window_holds_in_backend():
    h = make()
    b.add(h, 'a', spec_paper.Stream(rate_bytes_per_s=1e12, segment_bytes=1000,
                                    window=32, ring_slots=4,
                                    cpu_per_segment_us=100, wire_us=0))
    h.run_until(SEC)
    st = source(h, 'a')
    assert st['drops'] == 0 and st['max_ring_used'] == 4
    assert st['segments'] == pytest.approx(SEC // 100, abs=33)


def test_udp_socket_buffer_overflows_when_the_app_vcpu_is_slow():
    # IRQ on vCPU 0 (50 us), application copy on vCPU 1 (200 us): the app
    # drains one per 200 us; the socket buffer overflows, the ring does not.
    h = make(pcpus=2)
    b.add(h, 'a', spec_paper.Stream(rate_bytes_per_s=1000 / 100e-6,
                                    segment_bytes=1000, mode='udp',
                                    cpu_per_segment_us=50, wire_us=0,
                                    app_vcpu=1, app_cpu_per_segment_us=200,
                                    sockbuf_segments=8),
          spec.IoVcpu())
    h.run_until(SEC)
    st = source(h, 'a')
    assert st['drops'] == 0
    assert st['sock_drops'] > 0
    assert st['segments'] == pytest.approx(SEC // 200, abs=10)
    assert h.workload_stats('a', 1)['app_items'] == st['segments']


@pytest.mark.parametrize('ack_at', ['irq', 'app'])
def test_tcp_with_an_app_stage_never_overflows(ack_at):
    h = make(pcpus=2)
    b.add(h, 'a', spec_paper.Stream(rate_bytes_per_s=1e12, segment_bytes=1000,
                                    window=64, cpu_per_segment_us=20,
                                    wire_us=100, app_vcpu=1,
                                    app_cpu_per_segment_us=100,
                                    sockbuf_segments=16, ack_at=ack_at),
          spec.IoVcpu())
    h.run_until(SEC)
    st = source(h, 'a')
    assert st['sock_drops'] == 0 and st['drops'] == 0
    assert st['segments'] == pytest.approx(SEC // 100, rel=0.02)


# -- tasks --------------------------------------------------------------------

def test_sysbench_run_time_is_the_work_on_an_idle_cpu():
    h = make()
    b.add(h, 'a', spec_paper.Sysbench(work_us=100000, runs=3))
    h.run_until(SEC)
    task = h.workload_stats('a', 0)['task']
    assert task['run_times_us'] == [100000] * 3
    assert task['run_ends_us'] == [100000, 200000, 300000]
    assert h.cpu_run_us('a') == 300000


@pytest.mark.parametrize('hogs', [1, 2, 3])
def test_sysbench_slows_by_the_number_of_runnable_vcpus(hogs):
    # EEVDF, equal weights, 1 pCPU: sysbench gets 1/(hogs + 1) of it.
    h = make()
    b.add(h, 'a', spec_paper.Sysbench(work_us=100000))
    for i in range(hogs):
        b.add(h, 'hog%d' % i, spec.CpuBound())
    h.run_until(4 * SEC)
    runs = h.workload_stats('a', 0)['task']['run_times_us']
    mean = sum(runs) / len(runs)
    assert mean == pytest.approx((hogs + 1) * 100000, rel=0.03)


def test_lookbusy_uses_its_fraction_of_an_idle_cpu():
    h = make()
    b.add(h, 'a', spec_paper.Lookbusy(0.4, period_us=100000))
    h.run_until(SEC)
    t0 = h.cpu_run_us('a')
    h.run_until(11 * SEC)
    assert h.cpu_run_us('a') - t0 == pytest.approx(0.4 * 10 * SEC,
                                                   abs=40000)
    assert h.workload_stats('a', 0)['task']['periods'] == 110


def test_lookbusy_gets_less_under_contention_without_carry_over():
    # 2 hogs + lookbusy 40 % on one pCPU: fair share 1/3 < 40 %, and what
    # it could not use in a period is lost.
    h = make()
    b.add(h, 'a', spec_paper.Lookbusy(0.4, period_us=100000))
    b.add(h, 'c', spec.CpuBound(), spec.CpuBound())
    h.run_until(10 * SEC)
    share = h.cpu_run_us('a') / (10 * SEC)
    assert 0.30 < share < 0.37


def test_dd_bandwidth_is_the_device_bandwidth_when_cpu_is_cheap():
    # device: 1 request at a time, exactly 1000 us each; 128 KiB requests
    disk = spec.DiskSpec(service_us=1000, parallelism=1,
                         service_dist='fixed')
    h = make(disk=disk)
    b.add(h, 'a', spec_paper.DdWriter(cpu_per_block_us=0.1, outstanding=4))
    h.run_until(SEC)
    task = h.workload_stats('a', 0)['task']
    assert task['completed'] == pytest.approx(1000, abs=2)
    assert task['bytes_done'] == 131072 * task['completed']
    assert h.disk_counters('a', 'vda').wr_bytes >= task['bytes_done']


def test_dd_bandwidth_is_cpu_bound_with_urandom_like_cost():
    # 128 blocks per request at 10 us each = 1280 us of CPU per request,
    # more than the device's 100 us: one request per 1280 us.
    disk = spec.DiskSpec(service_us=100, parallelism=1, service_dist='fixed')
    h = make(disk=disk)
    b.add(h, 'a', spec_paper.DdWriter(cpu_per_block_us=10.0, outstanding=4))
    h.run_until(SEC)
    task = h.workload_stats('a', 0)['task']
    assert task['completed'] == pytest.approx(SEC // 1280, abs=2)
    assert h.cpu_run_us('a') == SEC


def test_dd_write_behind_of_one_is_a_closed_loop():
    # outstanding 1: produce (128 us), backend, device 1000 us, backend,
    # completion IRQ 5 us, then the next one is submitted right away (it
    # was produced meanwhile): one request per 1000 + 2 * 10 + 5 us.
    disk = spec.DiskSpec(service_us=1000, parallelism=4,
                         service_dist='fixed')
    h = make(disk=disk)
    b.add(h, 'a', spec_paper.DdWriter(cpu_per_block_us=1.0, outstanding=1,
                                      irq_us=5))
    h.run_until(SEC)
    task = h.workload_stats('a', 0)['task']
    assert task['completed'] == pytest.approx(SEC // 1025, abs=2)
    assert len(h.drain_io_events('a', 0)) == task['completed']


def test_dd_completions_on_another_vcpu():
    # vTurbo-like: the writer on vCPU 1, its completion events on vCPU 0
    disk = spec.DiskSpec(service_us=1000, parallelism=4,
                         service_dist='fixed')
    h = make(pcpus=2, disk=disk)
    b.add(h, 'a', spec.IoVcpu(),
          spec_paper.DdWriter(cpu_per_block_us=1.0, outstanding=1, irq_us=5,
                              irq_vcpu=0))
    h.run_until(SEC)
    task = h.workload_stats('a', 1)['task']
    assert task['completed'] == pytest.approx(SEC // 1025, abs=2)
    assert len(h.drain_io_events('a', 0)) == task['completed']
    assert h.drain_io_events('a', 1) == []
    assert h.workload_stats('a', 0)['irq_items'] == task['completed']


# -- composition on one vCPU --------------------------------------------------

def test_ping_on_a_hog_vcpu_waits_at_most_one_chunk():
    h = make()
    b.add(h, 'a', spec.IoVcpu(sources=(spec_paper.Ping(interval_us=10000,
                                                       burst_us=50,
                                                       wire_us=100),),
                              task=spec.CpuBound(), irq_chunk_us=100))
    h.run_until(SEC)
    rtts = source(h, 'a')['rtt_us']
    assert len(rtts) == 100
    assert all(170 <= r < 170 + 100 for r in rtts)
    assert h.cpu_run_us('a') == SEC          # the vCPU never blocks


def test_pending_irq_goes_first_when_the_vcpu_is_dispatched():
    # Two hog vCPUs share a pCPU (EEVDF 3 ms slices); the pinged one also
    # hogs. A ping that arrives while it waits is served as soon as it is
    # dispatched, not after a task chunk: the RTT is the wait + 170 us.
    h = make()
    b.add(h, 'a', spec.IoVcpu(sources=(spec_paper.Ping(interval_us=7919,
                                                       burst_us=50,
                                                       wire_us=100),),
                              task=spec.CpuBound(), irq_chunk_us=100))
    b.add(h, 'c', spec.CpuBound())
    h.run_until(2 * SEC)
    rtts = source(h, 'a')['rtt_us']
    assert max(rtts) <= 170 + 3000 + 100
    assert min(rtts) >= 170


def test_ping_and_stream_on_one_vcpu():
    h = make()
    b.add(h, 'a', spec.IoVcpu(sources=(
        spec_paper.Ping(interval_us=10000, burst_us=20, wire_us=100),
        spec_paper.Stream(rate_bytes_per_s=1e12, segment_bytes=1000, window=4,
                          cpu_per_segment_us=100, wire_us=1000))))
    h.run_until(SEC)
    ping, stream = h.workload_stats('a', 0)['sources']
    assert ping['received'] == 100
    assert min(ping['rtt_us']) >= 140
    assert stream['segments'] > 3000
    assert len(h.drain_io_events('a', 0)) == (ping['received']
                                             + stream['delivered'])


def test_lookbusy_and_ping_on_one_vcpu_keep_the_duty_cycle():
    h = make()
    b.add(h, 'a', spec.IoVcpu(sources=(spec_paper.Ping(interval_us=10000,
                                                       burst_us=20),),
                              task=spec_paper.Lookbusy(0.4)))
    h.run_until(SEC)
    t0 = h.cpu_run_us('a')
    h.run_until(11 * SEC)
    # 40 % lookbusy + 100 echoes/s * 20 us
    assert h.cpu_run_us('a') - t0 == pytest.approx(
        10 * (0.4 * SEC + 100 * 20), abs=40000)


def test_removed_vm_stops_its_sources():
    h = make()
    b.add(h, 'a', spec.IoVcpu(sources=(
        spec_paper.Ping(interval_us=1000),
        spec_paper.Stream(rate_bytes_per_s=1e9, segment_bytes=1000)),
        task=spec.CpuBound()))
    h.run_until(SEC // 10)
    h.remove_vm('a')
    n = h.events_processed
    h.run_until(SEC)
    assert h.events_processed - n < 50


# -- results API, defaults, validation ----------------------------------------

def test_existing_workloads_do_not_touch_the_backend():
    h = b.make_host()
    b.add(h, 'a', spec.CpuBound(), spec.RequestResponse(100, 100),
          spec.DiskClosedLoop(2))
    h.run_until(SEC)
    assert h.backend_stats()['items'] == 0
    assert h.workload_stats('a', 0) == {'kind': 'CpuBound'}
    assert h.spec.backend == spec_paper.BackendSpec()


def test_exp_backend_service_has_the_configured_mean():
    h = host.SimHost(spec.HostSpec(
        name='h', pcpus=1, backend=spec_paper.BackendSpec(
            cpus=1, service_us=100, service_dist='exp')), seed=3)
    b.add(h, 'a', spec_paper.Ping(interval_us=2000, burst_us=1, wire_us=0))
    h.run_until(20 * SEC)
    bs = h.backend_stats()
    assert bs['busy_us'] / bs['items'] == pytest.approx(100, rel=0.05)


@pytest.mark.parametrize('make_spec, field', [
    (lambda: spec_paper.Ping(interval_us=0), 'Ping.interval_us'),
    (lambda: spec_paper.Ping(interval_us=10, mode='burst'), 'Ping.mode'),
    (lambda: spec_paper.Ping(interval_us=10, jitter=2), 'Ping.jitter'),
    (lambda: spec_paper.Stream(rate_bytes_per_s=0), 'Stream.rate_bytes_per_s'),
    (lambda: spec_paper.Stream(mode='sctp'), 'Stream.mode'),
    (lambda: spec_paper.Stream(ring_slots=0), 'Stream.ring_slots'),
    (lambda: spec_paper.Stream(ack_at='never'), 'Stream.ack_at'),
    (lambda: spec_paper.Lookbusy(0), 'Lookbusy.fraction'),
    (lambda: spec_paper.Lookbusy(1.5), 'Lookbusy.fraction'),
    (lambda: spec_paper.Lookbusy(0.5, period_us=10), 'Lookbusy.period_us'),
    (lambda: spec_paper.Sysbench(work_us=0), 'Sysbench.work_us'),
    (lambda: spec_paper.DdWriter(cpu_per_block_us=0),
     'DdWriter.cpu_per_block_us'),
    (lambda: spec_paper.DdWriter(1.0, request_bytes=512),
     'DdWriter.request_bytes'),
    (lambda: spec.IoVcpu(sources=(spec.CpuBound(),)), 'IoVcpu.sources[0]'),
    (lambda: spec.IoVcpu(task=spec.Idle()), 'IoVcpu.task'),
    (lambda: spec.IoVcpu(irq_chunk_us=0), 'IoVcpu.irq_chunk_us'),
    (lambda: spec_paper.BackendSpec(cpus=0), 'BackendSpec.cpus'),
    (lambda: spec_paper.BackendSpec(service_dist='gamma'),
     'BackendSpec.service_dist'),
    (lambda: spec.HostSpec(name='h', pcpus=1, backend=3), 'HostSpec.backend'),
    (lambda: spec.VmSpec(uuid='u', name='n',
                         vcpus=(spec_paper.DdWriter(1.0, disk='vdz'),)),
     'VmSpec.vcpus[0].disk'),
    (lambda: spec.VmSpec(uuid='u', name='n', vcpus=(spec.IoVcpu(
        task=spec_paper.DdWriter(1.0, disk='vdz')),)),
     'VmSpec.vcpus[0].task.disk'),
    (lambda: spec.VmSpec(uuid='u', name='n',
                         vcpus=(spec_paper.Stream(app_vcpu=0),)),
     'VmSpec.vcpus[0].app_vcpu'),
    (lambda: spec.VmSpec(uuid='u', name='n', vcpus=(
        spec.IoVcpu(sources=(spec_paper.Stream(app_vcpu=1),)),
        spec.CpuBound())),
     'VmSpec.vcpus[0].sources[0].app_vcpu'),
    (lambda: spec.VmSpec(uuid='u', name='n', vcpus=(
        spec.IoVcpu(), spec_paper.DdWriter(1.0, irq_vcpu=2))),
     'VmSpec.vcpus[1].irq_vcpu'),
    (lambda: spec_paper.DdWriter(1.0, irq_vcpu=-1), 'DdWriter.irq_vcpu'),
    (lambda: spec_paper.Stream(app_vcpu=-1), 'Stream.app_vcpu'),
])
def test_validation_names_the_field(make_spec, field):
    with pytest.raises(ValueError, match=r'^%s: ' % field.replace(
            '[', r'\[').replace(']', r'\]')):
        make_spec()
