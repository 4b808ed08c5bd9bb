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
"""Counters, I/O event streams, determinism and run invariants."""

import hypothesis
from hypothesis import strategies as st
import pytest

from iosched.simulator import sched_base
from iosched.simulator import spec
from tests.unit.simulator import builders as b


def _busy_host(seed):
    h = b.make_host(pcpus=2, seed=seed)
    b.add(h, 'rr', spec.RequestResponse(300, 150, burst_jitter=1.0),
          spec.Idle())
    b.add(h, 'disk', spec.DiskClosedLoop(outstanding=3, write_ratio=0.3))
    b.add(h, 'mix', spec.Mixed(0.4, rate_per_s=100, burst_jitter=0.5))
    b.add(h, 'hog', spec.CpuBound(), spec.CpuBound())
    h.set_vcpu_slice('rr', 0, 500)
    h.set_vcpu_weight('hog', 1, 300)
    h.set_disk_iotune('disk', 'vda', {'total_iops_sec': 2000})
    return h


def _snapshot(h):
    out = []
    for u in h.vm_uuids():
        vcpus = h.vcpu_count(u)
        out.append((u, [h.vcpu_counters(u, i) for i in range(vcpus)],
                    [h.drain_io_events(u, i) for i in range(vcpus)],
                    h.disk_counters(u, 'vda'), h.request_latencies_us(u),
                    h.disk_latencies_us(u, 'vda')))
    return out


def test_same_seed_same_run_other_seed_differs():
    runs = {}
    for seed in (7, 7, 8):
        h = _busy_host(seed)
        h.run_until(b.SEC // 2)
        runs.setdefault(seed, []).append(_snapshot(h))
    assert runs[7][0] == runs[7][1]
    assert runs[7][0] != runs[8][0]


def test_adding_a_vm_keeps_other_vms_random_streams():
    def arrivals(extra):
        h = b.make_host(pcpus=4)
        b.add(h, 'rr', spec.RequestResponse(300, 10))
        if extra:
            b.add(h, 'other', spec.RequestResponse(500, 10))
        h.run_until(b.SEC)
        return h.drain_io_events('rr', 0)
    assert arrivals(False) == arrivals(True)


def test_counters_are_monotonic_and_consistent():
    h = _busy_host(1)
    prev = None
    for step in range(1, 101):
        h.run_until(step * 5000)
        snap = {}
        for u in h.vm_uuids():
            for i in range(h.vcpu_count(u)):
                c = h.vcpu_counters(u, i)
                assert c.run_us + c.wait_us <= h.now_us
                snap[u, i] = (c.run_us, c.wait_us, c.wakeups, c.switches)
            d = h.disk_counters(u, 'vda')
            snap[u] = (d.rd_reqs, d.wr_reqs, d.rd_bytes, d.wr_bytes,
                       d.total_time_us)
        if prev is not None:
            for key, values in snap.items():
                assert all(x >= y for x, y in zip(values, prev[key])), key
        prev = snap
    assert sum(h.cpu_run_us(u) for u in h.vm_uuids()) <= 2 * h.now_us
    assert h.vcpu_counters('rr', 1) == spec.VcpuCounters(0, 0, 0, 0, None)


def test_drain_io_events_returns_each_event_once():
    h = b.make_host(pcpus=2)
    b.add(h, 'rr', spec.RequestResponse(1000, 50))
    b.add(h, 'd', spec.DiskClosedLoop(outstanding=2))
    seen = {'rr': [], 'd': []}
    for step in range(1, 11):
        h.run_until(step * 100000)
        for u in seen:
            batch = h.drain_io_events(u, 0)
            assert batch == sorted(batch)
            assert all((step - 1) * 100000 <= t <= step * 100000
                       for t in batch)
            seen[u] += batch
        assert h.drain_io_events('rr', 0) == []
    # one event per disk completion, one per request arrival
    assert len(seen['d']) == h.disk_counters('d', 'vda').rd_reqs
    assert seen['d'] == h.disk_completions_us('d', 'vda')
    done = len(h.request_latencies_us('rr'))
    assert done <= len(seen['rr']) <= done + 5
    assert len(seen['rr']) == pytest.approx(1000, rel=0.1)


def test_io_event_buffer_is_bounded(monkeypatch):
    monkeypatch.setattr(sched_base, 'IO_EVENTS_CAP', 10)
    h = b.make_host()
    b.add(h, 'rr', spec.RequestResponse(1000, 10))
    h.run_until(b.SEC)
    assert len(h.drain_io_events('rr', 0)) == 10
    assert h.io_events_dropped('rr', 0) == pytest.approx(990, rel=0.1)


def test_request_latency_windows():
    h = b.make_host()
    b.add(h, 'rr', spec.RequestResponse(100, 100))
    h.run_until(2 * b.SEC)
    every = h.request_latencies_us('rr')
    done = h.request_completions_us('rr')
    late = h.request_latencies_us('rr', since_us=b.SEC)
    assert late == every[len(every) - len(late):]
    assert all(t >= b.SEC for t in done[len(done) - len(late):])
    assert min(every) == 102            # burst + switch cost, idle host


WORKLOADS = st.one_of(
    st.just(spec.CpuBound()), st.just(spec.Idle()),
    st.builds(spec.RequestResponse, st.floats(0, 2000), st.integers(1, 800),
              st.floats(0, 1)),
    st.builds(spec.DiskClosedLoop, st.integers(1, 8),
              cpu_per_io_us=st.integers(1, 200),
              write_ratio=st.floats(0, 1)),
    st.builds(spec.Mixed, st.floats(0.01, 1), st.integers(100, 20000),
              st.floats(0, 500)))
KNOBS = st.one_of(
    st.tuples(st.just('slice'), st.integers(100, 100000)),
    st.tuples(st.just('weight'), st.integers(1, 10000)),
    st.tuples(st.just('pin'), st.one_of(
        st.none(), st.lists(st.integers(0, 2), min_size=1, max_size=3))),
    st.tuples(st.just('iotune'), st.sampled_from(
        [{}, {'total_iops_sec': 300}, {'read_bytes_sec': 10 ** 6,
                                       'size_iops_sec': 8192}])),
    st.tuples(st.just('remove'), st.none()))


def _check_run_queues(h):
    sched = h.sched
    waiting = 0
    for p in sched.cpus:
        assert p.sum_w == sum(e.lw for e in p.queue)
        assert p.sum_wv == sum(e.lw * e.v for e in p.queue)
        for e in p.queue:
            assert e.on_rq and not e.running and e.cpu is p and e.alive
            assert e.allows(p.id) and e.wl.work_left > 0
        if p.curr is not None:
            e = p.curr
            assert e.on_rq and e.running and e.cpu is p and e.allows(p.id)
            assert p.ev_time >= h.now_us
        waiting += len(p.queue)
    assert waiting == sched.nr_waiting
    for u in h.vm_uuids():
        for e in h._vm(u).ents:
            assert e.on_rq == (e.wl.work_left > 0)


@hypothesis.settings(max_examples=60, deadline=None, database=None)
@hypothesis.example(        # periodic balance racing a due CPU event
    pcpus=2, seed=227434, knobs=[(0, ('slice', 100))],
    vms=[[spec.Idle(), spec.DiskClosedLoop(1, cpu_per_io_us=75)],
         [spec.RequestResponse(1437.0, 212, 0.5),
          spec.RequestResponse(718.0, 212, 0.7421875)],
         [spec.DiskClosedLoop(1, cpu_per_io_us=79),
          spec.DiskClosedLoop(2, cpu_per_io_us=76)]])
@hypothesis.given(pcpus=st.integers(1, 3),
                  vms=st.lists(st.lists(WORKLOADS, min_size=1, max_size=3),
                               min_size=1, max_size=5),
                  knobs=st.lists(st.tuples(st.integers(0, 4), KNOBS),
                                 max_size=8),
                  seed=st.integers(0, 2 ** 32))
def test_random_scenarios_keep_invariants(pcpus, vms, knobs, seed):
    h = b.make_host(pcpus=pcpus, seed=seed, balance_us=2000)
    for i, wls in enumerate(vms):
        b.add(h, 'vm%d' % i, *wls)
    prev = {}
    for step, (target, (kind, value)) in enumerate(knobs + [(0, (None,
                                                                  None))]):
        h.run_until((step + 1) * 20000)
        uuids = h.vm_uuids()
        total = 0
        for u in uuids:
            for i in range(h.vcpu_count(u)):
                c = h.vcpu_counters(u, i)
                assert c.run_us + c.wait_us <= h.now_us
                assert c.pcpu is None or 0 <= c.pcpu < pcpus
                old = prev.get((u, i), (0, 0, 0, 0))
                now = (c.run_us, c.wait_us, c.wakeups, c.switches)
                assert all(x >= y for x, y in zip(now, old))
                prev[u, i] = now
                total += c.run_us
            d = h.disk_counters(u, 'vda')
            assert d.total_time_us == sum(h.disk_latencies_us(u, 'vda'))
            assert min(h.request_latencies_us(u), default=1) >= 1
        assert total <= pcpus * h.now_us
        _check_run_queues(h)
        if not uuids or kind is None:
            continue
        u = uuids[target % len(uuids)]
        if kind == 'slice':
            h.set_vcpu_slice(u, 0, value)
        elif kind == 'weight':
            h.set_vcpu_weight(u, 0, value)
        elif kind == 'pin':
            h.set_vcpu_affinity(u, 0, value and [x % pcpus for x in value])
        elif kind == 'iotune':
            h.set_disk_iotune(u, 'vda', value)
        else:
            h.remove_vm(u)
