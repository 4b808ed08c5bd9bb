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
"""The paper's baselines at the low level: noop (FCFS), Linux deadline, a
CFQ-like elevator that treats each VM as a process (optionally with RT/BE
classes), and plain EDF (with VBC on top: "EDF + credit").

Every elevator has ``add(req, now)``, ``pick(now, last)`` -> (req, None)
or (None, wake time) or (None, None), ``has_vm_pending()`` and
``len()``. Decisions (docs/reproduction_models.md "Flubber"):

* CFQ: one queue per "process" (each VM, the backup, the host's metadata
  writer), served in LBA order (C-LOOK from the head); every queue gets
  100 ms slices (all VM I/O counted sync: blkback resubmits it); when
  the active queue empties, CFQ idles up to 8 ms for it (not for the
  host metadata writer, which is async); queues take turns round-robin;
  RT queues go before BE ones and an RT arrival preempts a BE slice.
  ``shared_async=True`` (an option, off by default): Linux 2.6.18's
  keying instead, where only reads (and WRITE_SYNC, which blkback does
  not send) get the process's own queue and every write goes to ONE async
  queue per priority class (``cfq_queue_pid`` returns CFQ_KEY_ASYNC),
  shared by every VM and dom0's own writers; it gets 40 ms slices
  (slice_async), at most 16 requests each (``cfq_prio_to_maxrq`` at
  priority 4: 2 * (2 + 2 * 3)) and no idling.
* deadline: LBA-sorted and FIFO lists per direction, fifo_batch 16,
  read_expire 500 ms, write_expire 5 s, writes_starved 2.
* EDF: VM requests by arrival + L - M, background by arrival + 500 ms,
  one heap, work-conserving.
"""

import bisect
import collections
import heapq

from iosched.simulator.flubber import bdedf


def _clook(lst, pos):
    """Index in an (lba, seq, req) sorted list of the C-LOOK next."""
    i = bisect.bisect_left(lst, (pos, -1))
    return i if i < len(lst) else 0


class _Base:
    def __init__(self):
        self._seq = 0
        self.n = 0
        self.n_vm = 0

    def _stamp(self, req):
        self._seq += 1
        req.seq = self._seq
        self.n += 1
        if not req.bg:
            self.n_vm += 1

    def _gone(self, req):
        self.n -= 1
        if not req.bg:
            self.n_vm -= 1
        return req

    def has_vm_pending(self):
        return self.n_vm > 0

    def __len__(self):
        return self.n


class Noop(_Base):
    def __init__(self):
        super().__init__()
        self.q = collections.deque()

    def add(self, req, now):
        self._stamp(req)
        self.q.append(req)

    def pick(self, now, last):
        if not self.q:
            return None, None
        return self._gone(self.q.popleft()), None


class Deadline(_Base):
    def __init__(self, read_expire=500.0, write_expire=5000.0,
                 fifo_batch=16, writes_starved=2):
        super().__init__()
        self.sorted = {False: [], True: []}
        self.fifo = {False: collections.deque(), True: collections.deque()}
        self.expire = {False: read_expire, True: write_expire}
        self.fifo_batch = fifo_batch
        self.writes_starved = writes_starved
        self.dir = False
        self.batch = 0
        self.starved = 0
        self.gone = set()

    def add(self, req, now):
        self._stamp(req)
        bisect.insort(self.sorted[req.write], (req.lba, req.seq, req))
        self.fifo[req.write].append(req)

    def _fifo_head(self, w):
        f = self.fifo[w]
        while f and f[0].seq in self.gone:
            self.gone.discard(f.popleft().seq)
        return f[0] if f else None

    def _take(self, req):
        lst = self.sorted[req.write]
        del lst[bisect.bisect_left(lst, (req.lba, req.seq))]
        self.gone.add(req.seq)
        self.batch += 1
        return self._gone(req)

    def pick(self, now, last):
        if not self.n:
            return None, None
        pos = last.lba + last.nsect if last else 0
        lst = self.sorted[self.dir]
        if self.batch < self.fifo_batch and lst:
            i = bisect.bisect_left(lst, (pos, -1))
            if i < len(lst):
                return self._take(lst[i][2]), None
        reads, writes = self.sorted[False], self.sorted[True]
        if reads and (not writes or self.starved < self.writes_starved):
            d = False
            self.starved += 1 if writes else 0
        else:
            d = True
            self.starved = 0
        self.dir, self.batch = d, 0
        head = self._fifo_head(d)
        lst = self.sorted[d]
        if head is not None and now - head.t_arrive >= self.expire[d]:
            return self._take(head), None
        return self._take(lst[_clook(lst, pos)][2]), None


class Cfq(_Base):
    """``classes``: {proc: 'rt' | 'be' | 'idle'} (default 'be')."""

    ASYNC = 'async-'              # + class: the shared async queues

    def __init__(self, classes=None, slice_ms=100.0, idle_ms=8.0,
                 no_idle=('hostmeta',), shared_async=False,
                 slice_async_ms=40.0, async_max_rq=16):
        super().__init__()
        self.classes = dict(classes or {})
        self.slice_ms = slice_ms
        self.idle_ms = idle_ms
        self.no_idle = set(no_idle)
        self.shared_async = shared_async
        self.slice_async_ms = slice_async_ms
        self.async_max_rq = async_max_rq
        self.async_sent = 0
        if shared_async:
            for c in ('rt', 'be', 'idle'):
                self.classes[self.ASYNC + c] = c
                self.no_idle.add(self.ASYNC + c)
        self.queues = {}
        self.rr = []                 # service order of procs
        self.active = None
        self.slice_end = 0.0
        self.idle_until = None
        self.preempt = False

    def _cls(self, proc):
        return {'rt': 0, 'be': 1, 'idle': 2}[self.classes.get(proc, 'be')]

    def key(self, req):
        """The queue a request joins: its process's, or with
        ``shared_async`` a write's class-wide async queue.
        """
        if self.shared_async and req.write:
            return self.ASYNC + self.classes.get(req.proc, 'be')
        return req.proc

    def _is_async(self, key):
        return self.shared_async and key.startswith(self.ASYNC)

    def add(self, req, now):
        self._stamp(req)
        k = self.key(req)
        q = self.queues.get(k)
        if q is None:
            q = self.queues[k] = []
            self.rr.append(k)
        bisect.insort(q, (req.lba, req.seq, req))
        if (self.active is not None and k != self.active
                and self._cls(k) < self._cls(self.active)):
            self.preempt = True

    def _select(self, now):
        best = None
        for p in self.rr:
            if self.queues[p] and (best is None or
                                   self._cls(p) < self._cls(best)):
                best = p
        self.active = best
        self.idle_until = None
        self.preempt = False
        if best is not None:
            self.rr.remove(best)
            self.rr.append(best)
            self.slice_end = now + (self.slice_async_ms
                                    if self._is_async(best)
                                    else self.slice_ms)
            self.async_sent = 0
        return best

    def pick(self, now, last):
        a = self.active
        if (a is not None and self._is_async(a)
                and self.async_sent >= self.async_max_rq):
            self.slice_end = now          # an async slice's request cap
        if a is not None and (now >= self.slice_end or self.preempt):
            a = self._select(now)
        elif a is not None and not self.queues[a]:
            if self.idle_until is None and a not in self.no_idle:
                self.idle_until = min(now + self.idle_ms, self.slice_end)
            if self.idle_until is not None and now < self.idle_until:
                return None, self.idle_until
            a = self._select(now)
        elif a is None:
            a = self._select(now)
        if a is None:
            return None, None
        self.idle_until = None
        pos = last.lba + last.nsect if last else 0
        if self._is_async(a):
            self.async_sent += 1
        return self._gone(self._take(self.queues[a], pos)), None

    def _take(self, q, pos):
        """Pop the next request of the active queue (C-LOOK); the
        hook seed 004's VA-CFQ overrides (sync before async).
        """
        return q.pop(_clook(q, pos))[2]


class Edf(_Base):
    """Plain EDF (the low level of "EDF + credit")."""

    def __init__(self, slos, m_ms=bdedf.M_MS, bg_deadline_ms=500.0):
        super().__init__()
        self.slos = slos
        self.m_ms = m_ms
        self.bg_deadline_ms = bg_deadline_ms
        self.heap = []

    def add(self, req, now):
        self._stamp(req)
        if not req.bg and req.vm in self.slos:
            req.deadline = req.t_arrive + self.slos[req.vm][1] - self.m_ms
        else:
            req.deadline = req.t_arrive + self.bg_deadline_ms
        heapq.heappush(self.heap, (req.deadline, req.seq, req))

    def pick(self, now, last):
        if not self.heap:
            return None, None
        return self._gone(heapq.heappop(self.heap)[2]), None
