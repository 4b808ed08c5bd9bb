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
"""Seed 004's elevators: the shared async queue starves a VM's writes
under other VMs' sync reads; VA-CFQ serves VMs round robin, sync first.
"""

import pytest

from iosched.simulator.flubber import request
from iosched.simulator.vaio import sched


def _req(vm, lba, write=False):
    r = request.Req(vm, lba, 8, write)
    return r


def _load(s, spec):
    """spec: {vm: (reads, writes)}; reads at vm's own 1e6-sector range."""
    for i, (vm, (reads, writes)) in enumerate(sorted(spec.items())):
        base = (i + 1) * 1_000_000
        for k in range(reads):
            s.add(_req(vm, base + 8 * k), 0.0)
        for k in range(writes):
            s.add(_req(vm, base + 500_000 + 8 * k, write=True), 0.0)


def _drain(s, step=1.0):
    """Dispatch everything, 1 ms per request; [(vm, write)]."""
    out, now, last = [], 0.0, None
    while True:
        r, wake = s.pick(now, last)
        if r is None:
            if wake is None:
                return out
            now = wake
            continue
        out.append((r.vm, r.write))
        last = r
        now += step


def _first_write(order, vm):
    return order.index((vm, True))


@pytest.mark.parametrize('name,low,spec,lo,hi', [
    # p_quiet 0: a busy sync queue always takes the async turn, so C's
    # write waits until A's and B's 300 reads each are gone
    ('starved', lambda: sched.SharedAsyncCfq(p_quiet=0.0),
     {'A': (300, 0), 'B': (300, 0), 'C': (0, 1)}, 600, 600),
    # p_quiet 1: the async queue dispatches on its first turn (after A's
    # and B's 100 ms slices)
    ('escapes', lambda: sched.SharedAsyncCfq(p_quiet=1.0),
     {'A': (300, 0), 'B': (300, 0), 'C': (0, 1)}, 200, 200),
    # no other sync load: served at once
    ('alone', lambda: sched.SharedAsyncCfq(p_quiet=0.0),
     {'C': (0, 1)}, 0, 0),
    # VA-CFQ: C's integrated queue has its turn in the first round
    ('va', lambda: sched.VaCfq(no_idle=()),
     {'A': (300, 0), 'B': (300, 0), 'C': (0, 1)}, 200, 200),
])
def test_where_the_async_write_goes(name, low, spec, lo, hi):
    order = _drain(_make(low, spec))
    assert len(order) == sum(r + w for r, w in spec.values())
    assert lo <= _first_write(order, 'C') <= hi, name


def _make(low, spec):
    s = low()
    _load(s, spec)
    return s


def test_shared_async_queue_holds_every_vms_writes():
    s = sched.SharedAsyncCfq(p_quiet=0.0)
    _load(s, {'A': (5, 2), 'B': (5, 2)})
    assert set(s.queues) == {'A', 'B', sched.ASYNC}
    assert len(s.queues[sched.ASYNC]) == 4
    order = _drain(s)
    assert [w for _, w in order[-4:]] == [True] * 4     # after every read


@pytest.mark.parametrize('vms', [('A', 'B'), ('A', 'B', 'C', 'D')])
def test_va_cfq_serves_vms_round_robin(vms):
    s = sched.VaCfq(no_idle=())
    _load(s, {v: (300, 1) for v in vms})
    order = _drain(s)
    owners = [order[i][0] for i in range(0, 300 * len(vms), 100)]
    assert owners == list(vms) * 3
    # each VM's write goes out in its own queue's turn, after its reads
    for v in vms:
        assert _first_write(order, v) > max(
            i for i, (u, w) in enumerate(order) if u == v and not w)


@pytest.mark.parametrize('reads,writes,expect', [
    (3, 2, [False] * 3 + [True] * 2),
    (0, 2, [True, True]),
    (2, 0, [False, False]),
])
def test_va_cfq_sync_before_async_inside_a_vm(reads, writes, expect):
    s = sched.VaCfq(no_idle=())
    for k in range(writes):
        s.add(_req('A', 10 + 8 * k, write=True), 0.0)   # low LBAs
    for k in range(reads):
        s.add(_req('A', 1000 + 8 * k), 0.0)
    assert [w for _, w in _drain(s)] == expect
