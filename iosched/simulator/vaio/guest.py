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
"""A seed-004 guest: dd reading a file sequentially plus journal-like
small async writes, behind its blkback.

* Reads: 44 KiB (88 sectors, blkif's 11 x 4 KiB segments, Table 1),
  consecutive, ``depth`` in flight (the guest's 128 KiB read-ahead is
  about three of them; the 32-slot ring never fills). A completion
  reaches dd and the next read leaves ``think_ms`` later.
* Journal commits: ``periodic=True``, every ``commit_ms`` (ext4's 5 s)
  from a random phase; ``periodic=False``, sporadic (a read-only dd
  dirties metadata rarely: relatime's first access, kernel threads):
  exponential gaps of mean ``commit_ms``. Each is two async writes, 4 KiB and
  20 KiB, 30-36 M sectors past the read stream (Table 1: 31 and 35.5 M); one
  commit at a time.
* The coupling (gap 6 of the digest, our rule): while a commit's writes
  are outstanding dd's next read blocks (ext4 updates the inode under a
  journal handle that waits for the committing buffers); reads already
  in flight complete. A vCPU with nothing to do for more than
  ``inactive_ms`` (Xen credit: 30 ms) is inactive until the writes'
  response wakes it; those spans are recorded. ``block=False`` is the
  paper's native control: writes never hold up the reader.
* dd has finished when its last read completes (outstanding journal
  writes do not count, as in the paper's finish times).
"""

from iosched.simulator.flubber import request

READ_SECT = 88
WRITE_SECT = (8, 40)
WRITE_OFF = (30_000_000, 36_000_000)


class DdGuest:
    def __init__(self, eng, vm, base, total_sect, rng, depth=3,
                 think_ms=0.05, commit_ms=5000.0, block=True,
                 inactive_ms=30.0, periodic=True):
        self.eng = eng
        self.vm = vm
        self.base = base
        self.total = total_sect
        self.rng = rng
        self.depth = depth
        self.think_ms = think_ms
        self.commit_ms = commit_ms
        self.block = block
        self.inactive_ms = inactive_ms
        self.periodic = periodic
        self.issued = 0
        self.done = 0
        self.inflight = 0
        self.pending_writes = 0
        self.blocked = False
        self.idle_since = None
        self.inactive = []         # [(start ms, end ms)] of the vCPU
        self.commits = 0
        self.finished = None

    def start(self):
        if self.commit_ms:
            self.eng.at(self._gap() if not self.periodic else
                        self.rng.uniform(0, self.commit_ms), self._commit)
        self._fill()

    def _gap(self):
        if self.periodic:
            return self.commit_ms
        return self.rng.expovariate(1.0 / self.commit_ms)

    def _fill(self, _=None):
        while (not self.blocked and self.inflight < self.depth
               and self.issued < self.total):
            n = min(READ_SECT, self.total - self.issued)
            r = request.Req(self.vm, self.base + self.issued, n, False,
                            done=self._read_done)
            r.t_guest = self.eng.now
            self.issued += n
            self.inflight += 1
            self.eng.submit(r)

    def _read_done(self, req):
        self.inflight -= 1
        self.done += req.nsect
        if self.done >= self.total:
            self.finished = self.eng.now
            return
        if self.blocked and self.inflight == 0:
            self.idle_since = self.eng.now
        self.eng.at(self.eng.now + self.think_ms, self._fill)

    def _commit(self, _=None):
        if self.finished is not None:
            return
        self.eng.at(self.eng.now + self._gap(), self._commit)
        if self.pending_writes:
            return                 # jbd2: one commit at a time
        self.commits += 1
        lba = self.base + self.rng.randrange(*WRITE_OFF) // 8 * 8
        for i, n in enumerate(WRITE_SECT):
            w = request.Req(self.vm, lba + i * 4096, n, True, kind='journal',
                            done=self._write_done)
            w.t_guest = self.eng.now
            self.pending_writes += 1
            self.eng.submit(w)
        if self.block:
            self.blocked = True
            if self.inflight == 0:
                self.idle_since = self.eng.now

    def _write_done(self, req):
        self.pending_writes -= 1
        if self.pending_writes or not self.blocked:
            return
        self.blocked = False
        now = self.eng.now
        if (self.idle_since is not None
                and now - self.idle_since > self.inactive_ms):
            self.inactive.append((self.idle_since + self.inactive_ms, now))
        self.idle_since = None
        if self.finished is None:
            self.eng.at(now + self.think_ms, self._fill)
