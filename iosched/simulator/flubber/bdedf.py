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
"""VLC's BD-EDF: Algorithm 1 (classification) and Algorithm 2 (batch and
delay), with the paper's pseudo-code defects fixed.

Three queues: the sorted queue (every pending request by LBA), VM-EDF
(VM requests by deadline = arrival + L - M, M = 9 ms; ties keep arrival
order, the "scan past earlier deadlines" insertion) and the FIFO
background queue. A dispatched request leaves both queues it is in.

``pick(now, last)`` is Algorithm 2, run whenever the disk is free:

1. A window is open when VM-EDF is non-empty and its head's deadline is
   in the future. It closes at ``head.deadline - max_size / Trans`` (44
   KiB at 100 MB/s). ``hold_ms`` (default 0, the paper's rule; not the
   paper's, a counterfactual of ours) moves both past the deadline by that
   much: BD keeps the last VM's image while it has requests, up to
   ``hold_ms`` after the EDF head was due (docs/reproduction_models.md
   "BD that keeps the image").
2. In the window, a queued request that starts where the last ended
   (its length, not a fixed size_block) is sent; else the last VM's next
   queued request in C-LOOK order (ascending from the last end,
   wrapping). The pseudo-code tests only the sorted queue's next entry:
   a same-VM request elsewhere in the queue (a guest's journal commit
   below its data) would then make it wait for an arrival the queued
   request itself holds back.
3. Otherwise the scheduler waits, but only after a VM request whose VM
   can still send (it has credits left: a wait for a VM that VBC blocks,
   or for more host I/O, cannot be answered in time): the first arrival that is
   contiguous with, or from the same VM as, the last request is sent ("wait
   success"); when the window closes with none, it falls back.
4. Fallback: the VM-EDF head; only when VM-EDF is empty the background
   head (the pseudo-code's final else no longer overwrites a choice).
   Starvation bound: a background head older than ``bg_max_ms`` (500 ms,
   the EDF baseline's backup deadline) is sent before the window logic,
   and with it, as one batch, the background requests older than half
   that (FIFO), so the far moves to host metadata come in batches.
"""

import bisect
import heapq

M_MS = 9.0


class BdEdf:
    def __init__(self, slos, m_ms=M_MS, max_sect=88, trans_mb_s=100.0,
                 bd=True, bg_max_ms=500.0, can_send=None, hold_ms=0.0):
        self.slos = slos                  # {vm: (B, L)}
        self.m_ms = m_ms
        self.max_ms = max_sect * 512 / (trans_mb_s * 1000.0)
        self.bd = bd
        self.hold_ms = hold_ms
        self.bg_max_ms = bg_max_ms
        self.can_send = can_send or (lambda vm: True)
        self.sorted = []                  # [(lba, seq, req)]
        self.by_vm = {}                   # vm -> [(lba, seq, req)]
        self.edf = []                     # heap [(deadline, seq, req)]
        self.bg = []                      # FIFO list + head index
        self.bg_head = 0
        self.gone = set()                 # seqs dispatched (lazy heap)
        self.n_vm = 0
        self._seq = 0
        self.wait_until = None
        self.wait_last = None
        self.chosen = None
        self.bg_batch = False
        self.stats = {'windows': 0, 'immediate': 0, 'waits': 0,
                      'wait_success': 0, 'wait_fail': 0, 'fallback_edf': 0,
                      'fallback_bg': 0, 'bg_aged': 0}

    # -- Algorithm 1 -----------------------------------------------------

    def deadline(self, req):
        return req.t_arrive + self.slos[req.vm][1] - self.m_ms

    def add(self, req, now):
        self._seq += 1
        req.seq = self._seq
        bisect.insort(self.sorted, (req.lba, req.seq, req))
        if req.vm is not None:
            bisect.insort(self.by_vm.setdefault(req.vm, []),
                          (req.lba, req.seq, req))
        if req.vm is not None and req.vm in self.slos:
            req.deadline = self.deadline(req)
            heapq.heappush(self.edf, (req.deadline, req.seq, req))
            self.n_vm += 1
        else:
            self.bg.append(req)
        if (self.wait_until is not None and self.chosen is None
                and self._suits(req, self.wait_last)):
            self.chosen = req

    def has_vm_pending(self):
        return self.n_vm > 0

    def __len__(self):
        return len(self.sorted)

    # -- helpers ---------------------------------------------------------

    @staticmethod
    def _suits(req, last):
        return req.lba == last.lba + last.nsect or (
            last.vm is not None and req.vm == last.vm)

    def _edf_head(self):
        while self.edf and self.edf[0][1] in self.gone:
            self.gone.discard(heapq.heappop(self.edf)[1])
        return self.edf[0][2] if self.edf else None

    def _bg_head(self):
        while self.bg_head < len(self.bg) and self.bg[
                self.bg_head].seq in self.gone:
            self.gone.discard(self.bg[self.bg_head].seq)
            self.bg_head += 1
        if self.bg_head > 1024:
            del self.bg[:self.bg_head]
            self.bg_head = 0
        return self.bg[self.bg_head] if self.bg_head < len(self.bg) else None

    @staticmethod
    def _clook(lst, pos):
        if not lst:
            return None
        i = bisect.bisect_left(lst, (pos, -1))
        return lst[i if i < len(lst) else 0][2]

    def successor(self, pos):
        """C-LOOK: the first pending request at or after pos, else the
        lowest.
        """
        return self._clook(self.sorted, pos)

    def candidate(self, last):
        """Step 2: a contiguous request, else the last VM's C-LOOK
        next, else None.
        """
        end = last.lba + last.nsect
        nxt = self._clook(self.sorted, end)
        if nxt is not None and nxt.lba == end:
            return nxt
        if last.vm is not None:
            return self._clook(self.by_vm.get(last.vm), end)
        return None

    def _take(self, req):
        i = bisect.bisect_left(self.sorted, (req.lba, req.seq))
        del self.sorted[i]
        if req.vm is not None:
            lst = self.by_vm[req.vm]
            del lst[bisect.bisect_left(lst, (req.lba, req.seq))]
        self.gone.add(req.seq)
        if req.vm is not None and req.vm in self.slos:
            self.n_vm -= 1
        return req

    # -- Algorithm 2 -----------------------------------------------------

    def pick(self, now, last):
        """(request, None), or (None, wake time) while waiting, or
        (None, None) when empty.
        """
        if self.wait_until is not None:
            if self.chosen is not None:
                r, self.chosen = self.chosen, None
                self.wait_until = None
                self.stats['wait_success'] += 1
                return self._take(r), None
            if now < self.wait_until:
                return None, self.wait_until
            self.wait_until = None
            self.stats['wait_fail'] += 1
            return self._fallback(self._edf_head())
        head = self._edf_head()
        bgh = self._bg_head()
        if bgh is not None and now - bgh.t_arrive >= (
                self.bg_max_ms / 2 if self.bg_batch else self.bg_max_ms):
            self.stats['bg_aged'] += 1
            self.bg_batch = True
            return self._take(bgh), None
        self.bg_batch = False
        if (self.bd and head is not None and last is not None
                and head.deadline + self.hold_ms > now):
            end = head.deadline + self.hold_ms - self.max_ms
            self.stats['windows'] += 1
            nxt = self.candidate(last)
            if nxt is not None:
                self.stats['immediate'] += 1
                return self._take(nxt), None
            if end > now and last.vm is not None and self.can_send(last.vm):
                self.stats['waits'] += 1
                self.wait_until = end
                self.wait_last = last
                self.chosen = None
                return None, end
        return self._fallback(head)

    def _fallback(self, head):
        if head is not None:
            self.stats['fallback_edf'] += 1
            return self._take(head), None
        bgh = self._bg_head()
        if bgh is not None:
            self.stats['fallback_bg'] += 1
            return self._take(bgh), None
        return None, None

    def wait_success_ratio(self):
        w = self.stats['waits']
        return self.stats['wait_success'] / w if w else None

    def window_success_ratio(self):
        w = self.stats['windows']
        return (self.stats['immediate'] + self.stats['wait_success']) / w \
            if w else None
