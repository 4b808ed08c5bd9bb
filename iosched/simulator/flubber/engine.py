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
"""The event loop and the dispatch glue: guests -> VBC -> low level ->
disk (queue depth 1).

``Engine.submit(req)`` takes a request at the VMM's back end (its arrival
time is the deadline's s); VM requests pass VBC when there is one, host
requests bypass it. Whenever the disk is free the low level's ``pick``
chooses the next request or asks to be woken (BD-EDF's window, CFQ's
idling). Time in ms; events at one time run in scheduling order.

``merge_max`` (sectors, 0: off) is dom0's block layer merging a request
that reaches the low level into a queued one it continues (a back merge:
same direction, same VM or host process, at most ``merge_max`` sectors
together; Linux 2.6.18's ``__make_request``/``elv_merge`` before any
elevator; scenarios use 256, 128 KiB: base CFQ's read d = 0 share in
the paper fits it, not 1024). The merged request keeps the
queued one's place and deadline, is dispatched and seeks as one, and on
completion each request it holds completes with its own latency.
"""

import heapq
import random

from iosched.simulator.flubber import metrics as fmetrics


class Engine:
    def __init__(self, disk, low, vbc=None, seed=1, merge_max=0):
        self.now = 0.0
        self.merge_max = merge_max
        self._ends = {}            # end sector -> queued request
        self.heap = []
        self._seq = 0
        self.disk = disk
        self.low = low
        self.vbc = vbc
        self.rng = random.Random(seed)
        self.busy = False
        self.last = None
        self._disp = False
        self._wake_at = None
        self.metrics = fmetrics.Metrics()
        if vbc is not None:
            vbc.forward = self._to_low
            vbc.now = lambda: self.now
            vbc.wake = self._wake_vbc

    def at(self, t, fn, arg=None):
        self._seq += 1
        heapq.heappush(self.heap, (t, self._seq, fn, arg))

    def run(self, until, stop=None):
        heap = self.heap
        pop = heapq.heappop
        while heap and heap[0][0] <= until:
            t, _, fn, arg = pop(heap)
            self.now = t
            fn(arg)
            if stop is not None and stop():
                return
        self.now = max(self.now, until) if not heap else until

    # -- the data path ---------------------------------------------------

    def submit(self, req):
        req.t_arrive = self.now
        if self.vbc is not None and not req.bg:
            self.vbc.submit(req)
        else:
            self._to_low(req)

    def _to_low(self, req):
        if self.merge_max:
            host = self._ends.get(req.lba)
            if (host is not None and host.write == req.write
                    and host.proc == req.proc and host.bg == req.bg
                    and host.nsect + req.nsect <= self.merge_max):
                del self._ends[req.lba]
                host.nsect += req.nsect
                if host.merged is None:
                    host.merged = []
                host.merged.append(req)
                self._ends[host.lba + host.nsect] = host
                self._dispatch()
                return
            self._ends[req.lba + req.nsect] = req
        self.low.add(req, self.now)
        self._dispatch()

    def _dispatch(self, _=None):
        if self.busy or self._disp:
            return
        self._disp = True
        try:
            if self.vbc is not None:
                self.vbc.idle_check(self.low.has_vm_pending())
            req, wake = self.low.pick(self.now, self.last)
        finally:
            self._disp = False
        if req is not None:
            if self.merge_max and self._ends.get(req.end) is req:
                del self._ends[req.end]
            self.busy = True
            svc = self.disk.service(req, self.rng)
            self.metrics.dispatch(req, self.last, self.now, svc)
            self.last = req
            self.at(self.now + svc, self._complete, req)
        elif wake is not None and wake != self._wake_at:
            self._wake_at = wake
            self.at(wake, self._wake, wake)

    def _wake_vbc(self, t):
        self.at(t, self._dispatch)

    def _wake(self, t):
        if t == self._wake_at:
            self._wake_at = None
        self._dispatch()

    def _complete(self, req):
        self.busy = False
        full = req.nsect
        reqs = [req]
        if req.merged:
            # the host completes as the request it was (its own sectors);
            # self.last keeps the dispatched extent for the next seek
            req.nsect -= sum(m.nsect for m in req.merged)
            reqs += req.merged
        for r in reqs:
            lat = self.now - r.t_arrive
            self.metrics.complete(r, self.now, lat)
            if self.vbc is not None:
                self.vbc.on_complete(r, lat)
            if r.done is not None:
                r.done(r)
        req.nsect = full
        self._dispatch()
