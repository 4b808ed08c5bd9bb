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
"""The dom0-like I/O backend (netback/blkback) of the papers' workloads.

``cpus`` servers (dom0 vCPUs pinned on pCPUs of their own, so the guest
scheduler never sees them) take items FIFO. An item of b bytes is in
service for ``service_time(spec, b)`` us, or an exponential draw with
that mean (``service_dist='exp'``, seeded). When it finishes,
``callback(arg, now)`` runs: the workload then delivers the I/O response
event to its guest vCPU, or sends the item on (to the disk, to the wire).
"""

import collections


# Mean service time of an item: service_us + bytes * per_byte_ns / 1000.
def service_time(spec, nbytes):
    mean = spec.service_us
    if spec.per_byte_ns and nbytes:
        mean += nbytes * spec.per_byte_ns / 1000
    return mean


class Backend:
    __slots__ = ('loop', 'spec', 'rng', 'busy', 'fifo', 'items', 'busy_us',
                 'max_queue', '_done_cb')

    def __init__(self, loop, spec, rng):
        self.loop = loop
        self.spec = spec
        self.rng = rng
        self.busy = 0               # servers in use
        self.fifo = collections.deque()
        self.items = 0              # items finished
        self.busy_us = 0            # service time handed out
        self.max_queue = 0          # longest FIFO seen
        self._done_cb = self._on_done

    def submit(self, nbytes, callback, arg):
        """Queue an item; ``callback(arg, now)`` runs when it is done."""
        if self.busy < self.spec.cpus:
            self._start(nbytes, callback, arg)
        else:
            fifo = self.fifo
            fifo.append((nbytes, callback, arg))
            if len(fifo) > self.max_queue:
                self.max_queue = len(fifo)

    def _start(self, nbytes, callback, arg):
        self.busy += 1
        spec = self.spec
        mean = service_time(spec, nbytes)
        if spec.service_dist == 'exp' and mean > 0:
            mean = self.rng.expovariate(1.0 / mean)
        d = int(mean + 0.5)
        self.busy_us += d
        self.loop.at(self.loop.now + d, self._done_cb, callback, arg)

    def _on_done(self, callback, arg):
        self.busy -= 1
        self.items += 1
        if self.fifo:
            self._start(*self.fifo.popleft())
        callback(arg, self.loop.now)

    def stats(self):
        """Items done, service time handed out (us), longest queue."""
        return {'items': self.items, 'busy_us': self.busy_us,
                'max_queue': self.max_queue, 'queued': len(self.fifo)}
