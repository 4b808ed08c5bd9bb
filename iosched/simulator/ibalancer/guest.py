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
"""One guest vCPU of the I-Balancer host model: its chain of chunks.

``Guest`` is the workload (``iosched.simulator.sched_base`` protocol) of one
vCPU of ``iosched.simulator.ibalancer.model``: stress (CPU chunks), iperf
(an I/O chunk ends in one network event to dom0, at most ``window``
outstanding), dd (a write of ``block_kb`` split into requests of at most
``SEG_KB`` KiB, one event each: an event set, one set in flight) and, on
the VM's interrupt vCPU, the handling of completions (one chunk of about
``irq_us`` each). A vCPU with both stress and I/O alternates an I/O chunk
and a stress chunk; one with nothing to do blocks until a completion frees
a slot. ``delay_mode='busy'`` makes it spin for a deferral before its next
chunk. Chunk lengths are jittered uniformly in [0.5, 1.5) x the mean.
"""

import collections
import math
import random

SEG_KB = 44                  # blkfront: 11 segments x 4 KiB per request
CPU_CHUNK_US = 10000         # a CPU-only vCPU's chunk (no I/O to check)


class Guest:
    """One vCPU's work: stress, iperf (window), dd (event sets), and on the
    VM's interrupt vCPU the handling of completions (one chunk each).
    """
    __slots__ = ('host', 'vm', 'e', 'trk', 'net', 'dd', 'stress', 'irq',
                 'work_left', 'chunk', 'out', 'set_left', 'blocked',
                 'alt', 'rng', 'pending', 'cur', 'stall', 'clen')

    def __init__(self, host, vm, net, dd, stress, irq):
        self.host = host
        self.vm = vm
        self.e = None
        self.trk = None
        self.net = net
        self.dd = dd
        self.stress = stress
        self.irq = irq
        self.pending = collections.deque()
        self.cur = None
        self.stall = 0              # busy-wait delay owed (delay_mode busy)
        self.clen = 0               # length of the current stress chunk
        self.out = 0                # network events outstanding
        self.set_left = 0           # disk requests of the set in flight
        self.blocked = False
        self.alt = False            # mixed: a stress turn after an I/O one
        self.rng = random.Random(host.rng.random())
        self.chunk = None
        self.work_left = 0
        self._next()
        self.blocked = self.work_left <= 0

    def _jitter(self, us):
        return max(1, int(us * (0.5 + self.rng.random())))

    def _next(self):
        """Choose the next chunk, or 0 (block)."""
        h = self.host
        if self.pending:
            self.chunk = 'irq'
            self.cur = self.pending.popleft()
            self.work_left = self._jitter(h.s.irq_us)
            return
        if self.net and self.out < h.s.window and not (
                self.stress and self.alt):
            self.chunk = 'net'
            self.work_left = self._jitter(h.s.io_chunk_us)
            self.alt = True
            return
        if self.dd and self.set_left == 0 and not (
                self.stress and self.alt):
            self.chunk = 'dd'
            self.work_left = self._jitter(10 + h.s.dd_cpu_us_per_kb
                                          * h.s.block_kb)
            self.alt = True
            return
        self.alt = False
        if self.stress:
            self.chunk = 'stress'
            self.work_left = self.clen = (
                h.s.stress_chunk_us if (self.net or self.dd or self.irq)
                else CPU_CHUNK_US)
            return
        self.chunk = None
        self.work_left = 0

    def complete(self, now):
        h = self.host
        c = self.chunk
        if c == 'net':
            self.out += 1
            h.send(self, 'net', h.s.net_kb, now)
        elif c == 'dd':
            kb = h.s.block_kb
            n = int(math.ceil(kb / SEG_KB))
            self.set_left = n
            for i in range(n):
                h.send(self, 'blk', min(SEG_KB, kb - i * SEG_KB), now)
        elif c == 'irq':
            owner, kind, kb = self.cur
            self.cur = None
            owner.done(kind, kb, now)
        elif c == 'stress' and now > h.t_warm:
            self.vm.cpu_us += self.clen
        self._next()
        if self.stall:
            # delay_mode busy: the hypercall spins before the next chunk.
            if self.work_left <= 0:
                self.chunk = 'spin'
            self.work_left += self.stall
            self.stall = 0
        self.blocked = self.work_left <= 0

    def _kick(self, now):
        if self.blocked and not self.e.on_rq:
            self._next()
            if self.work_left > 0:
                self.blocked = False
                self.host.sched.wake(self.e, now)

    def upcall(self, job, now):
        """A completion event reached this (interrupt) vCPU."""
        self.pending.append(job)
        self._kick(now)

    def done(self, kind, kb, now):
        """One of our events completed and was handled by the guest."""
        h = self.host
        if now >= h.t_warm:
            if kind == 'net':
                self.vm.net_bytes += kb * 1024
            else:
                self.vm.disk_bytes += kb * 1024
        if kind == 'net':
            self.out -= 1
        else:
            self.set_left -= 1
        if self is not self.vm.irq:     # (vCPU 0 chooses after its chunk)
            self._kick(now)
