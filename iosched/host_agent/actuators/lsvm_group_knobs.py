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
"""The ``lsvm_group`` knob: an LSVM's threads in a group of its own at the
top of the cgroup v1 cpu hierarchy (``iosched.host_agent.linux.lsvm_group``
says why and where).

=================  ==========================================================
kind (target)      value
=================  ==========================================================
``lsvm_group``     {'weight': 1..10000 (v2 scale), 'cap': fraction of one
(``''``)           CPU or None}: ``<parent>/vm-<uuid>`` made with that weight
                   and CFS quota, and every vCPU and I/O-path thread of the
                   VM (``resolver.vcpu_tids``, ``resolver.io_threads``) moved
                   into it; None: every thread back to the group libvirt
                   put it in, and the empty group removed
=================  ==========================================================

Read back: None while no thread is in the VM's group, else the group's
weight and cap (a write killed half-way reads as its target, never as a
third value); the journal keeps None as the original, and a restore
(stop, crash, mechanism change) writes it whatever it reads, moving every
thread home. A write moves every thread not yet in the group, so a
thread born since (a vhost worker) joins at the next write. Desired
state at start (``reconcile``): None, so threads a lost journal left in
an LSVM group go home too. A write moves the threads one by one; on a
failure those already moved go back before the error is raised.

Only served on cgroup v1 with ``[host_agent_policy.vslicer] weight_group``
set; the parent exists once the driver's ``weight_group()`` made it.
"""

import errno
import os

from oslo_log import log as logging

from iosched.contract import knob_kinds
from iosched.host_agent.actuators import knob_set
from iosched.host_agent.actuators import privileged_call
from iosched.host_agent.drivers import base as driver_base
from iosched.host_agent import linux
from iosched.host_agent.linux import cgroups
from iosched.host_agent.linux import lsvm_group
import iosched.host_agent.linux.privileged as privileged
import iosched.host_agent.linux.privileged_group as privileged_group
from iosched.host_agent import paths
from iosched.host_agent import privsep

LOG = logging.getLogger(__name__)

KIND = knob_kinds.LSVM_GROUP
PERIOD_US = 100000


class LsvmGroupKnobs(knob_set.KnobWriter):
    """The ``lsvm_group`` knob of the instances ``resolver`` knows."""

    def __init__(self, conf, resolver, hierarchy=None):
        self.resolver = resolver
        self.proc_root = conf.host_paths.proc_root
        self.cgroup_root = conf.host_paths.cgroup_root
        self.parent = conf['host_agent_policy.vslicer'].weight_group
        self.weight = conf['host_agent_policy.vslicer'].weight_group_weight
        self.hierarchy = hierarchy

    def _hier(self):
        if self.hierarchy is None:
            self.hierarchy = cgroups.probe(self.cgroup_root)
        return self.hierarchy

    def knobs(self):
        try:
            usable = bool(self.parent) and self._hier().version == cgroups.V1
        except linux.LinuxKnobError:
            usable = False
        return (KIND,) if usable else ()

    # The parent, at the top of the hierarchy: made with the second privsep
    # context (CAP_DAC_OVERRIDE: a v1 root directory is mode 0555), its
    # weight the LSVM weight (its children carry the caps).
    def ensure_parent(self):
        """The parent group's name once it exists, or '' with the reason
        logged.
        """
        if not self.knobs():
            return ''
        try:
            if not os.path.isdir(_parent_dir(self._hier(), self.parent)):
                _call('make_parent', _make_parent, self.cgroup_root,
                      self.parent)
            for relpath, text in cgroups.plan_weight(
                    self._hier(), self.parent, self.weight):
                _call('write_cgroup_file', privileged.write_cgroup_file,
                      self.cgroup_root, relpath, text)
        except linux.LinuxKnobError as e:
            LOG.warning('LSVM weight stays in libvirt\'s groups: cannot make '
                        'the parent group %s: %s', self.parent, e)
            return ''
        self._sweep()
        return self.parent

    def _sweep(self):
        """Remove the empty LSVM groups of guests gone while their threads
        were in them (a destroyed or migrated VM's group has no thread
        left; one with threads is a running guest's, left to the journal
        and reconciliation).
        """
        hier = self._hier()
        top = paths.safe_join(hier.root, hier.cpu_dir, self.parent)
        try:
            names = sorted(os.listdir(top))
        except OSError:
            return
        for name in names:
            cg = '%s/%s' % (self.parent, name)
            if not lsvm_group.is_vm_group(self.parent, cg):
                continue
            try:
                with open(os.path.join(top, name, 'tasks')) as fh:
                    if fh.read().strip():
                        continue
                _call('remove_vm_group', privileged_group.remove_vm_group,
                      self.cgroup_root, self.parent, lsvm_group.uuid_of(cg))
                LOG.info('removed the empty LSVM group %s', cg)
            except (OSError, linux.LinuxKnobError) as e:
                LOG.warning('cannot remove the empty LSVM group %s: %s',
                            cg, e)

    def reconciled_kinds(self):
        return self.knobs()

    def desired(self, kind, instance_uuid, target):
        return None

    # -- where the threads are ---------------------------------------------
    def _threads(self, uuid):
        """[(tid, role)] of the VM: vCPUs, then the I/O-path threads."""
        out = [(tid, ('vcpu', v))
               for v, tid in sorted(self.resolver.vcpu_tids(uuid).items())]
        io = self.resolver.io_threads(uuid)
        out.append((io['emulator'], ('io', 'emulator')))
        out.extend((tid, ('io', name))
                   for name, tid in sorted(io['io'].items())
                   if tid != io['emulator'])
        return out

    def _where(self, threads):
        hier = self._hier()
        where = {}
        for tid, _ in threads:
            try:
                where[tid] = lsvm_group.thread_group(self.proc_root, tid,
                                                     hier)
            except linux.LinuxKnobError:
                continue                    # a thread that just ended
        return where

    def _settings(self, group):
        hier = self._hier()
        quota, period = cgroups.read_cap(hier, group)
        return {'weight': cgroups.read_weight(hier, group),
                'cap': cgroups.cap_fraction(quota, period)}

    def read_knob(self, kind, instance_uuid, target):
        self._check(kind, target)
        try:
            group = lsvm_group.vm_group(self.parent, instance_uuid)
            where = self._where(self._threads(instance_uuid))
            return lsvm_group.read_value(where, group,
                                         lambda: self._settings(group))
        except (linux.LinuxKnobError, paths.UnsafePath) as e:
            raise driver_base.DriverError('cannot read %s of %s: %s'
                                          % (kind, instance_uuid, e))

    def write_knob(self, kind, instance_uuid, target, value):
        self._check(kind, target)
        try:
            value = lsvm_group.check_value(value)
            self._write(instance_uuid, value)
        except (linux.LinuxKnobError, paths.UnsafePath) as e:
            raise driver_base.DriverError('cannot set %s of %s to %r: %s'
                                          % (kind, instance_uuid, value, e))

    def _check(self, kind, target):
        if kind != KIND or target != '':
            raise driver_base.DriverError(
                'unknown knob %r target %r; accepted: %s with target \'\''
                % (kind, target, KIND))

    def _write(self, uuid, value):
        hier = self._hier()
        group = lsvm_group.vm_group(self.parent, uuid)
        dom = self.resolver.domain_cgroups(uuid)
        threads = self._threads(uuid)
        where = self._where(threads)
        rows = [(tid, where[tid], lsvm_group.home(dom, role))
                for tid, role in threads if tid in where]
        if value is not None:
            _call('make_vm_group', privileged_group.make_vm_group,
                  self.cgroup_root, self.parent, uuid)
            for relpath, text in (
                    cgroups.plan_weight(hier, group, value['weight'])
                    + [(cgroups.file_relpath(hier, group,
                                             'cpu.cfs_period_us'),
                        str(PERIOD_US))]
                    + cgroups.plan_cap(hier, group, value['cap'],
                                       PERIOD_US)):
                _call('write_cgroup_file', privileged.write_cgroup_file,
                      self.cgroup_root, relpath, text)
        moved = []
        for tid, dest in lsvm_group.plan_moves(rows, group, value):
            try:
                _call('move_thread', privileged_group.move_thread,
                      self.cgroup_root, tid, dest)
            except linux.LinuxKnobError as e:
                role = dict(threads).get(tid)
                if role and role[0] == 'io' and role[1] != 'emulator' and (
                        e.errno in (errno.ESRCH, errno.EINVAL)):
                    # an I/O thread that just ended, or one the kernel
                    # keeps in place (a kernel worker): the rest still go
                    LOG.debug('I/O thread %s (tid %d) of %s not moved: %s',
                              role[1], tid, uuid, e)
                    continue
                self._undo(moved)
                raise
            moved.append((tid, where[tid]))
        if value is None:
            self._remove(uuid)

    def _undo(self, moved):
        for tid, back in reversed(moved):
            try:
                _call('move_thread', privileged_group.move_thread,
                      self.cgroup_root, tid, back)
            except linux.LinuxKnobError as e:
                LOG.error('cannot move tid %(t)d back to %(g)s: %(e)s',
                          {'t': tid, 'g': back, 'e': e})

    def _remove(self, uuid):
        try:
            _call('remove_vm_group', privileged_group.remove_vm_group,
                  self.cgroup_root, self.parent, uuid)
        except linux.LinuxKnobError as e:
            LOG.warning('LSVM group of %(u)s left in place: %(e)s',
                        {'u': uuid, 'e': e})


def _parent_dir(hier, parent):
    return paths.safe_join(hier.root, hier.cpu_dir, parent)


def needs_parent(conf):
    """True when the configured LSVM parent group is missing from a
    cgroup v1 cpu hierarchy (the second privsep daemon will make it).
    """
    parent = conf['host_agent_policy.vslicer'].weight_group
    if not parent:
        return False
    try:
        hier = cgroups.probe(conf.host_paths.cgroup_root)
        return hier.version == cgroups.V1 and not os.path.isdir(
            _parent_dir(hier, parent))
    except (linux.LinuxKnobError, paths.UnsafePath):
        return False


def _make_parent(cgroup_root, parent):
    privsep.ensure_cgroup_started()
    return privileged_group.make_parent(cgroup_root, parent)


_call = privileged_call.call
