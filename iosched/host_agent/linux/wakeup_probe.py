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
"""The wake-up self-test: which LSVM mechanism shortens a wake-up here?

No VM: ``hogs_per_cpu`` busy loops pinned to each CPU of ``cpus`` and one
sleeper (``iosched.host_agent.linux.wakeup_sleeper``, a fresh process per case)
that wakes every ``period_us`` on an absolute timer, spins ``work_us`` and
records how late each wake-up was. One row per case
(``model.WakeupProbe``):

=========  ============================================================
stock      SCHED_OTHER, nothing changed: the reference row
deadline   SCHED_DEADLINE runtime 300 us / deadline 1 ms / period =
           ``period_us``, SCHED_FLAG_RESET_ON_FORK
weight     the sleeper's own cgroup at ``lsvm_weight`` (v1: cpu.shares =
           w x 1024 / 100), capped by a CFS quota at its fair share,
           1/(hogs_per_cpu + 1) of a CPU per 100 ms
slice      EEVDF custom slice of 100 us (``sched_runtime``)
=========  ============================================================

Layout, like libvirt's (every VM in a cgroup of its own): a temporary
``iosched-selftest-<pid>`` group in the cpu hierarchy holds one group per
hog (default weight), ``sleeper`` (default weight: stock, deadline,
slice) and ``lsvm`` (the weight case). Without a usable cpu controller
the test still runs, without groups, and ``weight`` is a failed row. The
sleeper's affinity is all of ``cpus`` in every case: SCHED_DEADLINE
refuses (EPERM) a thread whose affinity does not span its root domain.

A case the kernel refuses is a row with ``ok=False`` and the errno text.
Everything is undone in ``finally``: processes killed and reaped, groups
removed. Both children die with their parent (``PR_SET_PDEATHSIG``) and a
new run first removes ``iosched-selftest-<pid>`` groups whose pid is
gone, so an interrupted test leaves nothing for long. Cost with the
defaults: 4 cases x 310 wakes x 2 ms plus start-up, about 3 s, with every
CPU of ``cpus`` fully loaded meanwhile. On a starved host (wakes later
than a period skip periods) a case stops after 1.25 x its nominal time
and reports the wakes it got (``samples``), so the test stays near 4 s.

Needs uid 0 (cgroups) and CAP_SYS_NICE: it runs in the privsep daemon
(``iosched.host_agent.linux.privileged_probe.run_wakeup_probe``), or as root in
benchmarks. Children are started with ``no_new_privs`` so that, although
they run as uid 0, they hold no capability the daemon lacks.
"""

import ctypes
import errno as errno_mod
import json
import os
import subprocess
import sys
import threading
import time

from oslo_log import log as logging

from iosched.contract import lsvm as lsvm_bound
from iosched.host_agent import linux
from iosched.host_agent.linux import cgroups
from iosched.host_agent.linux import cpus as cpulist
from iosched.host_agent.linux import sched
from iosched.host_agent.linux import wakeup_probe_groups as probe_groups
from iosched.host_agent.linux import wakeup_probe_rows as rows
from iosched.host_agent.linux import wakeup_sleeper

LOG = logging.getLogger(__name__)

SCHED_DEADLINE = 6
DL_RUNTIME_US = 300
DL_DEADLINE_US = 1000
SLICE_US = 100
# The temporary cgroups' names and places: wakeup_probe_groups; the rows
# and their p50/p99: wakeup_probe_rows.

# Accepted arguments (the privsep entrypoint enforces the same).
WAKES_MIN, WAKES_MAX = 50, 5000
HOGS_MIN, HOGS_MAX = 0, 8
PERIOD_MIN_US, PERIOD_MAX_US = 500, 100000
SETTLE_S = 0.05            # hogs running before the first case
BUDGET_FACTOR = 1.25       # a case stops after 1.25 x its nominal time

PR_SET_NO_NEW_PRIVS = 38

_lock = threading.Lock()   # one self-test at a time per process


class ProbeArgError(linux.LinuxKnobError):
    """An argument of the self-test is outside what it accepts."""


# -- pure helpers ----------------------------------------------------------
def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def check_args(cases, cpus, wakes, hogs_per_cpu, lsvm_weight, online,
               period_us=2000, work_us=50):
    """(cases, cpus) as tuples, or ProbeArgError saying what is wrong and
    what is accepted. ``online``: the host's online CPUs.
    """
    if isinstance(cases, str) or not isinstance(cases, (list, tuple)):
        raise ProbeArgError('cases %r is not a list of names' % (cases,),
                            errno_mod.EINVAL)
    cases = tuple(cases)
    bad = [c for c in cases if c not in lsvm_bound.PROBE_CASES]
    if not cases or bad:
        raise ProbeArgError('cases %r: %s; accepted: one or more of %s'
                            % (list(cases), 'unknown %r' % bad if bad
                               else 'empty',
                               ', '.join(lsvm_bound.PROBE_CASES)),
                            errno_mod.EINVAL)
    if len(set(cases)) != len(cases):
        raise ProbeArgError('cases %r name a case twice' % (list(cases),),
                            errno_mod.EINVAL)
    if isinstance(cpus, str) or not isinstance(cpus, (list, tuple)) or (
            not cpus) or not all(_is_int(c) for c in cpus):
        raise ProbeArgError('cpus %r is not a non-empty list of CPU ids'
                            % (cpus,), errno_mod.EINVAL)
    extra = sorted(set(cpus) - set(online))
    if extra:
        raise ProbeArgError('cpus %s are not online; online: %s'
                            % (extra, list(online)), errno_mod.EINVAL)
    for name, value, lo, hi in (
            ('wakes', wakes, WAKES_MIN, WAKES_MAX),
            ('hogs_per_cpu', hogs_per_cpu, HOGS_MIN, HOGS_MAX),
            ('lsvm_weight', lsvm_weight, cgroups.WEIGHT_MIN,
             cgroups.WEIGHT_MAX),
            ('period_us', period_us, PERIOD_MIN_US, PERIOD_MAX_US),
            ('work_us', work_us, 0, (period_us // 2
                                     if _is_int(period_us) else 0))):
        if not _is_int(value) or not lo <= value <= hi:
            raise ProbeArgError('%s %r is not an int in %d..%d'
                                % (name, value, lo, hi), errno_mod.EINVAL)
    if lsvm_bound.MECH_DEADLINE in cases and period_us < DL_DEADLINE_US:
        raise ProbeArgError('period_us %d is shorter than the deadline case'
                            "'s %d us deadline" % (period_us,
                                                   DL_DEADLINE_US),
                            errno_mod.EINVAL)
    return cases, tuple(sorted(set(cpus)))


# -- the run -----------------------------------------------------------------
def _no_new_privs():
    """Children exec'd as uid 0 would get the full capability set back;
    with no_new_privs they keep at most ours. Per thread, inherited by the
    children this thread starts.
    """
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        err = ctypes.get_errno()
        raise linux.LinuxKnobError('prctl(PR_SET_NO_NEW_PRIVS): %s'
                                   % os.strerror(err), err)


def _child_env():
    src = os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    return {'PYTHONPATH': src, 'PATH': '/usr/sbin:/usr/bin:/sbin:/bin',
            'LC_ALL': 'C.UTF-8'}


class Session(object):
    """Busy loops on ``cpus`` and the temporary groups, for several
    measurements; ``close()`` (or the ``with`` block) undoes everything.

    Used by ``run`` and by ``bench/slice_probe.py``.
    """

    def __init__(self, cpus, hogs_per_cpu=2, lsvm_weight=10000,
                 cgroup_root='/sys/fs/cgroup', period_us=2000, work_us=50,
                 wakes=300, groups=True):
        self.cpus = tuple(cpus)
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

    def spawn_sleepers(self, n, wakes=None):
        """Start ``n`` sleepers now (before the hogs load the CPUs, so
        that their start-up is quick); ``measure`` uses them in turn.
        """
        wakes = self.wakes if wakes is None else wakes
        budget_ms = int(BUDGET_FACTOR * (wakes + wakeup_sleeper.WARMUP) *
                        self.period_us / 1000) + 50
        new = [self._spawn(['--wakes', str(wakes),
                            '--period-us', str(self.period_us),
                            '--work-us', str(self.work_us),
                            '--budget-ms', str(budget_ms)])
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
                    self.cg.move(probe_groups.hog_cg(self.plan.parent,
                                               len(self.hogs) - 1), p.pid)
        time.sleep(SETTLE_S)
        return self

    def _make_groups(self, n_hogs):
        self.cg.make(os.getpid(), n_hogs, self.lsvm_weight,
                     self.hogs_per_cpu)

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
            self.cg.move('%s/%s' % (self.plan.parent, probe_groups.LSVM_CG),
                         pid)
            return
        if self.plan is not None:
            self.cg.move('%s/%s' % (self.plan.parent,
                                    probe_groups.SLEEPER_CG), pid)
        if case == lsvm_bound.MECH_SLICE:
            sched.set_slice_us(pid, slice_us)
        elif case == lsvm_bound.MECH_DEADLINE:
            runtime, deadline, period = dl or (
                DL_RUNTIME_US, DL_DEADLINE_US, self.period_us)
            sched.sched_setattr(pid, sched.make_attr(
                policy=SCHED_DEADLINE, flags=sched.SCHED_FLAG_RESET_ON_FORK,
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
        timeout = 10 + 5 * (self.wakes + 20) * self.period_us / 1e6
        try:
            out, err = p.communicate('go\n', timeout=timeout)
        except subprocess.TimeoutExpired:
            self._reap(p)
            return rows.failed(case, 'the sleeper did not finish in %.0f s'
                               % timeout), []
        try:
            samples = json.loads(out)['lateness_us']
            return rows.row(case, samples), samples
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


def _run(cases, cpus, wakes, hogs_per_cpu, lsvm_weight, cgroup_root,
         period_us, work_us):
    with Session(cpus, hogs_per_cpu, lsvm_weight, cgroup_root, period_us,
                 work_us, wakes) as s:
        s.spawn_sleepers(len(cases))
        s.start()
        return tuple(s.measure(case) for case in cases)


def run(cases, cpus, wakes=300, hogs_per_cpu=2, lsvm_weight=10000,
        cgroup_root='/sys/fs/cgroup', period_us=2000, work_us=50,
        sys_root='/sys'):
    """The self-test: a tuple of ``model.WakeupProbe``, one per case in
    order. ProbeArgError for bad arguments; LinuxKnobError when the test
    cannot run at all (then nothing is left behind either).
    """
    cases, cpus = check_args(cases, cpus, wakes, hogs_per_cpu, lsvm_weight,
                             cpulist.online_cpus(sys_root), period_us, work_us)
    if not _lock.acquire(blocking=False):
        raise linux.LinuxKnobError('a wake-up self-test is already running '
                                   'in this process', errno_mod.EBUSY)
    try:
        # In a thread of its own: no_new_privs stays with that thread and
        # the children it starts, not with the caller's (a privsep
        # worker's) thread.
        result = {}

        def target():
            try:
                _no_new_privs()
                result['rows'] = _run(cases, cpus, wakes, hogs_per_cpu,
                                      lsvm_weight, cgroup_root, period_us,
                                      work_us)
            except BaseException as e:  # re-raised in the caller
                result['error'] = e

        t = threading.Thread(target=target, name='wakeup-probe')
        t.start()
        t.join()
        if 'error' in result:
            raise result['error']
        return result['rows']
    finally:
        _lock.release()
