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
"""vCPU wake-ups and wake-to-run delays counted in the kernel (eBPF).

The text tracer (``tracing``) brings every wake-up and every switch-in
of the watched threads into Python as a trace line: ~2,000 lines per vCPU
per second, ~45 us of the agent's CPU per event (issue 29). Here two eBPF
programs on the same tracepoints do the per-event work in the kernel:

* ``sched:sched_wakeup`` of a watched tid: its slot's wake-up count + 1,
  its time (``bpf_ktime_get_ns``: CLOCK_MONOTONIC, the text tracer's
  ``mono`` clock) into the slot's ring of the newest ``RING`` wake-up
  times, and as the slot's pending wake-up;
* ``sched:sched_switch`` to a watched tid with a pending wake-up: the
  delay since it (``tracing.run_delays``'s pairing: the first switch-in
  after the newest wake-up) into the slot's histogram
  (``contract.delay_hist``), the pending wake-up consumed.

Each tick the agent reads the slots from the array map's memory (mmap; no
syscall): per tid the wake-ups since the last read (E_n, exact), their
newest ``RING - 1`` times (what Eq. 1's EMA gap reads:
``isacs.ema_tail_length``, ~27 intervals at w = 0.9) and the new delays
by bucket. Wake-to-run pairs across a tick boundary are kept (the text
tracer lost a wake-up whose switch-in fell in the next drain).

A slot (``WORDS`` u64): wake-ups, pending wake-up time (0: none),
delays, spare, the ring, the histogram. The kernel writes a ring entry
before the count; the reader trusts the entries the count covers that no
later wake-up can have overwritten during its read.

NOTE(iosched): like the text tracer's instance, loading the programs
changes no scheduling and nothing a VM sees; ``close()`` detaches them
(closing the fds is enough: a dead agent's programs go with it).
"""

import itertools
import operator
import os
import struct

from iosched.contract import delay_hist
from iosched.host_agent.drivers.libvirt import ebpf as B
from iosched.host_agent import paths

RING = 64                        # power of two
HEAD = 4                         # wake-ups, pending, delays, spare
WORDS = HEAD + RING + delay_hist.BUCKETS
SLOT_BYTES = WORDS * 8
RING_OFF = HEAD * 8
HIST_OFF = (HEAD + RING) * 8
MAX_TIDS = 512
# What loading and attaching the programs takes (the service unit's
# bounding set keeps them beside the privsep daemon's CAP_SYS_NICE).
CAPABILITIES = ('CAP_BPF', 'CAP_PERFMON')
WAKEUP = 'events/sched/sched_wakeup'
SWITCH = 'events/sched/sched_switch'
_HEAD = struct.Struct('<QQQ')
_RING_FMT = '<%dQ' % RING
_HIST_FMT = '<%dQ' % delay_hist.BUCKETS
_BUCKET_IDS = range(delay_hist.BUCKETS)


def field_offset(format_text, name):
    """The byte offset of ``name`` in an event's ``format`` text."""
    for line in format_text.splitlines():
        parts = [p.strip() for p in line.strip().split(';')]
        if parts and parts[0].startswith('field:') and (
                parts[0].split()[-1] == name):
            return int(parts[1].split(':')[1])
    raise ValueError('no field %s in the event format' % name)


def _lookup_slot(pid_off, tids_fd, state_fd):
    """r8 = the slot of the tid at ``pid_off`` in the record, else exit
    (jumps to the program's last two instructions: ``off`` filled in).
    """
    return [B.insn(0xbf, 6, 1),                     # r6 = ctx
            B.load(2, 6, pid_off, 4),
            B.store(10, -4, 2, 4),
            B.load_map(1, tids_fd),
            B.alu_reg(2, '=', 10), B.alu(2, '+', -4),
            B.call(B.FN_MAP_LOOKUP),
            ('exit_if_zero', 0),
            B.load(2, 0, 0, 4),                     # slot
            B.store(10, -8, 2, 4),
            B.load_map(1, state_fd),
            B.alu_reg(2, '=', 10), B.alu(2, '+', -8),
            B.call(B.FN_MAP_LOOKUP),
            ('exit_if_zero', 0),
            B.alu_reg(8, '=', 0)]


def _link(parts):
    """Assemble: ('exit_if_zero', reg) jumps to the final ``r0 = 0;
    exit``. Returns the bytecode.
    """
    sizes = [len(p) // 8 if isinstance(p, bytes) else 1 for p in parts]
    total = sum(sizes)
    out, at = [], 0
    for p, n in zip(parts, sizes):
        if isinstance(p, tuple):
            out.append(B.jump(p[1], '==', 0, total - at - 1))
        else:
            out.append(p)
        at += n
    out += [B.alu(0, '=', 0), B.exit_()]
    return b''.join(out)


def wakeup_program(pid_off, tids_fd, state_fd):
    return _link(_lookup_slot(pid_off, tids_fd, state_fd) + [
        B.call(B.FN_KTIME_GET_NS),                  # r0 = now
        B.load(1, 8, 0),                            # r1 = wake-ups
        B.alu_reg(2, '=', 1), B.alu(2, '&', RING - 1), B.alu(2, '<<', 3),
        B.alu_reg(3, '=', 8), B.alu_reg(3, '+', 2),
        B.store(3, RING_OFF, 0),                    # ring[n % RING] = now
        B.store(8, 8, 0),                           # pending = now
        B.alu(1, '+', 1), B.store(8, 0, 1)])        # wake-ups = n + 1


def _bucket_insns():
    """r3 = delay_hist.bucket(r7) (r7: the delay, ns, >= 0)."""
    bits, last = delay_hist.BITS, delay_hist.BUCKETS - 1
    log2 = []
    for step in (32, 16, 8, 4, 2, 1):               # r2 = top bit of r1
        log2 += [B.alu_reg(3, '=', 1), B.alu(3, '>>', step),
                 B.jump(3, '==', 0, 2),
                 B.alu_reg(1, '=', 3), B.alu(2, '+', step)]
    body = [B.alu_reg(1, '=', 7), B.alu(2, '=', 0)] + log2 + [
        B.alu_reg(3, '=', 2), B.alu(3, '-', bits),
        B.alu_reg(4, '=', 7), B.alu_reg(4, '>>', 3),
        B.alu(4, '&', (1 << bits) - 1),
        B.alu_reg(3, '=', 2), B.alu(3, '-', bits - 1), B.alu(3, '<<', bits),
        B.alu_reg(3, '|', 4)]
    return ([B.alu_reg(3, '=', 7),
             B.jump(7, '<', 1 << (bits + 1), len(body))] + body
            + [B.jump(3, '<=', last, 1), B.alu(3, '=', last)])


def switch_program(next_pid_off, tids_fd, state_fd):
    return _link(_lookup_slot(next_pid_off, tids_fd, state_fd) + [
        B.load(9, 8, 8),                            # r9 = pending
        ('exit_if_zero', 9),
        B.call(B.FN_KTIME_GET_NS),
        B.store_imm(8, 8, 0),                       # consumed
        B.alu_reg(0, '-', 9), B.alu_reg(7, '=', 0),
        B.jump(7, 's>=', 0, 1), B.alu(7, '=', 0)]   # r7 = delay >= 0
        + _bucket_insns() + [
        B.alu(3, '<<', 3), B.alu_reg(1, '=', 8), B.alu_reg(1, '+', 3),
        B.load(2, 1, HIST_OFF), B.alu(2, '+', 1), B.store(1, HIST_OFF, 2),
        B.load(1, 8, 16), B.alu(1, '+', 1), B.store(8, 16, 1)])


# -- reading a slot (pure) ----------------------------------------------------
def ring_tail(ring, first, count, count_after):
    """The wake-up times with sequence numbers in [first, count), oldest
    first, that the ring still holds: ``ring`` read between two reads of
    the count (``count``, then ``count_after``); entry j sits at ring[j %
    RING] and a write in progress may be replacing entry
    ``count_after - RING``.
    """
    size = len(ring)
    lo = max(first, count_after - size + 1, 0)
    return [ring[j % size] for j in range(lo, count)]


def sparse_diff(counts, before):
    """((bucket, counts[k] - before[k]), ...) for the buckets that moved
    (two cumulative histograms of equal length).
    """
    d = list(map(operator.sub, counts, before))
    return tuple(zip(itertools.compress(_BUCKET_IDS, d),
                     itertools.compress(d, d)))


class Window(object):
    """One tid since the previous read: E_n, the newest times, the new
    delays by bucket (sparse; None when the tid's delays are not asked),
    how many delays the kernel paired.
    """
    __slots__ = ('count', 'times', 'delays', 'paired')

    def __init__(self, count, times, delays, paired=0):
        self.count, self.times, self.delays = count, times, delays
        self.paired = paired     # new delays (all tids, asked or not)


class BpfTracer(object):
    """The eBPF counterpart of ``tracing.WakeupTracer`` (same ``watch``)."""

    switches = True

    def __init__(self, tracefs_root, max_tids=MAX_TIDS):
        self.root = tracefs_root
        self.max_tids = max_tids
        self._fds, self._mm = [], None
        self._slot = {}          # tid -> slot
        self._free = list(range(max_tids - 1, -1, -1))
        self._seen = {}          # slot -> (wake-ups, delays, hist) read
        self._tids = frozenset()
        self._run_tids = frozenset()

    @staticmethod
    def available(tracefs_root):
        return os.geteuid() == 0 and all(
            os.path.isfile(paths.safe_join(tracefs_root, e, 'id'))
            for e in (WAKEUP, SWITCH))

    def _read(self, rel):
        with open(paths.safe_join(self.root, rel)) as fh:
            return fh.read()

    def open(self):
        try:
            self._tids_fd = B.map_create(B.MAP_HASH, 4, 4, self.max_tids)
            self._fds.append(self._tids_fd)
            state = B.map_create(B.MAP_ARRAY, 4, SLOT_BYTES, self.max_tids,
                                 B.F_MMAPABLE)
            self._fds.append(state)
            self._mm = B.map_mmap(state, SLOT_BYTES * self.max_tids)
            for event, field, build in (
                    (WAKEUP, 'pid', wakeup_program),
                    (SWITCH, 'next_pid', switch_program)):
                off = field_offset(self._read(event + '/format'), field)
                prog = B.prog_load(build(off, self._tids_fd, state))
                self._fds.append(prog)
                self._fds.append(B.attach_tracepoint(
                    prog, int(self._read(event + '/id'))))
        except (OSError, ValueError):
            self.close()
            raise

    def watch(self, tids, run_tids=None):
        """Count the wake-ups of these tids (and the delays of
        ``run_tids``, default the same: the kernel pairs every watched
        tid's, ``drain`` returns these'); slots of gone tids are freed.
        """
        tids = frozenset(list(tids)[:self.max_tids])
        self._run_tids = (tids if run_tids is None
                          else frozenset(run_tids) & tids)
        if tids == self._tids:
            return
        for tid in self._tids - tids:
            B.map_delete(self._tids_fd, struct.pack('<I', tid))
            slot = self._slot.pop(tid)
            self._seen.pop(slot, None)
            self._free.append(slot)
        for tid in sorted(tids - self._tids):
            slot = self._free.pop()
            self._slot[tid] = slot
            self._seen[slot] = self._snapshot(slot)   # from now on
            B.map_update(self._tids_fd, struct.pack('<I', tid),
                         struct.pack('<I', slot))
        self._tids = tids

    def _snapshot(self, slot):
        wakes, _, delays = _HEAD.unpack_from(self._mm, slot * SLOT_BYTES)
        return [wakes, delays, None]      # the histogram read when asked

    def _hist(self, base):
        return struct.unpack_from(_HIST_FMT, self._mm, base + HIST_OFF)

    def drain(self):
        """{tid: ``Window``} since the previous drain, for every watched
        tid (delays for ``run_tids`` only: a tid's first drain among them
        reads its histogram and reports none).
        """
        mm, out, run_tids = self._mm, {}, self._run_tids
        for tid, slot in self._slot.items():
            base = slot * SLOT_BYTES
            wakes, _, delays = _HEAD.unpack_from(mm, base)
            seen = self._seen[slot]
            times = ()
            if wakes != seen[0]:
                ring = struct.unpack_from(_RING_FMT, mm, base + RING_OFF)
                after = _HEAD.unpack_from(mm, base)[0]
                times = ring_tail(ring, seen[0], wakes, after)
            hist = None
            if tid in run_tids:
                hist = ()
                if seen[2] is None:
                    seen[2] = self._hist(base)
                elif delays != seen[1]:
                    h = self._hist(base)
                    hist = sparse_diff(h, seen[2])
                    seen[2] = h
            else:
                seen[2] = None
            out[tid] = Window(wakes - seen[0], times, hist,
                              delays - seen[1])
            seen[0], seen[1] = wakes, delays
        return out

    def close(self):
        if self._mm is not None:
            self._mm.close()
            self._mm = None
        for fd in reversed(self._fds):
            try:
                os.close(fd)
            except OSError:
                pass
        self._fds = []
