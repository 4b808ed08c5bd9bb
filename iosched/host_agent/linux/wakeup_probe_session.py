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
"""The wake-up self-test's session (``wakeup_probe``): the child processes
and one measurement per case.

``Session`` starts the sleepers (``wakeup_sleeper``, a fresh process per
case, before the busy loops load the CPUs), then ``hogs_per_cpu`` busy
loops pinned to each CPU of ``cpus``, each in a temporary cgroup of its
own (``wakeup_probe_groups.TempGroups``). ``measure`` gives the next
sleeper its affinity, wakes it once onto a CPU of it, applies the case's
mechanism (the cases are listed in ``wakeup_probe``; ``dl`` and
``slice_us`` change their parameters) and lets it run.

The sleeper's answer becomes a row (``wakeup_probe_rows``); a refusal is a
failed row. ``close()`` kills and reaps every child and removes the
groups. Used by ``wakeup_probe.run`` (arguments checked there) and by
``bench/slice_probe.py`` (other affinities, slices, cpuset partitions).
"""

import json
import os
import subprocess
import sys
import time

from oslo_log import log as logging

from iosched.contract import lsvm as lsvm_bound
from iosched.host_agent import linux
from iosched.host_agent.linux import sched
from iosched.host_agent.linux import wakeup_probe_groups as probe_groups
from iosched.host_agent.linux import wakeup_probe_rows as rows
from iosched.host_agent.linux import wakeup_sleeper

LOG = logging.getLogger(__name__)

DL_RUNTIME_US = 300
DL_DEADLINE_US = 1000
SLICE_US = 100
SETTLE_S = 0.05            # hogs running before the first case
BUDGET_FACTOR = 1.25       # a case stops after 1.25 x its nominal time


def _child_env():
    # the directory holding the ``iosched`` package (this file is
    # iosched/host_agent/linux/...): the children import the same tree
    src = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))))
    return {'PYTHONPATH': src, 'PATH': '/usr/sbin:/usr/bin:/sbin:/bin',
            'LC_ALL': 'C.UTF-8'}


class Session(object):
    """Busy loops on ``cpus`` and the temporary groups, for several
    measurements; ``close()`` (or the ``with`` block) undoes everything.

    Used by ``wakeup_probe.run`` and by ``bench/slice_probe.py``.
    """

    def __init__(self, cpus, hogs_per_cpu=2, lsvm_weight=10000,
                 cgroup_root='/sys/fs/cgroup', period_us=2000, work_us=50,
                 wakes=300, groups=True, lsvm_parent=''):
        self.cpus = tuple(cpus)
        self.lsvm_parent = lsvm_parent
        self.hogs_per_cpu = hogs_per_cpu
        self.lsvm_weight = lsvm_weight
        self.cgroup_root = cgroup_root
        self.period_us = period_us
        self.work_us = work_us
        self.wakes = wakes
        self.groups = groups
        self.cg = probe_groups.TempGroups(cgroup_root)
        self.hogs = []
        self.idle = []           # started sleepers waiting for 'go'
        self.children = []       # every child, for cleanup

    # context manager
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _spawn(self, args):
        cmd = [sys.executable, '-m', 'iosched.host_agent.linux.wakeup_sleeper',
               '--parent', str(os.getpid())] + args
        hog = '--hog' in args
        p = subprocess.Popen(
            cmd, stdin=subprocess.DEVNULL if hog else subprocess.PIPE,
            stdout=subprocess.DEVNULL if hog else subprocess.PIPE,
            stderr=subprocess.DEVNULL if hog else subprocess.PIPE,
            env=_child_env(), cwd='/', close_fds=True, text=True)
        self.children.append(p)
        return p

    def spawn_sleepers(self, n, wakes=None, share_ms=0):
        """Start ``n`` sleepers now (before the hogs load the CPUs, so
        that their start-up is quick); ``measure`` uses them in turn.
        ``share_ms``: each ends with a CPU-bound phase that long.
        """
        wakes = self.wakes if wakes is None else wakes
        budget_ms = int(BUDGET_FACTOR * (wakes + wakeup_sleeper.WARMUP) *
                        self.period_us / 1000) + 50
        new = [self._spawn(['--wakes', str(wakes),
                            '--period-us', str(self.period_us),
                            '--work-us', str(self.work_us),
                            '--budget-ms', str(budget_ms),
                            '--share-ms', str(int(share_ms))])
               for _ in range(n)]
        for p in new:
            line = p.stdout.readline()
            if line.strip() != 'ready':
                err = p.stderr.read() if p.poll() is not None else ''
                raise linux.LinuxKnobError(
                    'the self-test sleeper did not start: %r %s'
                    % (line, err.strip()[-400:]))
        self.idle.extend(new)

    def start(self):
        """Groups (when a cpu controller is found) and the busy loops."""
        n_hogs = self.hogs_per_cpu * len(self.cpus)
        if self.groups:
            self._make_groups(n_hogs)
        for cpu in self.cpus:
            for _ in range(self.hogs_per_cpu):
                p = self._spawn(['--hog'])
                self.hogs.append(p)
                os.sched_setaffinity(p.pid, {cpu})
                if self.plan is not None:
                    self.cg.move(self.plan.hogs[len(self.hogs) - 1], p.pid)
        time.sleep(SETTLE_S)
        return self

    def _make_groups(self, n_hogs):
        self.cg.make(os.getpid(), n_hogs, self.lsvm_weight,
                     self.hogs_per_cpu, lsvm_parent=self.lsvm_parent)

    @property
    def plan(self):
        """The groups' ``CgroupPlan``, None without groups (``cg_error``)."""
        return self.cg.plan

    @property
    def cg_error(self):
        return self.cg.error

    def _prepare(self, case, pid, slice_us, dl):
        if case == lsvm_bound.MECH_WEIGHT:
            if self.plan is None:
                raise linux.LinuxKnobError(self.cg_error)
            for relpath, value in self.plan.lsvm_writes:
                probe_groups.write(self.cg.hierarchy, relpath, value)
            self.cg.move(self.plan.lsvm, pid)
            return
        if self.plan is not None:
            self.cg.move(self.plan.sleeper, pid)
        if case == lsvm_bound.MECH_SLICE:
            sched.set_slice_us(pid, slice_us)
        elif case == lsvm_bound.MECH_DEADLINE:
            runtime, deadline, period = dl or (
                DL_RUNTIME_US, DL_DEADLINE_US, self.period_us)
            sched.sched_setattr(pid, sched.make_attr(
                policy=sched.SCHED_DEADLINE,
                flags=sched.SCHED_FLAG_RESET_ON_FORK,
                runtime=runtime * 1000, deadline=deadline * 1000,
                period=period * 1000))

    def measure(self, case, affinity=None, slice_us=SLICE_US, dl=None,
                before=None):
        """One row: the next idle sleeper (or a new one) gets ``affinity``
        (default: all of ``cpus``), ``before(pid)`` if given (e.g. a move
        into a cpuset), then the case's mechanism, then runs.
        """
        return self.measure_samples(case, affinity, slice_us, dl, before)[0]

    def measure_samples(self, case, affinity=None, slice_us=SLICE_US,
                        dl=None, before=None):
        """As ``measure``: (row, the lateness samples in us)."""
        if not self.idle:
            self.spawn_sleepers(1)
        p = self.idle.pop(0)
        try:
            os.sched_setaffinity(p.pid, set(affinity or self.cpus))
            if before is not None:
                before(p.pid)
            self._wake(p)
            self._prepare(case, p.pid, slice_us, dl)
        except (linux.LinuxKnobError, OSError) as e:
            self._reap(p)
            return rows.failed(case, rows.error_text(e)), []
        timeout = 15 + 5 * (self.wakes + 20) * self.period_us / 1e6
        try:
            out, err = p.communicate('go\n', timeout=timeout)
        except subprocess.TimeoutExpired:
            self._reap(p)
            return rows.failed(case, 'the sleeper did not finish in %.0f s'
                               % timeout), []
        try:
            answer = json.loads(out)
            samples = answer['lateness_us']
            return (rows.row(case, samples, answer.get('share', 0.0)),
                    samples)
        except (ValueError, KeyError, TypeError):
            return rows.failed(case, 'the sleeper failed (exit %s): %s'
                               % (p.returncode,
                                  (err or out).strip()[-400:])), []

    @staticmethod
    def _wake(p):
        """Wake the sleeper once, so that it runs on a CPU of its new
        affinity (cpuset) before a SCHED_DEADLINE request: the kernel
        checks the root domain of the runqueue the task is on.
        """
        p.stdin.write('sync\n')
        p.stdin.flush()
        line = p.stdout.readline()
        if line.strip() != 'ready':
            raise linux.LinuxKnobError('the self-test sleeper stopped: %r'
                                       % line)

    def _reap(self, p):
        if p.poll() is None:
            p.kill()
        try:
            p.communicate(timeout=5)
        except (subprocess.TimeoutExpired, ValueError, OSError):
            pass

    def close(self):
        for p in self.children:
            if p.poll() is None:
                try:
                    p.kill()
                except OSError:
                    pass
        for p in self.children:
            self._reap(p)
        self.children = []
        self.hogs = []
        self.idle = []
        left = self.cg.remove()
        if left:
            LOG.warning('self-test cgroups left behind (removed by the next '
                        'run): %s', ', '.join(left))
