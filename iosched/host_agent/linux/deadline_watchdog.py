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
"""SCHED_DEADLINE threads of guests that the kernel forgot to replenish.

Measured on this kernel (6.18; docs/reliability.md §4d): a QEMU main loop
under a 1 ms / 4 ms reservation stayed throttled (``dl.runtime`` -19918 ns,
state R) 340 s past its deadline: its replenishment timer never fired, so
nothing ran it, every libvirt call to that domain's monitor hung, and the
agent with them (CI, issue 28). A new reservation does not free it (a
throttled thread is not queued, so the change is not applied until it
is); leaving the deadline class does.

``scan(proc_root)`` (read-only) lists the throttled, runnable deadline
threads of processes in libvirt's ``machine`` cgroup (the guests; nobody
else's thread is touched); ``Watchdog.stuck`` (pure over its scans) names
those seen throttled at the same deadline for ``STUCK_AFTER_NS`` (a
replenishment comes within one period; the rule compares two scans, not
the scheduler's clock with ours, which differ by seconds on a VM); the
knob set's ``unstick_deadline`` (the only writer) returns them to
SCHED_OTHER, and the actuator re-applies the reservation on the next tick.
Needs ``/proc/<pid>/sched`` (CONFIG_SCHED_DEBUG); without it, nothing is
found.
"""

import collections
import os
import time

# A throttled thread is replenished at its deadline, one period at most
# after it ran out; seen throttled at the same deadline this long, it is
# stuck, not late (1 s is 250 periods of 4 ms).
STUCK_AFTER_NS = 1_000_000_000
SCHED_DEADLINE = 6
# /proc/<pid>/stat after the ")" of comm: field 3 (state) is token 0, so
# field 41 (policy) is token 38.
_STATE, _POLICY = 0, 38

Throttled = collections.namedtuple(
    'Throttled', 'pid tid comm runtime_ns deadline_ns')


def throttled(state, runtime_ns):
    """A runnable deadline thread with no runtime left waits for its
    replenishment.
    """
    return state == 'R' and runtime_ns <= 0


def parse_sched(text):
    """(dl.runtime, dl.deadline) from /proc/<tid>/sched, None if absent."""
    got = {}
    for line in text.splitlines():
        name, _, value = line.partition(':')
        name = name.strip()
        if name in ('dl.runtime', 'dl.deadline'):
            try:
                got[name] = int(value.strip())
            except ValueError:
                return None
    if len(got) != 2:
        return None
    return got['dl.runtime'], got['dl.deadline']


def parse_stat(text):
    """(state, policy) from /proc/<tid>/stat, None if unreadable."""
    rest = text[text.rfind(')') + 2:].split()
    if len(rest) <= _POLICY:
        return None
    try:
        return rest[_STATE], int(rest[_POLICY])
    except ValueError:
        return None


def in_machine_group(cgroup_text):
    """Whether /proc/<pid>/cgroup puts the process under libvirt's
    ``machine`` group (``/machine/...`` or ``/machine.slice/...``).
    """
    for line in cgroup_text.splitlines():
        path = line.split(':', 2)[-1]
        first = path.strip('/').split('/', 1)[0]
        if first in ('machine', 'machine.slice'):
            return True
    return False


def _read(path):
    try:
        with open(path) as fh:
            return fh.read()
    except OSError:
        return None


def _listdir(path):
    try:
        return os.listdir(path)
    except OSError:
        return []


def scan(proc_root):
    """Every throttled runnable deadline thread of a guest process."""
    out = []
    for pid in (p for p in _listdir(proc_root) if p.isdigit()):
        base = os.path.join(proc_root, pid)
        if not in_machine_group(_read(os.path.join(base, 'cgroup')) or ''):
            continue
        for tid in sorted(_listdir(os.path.join(base, 'task'))):
            task = os.path.join(base, 'task', tid)
            st = parse_stat(_read(os.path.join(task, 'stat')) or '')
            if st is None or st[1] != SCHED_DEADLINE:
                continue
            dl = parse_sched(_read(os.path.join(task, 'sched')) or '')
            if dl is None or not throttled(st[0], dl[0]):
                continue
            comm = (_read(os.path.join(task, 'comm')) or '?').strip()
            out.append(Throttled(int(pid), int(tid), comm, dl[0], dl[1]))
    return out


class Watchdog(object):
    """The throttled threads of the last scans, by (tid, deadline)."""

    def __init__(self, proc_root, clock=None):
        self.proc_root = proc_root
        self.clock = clock or (lambda: time.clock_gettime_ns(
            time.CLOCK_MONOTONIC))
        self._since = {}       # (tid, deadline_ns) -> first seen, ns

    # stuck_t := {thread throttled at deadline d in this scan and in every
    #             scan since t0, with t - t0 >= STUCK_AFTER_NS}; a thread
    #             replenished (a new deadline) or running starts over
    def stuck(self, found, now_ns):
        """The ``Throttled`` of ``found`` that are stuck; remembers."""
        since = {}
        out = []
        for t in found:
            key = (t.tid, t.deadline_ns)
            since[key] = self._since.get(key, now_ns)
            if now_ns - since[key] >= STUCK_AFTER_NS:
                out.append(t)
        self._since = since
        return out

    def check(self, wait=False):
        """Scan; the stuck threads. ``wait``: when some are throttled but
        not yet known as stuck, scan again after ``STUCK_AFTER_NS`` (at
        agent start, where there is no previous scan).
        """
        stuck = self.stuck(scan(self.proc_root), self.clock())
        if wait and self._since and not stuck:
            time.sleep(STUCK_AFTER_NS / 1e9)
            stuck = self.stuck(scan(self.proc_root), self.clock())
        return stuck
