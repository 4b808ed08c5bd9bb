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
"""tracefs text lines -> five layers and vCPU spans (pure: no I/O).

Line format (kernel/trace/trace_output.c), e.g.::

    qemu-system-x86-4242 [001] ..... 482.821330: block_bio_queue: \
7,0 RS 0 + 128 [qemu-system-x86]
    qemu-system-x86-4242 [001] ..... 482.821335: block_rq_issue: \
7,0 RS 65536 () 0 + 128 be,0,4 [qemu-system-x86]
    <idle>-0 [001] ..s1. 482.821514: block_rq_complete: 7,0 RS () 0 + 128 \
be,0,4 [0]
    CPU 0/TCG-4250 [000] d..2. 1.0: sched_switch: prev_comm=CPU 0/TCG \
prev_pid=4250 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 \
next_prio=120
    <idle>-0 [000] d..3. 1.2: sched_wakeup: comm=CPU 0/TCG pid=4250 prio=120 \
target_cpu=000

``Assembler`` turns them into requests with the layers of the real-host
mapping (docs/iotrace.md, "Layer sources"):

* Request: ``block_bio_queue`` of a bio submitted by one of the VM's
  QEMU threads (the VM's request entering the host kernel);
* Queuing: ``block_rq_insert`` (into the elevator); a device without
  an elevator issues without inserting: then the Request time;
* Dispatch: ``block_rq_issue``; Completion: ``block_rq_complete``;
* Response: the first ``sched_wakeup`` of the VM's QEMU completion
  thread (its main loop, or an I/O thread) after the completion: QEMU
  picks the completion up there and raises the guest's interrupt.

A request whose start sector matches no queued bio is a request first
seen at issue (its Request and Queuing are missing). Bios merged into an
issued request (their sectors inside its range) share its Dispatch and
Completion. A bio split into several requests keeps one rid: each piece
adds Dispatch and Completion events with its own bytes (the analyzer's
waits use the first piece). VMs: the submitting thread id (``tid_vm``), else
the sector (``sector_vm``); the attribution method is counted.
"""

import collections
import re

from iosched.iotrace import fmt

LINE = re.compile(r'^\s*(?P<comm>.*?)-(?P<pid>\d+)\s+\[(?P<cpu>\d+)\]\s+'
                  r'\S+\s+(?P<s>\d+)\.(?P<f>\d+): (?P<ev>\w+): (?P<rest>.*)$')
RQ = re.compile(r'^(\d+),(\d+) (\S+) (?:\d+ )?\(.*?\) (\d+) \+ (\d+)')
BIO = re.compile(r'^(\d+),(\d+) (\S+) (\d+) \+ (\d+)')
SWITCH = re.compile(r'prev_pid=(\d+) .*?prev_state=(\S+) ==> .*?'
                    r'next_pid=(\d+)')
WAKEUP = re.compile(r'\bpid=(\d+)\s+prio=')
INACTIVE_S = 0.030

Event = collections.namedtuple('Event', 'ts ev tid a b c d e')


def parse(text):
    """Yield ``Event``s from trace text. Block events: a = dev
    'maj,min', b = rwbs, c = sector, d = sectors. sched_switch: a = prev
    tid, b = prev_state, c = next tid. sched_wakeup: a = woken tid.
    """
    for line in text.splitlines():
        m = LINE.match(line)
        if not m:
            continue
        ts = int(m.group('s')) + int(m.group('f')) / 10 ** len(m.group('f'))
        ev, rest, tid = m.group('ev'), m.group('rest'), int(m.group('pid'))
        if ev in ('block_rq_insert', 'block_rq_issue', 'block_rq_complete'):
            r = RQ.match(rest)
            if r:
                yield Event(ts, ev, tid, r.group(1) + ',' + r.group(2),
                            r.group(3), int(r.group(4)), int(r.group(5)),
                            None)
        elif ev == 'block_bio_queue':
            r = BIO.match(rest)
            if r:
                yield Event(ts, ev, tid, r.group(1) + ',' + r.group(2),
                            r.group(3), int(r.group(4)), int(r.group(5)),
                            None)
        elif ev == 'sched_switch':
            r = SWITCH.search(rest)
            if r:
                yield Event(ts, ev, tid, int(r.group(1)), r.group(2),
                            int(r.group(3)), None, None)
        elif ev == 'sched_wakeup':
            r = WAKEUP.search(rest)
            if r:
                yield Event(ts, ev, tid, int(r.group(1)), None, None, None,
                            None)


def op_sync(rwbs):
    """('R'|'W', sync) from a rwbs string; None for neither (flush,
    discard). Reads are sync; writes are sync when flagged S or F.
    """
    if 'R' in rwbs:
        return 'R', True
    if 'W' in rwbs:
        return 'W', 'S' in rwbs or 'F' in rwbs[1:]
    return None


class Assembler:
    """Feed ``Event``s in time order; ``trace()`` builds the ``Trace``.

    ``tid_vm``: {tid: vm} of every QEMU thread; ``vcpu_tid``: {tid: (vm,
    vcpu index)}; ``resp_tid``: {tid: vm} of the completion threads;
    ``sector_vm(sector) -> vm or None``; ``t0``: the trace's zero.
    """

    def __init__(self, tid_vm, vcpu_tid, resp_tid, sector_vm=None, t0=0.0):
        self.tid_vm, self.vcpu_tid = tid_vm, vcpu_tid
        self.resp_tid = resp_tid
        self.sector_vm = sector_vm or (lambda s: None)
        self.t0 = t0
        self.rid = 0
        self.io = []
        self.queued = {}          # sector -> [rid, vm, op, sync, bytes]
        self.issued = {}          # sector -> [rows sharing the dispatch]
        self.unanswered = collections.defaultdict(list)   # vm -> [row]
        self.state = {}           # vcpu tid -> (state, since)
        self.spans = []
        self.counts = collections.Counter()

    def _vm(self, tid, sector):
        vm = self.tid_vm.get(tid)
        if vm is not None:
            by_sector = self.sector_vm(sector)
            if by_sector is not None and by_sector != vm:
                self.counts['attr_mismatch'] += 1
            self.counts['attr_tid'] += 1
            return vm
        vm = self.sector_vm(sector)
        self.counts['attr_sector' if vm else 'attr_none'] += 1
        return vm

    def _emit(self, row, layer, ts):
        rid, vm, op, sync, nbytes, sector = row
        self.io.append(fmt.Io(ts - self.t0, vm, layer, op, sync, nbytes,
                              sector, rid))

    def feed(self, e):
        if e.ev == 'block_bio_queue':
            self._bio(e)
        elif e.ev == 'block_rq_insert':
            row = self.queued.get(e.c)
            if row is not None and not row[6]:
                row[6] = True
                self._emit(row[:6], 'que', e.ts)
        elif e.ev == 'block_rq_issue':
            self._issue(e)
        elif e.ev == 'block_rq_complete':
            self._complete(e)
        elif e.ev == 'sched_switch':
            self._switch(e)
        elif e.ev == 'sched_wakeup':
            self._wakeup(e)

    def _bio(self, e):
        os_ = op_sync(e.b)
        if os_ is None or not e.d:
            return
        vm = self._vm(e.tid, e.c)
        if vm is None:
            return
        self.rid += 1
        row = [self.rid, vm, os_[0], os_[1], e.d * 512, e.c, False, e.ts]
        self.queued[e.c] = row
        self._emit(row[:6], 'req', e.ts)
        self.counts['requests'] += 1

    def _issue(self, e):
        os_ = op_sync(e.b)
        if os_ is None or not e.d:
            return
        rows, pos, end = [], e.c, e.c + e.d
        while pos < end:
            row = self.queued.pop(pos, None)
            if row is None:
                break
            n = row[4] // 512
            if pos + n > end:
                # a bio split: this request is its first piece; the rest
                # stays queued under the same rid (its own Dispatch and
                # Completion events carry each piece's bytes)
                if not row[6]:
                    self._emit(row[:6], 'que', row[7])
                    row[6] = True
                rest = list(row)
                rest[4], rest[5], rest[6] = (pos + n - end) * 512, end, True
                self.queued[end] = rest
                row = list(row)
                row[4] = (end - pos) * 512
                self.counts['split_pieces'] += 1
            rows.append(row)
            pos += row[4] // 512
        if not rows:
            vm = self._vm(e.tid, e.c)
            if vm is None:
                return
            self.rid += 1
            rows = [[self.rid, vm, os_[0], os_[1], e.d * 512, e.c, True,
                     None]]
            self.counts['seen_first_at_issue'] += 1
        for row in rows:
            if not row[6]:           # never inserted: no elevator
                self._emit(row[:6], 'que', row[7])
                row[6] = True
            self._emit(row[:6], 'dis', e.ts)
        self.issued[e.c] = rows

    def _complete(self, e):
        rows = self.issued.pop(e.c, None)
        if not rows:
            return
        for row in rows:
            self._emit(row[:6], 'com', e.ts)
            self.unanswered[row[1]].append(row)

    def _wakeup(self, e):
        vm = self.resp_tid.get(e.a)
        if vm is not None:
            rows = self.unanswered.pop(vm, None)
            for row in rows or ():
                self._emit(row[:6], 'rsp', e.ts)
        if e.a in self.vcpu_tid:
            st = self.state.get(e.a)
            if st is None or st[0] == 'idle':
                self._to(e.a, 'runnable', e.ts)

    def _switch(self, e):
        if e.a in self.vcpu_tid:
            prev = 'runnable' if e.b.startswith('R') else 'idle'
            if e.a not in self.state:
                self.state[e.a] = ('running', self.t0)
            self._to(e.a, prev, e.ts)
        if e.c in self.vcpu_tid:
            if e.c not in self.state:
                self.state[e.c] = ('runnable', self.t0)
            self._to(e.c, 'running', e.ts)

    def _to(self, tid, state, ts):
        old = self.state.get(tid)
        if old is not None and old[0] != state and ts > old[1]:
            self._span(tid, old[0], old[1], ts)
        if old is None or old[0] != state:
            self.state[tid] = (state, ts)

    def _span(self, tid, state, a, b):
        vm, vcpu = self.vcpu_tid[tid]
        a, b = a - self.t0, b - self.t0
        if state == 'idle' and b - a > INACTIVE_S:
            self.spans.append(fmt.Span(vm, vcpu, 'idle', a, a + INACTIVE_S))
            self.spans.append(fmt.Span(vm, vcpu, 'inactive', a + INACTIVE_S,
                                       b))
        else:
            self.spans.append(fmt.Span(vm, vcpu, state, a, b))

    def finish(self, t_end):
        """Close the vCPU spans at ``t_end`` (absolute)."""
        for tid, (state, since) in sorted(self.state.items()):
            if t_end > since:
                self._span(tid, state, since, t_end)
        self.state.clear()

    def trace(self, header):
        io = sorted(self.io, key=lambda e: e.ts)
        return fmt.Trace(header, io, sorted(self.spans,
                                            key=lambda s: s.start), {})
