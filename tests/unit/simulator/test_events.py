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
"""The event loop's own heap (``events.heap_push`` / ``heap_pop``, what the
compiled core runs) keeps heapq's order and layout, whichever core runs.
"""

import heapq
import random

import pytest

from iosched.simulator import events


def _ops(seed, n, times):
    """n pushes and pops mixed, event times drawn from ``times`` values
    (few values: many equal times, ordered by seq).
    """
    rng = random.Random(seed)
    return [('push', rng.randrange(times)) if rng.random() < 0.6 else
            ('pop', None) for _ in range(n)]


@pytest.mark.parametrize('seed,n,times', [
    (1, 50, 3),            # mostly ties: seq decides
    (2, 500, 1000),        # distinct times
    (3, 2000, 20),
    (4, 1, 1),
])
def test_same_pops_and_layout_as_heapq(seed, n, times):
    ours, ref = [], []
    got, want = [], []
    for seq, (op, t) in enumerate(_ops(seed, n, times)):
        if op == 'push':
            ev = (t, seq, None, None, None)
            events.heap_push(ours, ev)
            heapq.heappush(ref, ev)
        elif ref:
            got.append(events.heap_pop(ours))
            want.append(heapq.heappop(ref))
        assert ours == ref              # the same list, element for element
    while ref:
        got.append(events.heap_pop(ours))
        want.append(heapq.heappop(ref))
    assert got == want and not ours


def test_heapq_pushes_mix_with_the_loop():
    # a model that pushes with heapq (xen's CPU events) and loop.at
    loop = events.EventLoop()
    fired = []
    loop.at(30, lambda a, b: fired.append((loop.now, a)), 'at30')
    heapq.heappush(loop.heap, (10, next(loop._seq),
                               lambda a, b: fired.append((loop.now, a)),
                               'heapq10', None))
    loop.at(10, lambda a, b: fired.append((loop.now, a)), 'at10')
    loop.run_until(20)
    assert fired == [(10, 'heapq10'), (10, 'at10')] and loop.now == 20
    loop.run_until(30)
    assert fired[-1] == (30, 'at30') and loop.processed == 3
