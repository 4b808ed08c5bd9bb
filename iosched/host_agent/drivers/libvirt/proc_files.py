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
"""Per-thread procfs counters read through descriptors kept open.

``threads.thread_counters`` opens three files per vCPU thread a tick
(``schedstat``, ``status``, ``stat``), each path built and checked by
``paths.safe_join``: ~95 us per vCPU measured on the testbed machine
under load, where ``pread`` of an open ``schedstat`` took 1 us (procfs
regenerates the text at every read from offset 0). ``ThreadFiles`` keeps
each thread's three descriptors from its first read until the driver
says the thread is gone (``retain``), or it stops answering; a
descriptor names its thread, not a tid number that may be reused.

Descriptors beyond ``budget`` (half the soft RLIMIT_NOFILE) are not
kept: those threads are read as before, opening each file.
"""

import os
import resource

from iosched.host_agent.drivers.libvirt import threads
from iosched.host_agent import paths

NAMES = ('schedstat', 'status', 'stat')
_VOL = '\nvoluntary_ctxt_switches:'


def parse_counters(schedstat, status, stat):
    """(run_ns, wait_ns, voluntary switches, last CPU) from the three
    texts; ValueError/IndexError when one is not what procfs writes.
    """
    run, wait = schedstat.split(None, 2)[:2]
    i = status.index(_VOL) + len(_VOL)
    vol = int(status[i:status.index('\n', i)])
    return (int(run), int(wait), vol, threads.parse_stat_processor(stat))


def _run_ns(schedstat):
    return int(schedstat.split(None, 1)[0])


def default_budget():
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return max(0, (soft if soft != resource.RLIM_INFINITY else 4096) // 2)


class ThreadFiles(object):
    """``counters(pid, tid)``: ``threads.thread_counters`` over kept
    descriptors.
    """

    def __init__(self, proc_root, budget=None):
        self.proc_root = proc_root
        self.budget = default_budget() if budget is None else budget
        self._fds = {}           # (pid, tid) -> (fd, fd, fd)

    def _open(self, pid, tid):
        base = paths.safe_join(self.proc_root, str(int(pid)), 'task',
                               str(int(tid)))
        fds = []
        try:
            for name in NAMES:
                fds.append(os.open(os.path.join(base, name),
                                   os.O_RDONLY | os.O_CLOEXEC))
        except OSError:
            for fd in fds:
                os.close(fd)
            raise
        return tuple(fds)

    def _kept(self, pid, tid):
        """The thread's descriptors, opened now if needed; None over the
        budget.
        """
        key = (pid, tid)
        fds = self._fds.get(key)
        if fds is None:
            if len(self._fds) * len(NAMES) >= self.budget:
                return None
            try:
                fds = self._fds[key] = self._open(pid, tid)
            except OSError as e:
                raise threads.ThreadError(
                    'cannot read counters of thread %s/%s: %s'
                    % (pid, tid, e))
        return fds

    def _read(self, pid, tid, fds, parse):
        try:
            return parse(*[os.pread(fd, 4096, 0).decode('ascii', 'replace')
                           for fd in fds])
        except (OSError, ValueError, IndexError) as e:
            self._close((pid, tid))  # an exited thread: empty or ESRCH
            raise threads.ThreadError(
                'cannot read counters of thread %s/%s: %s' % (pid, tid, e))

    def counters(self, pid, tid):
        fds = self._kept(pid, tid)
        if fds is None:
            return threads.thread_counters(self.proc_root, pid, tid)
        return self._read(pid, tid, fds, parse_counters)

    def run_ns(self, pid, tid):
        """The thread's run time alone (``schedstat``'s first field)."""
        fds = self._kept(pid, tid)
        if fds is None:
            return threads.thread_counters(self.proc_root, pid, tid)[0]
        return self._read(pid, tid, fds[:1], _run_ns)

    def _close(self, key):
        for fd in self._fds.pop(key, ()):
            try:
                os.close(fd)
            except OSError:
                pass

    def retain(self, keys):
        """Close the descriptors of every (pid, tid) not in ``keys``."""
        for key in [k for k in self._fds if k not in keys]:
            self._close(key)

    def close(self):
        self.retain(())
