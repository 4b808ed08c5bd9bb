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
"""The discrete-event loop: a heap of timed callbacks, integer microseconds.

An event is ``(time_us, seq, callback, a, b)``; ``seq`` is a global
insertion counter, so events at the same time run in the order they were
scheduled and a run is fully deterministic. Callbacks are called as
``callback(a, b)`` and read the current time from ``loop.now``. There is no
cancellation: owners invalidate their pending events with a generation
number passed in ``a`` or ``b`` and ignore stale ones when they fire.
"""

import heapq
import itertools


class EventLoop:
    __slots__ = ('now', 'heap', '_seq', 'processed')

    def __init__(self):
        self.now = 0
        self.heap = []
        self._seq = itertools.count()
        self.processed = 0          # events popped (incl. stale ones)

    def at(self, t_us, callback, a=None, b=None):
        """Run ``callback(a, b)`` at ``t_us`` (>= now)."""
        heapq.heappush(self.heap, (t_us, next(self._seq), callback, a, b))

    def run_until(self, t_us):
        """Process every event with time <= t_us, then set now = t_us."""
        heap = self.heap
        pop = heapq.heappop
        n = 0
        while heap and heap[0][0] <= t_us:
            t, _, callback, a, b = pop(heap)
            self.now = t
            callback(a, b)
            n += 1
        self.processed += n
        self.now = t_us
