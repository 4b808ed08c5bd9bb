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
"""The host's shared disk device and the guest disks that use it.

``DiskDevice``: up to ``parallelism`` requests in service at once, the rest
wait FIFO. Service time has mean ``service_us + bytes * per_byte_ns /
1000``: exponential with that mean (``service_dist='exp'``, seeded) or
exactly that (``'fixed'``), rounded to whole microseconds, at least 1.

``GuestDisk``: one disk of one VM. Requests pass its QEMU-like throttle
(``iosched.simulator.throttle``) with one FIFO per direction, as QEMU keeps
separate read and write queues, then go to the device. Counters
(libvirt blockstats-like) and latencies are recorded at completion;
latency = completion - submission, so it includes throttle and device
queueing.
"""

import array
import bisect
import collections

from iosched.simulator import events
from iosched.simulator import throttle


class Request:
    __slots__ = ('gdisk', 'nbytes', 'write', 't_submit', 'done_cb')

    def __init__(self, gdisk, nbytes, write, t_submit, done_cb):
        self.gdisk = gdisk
        self.nbytes = nbytes
        self.write = write
        self.t_submit = t_submit
        self.done_cb = done_cb


class DiskDevice:
    __slots__ = ('loop', 'rng', 'spec', 'busy', 'fifo', '_done_cb',
                 'parallelism', 'service_us', 'per_byte_ns', 'exp', '_random')

    def __init__(self, loop, spec, rng):
        self.loop = loop
        self.rng = rng
        self._random = rng.random
        self.spec = spec
        # the (frozen) spec's fields, read once
        self.parallelism = spec.parallelism
        self.service_us = spec.service_us
        self.per_byte_ns = spec.per_byte_ns
        self.exp = spec.service_dist == 'exp'
        self.busy = 0
        self.fifo = collections.deque()
        self._done_cb = self._on_done

    def submit(self, req):
        if self.busy < self.parallelism:
            self._start(req)
        else:
            self.fifo.append(req)

    def _start(self, req):
        self.busy += 1
        mean = self.service_us
        if self.per_byte_ns:
            mean += req.nbytes * self.per_byte_ns / 1000
        if self.exp:
            mean = events.expovariate(self._random, 1.0 / mean)
        d = int(mean + 0.5)
        if d < 1:
            d = 1
        self.loop.at(self.loop.now + d, self._done_cb, req)

    def _on_done(self, req, _):
        self.busy -= 1
        if self.fifo:
            self._start(self.fifo.popleft())
        req.gdisk.complete(req)

    def drop(self, gdisk):
        """Forget the queued (not yet in service) requests of gdisk."""
        self.fifo = collections.deque(r for r in self.fifo
                                      if r.gdisk is not gdisk)


class GuestDisk:
    __slots__ = ('name', 'loop', 'device', 'iotune', 'throttle', 'queues',
                 'gen', 'rd_reqs', 'wr_reqs', 'rd_bytes', 'wr_bytes',
                 'total_time_us', 'lat_t', 'lat_v', 'alive', '_timer_cb',
                 'hist_bounds', 'hist')

    def __init__(self, name, loop, device):
        self.name = name
        self.loop = loop
        self.device = device
        self.iotune = {}
        self.throttle = None
        self.queues = (collections.deque(), collections.deque())
        self.gen = 0
        self.rd_reqs = self.wr_reqs = self.rd_bytes = self.wr_bytes = 0
        self.total_time_us = 0
        self.lat_t = array.array('q')   # completion times
        self.lat_v = array.array('q')   # latencies
        self.alive = True
        self._timer_cb = self._on_timer
        self.hist_bounds = None
        self.hist = None

    def submit(self, nbytes, write, done_cb):
        """Submit a request; ``done_cb(now)`` runs at its completion."""
        now = self.loop.now
        req = Request(self, nbytes, write, now, done_cb)
        th = self.throttle
        if th is None:
            self.device.submit(req)
            return
        q = self.queues[write]
        if q:
            q.append(req)
            return
        wait = th.wait_us(write, now)
        if wait:
            q.append(req)
            self.loop.at(now + wait, self._timer_cb, write, self.gen)
        else:
            th.account(write, nbytes)
            self.device.submit(req)

    def _on_timer(self, write, gen):
        if gen == self.gen and self.alive:
            self._kick(write)

    def _kick(self, write):
        now = self.loop.now
        q = self.queues[write]
        th = self.throttle
        while q:
            wait = th.wait_us(write, now)
            if wait:
                self.loop.at(now + wait, self._timer_cb, write, self.gen)
                return
            req = q.popleft()
            th.account(write, req.nbytes)
            self.device.submit(req)

    def set_iotune(self, iotune):
        """Apply a validated iotune dict ({} = unthrottled)."""
        self.iotune = dict(iotune)
        self.gen += 1
        now = self.loop.now
        self.throttle = throttle.Throttle(iotune, now) if iotune else None
        if self.throttle is None:
            waiting = sorted(list(self.queues[0]) + list(self.queues[1]),
                             key=lambda r: r.t_submit)
            for q in self.queues:
                q.clear()
            for req in waiting:
                self.device.submit(req)
        else:
            for write in (False, True):
                self._kick(write)

    def complete(self, req):
        if not self.alive:
            return
        now = self.loop.now
        lat = now - req.t_submit
        if req.write:
            self.wr_reqs += 1
            self.wr_bytes += req.nbytes
        else:
            self.rd_reqs += 1
            self.rd_bytes += req.nbytes
        self.total_time_us += lat
        if self.hist is not None:
            self.hist[bisect.bisect_left(self.hist_bounds, lat)] += 1
        self.lat_t.append(now)
        self.lat_v.append(lat)
        req.done_cb(now)

    def set_histogram(self, bounds_us):
        """Start counting latencies per bucket (upper bounds, ascending)."""
        bounds = tuple(bounds_us)
        if list(bounds) != sorted(set(bounds)) or not bounds:
            raise ValueError('histogram bounds %r: accepted: ascending, '
                             'distinct, non-empty' % (bounds,))
        self.hist_bounds = bounds
        self.hist = array.array('q', [0] * (len(bounds) + 1))

    def histogram(self):
        return None if self.hist is None else tuple(self.hist)

    def remove(self):
        self.alive = False
        self.gen += 1
        for q in self.queues:
            q.clear()
        self.device.drop(self)
