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
"""The eBPF tracer: its bytecode run by a test interpreter (bpf_emu), the
delay buckets it shares with contract.delay_hist, and what the agent
reads from the slots.
"""

import random

import pytest

from iosched.contract import delay_hist
from iosched.contract import isacs
from iosched.contract import stats
from iosched.host_agent.drivers.libvirt import bpf_tracer
from iosched.host_agent.drivers.libvirt import ebpf
from iosched.host_agent.drivers.libvirt import tracing
from tests.unit.host_agent.libvirt import bpf_emu

# delay ns, bucket
BUCKETS = [
    (0, 0), (1, 1), (31, 31), (32, 32), (33, 32), (34, 33), (63, 47),
    (64, 48), (1000, 111), (1023, 111), (1024, 112), (10_000, 163),
    (2 ** 35 - 1, 511), (2 ** 35, 511), (2 ** 40, 511), (-5, 0),
]


@pytest.mark.parametrize('ns,k', BUCKETS, ids=[str(b[0]) for b in BUCKETS])
def test_bucket(ns, k):
    assert delay_hist.bucket(ns) == k
    assert delay_hist.upper_ns(k) >= min(ns, 2 ** 35 - 1)


def test_buckets_are_contiguous_and_at_most_a_sixteenth_wide():
    lo = 0
    for k in range(delay_hist.BUCKETS):
        hi = delay_hist.upper_ns(k)
        assert delay_hist.bucket(lo) == delay_hist.bucket(hi) == k
        assert hi - lo + 1 <= max(1, lo / 16.0)
        lo = hi + 1
    assert lo == 2 ** 35


@pytest.mark.parametrize('ns', [d for d, _ in BUCKETS if d >= 0] + [
    random.Random(s).randrange(2 ** 36) for s in range(40)])
def test_the_kernel_bins_as_the_contract(ns):
    k = bpf_emu.Kernel()
    k.map_update(bpf_emu.TIDS_FD, b'\x07\0\0\0', b'\x02\0\0\0')
    k.wake(7, 1000)
    k.switch_in(7, 1000 + ns)
    base = 2 * bpf_tracer.SLOT_BYTES
    hist = [int.from_bytes(k.state[base + bpf_tracer.HIST_OFF + 8 * i:
                                   base + bpf_tracer.HIST_OFF + 8 * i + 8],
                           'little') for i in range(delay_hist.BUCKETS)]
    assert hist[delay_hist.bucket(ns)] == 1 and sum(hist) == 1


def test_quantile_is_the_buckets_top_never_below_the_exact():
    rng = random.Random(3)
    delays = [int(rng.lognormvariate(10, 1.5)) for _ in range(5000)]
    counts = [0] * delay_hist.BUCKETS
    for k, c in delay_hist.of_delays(delays):
        counts[k] += c
    for q in (0.5, 0.9, 0.99, 1.0):
        exact = stats.percentile(delays, q)
        got = delay_hist.quantile(counts, q)
        assert exact <= got <= exact * 1.0625
    assert delay_hist.quantile([0] * 4, 0.99) is None


# name, events in time order ('w': wake-up, 'r': switch-in, '|': a
# drain), delays per drain (ns)
PAIRS = [
    ('one wake, one run', 'w100 r130', [(30,)]),
    ('run before the wake is not its run', 'r90 w100 r150', [(50,)]),
    ('preempted then run again: first run counts', 'w100 r110 r120',
     [(10,)]),
    ('woken while running: the newest wake pairs', 'w100 w200 r250',
     [(50,)]),
    ('run at the very wake', 'w100 r100', [(0,)]),
    ('each run pairs once', 'w100 r150 w200 r260', [(50, 60)]),
    ('a pair across a drain is kept', 'w100 | r170', [(), (70,)]),
    ('no runs', 'w100 w200', [()]),
]


def _drive(kernel, tracer, tid, script):
    out = []
    for ev in script.split():
        if ev == '|':
            out.append(tracer.drain()[tid])
        elif ev[0] == 'w':
            kernel.wake(tid, int(ev[1:]))
        else:
            kernel.switch_in(tid, int(ev[1:]))
    out.append(tracer.drain()[tid])
    return out


@pytest.fixture
def emulated(monkeypatch):
    kernel = bpf_emu.Kernel()
    monkeypatch.setattr(ebpf, 'map_update', kernel.map_update)
    monkeypatch.setattr(ebpf, 'map_delete', kernel.map_delete)
    tracer = bpf_tracer.BpfTracer('/nonexistent', max_tids=8)
    tracer._tids_fd, tracer._mm = bpf_emu.TIDS_FD, kernel.state
    return kernel, tracer


@pytest.mark.parametrize('name,script,want', PAIRS, ids=[p[0] for p in PAIRS])
def test_kernel_pairs_as_run_delays(emulated, name, script, want):
    kernel, tracer = emulated
    tracer.watch([41, 42], [42])
    tracer.drain()                    # the first drain of a run tid
    got = _drive(kernel, tracer, 42, script)
    assert [w.delays for w in got] == [delay_hist.of_delays(d)
                                       for d in want]
    wakes = [int(e[1:]) for e in script.split() if e[0] == 'w']
    assert sum(w.count for w in got) == len(wakes)
    assert [t for w in got for t in w.times] == wakes
    if '|' not in script:             # one drain: as the text tracer
        runs = [int(e[1:]) for e in script.split() if e[0] == 'r']
        assert got[0].delays == delay_hist.of_delays(
            tracing.run_delays(wakes, runs))


def test_only_run_tids_get_delays_and_gone_tids_free_their_slot(emulated):
    kernel, tracer = emulated
    tracer.watch([41, 42], [42])
    tracer.drain()
    kernel.wake(41, 10)
    kernel.switch_in(41, 15)
    kernel.wake(99, 20)               # not watched
    got = tracer.drain()
    assert set(got) == {41, 42}
    assert (got[41].count, got[41].times, got[41].delays) == (1, [10], None)
    assert (got[42].count, got[42].delays) == (0, ())
    tracer.watch([42, 43], [42, 43])
    assert set(tracer.drain()) == {42, 43}
    assert len(kernel.tids) == 2 and len(tracer._free) == 6
    kernel.wake(43, 30)               # 41's old slot: counted from 0
    assert tracer.drain()[43].count == 1


def test_a_busy_thread_keeps_the_newest_times_for_eq1(emulated):
    kernel, tracer = emulated
    tracer.watch([42])
    times = [1000 * i + (i * i) % 7 for i in range(1, 501)]
    for t in times:
        kernel.wake(42, t)
    w = tracer.drain()[42]
    assert w.count == 500
    assert w.times == times[-(bpf_tracer.RING - 1):]
    # Eq. 1 over the tail: the figure over every time, to the last bit
    assert isacs.ema_gap(w.times, 0.9, 1e7, 1, w.count) == isacs.ema_gap(
        times, 0.9, 1e7, 1)


# name, entries j in [first, count), count read after the ring, want
TAIL = [
    ('all new, ring not wrapped', 0, 3, 3, [0, 1, 2]),
    ('only the new ones', 2, 5, 5, [2, 3, 4]),
    ('wrapped: the newest RING - 1', 0, 10, 10, [3, 4, 5, 6, 7, 8, 9]),
    ('wake-ups during the read: the slots they may overwrite are not '
     'trusted', 0, 9, 11, [4, 5, 6, 7, 8]),
    ('nothing new', 4, 4, 4, []),
]


@pytest.mark.parametrize('name,first,count,after,want', TAIL,
                         ids=[t[0] for t in TAIL])
def test_ring_tail(name, first, count, after, want):
    ring = [None] * 8
    for j in range(count):
        ring[j % 8] = j
    assert bpf_tracer.ring_tail(ring, first, count, after) == want


FORMAT = '''name: sched_switch
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;
\tfield:char next_comm[16];\toffset:40;\tsize:16;\tsigned:0;
\tfield:pid_t next_pid;\toffset:56;\tsize:4;\tsigned:1;
'''


def test_field_offsets_come_from_the_format():
    assert bpf_tracer.field_offset(FORMAT, 'next_pid') == 56
    assert bpf_tracer.field_offset(FORMAT, 'common_pid') == 4
    with pytest.raises(ValueError):
        bpf_tracer.field_offset(FORMAT, 'pid')


def test_sparse_diff():
    assert bpf_tracer.sparse_diff((0, 3, 5, 9), (0, 1, 5, 2)) == (
        (1, 2), (3, 7))


# name, window of the tid (None: not watched), what the driver hands over
# (io_events, io_event_count, run_delays_ns, run_delay_hist)
SAMPLES = [
    ('an LSVM vCPU', bpf_tracer.Window(3, [1, 2, 3], ((5, 2),), 2),
     ([1, 2, 3], 3, None, ((5, 2),))),
    ('another vCPU: no delays asked', bpf_tracer.Window(2, [4, 5], None, 1),
     ([4, 5], 2, None, ())),
    ('quiet', bpf_tracer.Window(0, (), (), 0), ((), 0, None, ())),
    ('beyond MAX_TIDS: estimated', None, (None, None, None, None)),
]


@pytest.mark.parametrize('name,window,want', SAMPLES,
                         ids=[s[0] for s in SAMPLES])
def test_what_the_driver_hands_over(name, window, want):
    from iosched.host_agent.drivers.libvirt import driver as lv
    drv = lv.LibvirtDriver.__new__(lv.LibvirtDriver)
    drv.tracer = object()
    drv._windows = {} if window is None else {7: window}
    assert drv._traced(7) == want
