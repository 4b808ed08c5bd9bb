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
"""Sysbench-fileio-like guests and the host's backup job.

A ``Guest`` runs ``threads`` closed-loop threads (no think time beyond
``think_ms`` for the completion to reach the guest and the next call).
Sequential threads share one file cursor (sysbench's seq modes); random
threads pick 16 KiB blocks uniformly in the 1 GB file set. Per-guest
batching, the paper's feature 1: the guest's block layer plugs its queue
(Linux 2.6.18: unplug after 3 ms or at 4 requests), merges contiguous
ops up to 44 KiB (blkfront's 11 x 4 KiB segments) and then sends the
batch, in LBA order, to the back end; a synchronous read leaves at once
(``sync_unplug``: 2.6.18's reader waiting on its locked page runs
sync_page, which unplugs the queue). Sequential reads arrive as 44 KiB
requests (the guest's read-ahead). Writes with fsync: after its data
write completes a thread waits for a journal commit (ext3 group commit:
one 8 KiB write at the guest journal, sequential, covering every fsync
waiting when it starts; one commit at a time); ``fsync_every`` writes per
fsync, counted per thread or, with ``fsync_scope='guest'``, over the
guest (sysbench's --file-fsync-freq), whose fsync then flushes every
dirty page of the guest. Every ``meta_every``-th
commit dirties the image file's host metadata: a 4 KiB host write near
LBA 0 (dom0's file system), asynchronous, background I/O.

``Backup``: the host copies a 12 GB image: 128 KiB sequential reads (two
in flight, read-ahead) and, for each, a write of the copy elsewhere (up
to 8 in flight, the page cache's write-back); background I/O.
"""

import dataclasses
import typing

from iosched.simulator.flubber import layout
from iosched.simulator.flubber import request

OP_SECT = 32                       # 16 KiB
MAX_SECT = 88                      # 44 KiB


@dataclasses.dataclass(frozen=True)
class Workload:
    pattern: str                   # 'seq' | 'rnd'
    rw: str                        # 'r' | 'w' | 'rw'
    threads: int
    file_sect: int
    total_ops: typing.Optional[int] = None   # 16 KiB ops; None: endless
    fsync: bool = False
    read_frac: float = 0.6         # rw: sysbench's 1.5 read/write ratio


def seq_read(gb=2.0, threads=16, total=True):
    sect = int(gb * layout.GIB)
    return Workload('seq', 'r', threads, sect,
                    sect // OP_SECT if total else None)


def seq_write(gb=2.0, threads=16, total=True):
    sect = int(gb * layout.GIB)
    return Workload('seq', 'w', threads, sect,
                    sect // OP_SECT if total else None, fsync=True)


def rnd(rw, ops, threads=8, gb=1.0):
    return Workload('rnd', rw, threads, int(gb * layout.GIB), ops,
                    fsync=rw != 'r')


class Guest:
    def __init__(self, eng, vm, index, wl, rng, plug_ms=3.0, plug_thresh=4,
                 think_ms=0.1, cache_ms=0.02, fsync_every=1,
                 meta_every=4, sync_unplug=True, fsync_scope='thread',
                 on_finish=None):
        self.eng = eng
        self.vm = vm
        self.wl = wl
        self.rng = rng
        self.base = layout.file_start(index)
        self.jbase = layout.journal_start(index)
        self.jpos = 0
        self.plug_ms = plug_ms
        self.plug_thresh = plug_thresh
        self.think_ms = think_ms
        self.cache_ms = cache_ms
        self.fsync_every = fsync_every
        self.meta_every = meta_every
        self.sync_unplug = sync_unplug
        self.fsync_scope = fsync_scope
        self.writes = 0
        self.on_finish = on_finish
        self.cursor = 0
        self.issued = 0            # sectors
        self.done_sect = 0
        self.ops_done = 0
        self.total_sect = (wl.total_ops * OP_SECT
                           if wl.total_ops is not None else float('inf'))
        self.plug = []
        self._plug_gen = 0
        self._plug_armed = False
        self.dirty = {}            # thread -> [(lba, nsect)]
        self.flushing = {}         # thread -> requests left
        self.commit_wait = []
        self.committing = False
        self.commits = 0
        self.finished = None
        self.seq_op = MAX_SECT if (wl.pattern == 'seq' and wl.rw == 'r') \
            else OP_SECT

    def start(self):
        for t in range(self.wl.threads):
            self.dirty[t] = []
            self._issue(t)

    # -- issuing ---------------------------------------------------------

    def _issue(self, t):
        wl = self.wl
        if self.issued >= self.total_sect:
            if self.dirty[t]:
                self._flush(t)
            return
        if wl.pattern == 'seq':
            n = int(min(self.seq_op, self.total_sect - self.issued))
            lba = self.base + self.cursor % wl.file_sect
            self.cursor += n
        else:
            n = OP_SECT
            lba = self.base + self.rng.randrange(
                wl.file_sect // OP_SECT) * OP_SECT
        self.issued += n
        if wl.rw == 'r':
            write = False
        elif wl.rw == 'w':
            write = True
        else:
            write = self.rng.random() >= wl.read_frac
        if write:
            # into the guest page cache; fsync every fsync_every writes
            self.dirty[t].append((lba, n))
            self._account(n)
            self.writes += 1
            if self.fsync_scope == 'guest':
                due = self.writes % self.fsync_every == 0
            else:
                due = len(self.dirty[t]) >= self.fsync_every
            if due:
                self._flush(t)
            else:
                self.eng.at(self.eng.now + self.cache_ms, self._issue, t)
            return
        self._queue(lba, n, False, t)

    def _queue(self, lba, n, write, waiter):
        for r in self.plug:
            if r.write != write or r.nsect + n > MAX_SECT:
                continue
            if r.lba + r.nsect == lba:
                r.nsect += n
            elif lba + n == r.lba:
                r.lba = lba
                r.nsect += n
            else:
                continue
            r.waiters.append(waiter)
            return
        r = request.Req(self.vm, lba, n, write, done=self._done)
        r.waiters.append(waiter)
        r.t_guest = self.eng.now
        self.plug.append(r)
        if (len(self.plug) >= self.plug_thresh
                or (self.sync_unplug and not write)):
            self._unplug()
        elif not self._plug_armed:
            self._plug_armed = True
            self._plug_gen += 1
            self.eng.at(self.eng.now + self.plug_ms, self._timer,
                        self._plug_gen)

    def _timer(self, gen):
        if gen == self._plug_gen:
            self._unplug()

    def _unplug(self):
        self._plug_armed = False
        self._plug_gen += 1
        batch = sorted(self.plug, key=lambda r: r.lba)
        self.plug = []
        for r in batch:
            self.eng.submit(r)

    def _flush(self, t):
        """fsync: the thread's dirty pages go out as one batch (merged,
        LBA order), then the journal commit.
        """
        if self.fsync_scope == 'guest':
            pages = sorted(p for d in self.dirty.values() for p in d)
            for u in self.dirty:
                self.dirty[u] = []
        else:
            pages = sorted(self.dirty[t])
            self.dirty[t] = []
        if not pages:
            self.commit_wait.append(t)
            if not self.committing:
                self._commit()
            return
        self.flushing[t] = len(pages)
        for lba, n in pages:
            self._queue(lba, n, True, ('w', t))
        self._unplug()

    # -- completions -----------------------------------------------------

    def _done(self, req):
        for w in req.waiters:
            if isinstance(w, tuple):
                self._page_done(w[1])
            else:
                self._account(req.nsect // len(req.waiters))
                self.eng.at(self.eng.now + self.think_ms, self._issue, w)

    def _account(self, nsect):
        self.done_sect += nsect
        self.ops_done += 1
        self._check_finish()

    def _page_done(self, t):
        self.flushing[t] -= 1
        if self.flushing[t] == 0:
            del self.flushing[t]
            self.commit_wait.append(t)
            if not self.committing:
                self._commit()

    def _commit(self):
        """ext3 group commit: journal blocks (8 KiB), then, once they are
        on disk, the commit block (4 KiB) right after them.
        """
        waiters, self.commit_wait = self.commit_wait, []
        self.committing = True
        lba = self.jbase + self.jpos
        self.jpos = (self.jpos + 24) % layout.JOURNAL_SECT
        r = request.Req(self.vm, lba, 16, True, kind='journal',
                        done=self._journal_done)
        r.waiters = waiters
        r.t_guest = self.eng.now
        self.eng.submit(r)
        self.commits += 1
        if self.meta_every and self.commits % self.meta_every == 0:
            start, length = layout.HOST_META
            self.eng.submit(request.Req(
                None, start + self.rng.randrange(length // 8) * 8, 8, True,
                kind='hostmeta', bg=True, proc='hostmeta'))

    def _journal_done(self, req):
        c = request.Req(self.vm, req.lba + req.nsect, 8, True, kind='commit',
                        done=self._commit_done)
        c.waiters = req.waiters
        c.t_guest = self.eng.now
        self.eng.submit(c)

    def _commit_done(self, req):
        self.committing = False
        for t in req.waiters:
            self.eng.at(self.eng.now + self.think_ms, self._issue, t)
        if self.commit_wait:
            self._commit()
        self._check_finish()

    def _check_finish(self):
        if (self.done_sect >= self.total_sect and self.finished is None
                and not any(self.dirty.values()) and not self.flushing
                and not self.committing and not self.commit_wait):
            self.finished = self.eng.now
            if self.on_finish is not None:
                self.on_finish(self.vm)


class Backup:
    """The host's image copy; ``finished`` is set when the last write
    of the copy completes.
    """

    def __init__(self, eng, gb=12.0, chunk=256, reads=2, writes=8):
        self.eng = eng
        self.total = int(gb * layout.GB)
        self.chunk = chunk
        self.max_reads = reads
        self.max_writes = writes
        self.pos = 0
        self.reads = 0
        self.writes = 0
        self.ready = 0             # chunks read, copy not yet submitted
        self.written = 0
        self.wpos = 0
        self.finished = None

    def start(self):
        self._pump()

    def _pump(self):
        while self.ready and self.writes < self.max_writes:
            self.ready -= 1
            self.writes += 1
            self.eng.submit(request.Req(
                None, layout.BACKUP_DST + self._wpos(), self.chunk, True,
                kind='backup', bg=True, proc='backup', done=self._wdone))
        while (self.reads < self.max_reads and self.pos < self.total
               and self.ready + self.writes < self.max_writes + 2):
            self.reads += 1
            r = request.Req(None, layout.BACKUP_SRC + self.pos, self.chunk,
                            False, kind='backup', bg=True, proc='backup',
                            done=self._rdone)
            self.pos += self.chunk
            self.eng.submit(r)

    def _wpos(self):
        p = self.wpos
        self.wpos += self.chunk
        return p

    def _rdone(self, req):
        self.reads -= 1
        self.ready += 1
        self._pump()

    def _wdone(self, req):
        self.writes -= 1
        self.written += self.chunk
        if self.written >= self.total and self.finished is None:
            self.finished = self.eng.now
        self._pump()
