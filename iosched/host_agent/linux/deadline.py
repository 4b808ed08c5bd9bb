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
"""SCHED_DEADLINE admission figures of the host (read only).

The kernel admits a deadline reservation when the sum of runtime/period
of everything reserved in the thread's *root domain* stays within
``sched_rt_runtime_us / sched_rt_period_us`` (0.95 by default; -1 = no
limit) times the domain's CPUs (``__dl_overflow``; CPU capacities on
asymmetric hosts). ``measure`` returns what the vSlicer policy needs to
check admission before asking the kernel (``model.DeadlineState``):

* ``cpus``: the root domain LSVM threads span: online CPUs minus the
  ``isolcpus`` ones (``<sys_root>/devices/system/cpu/{online,isolated}``);
  on cgroup v2, minus CPUs given to ``cpuset.cpus.partition`` roots (the
  root group's ``cpuset.cpus.effective`` already excludes them). Cpuset
  partitions split root domains on v1 too (a root cpuset with
  ``cpuset.sched_load_balance = 0`` and exclusive children), and v1 does
  not show where: then the figures are for all non-isolated CPUs and
  ``warnings`` says so;
* ``limit``: the kernel's limit per CPU x ``len(cpus)``;
* ``reserved``: runtime/period summed over the threads of the given
  processes (the VMs' QEMU pids);
* ``foreign``: everything else the root domain holds: other processes'
  deadline threads and the kernel's fair-class deadline servers (since
  6.12, 50 ms every 1 s per CPU: 0.1 CPU of this 2-CPU host's 1.9).

Two ways to ``foreign``, best first:

``debugfs``  the kernel's own sum, ``dl_bw->total_bw`` of the root domain
             in ``<sys_root>/kernel/debug/sched/debug`` (root only), minus
             ``reserved``. Exact: servers, every pid namespace, and
             bandwidth the kernel leaked (see ``sched_deadline.set_fair``),
             which it refuses admission on all the same.
``scan``     every thread's reservation by ``sched_getattr`` (the
             parameters are not in procfs; ``stat`` field 41 has the
             policy, read first on fake trees), plus the servers:
             ``<sys_root>/kernel/debug/sched/fair_server/cpuN`` when
             readable, else the kernel default from 6.12 on. Counts
             deadline threads of every root domain (an overestimate when
             there are several).

``/proc/<pid>/task/<tid>/sched`` was not used: for a deadline thread it
shows ``policy 6``, ``prio -1`` and the *current* ``dl.runtime`` (what is
left, -1521131 ns for a throttled busy loop) and absolute
``dl.deadline``, not the reservation, in 1.9 kB against ``stat``'s 0.3 kB.

Cost, measured on the project's 2-CPU host (shared with other jobs, so
noisy) with 1,001 threads: the full scan takes 4 ms when ``sched_getattr``
asks every thread (~3 us per thread) and 21 ms when it reads every
``stat`` first (``by_stat``); the debugfs file takes 3 ms to read, and
``measure`` the debugfs way (the file + 833 threads of the given pids)
6 ms.
"""

import collections
import errno as errno_mod
import os
import re

from iosched.host_agent import linux
from iosched.host_agent.linux import cpus as cpulist
from iosched.host_agent.linux import sched
from iosched.host_agent.linux import sched_deadline
from iosched.host_agent import model
from iosched.host_agent import paths

BW_SHIFT = 20                      # the kernel's bandwidth unit: 2^-20 CPU
# kernel/sched/deadline.c dl_server defaults (fair_server), since 6.12.
DL_SERVER_RUNTIME_NS = 50000000
DL_SERVER_PERIOD_NS = 1000000000
DL_SERVER_SINCE = (6, 12)

SOURCE_DEBUGFS = 'debugfs'
SOURCE_SCAN = 'scan'

Scan = collections.namedtuple('Scan', 'ours foreign threads')
Scan.__doc__ = """Deadline bandwidth in CPUs: ``ours`` of threads of the
given pids, ``foreign`` of every other thread scanned; ``threads`` maps
tid -> (pid, {'runtime_us', 'deadline_us', 'period_us'})."""

Measured = collections.namedtuple('Measured', 'state source warnings')
Measured.__doc__ = """``state``: model.DeadlineState; ``source``: how
``foreign`` was found (SOURCE_DEBUGFS or SOURCE_SCAN); ``warnings``: tuple
of str (root domains that cannot be seen, unreadable files)."""


def _read(path):
    with open(path) as fh:
        return fh.read()


def read_limit_per_cpu(proc_root):
    """sched_rt_runtime_us / sched_rt_period_us (1.0 when runtime is -1,
    no limit): the deadline bandwidth the kernel admits per CPU.
    """
    base = paths.safe_join(proc_root, 'sys', 'kernel')
    try:
        runtime = int(_read(os.path.join(base, 'sched_rt_runtime_us')))
        period = int(_read(os.path.join(base, 'sched_rt_period_us')))
    except (OSError, ValueError) as e:
        raise linux.LinuxKnobError('cannot read the deadline limit under '
                                   '%s: %s' % (base, e),
                                   getattr(e, 'errno', None))
    if runtime < 0:
        return 1.0
    if period <= 0:
        raise linux.LinuxKnobError('sched_rt_period_us is %d' % period)
    return runtime / period


def root_domain_cpus(sys_root, cgroup_root=None):
    """(cpus, warnings): the CPUs of the root domain LSVM threads span."""
    base = paths.safe_join(sys_root, 'devices', 'system', 'cpu')
    try:
        online = set(cpulist.parse_cpu_list(
            _read(os.path.join(base, 'online'))))
    except (OSError, ValueError) as e:
        raise linux.LinuxKnobError('cannot read the online CPUs in %s: %s'
                                   % (base, e), getattr(e, 'errno', None))
    warnings = []
    try:
        isolated = set(cpulist.parse_cpu_list(_read(os.path.join(base,
                                                         'isolated'))))
    except FileNotFoundError:
        isolated = set()
    except (OSError, ValueError) as e:
        isolated = set()
        warnings.append('cannot read %s/isolated: %s' % (base, e))
    cpus = online - isolated
    if cgroup_root:
        cpus, more = _cpuset_partitions(cgroup_root, cpus)
        warnings.extend(more)
    return tuple(sorted(cpus)), tuple(warnings)


def _cpuset_partitions(cgroup_root, cpus):
    warnings = []
    for sub in ((), ('unified',)):        # v2 at the root, or hybrid
        try:
            eff = _read(paths.safe_join(cgroup_root, *sub,
                                        'cpuset.cpus.effective'))
        except (OSError, paths.UnsafePath):
            continue
        try:
            top = set(cpulist.parse_cpu_list(eff))
        except ValueError as e:
            warnings.append('cpuset.cpus.effective: %s' % e)
            continue
        if top:                           # partitions' CPUs left it
            return cpus & top, warnings
    try:
        balance = _read(paths.safe_join(cgroup_root, 'cpuset',
                                        'cpuset.sched_load_balance')).strip()
    except (OSError, paths.UnsafePath):
        balance = '1'
    if balance == '0':
        warnings.append('cgroup v1 root cpuset has sched_load_balance = 0: '
                        'the host has several root domains, which v1 does '
                        'not show; deadline figures are for all '
                        'non-isolated CPUs')
    return cpus, warnings


# /proc/<pid>/task/<tid>/stat (proc(5)): "tid (comm) state ppid ...";
# comm may hold spaces and ')', so fields are counted after the last ')'.
# Field 41 is the scheduling policy (6 = SCHED_DEADLINE).
def parse_stat_policy(text):
    try:
        rest = text[text.rindex(')') + 2:].split()
        return int(rest[41 - 3])
    except (ValueError, IndexError):
        raise ValueError('stat %r has no policy field' % text[:80])


def _tids(proc_root, pid):
    try:
        return [int(t) for t in os.listdir(
            paths.safe_join(proc_root, pid, 'task')) if t.isdigit()]
    except OSError:
        return []                           # the process exited


def _pids(proc_root):
    return [int(p) for p in os.listdir(proc_root) if p.isdigit()]


def bandwidth(params):
    """runtime/period of a reservation dict, in CPUs."""
    return params['runtime_us'] / float(params['period_us'])


def same_pid_namespace(proc_root):
    """True when ``proc_root`` is the procfs of the agent's own pid
    namespace (its ``self`` link names our pid), so its tids are the ones
    ``sched_getattr`` addresses.
    """
    try:
        return os.readlink(os.path.join(proc_root, 'self')) == \
            str(os.getpid())
    except OSError:
        return False


def scan(proc_root, pids=(), everything=False, getattr=None, by_stat=None):
    """Deadline threads of ``pids`` (``ours``) and, with ``everything``,
    of every other process under ``proc_root`` (``foreign``).

    ``getattr(tid)`` returns the reservation dict, None for a fair-class
    thread, or raises LinuxKnobError (a real-time thread, a thread that
    exited): ``sched_deadline.get_deadline_us`` by default, which needs
    ``proc_root`` to be the agent's own pid namespace (LinuxKnobError
    otherwise). ``by_stat``: first read each thread's policy from its
    ``stat`` and ask ``getattr`` only for deadline threads; by default
    only when ``proc_root`` is not the agent's pid namespace (a fake tree
    with its own ``getattr``): ``sched_getattr`` on every thread is ~5x
    cheaper than a file read. Threads that vanish or cannot be read are
    skipped: a thread that exits holds nothing.
    """
    same_ns = same_pid_namespace(proc_root)
    if getattr is None:
        if not same_ns:
            raise linux.LinuxKnobError(
                'cannot read reservations of threads under %s: it is not '
                'the procfs of the agent\'s pid namespace, whose thread ids '
                'sched_getattr takes (run the agent in the host\'s pid '
                'namespace)' % proc_root, errno_mod.EXDEV)
        getattr = sched_deadline.get_deadline_us
    if by_stat is None:
        by_stat = not same_ns
    ours_pids = set(int(p) for p in pids)
    todo = sorted(set(_pids(proc_root)) | ours_pids) if everything \
        else sorted(ours_pids)
    ours = foreign = 0.0
    threads = {}
    for pid in todo:
        for tid in _tids(proc_root, pid):
            try:
                if by_stat and parse_stat_policy(_read(paths.safe_join(
                        proc_root, pid, 'task', tid, 'stat'))) != \
                        sched.SCHED_DEADLINE:
                    continue
                params = getattr(tid)
            except (OSError, ValueError, linux.LinuxKnobError):
                continue
            if params is None:              # fair (or left deadline)
                continue
            threads[tid] = (pid, params)
            if pid in ours_pids:
                ours += bandwidth(params)
            else:
                foreign += bandwidth(params)
    return Scan(ours, foreign, threads)


# <sys_root>/kernel/debug/sched/debug (kernel/sched/debug.c print_dl_rq):
#   dl_rq[0]:
#     .dl_nr_running                 : 0
#     .dl_bw->bw                     : 996147
#     .dl_bw->total_bw               : 104856
# bw and total_bw are of the CPU's root domain, in units of 2^-20 CPU;
# bw is -1 when there is no limit.
def parse_debug_dl_bw(text, cpu):
    """(bw, total_bw) of ``cpu``'s root domain, in CPUs per CPU and CPUs;
    ValueError when the file has no such block.
    """
    head = 'dl_rq[%d]:' % int(cpu)
    start = text.find(head)
    if start < 0:
        raise ValueError('no %s block' % head)
    found = {}
    for line in text[start + len(head):].splitlines()[1:]:
        key, sep, value = line.partition(':')
        key = key.strip()
        if not sep or not key.startswith('.'):
            break
        if key in ('.dl_bw->bw', '.dl_bw->total_bw'):
            found[key] = int(value.strip())
    try:
        bw, total = found['.dl_bw->bw'], found['.dl_bw->total_bw']
    except KeyError as e:
        raise ValueError('%s has no %s line' % (head, e))
    return (1.0 if bw < 0 else bw / float(1 << BW_SHIFT),
            total / float(1 << BW_SHIFT))


def read_kernel_total(sys_root, cpu):
    """The root domain's reserved bandwidth as the kernel counts it, or
    None when debugfs is not mounted or not readable (unprivileged).
    """
    try:
        text = _read(paths.safe_join(sys_root, 'kernel', 'debug', 'sched',
                                     'debug'))
        return parse_debug_dl_bw(text, cpu)[1]
    except (OSError, ValueError, paths.UnsafePath):
        return None


def _release(proc_root):
    try:
        text = _read(paths.safe_join(proc_root, 'sys', 'kernel',
                                     'osrelease'))
        m = re.match(r'(\d+)\.(\d+)', text.strip())
        return (int(m.group(1)), int(m.group(2))) if m else None
    except OSError:
        return None


def server_bandwidth(sys_root, proc_root, cpus):
    """(CPUs, how): the fair-class deadline servers' bandwidth on
    ``cpus``: from debugfs when readable, else the kernel default (0.05
    per CPU) when the kernel is 6.12 or later, else 0.
    """
    total = 0.0
    try:
        for cpu in cpus:
            base = paths.safe_join(sys_root, 'kernel', 'debug', 'sched',
                                   'fair_server', 'cpu%d' % int(cpu))
            runtime = int(_read(os.path.join(base, 'runtime')))
            period = int(_read(os.path.join(base, 'period')))
            total += runtime / float(period) if period > 0 else 0.0
        return total, 'debugfs fair_server'
    except (OSError, ValueError, paths.UnsafePath):
        pass
    release = _release(proc_root)
    if release is not None and release >= DL_SERVER_SINCE:
        return (len(cpus) * DL_SERVER_RUNTIME_NS / float(DL_SERVER_PERIOD_NS),
                'kernel %d.%d default' % release)
    return 0.0, 'none before 6.12'


def measure(proc_root, sys_root, pids, cgroup_root=None, getattr=None):
    """``Measured`` for the VMs whose QEMU processes are ``pids``."""
    cpus, warnings = root_domain_cpus(sys_root, cgroup_root)
    warnings = list(warnings)
    if not cpus:
        raise linux.LinuxKnobError('no CPU left for a root domain under %s'
                                   % sys_root, errno_mod.ENODEV)
    limit = read_limit_per_cpu(proc_root) * len(cpus)
    kernel_total = read_kernel_total(sys_root, cpus[0])
    if kernel_total is not None:
        found = scan(proc_root, pids, getattr=getattr)
        foreign = max(0.0, kernel_total - found.ours)
        source = SOURCE_DEBUGFS
    else:
        found = scan(proc_root, pids, everything=True, getattr=getattr)
        servers, how = server_bandwidth(sys_root, proc_root, cpus)
        foreign = found.foreign + servers
        source = SOURCE_SCAN
        if how.startswith('kernel'):
            warnings.append('deadline servers taken at the %s (debugfs '
                            'unreadable)' % how)
    state = model.DeadlineState(cpus=tuple(cpus), limit=round(limit, 6),
                                foreign=round(foreign, 6),
                                reserved=round(found.ours, 6))
    return Measured(state, source, tuple(warnings))
