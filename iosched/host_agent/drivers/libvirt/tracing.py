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
"""Exact I/O event timestamps: ``sched:sched_wakeup`` on vCPU threads,
and when each woken vCPU thread got a CPU: ``sched:sched_switch``.

A private tracefs instance (``<tracefs_root>/instances/iosched-<pid>``)
records the wake-ups of the vCPU threads only (an event filter on their
tids), on the ``mono`` trace clock. Every tick the agent drains it; each
wake-up of a halted vCPU thread is an interrupt delivered to the vCPU (I/O
completion, but also guest timers and IPIs). This works under TCG and KVM.

The same instance records the switches *to* those threads (a filter on
``next_pid``): ``run_delays`` pairs each wake-up with the first switch-in
after it, the thread's wake-to-run delay, which is the W term of the LSVM
bound measured on the LSVM's own vCPU threads (docs/architecture.md §4a).

NOTE(iosched): configuring the instance writes to tracefs. It is the one
write outside the actuators, and it only concerns this private instance:
it changes no scheduling and nothing a VM sees, and ``close()`` removes it.

Line format of ``trace_pipe`` (kernel/trace/trace_output.c)::

    <waker comm>-<waker pid> [<cpu>] <flags> <secs>.<usecs>: sched_wakeup: \
comm=CPU 0/TCG pid=4242 prio=120 target_cpu=001
"""

import errno
import itertools
import os
import re

from oslo_log import log as logging

from iosched.host_agent import linux
from iosched.host_agent import paths

# One match per line, found over the whole drained text at once (no split
# into lines, no search per line): no part of a pattern crosses a newline.
_LINE = re.compile(r'[ \t](\d+)\.(\d+): sched_wakeup: .*?\bpid=(\d+)[ \t]+'
                   r'prio=')
_SWITCH = re.compile(r'[ \t](\d+)\.(\d+): sched_switch: .*?==> .*?'
                     r'\bnext_pid=(\d+)[ \t]+next_prio=')
WAKEUP = 'events/sched/sched_wakeup'
SWITCH = 'events/sched/sched_switch'
LOG = logging.getLogger(__name__)
MAX_FILTER_TIDS = 512
_SEQ = itertools.count(1)


def _ns(secs, frac):
    return int(secs) * 1_000_000_000 + int(frac.ljust(9, '0')[:9])


def parse_lines(text):
    """Yield (tid, ts_ns) for every sched_wakeup line."""
    for secs, frac, tid in _LINE.findall(text):
        yield int(tid), _ns(secs, frac)


def parse_switch_ins(text):
    """Yield (next tid, ts_ns) for every sched_switch line."""
    for secs, frac, tid in _SWITCH.findall(text):
        yield int(tid), _ns(secs, frac)


def filter_expr(tids, field='pid'):
    return (' || '.join('%s == %d' % (field, t) for t in sorted(tids))
            or '%s == 0' % field)


# A wake-up's delay is the time to the thread's first switch-in after it,
# if that comes no later than the thread's next wake-up (each switch-in
# pairs with one wake-up at most); a wake-up with none (the
# thread was still running, or its switch-in falls in the next drain) has
# no delay. Both lists ascending (ns). Pure.
def run_delays(wakes, runs):
    """Wake-to-run delays (ns) of one thread, in wake-up order."""
    out, j = [], 0
    for i, w in enumerate(wakes):
        while j < len(runs) and runs[j] < w:
            j += 1
        if j == len(runs):
            break
        nxt = wakes[i + 1] if i + 1 < len(wakes) else None
        if nxt is None or runs[j] <= nxt:
            out.append(runs[j] - w)
            j += 1
    return tuple(out)


class WakeupTracer(object):
    """A private trace instance for sched_wakeup of the given threads."""

    def __init__(self, tracefs_root, name=None, buffer_kb=1024):
        self.root = tracefs_root
        self.name = name or 'iosched-%d-%d' % (os.getpid(), next(_SEQ))
        self.dir = paths.safe_join(tracefs_root, 'instances', self.name)
        self.buffer_kb = buffer_kb
        self._tids = frozenset()
        self._run_tids = frozenset()
        self._fd = None
        self._rest = ''        # a line cut by the previous read

    @staticmethod
    def available(tracefs_root):
        return os.path.isdir(paths.safe_join(tracefs_root, 'instances')) \
            and os.path.isdir(paths.safe_join(tracefs_root, WAKEUP))

    @property
    def switches(self):
        """Whether this tracefs has sched_switch (the wake-to-run delays)."""
        return os.path.isdir(os.path.join(self.root, SWITCH))

    def _write(self, rel, value):
        with open(os.path.join(self.dir, rel), 'w') as fh:
            fh.write(value)

    def sweep_stale(self):
        """Remove the instances of agents that died without closing theirs
        (SIGKILL, crash): their names carry their pid.
        """
        base = paths.safe_join(self.root, 'instances')
        removed = []
        for name in os.listdir(base):
            m = re.fullmatch(r'iosched-(\d+)(?:-\d+)?', name)
            if not m or name == self.name or linux.pid_alive(int(m.group(1))):
                continue
            d = os.path.join(base, name)
            for event in (WAKEUP, SWITCH):
                try:
                    with open(os.path.join(d, event, 'enable'), 'w') as fh:
                        fh.write('0')
                except OSError:
                    pass
            try:
                os.rmdir(d)     # tracefs removes the instance's files too
                removed.append(name)
            except OSError:
                pass
        return removed

    def open(self):
        self.sweep_stale()
        if not os.path.isdir(self.dir):
            os.mkdir(self.dir)
        self._write('trace_clock', 'mono')
        self._write('buffer_size_kb', str(self.buffer_kb))
        self._write(WAKEUP + '/filter', 'pid == 0')
        self._write(WAKEUP + '/enable', '1')
        if self.switches:
            self._write(SWITCH + '/filter', 'next_pid == 0')
            self._write(SWITCH + '/enable', '1')
        self._write('tracing_on', '1')
        self._fd = True      # opened: trace_pipe is opened per drain

    # NOTE(iosched): trace_pipe is opened for each drain and closed again:
    # a process forked meanwhile (oslo.privsep's daemon) would inherit a
    # held descriptor and keep the instance busy (rmdir: EBUSY).

    def watch(self, tids, run_tids=None):
        """Trace the wake-ups of exactly these thread ids, and the
        switch-ins of ``run_tids`` (default: the same); each filter is
        rewritten only when its set changed.
        """
        tids = frozenset(list(tids)[:MAX_FILTER_TIDS])
        runs = (tids if run_tids is None
                else frozenset(list(run_tids)[:MAX_FILTER_TIDS]))
        if tids != self._tids:
            self._write(WAKEUP + '/filter', filter_expr(tids))
            self._tids = tids
        if self.switches and runs != self._run_tids:
            self._write(SWITCH + '/filter', filter_expr(runs, 'next_pid'))
            self._run_tids = runs

    def drain(self):
        """({tid: [wake-up ts_ns, ...]}, {tid: [switch-in ts_ns, ...]})
        since the previous drain.
        """
        fd = os.open(os.path.join(self.dir, 'trace_pipe'),
                     os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            data = linux.read_available(fd)
        finally:
            os.close(fd)
        events, runs = {}, {}
        text = self._rest + data.decode('utf-8', 'replace')
        cut = text.rfind('\n') + 1
        text, self._rest = text[:cut], text[cut:]
        for tid, ts in parse_lines(text):
            if tid in self._tids:
                events.setdefault(tid, []).append(ts)
        for tid, ts in parse_switch_ins(text):
            if tid in self._run_tids:
                runs.setdefault(tid, []).append(ts)
        return events, runs

    def close(self):
        self._fd = None
        for event in (WAKEUP, SWITCH):
            try:
                self._write(event + '/enable', '0')
            except OSError:
                pass
        try:
            os.rmdir(self.dir)   # tracefs removes the instance's files
        except OSError as e:
            if e.errno != errno.ENOENT:
                LOG.warning('cannot remove trace instance %s: %s',
                            self.dir, e)
