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
"""Dom0's elevators of seed 004, on Flubber's CFQ (slices, idling, C-LOOK).

Reads are sync, writes async (the paper's classification, §2.1).

* ``SharedAsyncCfq``: stock 2.6.32 CFQ as the paper describes it. Each
  blkback (VM) is one "process" with a sync queue: 100 ms slices, 8 ms
  idling, round robin. Every VM's async writes go to ONE shared async
  queue (2.6.32 has one async queue per priority level, no per-VM
  isolation). It is served at once when no sync queue holds a request
  (the paper: "only when all sync queues are empty"); otherwise it has a
  place in the round robin, but on its turn it dispatches only with
  probability ``p_quiet ** k``, k the number of sync queues holding
  requests: CFQ withholds async while sync I/O is in flight
  (``sync_flight``) and a sync arrival preempts an async slice, which
  Flubber's queue-depth-1 disk cannot show; each busy reader leaves the
  turn alone (dom0's NCQ drains with no arrival of its) with probability
  ``p_quiet`` (decision in docs/reproduction_models.md "Seed 004"). A turn
  dispatches at most ``async_rq`` (slice_async_rq = 2) requests within 40 ms
  (slice_async).
* ``VaCfq``: the paper's virtualization-aware CFQ (§2.6). One integrated
  queue per VM holds its sync and async requests, sync first (C-LOOK
  among the sync ones, then the async ones); the queues are served round
  robin with CFQ's 100 ms slice and 8 ms idling (the paper gives no
  parameters; we keep CFQ's).
"""

import random

from iosched.simulator.flubber import elevators

ASYNC = '_async'


def is_sync(req):
    return not req.write


class SharedAsyncCfq(elevators.Cfq):
    def __init__(self, p_quiet=0.5, async_rq=2, slice_async_ms=40.0,
                 seed=1, **kw):
        kw.setdefault('no_idle', (ASYNC,))
        super().__init__(**kw)
        self.p_quiet = p_quiet
        self.async_rq = async_rq
        self.slice_async_ms = slice_async_ms
        self.rng = random.Random(seed)
        self.async_left = 0
        self.turns = {'served': 0, 'skipped': 0, 'idle_disk': 0}

    def add(self, req, now):
        if not is_sync(req):
            req.proc = ASYNC
        super().add(req, now)

    def _sync_busy(self):
        return sum(1 for p in self.rr if p != ASYNC and self.queues[p])

    def _sync_pending(self):
        return self._sync_busy() > 0

    def _select(self, now):
        best = None
        for p in list(self.rr):
            if not self.queues[p]:
                continue
            k = self._sync_busy() if p == ASYNC else 0
            if k:
                if self.rng.random() >= self.p_quiet ** k:
                    # a sync request in flight or arriving: the async
                    # queue's turn passes; it goes to the back
                    self.turns['skipped'] += 1
                    self.rr.remove(p)
                    self.rr.append(p)
                    continue
                self.turns['served'] += 1
            elif p == ASYNC:
                self.turns['idle_disk'] += 1
            best = p
            break
        self.active = best
        self.idle_until = None
        self.preempt = False
        if best is not None:
            self.rr.remove(best)
            self.rr.append(best)
            if best == ASYNC:
                self.slice_end = now + self.slice_async_ms
                self.async_left = self.async_rq
            else:
                self.slice_end = now + self.slice_ms
        return best

    def pick(self, now, last):
        if self.active == ASYNC:
            if self.async_left <= 0 or not self.queues[ASYNC]:
                self.slice_end = now    # the turn is over
            elif not self._sync_pending():
                self.async_left = max(self.async_left, 1)
        req, wake = super().pick(now, last)
        if req is not None and req.proc == ASYNC:
            self.async_left -= 1
        return req, wake


class VaCfq(elevators.Cfq):
    """The integrated per-VM queue: ``req.proc`` is the VM's backend."""

    def _take(self, q, pos):
        sync = [e for e in q if is_sync(e[2])]
        pool = sync or q
        best = None
        for e in pool:            # C-LOOK: the first at or after pos
            if e[0] >= pos and (best is None or e < best):
                best = e
        if best is None:
            best = min(pool)
        q.remove(best)
        return best[2]
