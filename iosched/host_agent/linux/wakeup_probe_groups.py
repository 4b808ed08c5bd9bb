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
"""The wake-up self-test's temporary cgroups: where they go, their plan
(pure), making them for one run and removing them (``TempGroups``), and
the removal of groups a dead run left (``wakeup_probe``).

Groups are ``<base>/iosched-selftest-<owner pid>-{sleeper,lsvm,hogN}``:
flat, each a sibling of the guests' groups, in libvirt's machine group
when it exists (else the hierarchy's root). That is where an LSVM's
threads compete: a VM's group is a direct child of the machine group, and
the weight boost acts between siblings. A test group nested one level
deeper (the layout before issue 28) competed as one default-weight
entity beside busy guests, so its boosted sleeper waited for the
parent's turn: weight p99 10-18 ms measured beside three busy guests where
the real LSVM's was 2.4 ms (bench/selftest_conditions.py).
"""

import collections
import errno as errno_mod
import os
import signal
import time

from oslo_log import log as logging

from iosched.contract import lsvm as lsvm_bound
from iosched.host_agent import linux
from iosched.host_agent.linux import cgroups
from iosched.host_agent.linux import wakeup_probe_rows as rows
from iosched.host_agent import paths

LOG = logging.getLogger(__name__)

QUOTA_PERIOD_US = 100000
PREFIX = 'iosched-selftest-'
SLEEPER_CG = 'sleeper'
LSVM_CG = 'lsvm'
# Where the temporary groups may go, in order: libvirt's machine group
# (beside the guests), else the hierarchy's root (a host where no VM ran
# yet). A v1 root directory is mode 0555, so the privsep daemon (uid 0
# without CAP_DAC_OVERRIDE) may not create a group there; libvirt's machine
# group (0755, owned by root) exists once a VM ran.
MACHINE_GROUPS = {cgroups.V1: 'machine', cgroups.V2: 'machine.slice'}
RMDIR_TRIES = 40           # x 25 ms: a killed task may leave late


CgroupPlan = collections.namedtuple(
    'CgroupPlan', 'parent dirs setup lsvm_writes sleeper lsvm hogs')
CgroupPlan.__doc__ = """``parent``: the base the groups are in ('' = the
root); ``dirs``: cgroups to create; ``setup``: (relpath, value) writes
right after creating them; ``lsvm_writes``: the weight case's weight and
cap; ``sleeper``, ``lsvm``, ``hogs``: the groups of each role."""


def group_name(owner_pid, role):
    """``iosched-selftest-<pid>-<role>``."""
    return '%s%d-%s' % (PREFIX, int(owner_pid), role)


def plan_cgroups(hierarchy, owner_pid, n_hogs, lsvm_weight, hogs_per_cpu,
                  base='', lsvm_parent=''):
    """The groups of one run, flat below ``base`` ('' = the hierarchy's
    root, or a group such as libvirt's machine group); the weight case's
    group below ``lsvm_parent`` when given (the LSVM parent group at the
    top, ``lsvm_group``: where the weight mechanism puts LSVMs).
    """
    def cg(role, where=base):
        return '/'.join(p for p in (where, group_name(owner_pid, role))
                        if p)

    sleeper = cg(SLEEPER_CG)
    lsvm = cg(LSVM_CG, lsvm_parent or base)
    hogs = tuple(cg('hog%d' % i) for i in range(n_hogs))
    dirs = (sleeper, lsvm) + hogs
    for d in dirs:                       # refuse '..' and the like
        paths.safe_join(hierarchy.root, d)
    # Below the LSVM parent the group is as the agent makes an LSVM's:
    # the parent's weight competes, each LSVM's own is the default.
    writes = cgroups.plan_weight(hierarchy, lsvm, lsvm_bound.GROUP_VM_WEIGHT
                                 if lsvm_parent else lsvm_weight)
    if hierarchy.version == cgroups.V1:
        writes.append((cgroups.file_relpath(hierarchy, lsvm,
                                            'cpu.cfs_period_us'),
                       str(QUOTA_PERIOD_US)))
    writes += cgroups.plan_cap(hierarchy, lsvm, 1.0 / (hogs_per_cpu + 1),
                               QUOTA_PERIOD_US)
    return CgroupPlan(base, dirs, (), tuple(writes), sleeper, lsvm, hogs)


def owner_of(name):
    """The owner pid of a self-test group name (this layout's
    ``iosched-selftest-<pid>-<role>`` or the older ``iosched-selftest-<pid>``
    parent), else None.
    """
    if not name.startswith(PREFIX):
        return None
    pid = name[len(PREFIX):].split('-', 1)[0]
    return int(pid) if pid.isdigit() else None


def stale_names(names, alive, me):
    """The self-test group names left by a dead run (or by this process,
    which runs one test at a time), sorted.
    """
    out = []
    for name in names:
        pid = owner_of(name)
        if pid is not None and (pid == me or not alive(pid)):
            out.append(name)
    return sorted(out)


def _cg_dir(hierarchy, cg):
    """Directory of a cgroup ('' = the hierarchy's root)."""
    parts = [p for p in (hierarchy.cpu_dir, cg) if p]
    if not parts:
        return os.path.normpath(hierarchy.root)
    return paths.safe_join(hierarchy.root, *parts)


def _read_pids(path):
    try:
        with open(os.path.join(path, 'cgroup.procs')) as fh:
            return [int(x) for x in fh.read().split() if x.isdigit()]
    except OSError:
        return []


def _rmdir(path, rmdir=os.rmdir):
    for i in range(RMDIR_TRIES):
        try:
            rmdir(path)
            return True
        except FileNotFoundError:
            return True
        except OSError as e:
            if e.errno != errno_mod.EBUSY or i == RMDIR_TRIES - 1:
                LOG.warning('cannot remove the self-test cgroup %s: %s',
                            path, e.strerror)
                return False
            time.sleep(0.025)
    return False


def remove_tree(path, kill=os.kill, rmdir=os.rmdir):
    """Kill what is left in a self-test group and remove it, deepest
    first. True when it is gone.
    """
    if not os.path.isdir(path):
        return True
    subdirs = sorted(os.path.join(path, d) for d in os.listdir(path)
                     if os.path.isdir(os.path.join(path, d)))
    ok = all([remove_tree(d, kill, rmdir) for d in subdirs])
    for pid in _read_pids(path):
        try:
            kill(pid, signal.SIGKILL)
        except OSError:
            pass
    return _rmdir(path, rmdir) and ok


def bases(hierarchy, parent=''):
    """Groups the self-test's groups may be in: libvirt's machine group
    when it exists (beside the guests), then the root; ``parent`` (the
    LSVM parent group) first when given.
    """
    out = [parent] if parent else []
    machine = MACHINE_GROUPS.get(hierarchy.version)
    if machine and os.path.isdir(_cg_dir(hierarchy, machine)):
        out.append(machine)
    return out + ['']


def sweep(hierarchy, alive=linux.pid_alive, me=None, kill=os.kill,
          rmdir=os.rmdir, parent=''):
    """Remove the groups of self-tests whose process is gone. Returns the
    cgroups removed.
    """
    me = os.getpid() if me is None else me
    removed = []
    for base in bases(hierarchy, parent):
        top = _cg_dir(hierarchy, base)
        try:
            names = os.listdir(top)
        except OSError:
            continue
        for name in stale_names(names, alive, me):
            if remove_tree(os.path.join(top, name), kill, rmdir):
                cg = '/'.join(p for p in (base, name) if p)
                removed.append(cg)
                if owner_of(name) != me:
                    LOG.info('removed the stale self-test cgroup %s', cg)
    return removed


def write(hierarchy, relpath, value):
    """Write one cgroup file; LinuxKnobError saying which and why."""
    path = paths.safe_join(hierarchy.root, relpath)
    try:
        with open(path, 'w') as fh:
            fh.write(value)
    except OSError as e:
        raise linux.LinuxKnobError('cannot write %r to %s: %s'
                                   % (value, path, e.strerror), e.errno)


class TempGroups(object):
    """The groups of one self-test run: ``make`` them (the first base the
    kernel lets us write), ``move`` processes in, ``remove`` them all.
    ``plan`` is None and ``error`` says why when there are none.
    """

    def __init__(self, cgroup_root):
        self.cgroup_root = cgroup_root
        self.hierarchy = None
        self.plan = None
        self.error = 'cgroups not used'
        self.created = []

    def make(self, owner_pid, n_hogs, lsvm_weight, hogs_per_cpu,
             lsvm_parent=''):
        try:
            self.hierarchy = cgroups.probe(self.cgroup_root)
            sweep(self.hierarchy, parent=lsvm_parent)
            refused = []
            for base in bases(self.hierarchy):
                plan = plan_cgroups(self.hierarchy, owner_pid, n_hogs,
                                    lsvm_weight, hogs_per_cpu, base,
                                    lsvm_parent)
                try:
                    self._create(plan)
                    self.plan = plan
                    return
                except linux.LinuxKnobError as e:
                    self.remove()
                    if e.errno not in (errno_mod.EACCES, errno_mod.EPERM):
                        raise
                    refused.append(str(e))
            raise linux.LinuxKnobError(
                '%s (a v1 cgroup root is mode 0555: creating a group there '
                'needs CAP_DAC_OVERRIDE, which the privsep daemon does not '
                'keep; libvirt\'s %s group is used when it exists)'
                % ('; '.join(refused),
                   MACHINE_GROUPS.get(self.hierarchy.version)),
                errno_mod.EACCES)
        except linux.LinuxKnobError as e:
            self.error = 'no self-test cgroups: %s' % rows.error_text(e)
            LOG.warning('wake-up self-test without cgroups: %s', e)
            self.remove()
            self.plan = None

    def _create(self, plan):
        for cg in plan.dirs:
            path = _cg_dir(self.hierarchy, cg)
            try:
                os.mkdir(path, 0o755)
            except OSError as e:
                raise linux.LinuxKnobError('cannot create %s: %s'
                                           % (path, e.strerror), e.errno)
            self.created.append(path)
        for relpath, value in plan.setup:
            write(self.hierarchy, relpath, value)

    def move(self, cg, pid):
        write(self.hierarchy, cgroups.file_relpath(self.hierarchy, cg,
                                                   'cgroup.procs'), str(pid))

    def remove(self):
        """Remove the groups made; the paths that could not be."""
        left = []
        for path in reversed(self.created):
            if not remove_tree(path):
                left.append(path)
        self.created = []
        return left
