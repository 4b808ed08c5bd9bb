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

This module checks the arguments and runs one test at a time, in a thread
of its own (no_new_privs); the children and the measurement are in
``wakeup_probe_session``, the temporary cgroups in ``wakeup_probe_groups``,
the rows and their p50/p99 in ``wakeup_probe_rows``.
"""

import ctypes
import errno as errno_mod
import os
import threading

from iosched.contract import lsvm as lsvm_bound
from iosched.host_agent import linux
from iosched.host_agent.linux import cgroups
from iosched.host_agent.linux import cpus as cpulist
from iosched.host_agent.linux import wakeup_probe_rows as rows
from iosched.host_agent.linux import wakeup_probe_session as session

# Accepted arguments (the privsep entrypoint enforces the same).
WAKES_MIN, WAKES_MAX = 50, 5000
REPEATS_MIN, REPEATS_MAX = 1, 9
SHARE_MS_MIN, SHARE_MS_MAX = 0, 2000
HOGS_MIN, HOGS_MAX = 0, 8
PERIOD_MIN_US, PERIOD_MAX_US = 500, 100000

PR_SET_NO_NEW_PRIVS = 38

_lock = threading.Lock()   # one self-test at a time per process


class ProbeArgError(linux.LinuxKnobError):
    """An argument of the self-test is outside what it accepts."""


# -- pure helpers ----------------------------------------------------------
def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def check_args(cases, cpus, wakes, hogs_per_cpu, lsvm_weight, online,
               period_us=2000, work_us=50, repeats=1, share_ms=0):
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
            ('repeats', repeats, REPEATS_MIN, REPEATS_MAX),
            ('share_ms', share_ms, SHARE_MS_MIN, SHARE_MS_MAX),
            ('work_us', work_us, 0, (period_us // 2
                                     if _is_int(period_us) else 0))):
        if not _is_int(value) or not lo <= value <= hi:
            raise ProbeArgError('%s %r is not an int in %d..%d'
                                % (name, value, lo, hi), errno_mod.EINVAL)
    if lsvm_bound.MECH_DEADLINE in cases and (
            period_us < session.DL_DEADLINE_US):
        raise ProbeArgError('period_us %d is shorter than the deadline case'
                            "'s %d us deadline" % (period_us,
                                                   session.DL_DEADLINE_US),
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


# The run: R repeats of every case, interleaved (case order rotating each
# repeat, so a busy spell of the host hits every case alike); the first
# repeat of each case ends with the share phase. Each case's row is the
# combination of its repeats (``wakeup_probe_rows.combine``: medians).
# Affinity: the guest pCPUs (``cpus``), where LSVM vCPUs run; deadline's
# sleeper spans ``dl_cpus`` (the root domain), as the agent's deadline
# LSVM threads do: the kernel refuses a narrower one (EPERM).
def _run(cases, cpus, wakes, hogs_per_cpu, lsvm_weight, cgroup_root,
         period_us, work_us, repeats=1, share_ms=0, dl_cpus=None,
         lsvm_parent=''):
    with session.Session(cpus, hogs_per_cpu, lsvm_weight, cgroup_root,
                         period_us, work_us, wakes,
                         lsvm_parent=lsvm_parent) as s:
        s.spawn_sleepers(len(cases), share_ms=share_ms)
        s.spawn_sleepers(len(cases) * (repeats - 1))
        s.start()
        got = {case: [] for case in cases}
        for rep in range(repeats):
            k = rep % len(cases)
            for case in cases[k:] + cases[:k]:
                aff = (dl_cpus if case == lsvm_bound.MECH_DEADLINE
                       else None)
                got[case].append(s.measure(case, affinity=aff))
        return tuple(rows.combine(got[case]) for case in cases)


def run(cases, cpus, wakes=300, hogs_per_cpu=2, lsvm_weight=10000,
        cgroup_root='/sys/fs/cgroup', period_us=2000, work_us=50,
        sys_root='/sys', repeats=1, share_ms=0, lsvm_parent=''):
    """The self-test: a tuple of ``model.WakeupProbe``, one per case in
    order. ProbeArgError for bad arguments; LinuxKnobError when the test
    cannot run at all (then nothing is left behind either).
    """
    online = cpulist.online_cpus(sys_root)
    cases, cpus = check_args(cases, cpus, wakes, hogs_per_cpu, lsvm_weight,
                             online, period_us, work_us, repeats, share_ms)
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
                                      work_us, repeats, share_ms,
                                      tuple(sorted(online)), lsvm_parent)
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
