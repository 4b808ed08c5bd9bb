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
"""Privileged calls of the LSVM groups (``linux.lsvm_group``).

Each re-checks what it is given, as the daemon must not trust its caller:

* ``make_parent(cgroup_root, parent)`` (``cgroup_admin_pctxt``, the only
  call with CAP_DAC_OVERRIDE): creates the configured parent group at the
  top of the cgroup v1 cpu hierarchy. The name must be the daemon's own
  ``[host_agent_policy.vslicer] weight_group``; nothing else is created
  there. The worst a rogue caller can do: create that one empty group.
* ``make_vm_group`` / ``remove_vm_group(cgroup_root, parent, uuid)``: an
  empty ``<parent>/vm-<uuid>`` group, made or removed (rmdir refuses a
  group with threads in it).
* ``move_thread(cgroup_root, tid, group)``: one thread into ``group``,
  which must be an LSVM group or a group below libvirt's ``machine``
  group, and only from such a group: the worst a rogue caller can do is
  move a guest's thread between its libvirt groups and an LSVM group.
  cgroup v1 only (a v2 thread cannot leave its process's subtree).

Callers: ``iosched.host_agent.actuators.lsvm_group_knobs`` and the
libvirt driver's start (the parent).
"""

import errno
import os

from iosched.host_agent import conf as agent_conf
from iosched.host_agent import linux
from iosched.host_agent.linux import cgroups
from iosched.host_agent.linux import lsvm_group
from iosched.host_agent import paths
from iosched.host_agent import privsep

CONF = agent_conf.CONF
MACHINE_GROUP = 'machine'        # libvirt's, cgroup v1


def _hierarchy(cgroup_root):
    configured = CONF.host_paths.cgroup_root
    if not isinstance(cgroup_root, str) or (
            os.path.realpath(cgroup_root) != os.path.realpath(configured)):
        raise linux.LinuxKnobError('cgroup root %r is not the configured %s'
                                   % (cgroup_root, configured))
    hierarchy = cgroups.probe(configured)
    if hierarchy.version != cgroups.V1:
        raise linux.LinuxKnobError(
            'LSVM groups need a cgroup v1 cpu hierarchy (cgroup %s keeps a '
            'thread in its process\'s subtree)' % hierarchy.version,
            errno.EOPNOTSUPP)
    return hierarchy


def _configured_parent(parent):
    want = CONF['host_agent_policy.vslicer'].weight_group
    lsvm_group.check_parent(parent)
    if parent != want:
        raise linux.LinuxKnobError('LSVM parent group %r is not the '
                                   'configured weight_group %r'
                                   % (parent, want))
    return parent


def group_dir(hierarchy, cg):
    """The directory of ``cg`` (relative to the cpu hierarchy), which must
    not resolve outside it.
    """
    top = paths.safe_join(hierarchy.root, hierarchy.cpu_dir)
    path = paths.safe_join(top, cg.strip('/'))
    real = os.path.realpath(path)
    if not paths.is_below(os.path.realpath(top), real):
        raise linux.LinuxKnobError('cgroup %r resolves to %s, outside %s'
                                   % (cg, real, top))
    return path


def _mkdir(path):
    try:
        os.mkdir(path, 0o755)
    except FileExistsError:
        pass
    except OSError as e:
        raise linux.LinuxKnobError('cannot create %s: %s'
                                   % (path, e.strerror), e.errno)


@privsep.cgroup_admin_pctxt.entrypoint
def make_parent(cgroup_root, parent):
    """Create the configured LSVM parent group (idempotent)."""
    hierarchy = _hierarchy(cgroup_root)
    _mkdir(group_dir(hierarchy, _configured_parent(parent)))


@privsep.sys_admin_pctxt.entrypoint
def make_vm_group(cgroup_root, parent, uuid):
    hierarchy = _hierarchy(cgroup_root)
    _configured_parent(parent)
    _mkdir(group_dir(hierarchy, lsvm_group.vm_group(parent, uuid)))


@privsep.sys_admin_pctxt.entrypoint
def remove_vm_group(cgroup_root, parent, uuid):
    hierarchy = _hierarchy(cgroup_root)
    _configured_parent(parent)
    path = group_dir(hierarchy, lsvm_group.vm_group(parent, uuid))
    try:
        os.rmdir(path)
    except FileNotFoundError:
        pass
    except OSError as e:
        raise linux.LinuxKnobError('cannot remove %s: %s'
                                   % (path, e.strerror), e.errno)


def allowed_group(parent, cg):
    """True for an LSVM group or a group below libvirt's machine group."""
    cg = (cg or '').strip('/')
    return lsvm_group.is_vm_group(parent, cg) or (
        cg.startswith(MACHINE_GROUP + '/') and '..' not in cg.split('/'))


@privsep.sys_admin_pctxt.entrypoint
def move_thread(cgroup_root, tid, group):
    """Thread ``tid`` into ``group``; both ends checked (above)."""
    if isinstance(tid, bool) or not isinstance(tid, int) or tid <= 0:
        raise linux.LinuxKnobError('thread id %r is not a positive int'
                                   % (tid,), errno.EINVAL)
    hierarchy = _hierarchy(cgroup_root)
    parent = CONF['host_agent_policy.vslicer'].weight_group
    current = lsvm_group.thread_group(CONF.host_paths.proc_root, tid,
                                      hierarchy)
    for what, cg in (('destination', group), ('current group', current)):
        if not allowed_group(parent, cg):
            raise linux.LinuxKnobError(
                'refusing to move tid %d: its %s %r is neither an LSVM '
                'group under %r nor below libvirt\'s %r group'
                % (tid, what, cg, parent, MACHINE_GROUP), errno.EPERM)
    tasks = os.path.join(group_dir(hierarchy, group), 'tasks')
    try:
        fd = os.open(tasks, os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            os.write(fd, str(tid).encode('ascii'))
        finally:
            os.close(fd)
    except OSError as e:
        raise linux.LinuxKnobError('cannot move tid %d to %s: %s'
                                   % (tid, group, e.strerror), e.errno)
