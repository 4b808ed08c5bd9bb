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
"""The eBPF tracer on the real kernel, beside the tracefs one on the same
thread over the same second: the same wake-ups, the same newest times
(to tracefs's microsecond), the same wake-to-run delays (binned). Needs
root and tracefs.
"""

import os
import threading
import time

import pytest

from iosched.contract import delay_hist
from iosched.contract import isacs
from iosched.host_agent.drivers.libvirt import bpf_tracer
from iosched.host_agent.drivers.libvirt import tracing
from tests import fixtures

ROOT = '/sys/kernel/tracing'


@pytest.fixture
def sleeper():
    """A thread that sleeps 1 ms a thousand times: its tid."""
    box, stop = {}, threading.Event()

    def run():
        box['tid'] = threading.get_native_id()
        while not stop.is_set():
            time.sleep(0.001)
    th = threading.Thread(target=run, daemon=True)
    th.start()
    while 'tid' not in box:
        time.sleep(0.001)
    yield box['tid']
    stop.set()
    th.join()


def test_ebpf_counts_what_tracefs_traces(sleeper):
    fixtures.require('root + tracefs', os.geteuid() == 0 and (
        bpf_tracer.BpfTracer.available(ROOT)
        and tracing.WakeupTracer.available(ROOT)), 'not root or no tracefs')
    ebpf, text = bpf_tracer.BpfTracer(ROOT), tracing.WakeupTracer(ROOT)
    ebpf.open()
    text.open()
    try:
        tid = sleeper
        for tracer in (text, ebpf):
            tracer.watch([tid], [tid])
        text.drain()
        ebpf.drain()
        time.sleep(1.0)
        # the kernel's counts first: tracefs lines written meanwhile are
        # then in its drain too
        got = ebpf.drain()[tid]
        time.sleep(0.05)
        wakes, runs = text.drain()
    finally:
        text.close()
        ebpf.close()
    times = wakes.get(tid, [])
    assert 300 <= got.count <= len(times) <= got.count + 100
    # the same wake-ups (tracefs prints the mono clock to the us, the
    # kernel's stamp and the program's a few hundred ns apart)
    assert len(got.times) == bpf_tracer.RING - 1
    first = min(range(len(times)), key=lambda i: abs(times[i]
                                                     - got.times[0]))
    same = times[first:first + len(got.times)]
    assert all(abs(a - b) < 5000 for a, b in zip(got.times, same))
    assert isacs.ema_gap(got.times, 0.9, 1e7, 1, got.count)[1] == (
        pytest.approx(isacs.ema_gap(same, 0.9, 1e7, 1)[1], rel=0.01))
    delays = tracing.run_delays(times, runs.get(tid, []))
    assert delay_hist.total(got.delays) >= got.count - 2
    # the same delays, binned: the p50 and p90 of each within two buckets
    counts = [0] * delay_hist.BUCKETS
    for k, c in got.delays:
        counts[k] += c
    for q in (0.5, 0.9):       # (the tail: a few delays, noisy)
        exact = sorted(delays)[int(q * (len(delays) - 1))]
        k = delay_hist.bucket(delay_hist.quantile(counts, q))
        assert abs(k - delay_hist.bucket(exact)) <= 2, (q, exact, counts)
