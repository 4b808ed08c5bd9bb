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
"""The guest's block layer: when a request leaves the plug, what an
fsync flushes.
"""

import heapq
import random

import pytest

from iosched.simulator.flubber import clients


class _Eng:
    """Records submissions; completes nothing unless told."""

    def __init__(self):
        self.now = 0.0
        self.heap = []
        self.seq = 0
        self.sent = []             # (time, req)

    def at(self, t, fn, arg=None):
        self.seq += 1
        heapq.heappush(self.heap, (t, self.seq, fn, arg))

    def submit(self, req):
        self.sent.append((self.now, req))

    def run(self, until):
        while self.heap and self.heap[0][0] <= until:
            t, _, fn, arg = heapq.heappop(self.heap)
            self.now = t
            fn(arg)


@pytest.mark.parametrize('sync_unplug, threads, rw, first_at, batch', [
    # a reader waiting on its page unplugs at once (2.6.18 sync_page)
    (True, 1, 'r', 0.0, 1),
    (True, 3, 'r', 0.0, 1),
    # without it a lone read waits for the 3 ms unplug timer
    (False, 1, 'r', 3.0, 1),
    (False, 3, 'r', 3.0, 3),
    # the plug still gathers 4 requests at once
    (False, 6, 'r', 0.0, 4),
])
def test_when_a_read_leaves_the_plug(sync_unplug, threads, rw, first_at,
                                     batch):
    eng = _Eng()
    g = clients.Guest(eng, 'R', 0, clients.Workload('rnd', rw, threads,
                                                    1 << 21, 100),
                      random.Random(1), sync_unplug=sync_unplug)
    g.start()
    eng.run(10.0)
    assert eng.sent[0][0] == first_at
    assert sum(1 for t, _ in eng.sent if t == first_at) >= batch
    if not sync_unplug:
        assert sum(1 for t, _ in eng.sent if t == first_at) == batch


@pytest.mark.parametrize('scope, every, pages_at_first_flush', [
    ('thread', 1, 1),       # default: fsync after every write, own page
    ('thread', 3, 3),       # the thread's own 3 pages
    ('guest', 3, 3),        # every 3rd write of the guest: all dirty
    ('guest', 5, 5),
])
def test_what_an_fsync_flushes(scope, every, pages_at_first_flush):
    eng = _Eng()
    wl = clients.Workload('rnd', 'w', 2, 1 << 21, 100, fsync=True)
    g = clients.Guest(eng, 'W', 0, wl, random.Random(1), fsync_every=every,
                      fsync_scope=scope)
    g.start()
    eng.run(50.0)
    # nothing completes here: the first flush is the only one sent
    # (by the thread whose write was due; the other thread keeps writing
    # into the cache or waits on its own flush)
    first = [r for _, r in eng.sent if r.kind != 'journal']
    n = sum(len(r.waiters) for r in first
            if r.waiters and isinstance(r.waiters[0], tuple)
            and r.waiters[0][1] == first[0].waiters[0][1])
    assert n == pages_at_first_flush
