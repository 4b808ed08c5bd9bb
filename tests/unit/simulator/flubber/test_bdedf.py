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
"""BD-EDF: Algorithm 1's queues and Algorithm 2's decisions against
hand-computed cases.
"""

import pytest

from iosched.simulator.flubber import bdedf
from iosched.simulator.flubber import request

SLOS = {'A': (1000, 80), 'B': (120, 60)}     # deadlines: s + 71, s + 51
W_MS = 88 * 512 / 100_000.0                  # 44 KiB at 100 MB/s


def _req(vm, lba, t, n=8, bg=False):
    r = request.Req(vm, lba, n, False, bg=bg, proc=vm or 'backup')
    r.t_arrive = t
    return r


def _sched(**kw):
    return bdedf.BdEdf(SLOS, **kw)


def test_algorithm1_queues():
    s = _sched()
    reqs = [_req('A', 500, 0.0), _req('B', 100, 10.0), _req('A', 300, 5.0),
            _req(None, 50, 1.0, bg=True), _req('B', 900, 30.0)]
    for r in reqs:
        s.add(r, r.t_arrive)
    assert [r.lba for _, _, r in s.sorted] == [50, 100, 300, 500, 900]
    # deadlines: A 71, B 61, A 76, B 81
    assert sorted((d, r.lba) for d, _, r in s.edf) == [
        (61.0, 100), (71.0, 500), (76.0, 300), (81.0, 900)]
    assert [r.lba for r in s.bg] == [50]
    assert s.has_vm_pending() and len(s) == 5


def test_equal_deadlines_keep_arrival_order():
    s = _sched()
    for lba in (700, 200, 400):
        s.add(_req('A', lba, 0.0), 0.0)
    got = [s.pick(100.0, None)[0].lba for _ in range(3)]
    assert got == [700, 200, 400]


# (queued requests, last (vm, lba, n), now, can_send) -> expected pick:
# ('req', lba) or ('wait', until)
CASES = [
    ('contiguous successor', [('B', 108, 0.0), ('A', 5000, 0.0)],
     ('B', 100, 8), 1.0, True, ('req', 108)),
    ('contiguous across VMs', [('A', 108, 0.0), ('B', 9000, 0.0)],
     ('B', 100, 8), 1.0, True, ('req', 108)),
    ('same VM, C-LOOK next', [('A', 50, 0.0), ('A', 300, 0.0),
                              ('B', 200, 0.0)],
     ('A', 100, 8), 1.0, True, ('req', 300)),
    ('same VM, wraps', [('A', 50, 0.0), ('B', 200, 0.0)],
     ('A', 100, 8), 1.0, True, ('req', 50)),
    ('nothing suitable: wait to the head deadline - max_size/Trans',
     [('B', 9000, 0.0)], ('A', 100, 8), 1.0, True, ('wait', 51.0 - W_MS)),
    ('VM without credits: no wait, EDF head', [('B', 9000, 0.0)],
     ('A', 100, 8), 1.0, False, ('req', 9000)),
    ('head deadline passed: EDF head, no batching',
     [('A', 108, 60.0), ('B', 9000, 0.0)], ('A', 100, 8), 52.0, True,
     ('req', 9000)),
    ('no last request: EDF head', [('A', 700, 5.0), ('B', 800, 0.0)],
     None, 1.0, True, ('req', 800)),
]


@pytest.mark.parametrize('name,queued,last,now,can,want', CASES,
                         ids=[c[0] for c in CASES])
def test_algorithm2_decisions(name, queued, last, now, can, want):
    s = _sched(trans_mb_s=100.0, can_send=lambda vm: can)
    for vm, lba, t in queued:
        s.add(_req(vm, lba, t), t)
    lst = None if last is None else _req(last[0], last[1], 0.0, last[2])
    req, wake = s.pick(now, lst)
    if want[0] == 'req':
        assert req is not None and req.lba == want[1] and wake is None
    else:
        assert req is None and wake == pytest.approx(want[1])


def test_a_wait_is_answered_by_a_same_vm_arrival():
    s = _sched()
    s.add(_req('B', 9000, 0.0), 0.0)
    last = _req('A', 100, 0.0)
    assert s.pick(1.0, last)[0] is None
    s.add(_req('B', 5, 2.0), 2.0)                 # unsuitable arrival
    s.add(_req('A', 7000, 3.0), 3.0)              # same VM: taken
    req, _ = s.pick(3.0, last)
    assert req.lba == 7000
    assert s.stats['waits'] == 1 and s.stats['wait_success'] == 1


def test_a_wait_that_closes_falls_back_to_the_edf_head():
    s = _sched()
    s.add(_req('B', 9000, 0.0), 0.0)
    last = _req('A', 100, 0.0)
    _, until = s.pick(1.0, last)
    assert s.pick(until - 1.0, last) == (None, until)   # spurious wake
    req, _ = s.pick(until, last)
    assert req.lba == 9000 and s.stats['wait_fail'] == 1
    assert s.wait_success_ratio() == 0.0


def test_background_only_when_vm_edf_is_empty():
    s = _sched()
    s.add(_req(None, 10, 0.0, bg=True), 0.0)
    s.add(_req('A', 5000, 0.0), 0.0)
    assert s.pick(1.0, None)[0].lba == 5000        # VM first
    assert s.pick(2.0, None)[0].lba == 10          # then background
    assert s.pick(3.0, None) == (None, None)


def test_background_starvation_bound_sends_a_batch():
    s = _sched()
    s.add(_req(None, 10, 0.0, bg=True), 0.0)
    s.add(_req(None, 20, 300.0, bg=True), 300.0)
    s.add(_req(None, 30, 400.0, bg=True), 400.0)
    for t in (450.0, 600.0):
        s.add(_req('A', 5000 + int(t), t), t)
    last = _req('A', 100, 0.0)
    got = [s.pick(600.0, last)[0].lba for _ in range(3)]
    # 10 is 600 ms old (>= 500): sent; 20 (300 ms) rides the batch
    # (>= 250 ms); 30 (200 ms) does not: BD takes A's next again
    assert got == [10, 20, 5450]


# (hold_ms, now) -> pick with the EDF head (B, due 51) and A's next queued
# (last was A's): the paper's rule (hold 0) sends B once it is due; a hold
# keeps A's image until hold_ms past B's deadline
@pytest.mark.parametrize('hold, now, want', [
    (0.0, 50.0, 5000),          # B not yet due: A's next
    (0.0, 52.0, 9000),          # B due: B, the paper's rule
    (100.0, 52.0, 5000),        # held: A's next
    (100.0, 150.0, 5000),       # held up to 151
    (100.0, 152.0, 9000),       # hold over: B
])
def test_hold_keeps_the_last_vms_image_past_the_deadline(hold, now, want):
    s = _sched(hold_ms=hold)
    s.add(_req('B', 9000, 0.0), 0.0)
    s.add(_req('A', 5000, 0.0), 0.0)
    assert s.pick(now, _req('A', 100, 0.0))[0].lba == want


def test_a_held_window_waits_past_the_deadline():
    s = _sched(hold_ms=100.0, trans_mb_s=100.0)
    s.add(_req('B', 9000, 0.0), 0.0)
    assert s.pick(60.0, _req('A', 100, 0.0)) == (
        None, pytest.approx(151.0 - W_MS))


def test_bd_off_is_plain_edf_with_background_last():
    s = _sched(bd=False)
    s.add(_req('A', 108, 0.0), 0.0)
    s.add(_req('B', 9000, 0.0), 0.0)
    assert s.pick(1.0, _req('A', 100, 0.0))[0].lba == 9000
