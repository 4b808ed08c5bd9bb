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
# cython: boundscheck=False, wraparound=False
"""The discrete-event loop: a heap of timed callbacks, integer microseconds.

An event is ``(time_us, seq, callback, a, b)``; ``seq`` is a global
insertion counter, so events at the same time run in the order they were
scheduled and a run is fully deterministic. Callbacks are called as
``callback(a, b)`` and read the current time from ``loop.now``. There is no
cancellation: owners invalidate their pending events with a generation
number passed in ``a`` or ``b`` and ignore stale ones when they fire.

``heap`` is a heapq heap: ``heapq.heappush(loop.heap, (t, next(loop._seq),
cb, a, b))`` is the same as ``loop.at(t, cb, a, b)``. As pure Python the
loop uses heapq; compiled (``iosched.simulator.compiled``), ``heap_push``
and ``heap_pop`` below, heapq's algorithm with the ``(time, seq)`` keys
read as C integers instead of comparing tuples (a quarter of the compiled
core's time went to those comparisons). Keys are distinct, so both pop
the same events in the same order.
"""

import heapq
import itertools
import math

_log = math.log

# True when this file runs compiled (an extension module, not the .py)
COMPILED = not __file__.endswith('.py')


def expovariate(random, lambd):
    """``rng.expovariate(lambd)`` given ``random``, a ``random.Random``'s
    bound ``random`` method (kept by its user): CPython's formula
    (3.11-3.13), the same draw and value, without the Python frame and the
    method lookups of ``random.py``'s (the compiled core calls it per
    request and per disk I/O).
    """
    return -_log(1.0 - random()) / lambd


def _before(x, y):
    """Event x pops before event y: (time, seq) order."""
    tx = x[0]
    ty = y[0]
    if tx != ty:
        return tx < ty
    sx = x[1]
    sy = y[1]
    return sx < sy


def heap_push(heap, item):
    """``heapq.heappush`` (its _siftdown) on (time, seq, ...) events."""
    heap.append(item)
    pos = len(heap) - 1
    while pos > 0:
        parentpos = (pos - 1) >> 1
        parent = heap[parentpos]
        if not _before(item, parent):
            break
        heap[pos] = parent
        pos = parentpos
    heap[pos] = item


def heap_pop(heap):
    """``heapq.heappop`` (its bottom-up _siftup) on (time, seq, ...)
    events; ``heap`` must not be empty.
    """
    last = heap.pop()
    if not heap:
        return last
    top = heap[0]
    end = len(heap)
    pos = 0
    child = 1
    while child < end:          # the smaller child up, down to a leaf
        right = child + 1
        if right < end and not _before(heap[child], heap[right]):
            child = right
        heap[pos] = heap[child]
        pos = child
        child = 2 * pos + 1
    while pos > 0:              # then last up from there (_siftdown)
        parentpos = (pos - 1) >> 1
        parent = heap[parentpos]
        if not _before(last, parent):
            break
        heap[pos] = parent
        pos = parentpos
    heap[pos] = last
    return top


class EventLoop:
    __slots__ = ('now', 'heap', '_seq', 'processed')

    def __init__(self):
        self.now = 0
        self.heap = []
        self._seq = itertools.count()
        self.processed = 0          # events popped (incl. stale ones)

    def at(self, t_us, callback, a=None, b=None):
        """Run ``callback(a, b)`` at ``t_us`` (>= now)."""
        item = (t_us, next(self._seq), callback, a, b)
        if COMPILED:
            heap_push(self.heap, item)
        else:
            heapq.heappush(self.heap, item)

    def run_until(self, t_us):
        """Process every event with time <= t_us, then set now = t_us."""
        heap = self.heap
        n = 0
        if COMPILED:
            while heap:
                ev = heap[0]
                t = ev[0]
                if t > t_us:
                    break
                heap_pop(heap)
                self.now = t
                ev[2](ev[3], ev[4])
                n += 1
        else:
            pop = heapq.heappop
            while heap and heap[0][0] <= t_us:
                t, _, callback, a, b = pop(heap)
                self.now = t
                callback(a, b)
                n += 1
        self.processed += n
        self.now = t_us
