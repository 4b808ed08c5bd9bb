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
"""vCPU knobs of the Linux host: EEVDF slice, cgroup CPU weight and cap.

``LinuxKnobs`` has the knob half of the driver interface (``knobs``,
``read_knob``, ``write_knob``) for:

==============  =========================================================
kind            value
==============  =========================================================
``vcpu_slice``  int, us, 100..100000: the vCPU thread's EEVDF slice
``vcpu_weight`` int, 1..10000 (cgroup v2 scale, default 100) of the
                vCPU's cgroup; on cgroup v1 written as ``cpu.shares``
``vcpu_cap``    float, fraction of one CPU (0.25), or None: unlimited;
                the quota in the vCPU cgroup's current period
==============  =========================================================

Reads are unprivileged (``sched_getattr``, cgroup files); writes go
through ``host_agent.linux.privileged`` in the privsep daemon. The caller
(``host_agent.actuators.driver``) skips no-op writes and journals.

``resolver`` maps Nova instances to host objects (the libvirt driver is
one): ``vcpu_tid(uuid, vcpu) -> int`` and ``vcpu_cgroup(uuid, vcpu)`` /
``vm_cgroup(uuid)`` -> the cgroup inside the cpu hierarchy as
``/proc/<pid>/cgroup`` shows it, e.g. ``machine/qemu-1-vm.libvirt-qemu/vcpu0``
(``host_agent.linux.cgroups.domain_cgroups`` computes them).
"""

import math
import os

from oslo_log import log as logging

from host_agent.drivers import base as driver_base
from host_agent import linux
from host_agent.linux import cgroups
import host_agent.linux.privileged
from host_agent import privsep
from host_agent.linux import sched
from host_agent import model
from host_agent import paths

LOG = logging.getLogger(__name__)

# NOTE(iosched): to move to host_agent.model with the other action kinds.
ACTION_VCPU_CAP = 'vcpu_cap'      # value: fraction of one CPU, None = none
# The QEMU main-loop (emulator) thread's EEVDF slice, target '': it carries
# an instance's device emulation (virtio notifications, chardevs).
ACTION_EMULATOR_SLICE = 'emulator_slice'

_SLICE = model.ACTION_VCPU_SLICE
_WEIGHT = model.ACTION_VCPU_WEIGHT


class LinuxKnobs(object):
    """Knobs of vCPU threads and their cgroups on this host."""

    def __init__(self, conf, resolver, hierarchy=None):
        self.resolver = resolver
        self.proc_root = conf.host_paths.proc_root
        self.cgroup_root = conf.host_paths.cgroup_root
        self.hierarchy = hierarchy
        if hierarchy is None:
            try:
                self.hierarchy = cgroups.probe(self.cgroup_root)
            except linux.LinuxKnobError as e:
                LOG.warning('no CPU cgroup knobs (weight, cap): %s', e)
        if self.hierarchy is not None:
            LOG.info('CPU cgroup knobs on cgroup %(v)s at %(d)s',
                     {'v': self.hierarchy.version,
                      'd': os.path.join(self.cgroup_root,
                                        self.hierarchy.cpu_dir)})

    def knobs(self):
        if self.hierarchy is None:
            return (_SLICE, ACTION_EMULATOR_SLICE)
        return (_SLICE, ACTION_EMULATOR_SLICE, _WEIGHT, ACTION_VCPU_CAP)

    def read_knob(self, kind, instance_uuid, target):
        try:
            if kind == _SLICE:
                return sched.get_slice_us(self._tid(instance_uuid, target),
                                          self.proc_root)
            if kind == ACTION_EMULATOR_SLICE:
                return sched.get_slice_us(self._emulator_tid(instance_uuid),
                                          self.proc_root)
            if kind == _WEIGHT:
                return cgroups.read_weight(self._hier(kind),
                                           self._cg(instance_uuid, target))
            if kind == ACTION_VCPU_CAP:
                quota, period = cgroups.read_cap(
                    self._hier(kind), self._cg(instance_uuid, target))
                return cgroups.cap_fraction(quota, period)
        except (linux.LinuxKnobError, paths.UnsafePath) as e:
            raise driver_base.DriverError('cannot read %s of %s vCPU %s: %s'
                                          % (kind, instance_uuid, target, e))
        raise driver_base.DriverError('unknown knob %r' % (kind,))

    def write_knob(self, kind, instance_uuid, target, value):
        try:
            if kind in (_SLICE, ACTION_EMULATOR_SLICE):
                tid = (self._tid(instance_uuid, target) if kind == _SLICE
                       else self._emulator_tid(instance_uuid))
                self._privileged('set_slice',
                                 host_agent.linux.privileged.set_slice,
                                 tid, self._slice(value))
                return
            if kind == _WEIGHT:
                writes = cgroups.plan_weight(self._hier(kind),
                                             self._cg(instance_uuid, target),
                                             self._weight(value))
            elif kind == ACTION_VCPU_CAP:
                cg = self._cg(instance_uuid, target)
                hier = self._hier(kind)
                _, period = cgroups.read_cap(hier, cg)
                writes = cgroups.plan_cap(hier, cg, self._cap(value), period)
            else:
                raise driver_base.DriverError('unknown knob %r' % (kind,))
            for relpath, text in writes:
                self._privileged(
                    'write_cgroup_file',
                    host_agent.linux.privileged.write_cgroup_file,
                    self.cgroup_root, relpath, text)
        except (linux.LinuxKnobError, paths.UnsafePath) as e:
            raise driver_base.DriverError(
                'cannot set %s of %s vCPU %s to %r: %s'
                % (kind, instance_uuid, target, value, e))

    # -- helpers -----------------------------------------------------------
    @staticmethod
    def _privileged(name, func, *args):
        try:
            privsep.ensure_started()
            return func(*args)
        except (linux.LinuxKnobError, paths.UnsafePath):
            raise
        except Exception as e:
            # The daemon did not start, died, or refused the call.
            raise linux.LinuxKnobError('privileged %s%r failed: %s: %s' % (
                name, args, type(e).__name__, e))

    def _hier(self, kind):
        if self.hierarchy is None:
            raise linux.LinuxKnobError('%s needs the cgroup cpu controller, '
                                       'not found below %s'
                                       % (kind, self.cgroup_root))
        return self.hierarchy

    @staticmethod
    def _vcpu(target):
        try:
            vcpu = int(target)
        except (TypeError, ValueError):
            vcpu = -1
        if vcpu < 0 or str(vcpu) != str(target).strip():
            raise linux.LinuxKnobError('target %r is not a vCPU index'
                                       % (target,))
        return vcpu

    def _resolve(self, what, func, *args):
        try:
            return func(*args)
        except driver_base.DriverError:
            raise
        except Exception as e:
            raise driver_base.DriverError('cannot resolve the %s of %s: %s'
                                          % (what, '/'.join(map(str, args)),
                                             e))

    def _tid(self, uuid, target):
        tid = self._resolve('vCPU thread', self.resolver.vcpu_tid, uuid,
                            self._vcpu(target))
        if isinstance(tid, bool) or not isinstance(tid, int) or tid <= 0:
            raise linux.LinuxKnobError('resolver gave thread id %r' % (tid,))
        return tid

    def _emulator_tid(self, uuid):
        threads = self._resolve('emulator thread', self.resolver.io_threads,
                                uuid)
        tid = threads.get('emulator') if isinstance(threads, dict) else None
        if isinstance(tid, bool) or not isinstance(tid, int) or tid <= 0:
            raise linux.LinuxKnobError('resolver gave emulator thread %r'
                                       % (tid,))
        return tid

    def _cg(self, uuid, target):
        cg = self._resolve('vCPU cgroup', self.resolver.vcpu_cgroup, uuid,
                           self._vcpu(target))
        if not isinstance(cg, str) or not cg.strip('/'):
            raise linux.LinuxKnobError('resolver gave cgroup %r' % (cg,))
        for comp in cg.strip('/').split('/'):
            paths.check_name('cgroup_component', comp)
        return cg.strip('/')

    @staticmethod
    def _slice(value):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        return sched.check_slice_us(value)

    @staticmethod
    def _weight(value):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise linux.LinuxKnobError('weight %r is not an int' % (value,))
        cgroups.weight_to_shares(value)        # range check
        return value

    @staticmethod
    def _cap(value):
        if value is None:
            return None
        if (isinstance(value, bool) or not isinstance(value, (int, float))
                or not math.isfinite(value) or value <= 0):
            raise linux.LinuxKnobError('cap %r is not a positive fraction '
                                       'of a CPU or None' % (value,))
        return float(value)
