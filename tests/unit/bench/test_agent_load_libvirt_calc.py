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
"""The pure parts of bench/agent_load_libvirt.py
(bench/agent_load_libvirt_calc.py): the mix's event rate, the request
rate, the least-squares line, the verdict; and which ticks count.
"""

import types

import pytest

from bench import agent_load
from bench import agent_load_libvirt as alv
from bench import agent_load_libvirt_calc as calc
from iosched.simulator import spec as sim_spec

RR = sim_spec.RequestResponse
DISK = sim_spec.DiskClosedLoop
CPU = sim_spec.CpuBound()
IDLE = sim_spec.Idle()


@pytest.mark.parametrize('workloads,disk,outstanding,want', [
    # agent_load's mix on its host: 50 loops share 8 x 1/100 us
    ((RR(100, 200), DISK(1), CPU, RR(20, 2000)), sim_spec.DiskSpec(), 50,
     [100.0, 1600.0, 0.0, 20.0]),
    # one loop alone: its own pace, 1 / (100 + 30 us)
    ((DISK(1),), sim_spec.DiskSpec(), 1, [1e6 / 130]),
    # two in flight: twice that; per-byte service time counts
    ((DISK(2, io_bytes=1000),), sim_spec.DiskSpec(per_byte_ns=100.0), 2,
     [2e6 / 230]),
    # a loop with 2 of 10 in flight gets 2/10 of the disk
    ((DISK(2),), sim_spec.DiskSpec(service_us=100, parallelism=4), 10,
     [4e4 * 2 / 10]),
    ((IDLE, CPU), sim_spec.DiskSpec(), 0, [0.0, 0.0]),
])
def test_mix_event_rates(workloads, disk, outstanding, want):
    assert calc.mix_event_rates(workloads, disk, outstanding) == \
        pytest.approx(want)


def test_mix_event_rates_unknown_workload():
    with pytest.raises(ValueError):
        calc.mix_event_rates((sim_spec.Mixed(cpu_fraction=0.5),),
                             sim_spec.DiskSpec(), 0)


@pytest.mark.parametrize('workloads,vms,want', [
    ((RR(100, 200), DISK(1), CPU, RR(20, 2000)), 50, 50),
    ((DISK(3), DISK(1)), 2, 8),
    ((CPU,), 10, 0),
])
def test_loops_outstanding(workloads, vms, want):
    assert calc.loops_outstanding(workloads, vms) == want


def test_agent_load_mix_target():
    # the figure the bench prints as the mix's bound: 430 per vCPU
    rates, bound = alv.mix_target()
    assert rates == pytest.approx([100.0, 1600.0, 0.0, 20.0])
    assert bound == pytest.approx(430.0)


@pytest.mark.parametrize('target,idle,per_request,want', [
    (400.0, 0.0, 1.0, 400.0),
    (400.0, 100.0, 1.0, 300.0),
    (400.0, 100.0, 2.0, 150.0),
    (400.0, None, 1.0, 400.0),
    (50.0, 80.0, 1.0, 0.0),        # idle alone is above the target
])
def test_rr_rate(target, idle, per_request, want):
    assert calc.rr_rate(target, idle, per_request) == pytest.approx(want)


@pytest.mark.parametrize('per_request', [0.0, -1.0])
def test_rr_rate_needs_events_per_request(per_request):
    with pytest.raises(ValueError):
        calc.rr_rate(400.0, 0.0, per_request)


@pytest.mark.parametrize('measured,idle,rate,want', [
    (500.0, 100.0, 400.0, 1.0),
    (900.0, 100.0, 400.0, 2.0),
    (300.0, None, 400.0, 0.75),
    (100.0, 100.0, 400.0, None),   # nothing above idle
    (50.0, 100.0, 400.0, None),
    (500.0, 100.0, 0.0, None),     # no requests
    (None, 100.0, 400.0, None),
])
def test_events_per_request(measured, idle, rate, want):
    got = calc.events_per_request(measured, idle, rate)
    assert got == (None if want is None else pytest.approx(want))


@pytest.mark.parametrize('xs,ys,fixed,slope', [
    ([2, 4, 8], [3.0, 4.0, 6.0], 2.0, 0.5),
    ([2, 2, 4, 4], [1.0, 3.0, 3.0, 5.0], 0.0, 1.0),    # noise averaged
    ([1, 2], [5.0, 5.0], 5.0, 0.0),
    ([1, 3], [4.0, 2.0], 5.0, -1.0),
])
def test_fit(xs, ys, fixed, slope):
    assert calc.fit(xs, ys) == (pytest.approx(fixed), pytest.approx(slope))


@pytest.mark.parametrize('xs,ys', [
    ([2], [1.0]),                  # one point
    ([2, 2, 2], [1.0, 2.0, 3.0]),  # one x
    ([1, 2], [1.0]),               # lengths differ
])
def test_fit_refuses(xs, ys):
    with pytest.raises(ValueError):
        calc.fit(xs, ys)


@pytest.mark.parametrize('pct,fixed,ratio,met,want', [
    (0.3, 4.0, 1.0, True, 'met (0.30 %)'),
    (0.5, None, None, True, 'met (0.50 %)'),
    (0.7, 4.0, 0.95, False, 'NOT met (measured: 0.70 %; fixed part 4.0 ms '
                            'per tick apart, the guests had 0.95x the '
                            'target events per vCPU)'),
    (0.7, None, None, False, 'NOT met (measured: 0.70 %)'),
    (None, None, None, None, 'not judged (no fit)'),
])
def test_verdict(pct, fixed, ratio, met, want):
    got_met, line = calc.verdict(pct, 0.5, fixed, ratio)
    assert got_met is met
    assert line == ('target %s <= 0.50 %% of a core: %s' % (calc.WHAT,
                                                             want))


def test_slope_as_pct_per_100_vcpus():
    # 0.05 ms per vCPU per 1-s tick: 5 ms per 100 vCPUs, 0.5 % of a core
    assert agent_load.pct_per_100(0.05 * 1000, 1) == pytest.approx(0.5)


def _snapshot(events, window_s):
    return types.SimpleNamespace(
        vcpus=tuple(types.SimpleNamespace(events=e) for e in events),
        window_s=window_s)


@pytest.mark.parametrize('snapshot,want', [
    (_snapshot([100, 300], 1.0), (200.0, 2)),
    (_snapshot([100, 300], 2.0), (100.0, 2)),
    (_snapshot([], 1.0), (None, 0)),       # the first tick: no window
    (_snapshot([5], 0.0), (None, 0)),
    (None, (None, 0)),
])
def test_io_events_per_vcpu_s(snapshot, want):
    assert agent_load.io_events_per_vcpu_s(snapshot) == want


def _recorder(rows):
    rec = alv.TickRecorder(types.SimpleNamespace(tick=lambda: None))
    rec.rows = [dict(zip(('phase', 'gen', 'events_per_vcpu_s', 'profiled'),
                         r)) for r in rows]
    return rec


@pytest.mark.parametrize('rows,phase,skip,want', [
    # a tick counts when the tick before it started in the same phase
    # (its window was all in it): the first of a phase does not
    ([('idle', 1, None, False), ('idle', 1, 5.0, False),
      ('idle', 1, 6.0, False), ('load', 2, 50.0, False),
      ('load', 2, 400.0, False), ('load', 2, 410.0, False)],
     'load', 0, [400.0, 410.0]),
    ([('idle', 1, None, False), ('idle', 1, 5.0, False),
      ('idle', 1, 6.0, False)], 'idle', 0, [5.0, 6.0]),
    # skip: the first valid ones left out (the clients starting)
    ([('load', 2, 1.0, False), ('load', 2, 2.0, False),
      ('load', 2, 3.0, False), ('load', 2, 4.0, False)], 'load', 1,
     [3.0, 4.0]),
    # profiled ticks and ticks without a window never count
    ([('load', 2, 1.0, False), ('load', 2, 2.0, True),
      ('load', 2, None, False), ('load', 2, 4.0, False)], 'load', 0,
     [4.0]),
    # the same label again after another phase: a new generation
    ([('probe', 1, 1.0, False), ('load', 2, 2.0, False),
      ('probe', 3, 3.0, False), ('probe', 3, 4.0, False)], 'probe', 0,
     [4.0]),
])
def test_valid_ticks(rows, phase, skip, want):
    got = _recorder(rows).valid(phase, skip)
    assert [r['events_per_vcpu_s'] for r in got] == want


def test_summarize_fits_every_counted_tick():
    # 1 ms fixed + 5 us per event; the counts' event rates differ
    counts = [{'vcpus': [2, 2], 'cpu_ms_per_tick': [3.0, 3.0],
               'events_per_tick': [400.0, 400.0],
               'events_per_vcpu_s': 200.0},
              {'vcpus': [4, 4], 'cpu_ms_per_tick': [5.0, 5.0],
               'events_per_tick': [800.0, 800.0],
               'events_per_vcpu_s': 200.0},
              {'vcpus': [8, 8], 'cpu_ms_per_tick': [9.0, 9.0],
               'events_per_tick': [1600.0, 1600.0],
               'events_per_vcpu_s': 200.0}]
    s = alv.summarize(counts, 400.0, {'vcpus': 200})
    assert s['fixed_ms_per_tick'] == pytest.approx(1.0)
    assert s['ms_per_vcpu_tick'] == pytest.approx(1.0)
    assert s['pct_core_per_100_vcpus'] == pytest.approx(10.0)
    # 1 + 1 * 200 ms a tick at 200 vCPUs: 10.05 % per 100
    assert s['pct_core_per_100_vcpus_at_sim_vcpus'] == pytest.approx(10.05)
    assert s['fixed_ms_per_tick_over_events'] == pytest.approx(1.0)
    assert s['us_per_event'] == pytest.approx(5.0)
    # at the target's 400 events per vCPU: 2 ms per vCPU, 20 %
    assert s['pct_core_per_100_vcpus_at_target_events'] == \
        pytest.approx(20.0)
    assert s['events_over_target'] == pytest.approx(0.5)
    assert s['met'] is False


@pytest.mark.parametrize('count,want', [
    ({'events_per_tick': [1.0, 2.0], 'cpu_ms_per_tick': [1, 1]},
     [1.0, 2.0]),
    # recorded before per-tick events were kept: the count's mean
    ({'events_per_vcpu_s': 300.0, 'guests': 4, 'window_s_mean': 1.5,
      'cpu_ms_per_tick': [1, 1, 1]}, [1800.0] * 3),
    ({'events_per_vcpu_s': 300.0, 'guests': 2,
      'cpu_ms_per_tick': [1]}, [600.0]),
])
def test_events_per_tick(count, want):
    assert alv.events_per_tick(count) == pytest.approx(want)


@pytest.mark.parametrize('driver,want', [
    (types.SimpleNamespace(_events={1: [1, 2], 2: [3]}, _runs={1: [4]}),
     (3, 1)),
    (types.SimpleNamespace(_events={}, _runs={}), (0, 0)),
    (types.SimpleNamespace(), (0, 0)),          # not the libvirt driver
])
def test_traced_lines(driver, want):
    assert alv.traced_lines(driver) == want
