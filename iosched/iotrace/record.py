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
"""The real-host recorder: a private tracefs instance.

``Recorder(tracefs_root, hostmap).run(duration, progress)``:

1. makes ``<tracefs>/instances/iosched-iotrace-<pid>`` (the top-level
   trace instance and every other instance are not touched), sets its
   clock to ``mono``, its buffer size, an event filter ``dev == <dev_t>``
   on ``block:block_bio_queue``, ``block_rq_insert``, ``block_rq_issue``
   and ``block_rq_complete`` (the traced device only), and a thread
   filter on ``sched:sched_switch`` and ``sched:sched_wakeup`` (the VMs'
   vCPU and completion threads), then enables them;
2. until the duration passes (or SIGINT/SIGTERM), reads every CPU's
   ``per_cpu/cpuN/trace_pipe_raw`` (binary ring-buffer pages: no text
   formatting in the kernel; ``raw=False``: the text ``trace_pipe``)
   every ``poll`` s into memory; parsing waits for the end, so recording
   costs a read per poll; re-reads the VMs' thread lists every second;
3. always (error, Ctrl-C) disables the events and removes the instance,
   which discards its buffer, filters and settings; an instance left by
   a killed recorder (its pid gone) is removed by the next one;
4. decodes the pages (``rawtrace``) or the text (``tracelines.parse``)
   and assembles the layers (``tracelines.Assembler``) into a trace.

Writes go to the private instance only; nothing a VM sees changes.
"""

import errno
import os
import re
import signal
import time

from iosched.host_agent import linux
from iosched.iotrace import rawtrace
from iosched.iotrace import tracelines

BLOCK_EVENTS = ('block_bio_queue', 'block_rq_insert', 'block_rq_issue',
                'block_rq_complete')
SCHED_EVENTS = ('sched_switch', 'sched_wakeup')
PREFIX = 'iosched-iotrace-'
MAX_TIDS = 256

SOURCES = {
    'req': "host: block:block_bio_queue of a bio a QEMU thread of the VM "
           "submitted (the VM's request entering the host kernel; the "
           "time in the virtqueue and in QEMU before it is not seen)",
    'que': 'host: block:block_rq_insert into the elevator; on a device '
           'with no elevator (scheduler none) requests are issued '
           'without an insert and Queuing = Request',
    'dis': 'host: block:block_rq_issue (exact)',
    'com': 'host: block:block_rq_complete (exact)',
    'rsp': "host: the first sched:sched_wakeup of the VM's QEMU main "
           "loop (or I/O thread) after the completion, where QEMU picks "
           "it up and interrupts the guest (an upper bound: one main-loop "
           "wake-up later if the thread was already awake)",
    'vcpu': 'host: sched:sched_switch / sched_wakeup of the vCPU threads '
            '(running, runnable = woken or preempted, idle = blocked); '
            'idle for more than 30 ms is shown as inactive',
}


class RecordError(Exception):
    pass


class Instance:
    """A private tracefs instance; ``close()`` removes it."""

    def __init__(self, root, name=None):
        self.root = root
        self.name = name or PREFIX + str(os.getpid())
        self.dir = os.path.join(root, 'instances', self.name)
        self.enabled = []

    def check(self):
        inst = os.path.join(self.root, 'instances')
        if not os.path.isdir(inst):
            raise RecordError('no tracefs at %s (mount it: mount -t tracefs '
                              'nodev %s; or pass --tracefs)'
                              % (self.root, self.root))
        for sub, ev in [('block', e) for e in BLOCK_EVENTS] + [
                ('sched', e) for e in SCHED_EVENTS]:
            if not os.path.isdir(os.path.join(self.root, 'events', sub, ev)):
                raise RecordError('tracefs at %s has no %s:%s event'
                                  % (self.root, sub, ev))

    def sweep_stale(self):
        base = os.path.join(self.root, 'instances')
        removed = []
        for n in os.listdir(base):
            m = re.fullmatch(re.escape(PREFIX) + r'(\d+)', n)
            if m and n != self.name and not linux.pid_alive(int(m.group(1))):
                _remove(os.path.join(base, n))
                removed.append(n)
        return removed

    def write(self, rel, value):
        with open(os.path.join(self.dir, rel), 'w') as fh:
            fh.write(value)

    def open(self, buffer_kb):
        self.check()
        self.sweep_stale()
        try:
            os.mkdir(self.dir)
        except OSError as e:
            raise RecordError('cannot create trace instance %s: %s'
                              % (self.dir, e))
        self.write('tracing_on', '0')
        self.write('trace_clock', 'mono')
        self.write('buffer_size_kb', str(int(buffer_kb)))

    def enable(self, sub, ev, filt):
        base = 'events/%s/%s/' % (sub, ev)
        self.write(base + 'filter', filt)
        self.write(base + 'enable', '1')
        self.enabled.append(base)

    def start(self):
        self.write('tracing_on', '1')

    def read(self, fd):
        return linux.read_available(fd, 1 << 20)

    def close(self):
        for base in self.enabled:
            try:
                self.write(base + 'enable', '0')
            except OSError:
                pass
        self.enabled = []
        _remove(self.dir)


def _remove(d):
    try:
        with open(os.path.join(d, 'tracing_on'), 'w') as fh:
            fh.write('0')
    except OSError:
        pass
    for _ in range(20):
        try:
            os.rmdir(d)          # tracefs removes the instance's files
            return
        except FileNotFoundError:
            return
        except OSError as e:
            if e.errno != errno.EBUSY:
                raise RecordError('cannot remove trace instance %s: %s'
                                  % (d, e))
            time.sleep(0.05)     # a reader still closing trace_pipe


def tid_filter(tids, field):
    tids = sorted(tids)[:MAX_TIDS]
    return ' || '.join('%s == %d' % (field, t) for t in tids) or \
        '%s == 0' % field


class _Stop(Exception):
    pass


class Recorder:
    def __init__(self, tracefs_root, hostmap, buffer_kb=8192, poll=0.25,
                 sched=True, raw=True):
        if not 64 <= int(buffer_kb) <= 1 << 20:
            raise RecordError('buffer_kb %r: want 64..1048576' % buffer_kb)
        if not 0.01 <= float(poll) <= 5:
            raise RecordError('poll %r: want 0.01..5 s' % poll)
        self.inst = Instance(tracefs_root)
        self.map = hostmap
        self.buffer_kb, self.poll = int(buffer_kb), float(poll)
        self.sched = bool(sched)    # False: no Response, no vCPU states
        self.raw = bool(raw)        # binary pages; False: text trace_pipe
        self.fmts = None
        self.stop_requested = False

    def _filters(self):
        dev = (self.map.major << 20) | self.map.minor
        self.fmts = rawtrace.formats(
            self.inst.root, [('block', e) for e in BLOCK_EVENTS]
            + [('sched', e) for e in SCHED_EVENTS])
        for ev in BLOCK_EVENTS:
            self.inst.enable('block', ev, 'dev == %d' % dev)
        if not self.sched:
            return
        self.inst.enable('sched', 'sched_switch', '(' + tid_filter(
            self.map.vcpu_tid, 'prev_pid') + ') || (' + tid_filter(
            self.map.vcpu_tid, 'next_pid') + ')')
        self.inst.enable('sched', 'sched_wakeup', tid_filter(
            list(self.map.vcpu_tid) + list(self.map.resp_tid), 'pid'))

    def run(self, duration=None, progress=None):
        """Record; returns the ``fmt.Trace``. ``duration`` None: until
        SIGINT/SIGTERM.
        """
        return self.assemble(*self.capture(duration, progress))

    def _open_readers(self):
        """[(cpu or None, fd)]: the per-CPU binary pipes (raw), else the
        text trace_pipe.
        """
        if self.raw:
            base = os.path.join(self.inst.dir, 'per_cpu')
            cpus = sorted(int(d[3:]) for d in os.listdir(base)
                          if d.startswith('cpu') and d[3:].isdigit())
            return [(c, os.open(os.path.join(base, 'cpu%d' % c,
                                             'trace_pipe_raw'),
                                os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC))
                    for c in cpus]
        return [(None, os.open(os.path.join(self.inst.dir, 'trace_pipe'),
                               os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC))]

    def capture(self, duration=None, progress=None):
        """Record; returns (data, start, end): data is {cpu: bytes of
        binary pages} (raw) or {None: trace text bytes}; start and end
        are ``time.monotonic`` values (the trace clock's).
        """
        old = {}

        def on_signal(signum, frame):
            self.stop_requested = True

        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                old[sig] = signal.signal(sig, on_signal)
            except ValueError:
                pass              # not the main thread
        t_mono0 = t_end = None
        readers = []
        chunks = {}
        try:
            self.inst.open(self.buffer_kb)
            self._filters()
            readers = self._open_readers()
            chunks = {c: [] for c, _ in readers}
            t_mono0 = time.monotonic()
            self.wall0 = time.time()
            self.inst.start()
            last_refresh = last_note = t_mono0
            nbytes = 0
            while not self.stop_requested:
                now = time.monotonic()
                if duration is not None and now - t_mono0 >= duration:
                    break
                time.sleep(self.poll)
                for c, fd in readers:
                    data = self.inst.read(fd)
                    nbytes += len(data)
                    chunks[c].append(data)
                if now - last_refresh >= 1.0:
                    self.map.refresh()
                    last_refresh = now
                if progress and now - last_note >= 5.0:
                    progress('record: %.0f s, %.1f MB of events'
                             % (now - t_mono0, nbytes / 1e6))
                    last_note = now
            t_end = time.monotonic()
            self.inst.write('tracing_on', '0')
            for c, fd in readers:
                chunks[c].append(self.inst.read(fd))
        finally:
            for _, fd in readers:
                os.close(fd)
            self.inst.close()
            for sig, h in old.items():
                signal.signal(sig, h)
        return ({c: b''.join(v) for c, v in chunks.items()}, t_mono0,
                t_end)

    def events(self, data):
        """(events in time order, pages that lost events)."""
        if None in data:
            evs = list(tracelines.parse(
                data[None].decode('utf-8', 'replace')))
            evs.sort(key=lambda e: e.ts)
            return evs, 0
        return rawtrace.parse([data[c] for c in sorted(data)], self.fmts)

    def assemble(self, data, t0, t_end):
        asm = tracelines.Assembler(self.map.tid_vm, self.map.vcpu_tid,
                                   self.map.resp_tid, self.map.sector_vm,
                                   t0=t0)
        evs, lost = self.events(data)
        for e in evs:
            asm.feed(e)
        n = len(evs)
        asm.finish(t_end)
        sources = dict(SOURCES)
        if not self.sched:
            for key in ('rsp', 'vcpu'):
                sources[key] = 'not recorded (--no-sched)'
        header = {
            'source': 'host',
            'device': self.map.device,
            'sources': sources,
            'vms': sorted(self.map.vms),
            'meta': {'wall_start': getattr(self, 'wall0', None),
                     'duration_s': t_end - t0, 'events': n,
                     'counts': dict(asm.counts),
                     'pages_with_lost_events': lost,
                     'read': 'trace_pipe_raw' if self.raw else 'trace_pipe',
                     'vcpus': {'%s/%d' % v: tid for tid, v
                               in sorted(self.map.vcpu_tid.items())},
                     'lost_note': 'events lost to a full buffer show as '
                                  'requests missing layers'},
        }
        return asm.trace(header)
