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
"""The baselines: noop, deadline, CFQ (slices, idling, RT) and EDF."""

import pytest

from iosched.simulator.flubber import elevators
from iosched.simulator.flubber import request


def _req(proc, lba, t, write=False, bg=False):
    r = request.Req(None if bg else proc, lba, 8, write, bg=bg, proc=proc)
    r.t_arrive = t
    return r


def _drain(s, now=0.0, last=None):
    out = []
    while True:
        r, wake = s.pick(now, last)
        if r is None:
            return out, wake
        out.append(r.lba)
        last = r


def test_noop_is_fifo():
    s = elevators.Noop()
    for lba in (30, 10, 20):
        s.add(_req('A', lba, 0.0), 0.0)
    assert _drain(s)[0] == [30, 10, 20]


def test_deadline_sweeps_then_honours_an_expired_read():
    s = elevators.Deadline()
    s.add(_req('A', 900, 0.0), 0.0)
    for lba in (100, 200, 300):
        s.add(_req('A', lba, 400.0), 400.0)
    last = _req('A', 92, 0.0)
    assert s.pick(450.0, last)[0].lba == 100     # sorted from the head
    s.batch = s.fifo_batch                      # batch over
    assert s.pick(600.0, last)[0].lba == 900     # expired FIFO head


def test_cfq_serves_a_slice_in_lba_order_then_idles():
    s = elevators.Cfq(slice_ms=100.0, idle_ms=8.0)
    for lba in (300, 100, 200):
        s.add(_req('A', lba, 0.0), 0.0)
    s.add(_req('B', 5000, 0.0), 0.0)
    out, wake = _drain(s, 0.0)
    assert out == [100, 200, 300] and wake == 8.0   # idles for A
    s.add(_req('A', 400, 2.0), 2.0)                 # A's next arrives
    assert s.pick(2.0, None)[0].lba == 400
    assert s.pick(8.0, None) == (None, 16.0)        # idles anew for A
    assert s.pick(16.0, None)[0].lba == 5000        # idle over: B


def test_cfq_slice_expiry_rotates_queues():
    s = elevators.Cfq(slice_ms=100.0)
    s.add(_req('A', 100, 0.0), 0.0)
    s.add(_req('A', 200, 0.0), 0.0)
    s.add(_req('B', 5000, 0.0), 0.0)
    assert s.pick(0.0, None)[0].lba == 100
    assert s.pick(150.0, None)[0].lba == 5000


def test_cfq_rt_preempts_be():
    s = elevators.Cfq({'R': 'rt'})
    s.add(_req('A', 100, 0.0), 0.0)
    s.add(_req('A', 200, 0.0), 0.0)
    assert s.pick(0.0, None)[0].lba == 100
    s.add(_req('R', 9000, 1.0), 1.0)
    assert s.pick(1.0, None)[0].lba == 9000


def test_cfq_does_not_idle_for_async_host_metadata():
    s = elevators.Cfq()
    s.add(_req('hostmeta', 10, 0.0, write=True, bg=True), 0.0)
    s.add(_req('A', 100, 0.0), 0.0)
    out, wake = _drain(s)
    assert sorted(out) == [10, 100]


# (proc, write, classes) -> queue key under 2.6.18's shared async keying
@pytest.mark.parametrize('proc, write, classes, want', [
    ('A', False, {}, 'A'),                       # reads: own queue
    ('A', True, {}, 'async-be'),                 # writes: shared
    ('B', True, {}, 'async-be'),                 # ... by every VM
    ('hostmeta', True, {}, 'async-be'),          # ... and dom0
    ('R', True, {'R': 'rt'}, 'async-rt'),        # one per class
])
def test_cfq_shared_async_keys(proc, write, classes, want):
    s = elevators.Cfq(classes, shared_async=True)
    assert s.key(_req(proc, 10, 0.0, write=write)) == want
    assert elevators.Cfq(classes).key(_req(proc, 10, 0.0,
                                           write=write)) == proc


def test_cfq_shared_async_writes_of_two_vms_interleave_in_lba_order():
    s = elevators.Cfq(shared_async=True)
    for proc, lba in (('A', 300), ('B', 200), ('A', 100)):
        s.add(_req(proc, lba, 0.0, write=True), 0.0)
    out, wake = _drain(s)
    assert out == [100, 200, 300] and wake is None   # no idling


def test_cfq_shared_async_slice_caps_at_16_requests():
    s = elevators.Cfq(shared_async=True)
    for lba in range(20):
        s.add(_req('A', 1000 + lba, 0.0, write=True), 0.0)
    s.add(_req('B', 5, 0.0), 0.0)                 # a reader waits
    got = [s.pick(0.0, None)[0].lba for _ in range(17)]
    assert got[:16] == list(range(1000, 1016)) and got[16] == 5


def test_cfq_shared_async_slice_lasts_40_ms():
    s = elevators.Cfq(shared_async=True)
    s.add(_req('B', 5, 0.0), 0.0)
    for lba in (100, 200):
        s.add(_req('A', lba, 0.0, write=True), 0.0)
    assert s.pick(0.0, None)[0].lba == 5          # B's sync queue first
    s.pick(0.0, None)                             # B empty: idles
    assert s.pick(8.0, None)[0].lba == 100        # then async, 40 ms
    assert s.pick(47.0, None)[0].lba == 200
    s.add(_req('A', 300, 48.0, write=True), 48.0)
    s.add(_req('B', 6, 48.0), 48.0)
    assert s.pick(48.5, None)[0].lba == 6         # slice over: B


def test_edf_orders_by_deadline_background_500ms():
    s = elevators.Edf({'A': (1000, 80), 'B': (120, 60)})
    s.add(_req('bk', 1, 0.0, bg=True), 0.0)      # 500
    s.add(_req('A', 2, 0.0), 0.0)                # 71
    s.add(_req('B', 3, 15.0), 15.0)              # 66
    assert _drain(s)[0] == [3, 2, 1]
    assert not s.has_vm_pending() and len(s) == 0
