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
"""Thread and cgroup knobs of the Linux host: EEVDF slice, SCHED_DEADLINE,
cgroup CPU weight and cap of vCPUs and of whole VMs.

``LinuxKnobs`` is a ``knob_set.KnobWriter`` (``knobs``, ``read_knob``,
``write_knob``) for:

======================  ================================================
kind (target)           value
======================  ================================================
``vcpu_slice`` (vCPU)   int, us, 100..100000: the vCPU thread's EEVDF slice
``emulator_slice``      the same for the QEMU main-loop thread
(``''``)
``vcpu_deadline``       {'runtime_us', 'deadline_us', 'period_us'} (ints,
(vCPU)                  ``sched_deadline.check_deadline``): the vCPU thread's
                        SCHED_DEADLINE reservation, with reset-on-fork;
                        None: SCHED_OTHER (nice 0, default slice)
``io_thread_deadline``  the same for every I/O-path thread of the VM
(``''``)                (``resolver.io_threads``: the emulator = QEMU main
                        loop, iothreads ``IO *``, vhost workers; their
                        count is ``InstanceInfo.io_threads``); read from
                        the emulator thread
``vcpu_weight`` (vCPU)  int, 1..10000 (cgroup v2 scale, default 100) of the
                        vCPU's cgroup; on cgroup v1 written as
                        ``cpu.shares``
``vcpu_cap`` (vCPU)     float, fraction of one CPU (0.25), or None:
                        unlimited; the quota in the vCPU cgroup's current
                        period
``vm_weight`` (``''``)  ``vcpu_weight`` of the VM-level cgroup
                        (``resolver.vm_cgroup``: holds the vCPU, emulator
                        and iothread groups)
``vm_cap`` (``''``)     ``vcpu_cap`` of the VM-level cgroup
======================  ================================================

Values read back in the shape they are written (the actuator compares
them for idempotency; the journal stores them as JSON).

Deadline writes: a vCPU or emulator thread that cannot be set fails the
write; for ``io_thread_deadline`` every thread is set or, on a failure,
the ones already changed are put back. Threads already at the wanted
value are not touched, and None touches only deadline threads (a fair
thread keeps its nice and slice). An I/O thread that appears *after* the
write (vhost workers start when the guest's driver starts the device;
QEMU spawns workers from the main loop) starts as SCHED_OTHER (the
parent's reset-on-fork) and reserves nothing; it is not reserved either
until the knob is written again (a changed value, or the actuator's
cache dropped at an agent restart), because the read, from the emulator
thread, already shows the wanted value. A reservation needs the
thread's affinity to span its root domain (widen ``vcpu_pin`` /
``emulator_pin`` first) and the kernel narrows no deadline thread's
affinity (EBUSY: end the reservation before re-pinning). The vCPU and
VM cgroup caps do not bound deadline threads: the reservation does.

Reads are unprivileged (``sched_getattr``, cgroup files); writes go
through ``iosched.host_agent.linux.privileged`` in the privsep daemon. The
caller (``iosched.host_agent.actuators.driver``) skips no-op writes and
journals.

``resolver`` maps Nova instances to host objects (the libvirt driver is
one): ``vcpu_tid(uuid, vcpu) -> int``, ``io_threads(uuid) ->
{'emulator': tid, 'io': {name: tid}}`` and ``vcpu_cgroup(uuid, vcpu)`` /
``vm_cgroup(uuid)`` -> the cgroup inside the cpu hierarchy as
``/proc/<pid>/cgroup`` shows it, e.g. ``machine/qemu-1-vm.libvirt-qemu/vcpu0``
(``iosched.host_agent.linux.cgroups.domain_cgroups`` computes them).
"""

import errno
import math
import os

from oslo_log import log as logging

from iosched.contract import knob_kinds
from iosched.host_agent.actuators import knob_set
from iosched.host_agent.actuators import linux_defaults
from iosched.host_agent.actuators import privileged_call
from iosched.host_agent.drivers import base as driver_base
from iosched.host_agent import linux
from iosched.host_agent.linux import cgroups
import iosched.host_agent.linux.privileged
from iosched.host_agent.linux import sched
from iosched.host_agent.linux import sched_deadline
from iosched.host_agent import paths

LOG = logging.getLogger(__name__)

_SLICE = knob_kinds.VCPU_SLICE
_WEIGHT = knob_kinds.VCPU_WEIGHT
_VCPU_DL = knob_kinds.VCPU_DEADLINE
_IO_DL = knob_kinds.IO_DEADLINE
_VM_WEIGHT = knob_kinds.VM_WEIGHT
_VM_CAP = knob_kinds.VM_CAP
_THREAD_KINDS = (_SLICE, knob_kinds.EMULATOR_SLICE, _VCPU_DL, _IO_DL)
_CGROUP_KINDS = (_WEIGHT, knob_kinds.VCPU_CAP, _VM_WEIGHT, _VM_CAP)
_VM_KINDS = (knob_kinds.EMULATOR_SLICE, _IO_DL, _VM_WEIGHT, _VM_CAP)


class LinuxKnobs(knob_set.KnobWriter):
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
            return _THREAD_KINDS
        return _THREAD_KINDS + _CGROUP_KINDS

    def reconciled_kinds(self):
        return linux_defaults.kinds(self.hierarchy is not None)

    def desired(self, kind, instance_uuid, target):
        return linux_defaults.desired(kind, self.proc_root)

    @staticmethod
    def _what(kind, uuid, target):
        if kind in _VM_KINDS:
            return '%s of %s' % (kind, uuid)
        return '%s of %s vCPU %s' % (kind, uuid, target)

    def read_knob(self, kind, instance_uuid, target):
        try:
            if kind in _VM_KINDS:
                self._vm_target(target)
            if kind == _SLICE:
                return sched.get_slice_us(self._tid(instance_uuid, target),
                                          self.proc_root)
            if kind == knob_kinds.EMULATOR_SLICE:
                return sched.get_slice_us(self._emulator_tid(instance_uuid),
                                          self.proc_root)
            if kind == _VCPU_DL:
                return sched_deadline.get_deadline_us(self._tid(instance_uuid,
                                                       target))
            if kind == _IO_DL:
                return sched_deadline.get_deadline_us(
                    self._emulator_tid(instance_uuid))
            if kind in (_WEIGHT, _VM_WEIGHT):
                return cgroups.read_weight(
                    self._hier(kind), self._cg(kind, instance_uuid, target))
            if kind in (knob_kinds.VCPU_CAP, _VM_CAP):
                quota, period = cgroups.read_cap(
                    self._hier(kind), self._cg(kind, instance_uuid, target))
                return cgroups.cap_fraction(quota, period)
        except (linux.LinuxKnobError, paths.UnsafePath) as e:
            raise driver_base.DriverError('cannot read %s: %s' % (
                self._what(kind, instance_uuid, target), e))
        raise driver_base.DriverError('unknown knob %r; accepted: %s'
                                      % (kind, ', '.join(self.knobs())))

    def write_knob(self, kind, instance_uuid, target, value):
        try:
            if kind in _VM_KINDS:
                self._vm_target(target)
            if kind in (_SLICE, knob_kinds.EMULATOR_SLICE):
                tid = (self._tid(instance_uuid, target) if kind == _SLICE
                       else self._emulator_tid(instance_uuid))
                self._privileged('set_slice',
                                 iosched.host_agent.linux.privileged.set_slice,
                                 tid, self._slice(value))
                return
            if kind == _VCPU_DL:
                value = self._deadline(value)
                self._set_deadline(self._tid(instance_uuid, target), value)
                return
            if kind == _IO_DL:
                value = self._deadline(value)
                self._set_io_deadline(self._io_tids(instance_uuid), value)
                return
            if kind in (_WEIGHT, _VM_WEIGHT):
                writes = cgroups.plan_weight(
                    self._hier(kind), self._cg(kind, instance_uuid, target),
                    self._weight(value))
            elif kind in (knob_kinds.VCPU_CAP, _VM_CAP):
                cg = self._cg(kind, instance_uuid, target)
                hier = self._hier(kind)
                _, period = cgroups.read_cap(hier, cg)
                writes = cgroups.plan_cap(hier, cg, self._cap(value), period)
            else:
                raise driver_base.DriverError(
                    'unknown knob %r; accepted: %s'
                    % (kind, ', '.join(self.knobs())))
            for relpath, text in writes:
                self._privileged(
                    'write_cgroup_file',
                    iosched.host_agent.linux.privileged.write_cgroup_file,
                    self.cgroup_root, relpath, text)
        except (linux.LinuxKnobError, paths.UnsafePath) as e:
            raise driver_base.DriverError('cannot set %s to %r: %s' % (
                self._what(kind, instance_uuid, target), value, e))

    # -- SCHED_DEADLINE ----------------------------------------------------
    def _set_deadline(self, tid, value):
        """One thread to ``value``; no call when it already has it."""
        current = sched_deadline.get_deadline_us(tid)
        if current == value:
            return
        if value is None:
            self._privileged('set_fair',
                             iosched.host_agent.linux.privileged.set_fair,
                             tid)
        else:
            self._privileged('set_deadline',
                             iosched.host_agent.linux.privileged.set_deadline,
                             tid,
                             value['runtime_us'], value['deadline_us'],
                             value['period_us'])

    def _set_io_deadline(self, tids, value):
        """Every I/O thread to ``value``, or none: on a failure the threads
        already changed get their previous value back.
        """
        done = []
        for name, tid in tids:
            try:
                before = sched_deadline.get_deadline_us(tid)
                if before == value:
                    continue
                self._set_deadline(tid, value)
            except linux.LinuxKnobError as e:
                if name != 'emulator' and e.errno == errno.ESRCH:
                    continue                # an I/O thread that just ended
                undone = self._undo(done)
                raise linux.LinuxKnobError(
                    'I/O thread %s (tid %d): %s%s' % (
                        name, tid, e, '' if undone else
                        '; could not put back every thread changed before'),
                    e.errno)
            done.append((tid, before))

    def _undo(self, done):
        ok = True
        for tid, before in reversed(done):
            try:
                self._set_deadline(tid, before)
            except linux.LinuxKnobError as e:
                LOG.error('cannot put tid %(t)d back to %(v)s: %(e)s',
                          {'t': tid, 'v': before, 'e': e})
                ok = False
        return ok

    @staticmethod
    def _deadline(value):
        if value is None:
            return None
        if not isinstance(value, dict) or set(value) != set(
                knob_kinds.DEADLINE_KEYS):
            raise linux.LinuxKnobError(
                'deadline value %r is not None or a dict of exactly %s'
                % (value, ', '.join(knob_kinds.DEADLINE_KEYS)))
        ints = {}
        for key in knob_kinds.DEADLINE_KEYS:
            v = value[key]
            if isinstance(v, float) and v.is_integer():
                v = int(v)
            ints[key] = v
        sched_deadline.check_deadline(
            *(ints[k] for k in knob_kinds.DEADLINE_KEYS))
        return ints

    # -- helpers -----------------------------------------------------------
    @staticmethod
    def _privileged(name, func, *args):
        return privileged_call.call(name, func, *args)

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

    @staticmethod
    def _vm_target(target):
        if target != '':
            raise linux.LinuxKnobError('target %r: this knob is of the whole '
                                       'VM, its target is \'\'' % (target,))

    @staticmethod
    def _checked_tid(what, tid):
        if isinstance(tid, bool) or not isinstance(tid, int) or tid <= 0:
            raise linux.LinuxKnobError('resolver gave %s %r' % (what, tid))
        return tid

    def _emulator_tid(self, uuid):
        threads = self._resolve('emulator thread', self.resolver.io_threads,
                                uuid)
        tid = threads.get('emulator') if isinstance(threads, dict) else None
        return self._checked_tid('emulator thread', tid)

    def _io_tids(self, uuid):
        """[(name, tid)]: the emulator first, then the I/O threads."""
        threads = self._resolve('I/O threads', self.resolver.io_threads,
                                uuid)
        tid = threads.get('emulator') if isinstance(threads, dict) else None
        out = [('emulator', self._checked_tid('emulator thread', tid))]
        io = threads.get('io') or {}
        if not isinstance(io, dict):
            raise linux.LinuxKnobError('resolver gave I/O threads %r'
                                       % (io,))
        for name in sorted(io):
            tid = self._checked_tid('I/O thread %s' % name, io[name])
            if tid not in dict(out).values():
                out.append((str(name), tid))
        return out

    def _cg(self, kind, uuid, target):
        if kind in _VM_KINDS:
            cg = self._resolve('VM cgroup', self.resolver.vm_cgroup, uuid)
        else:
            cg = self._resolve('vCPU cgroup', self.resolver.vcpu_cgroup,
                               uuid, self._vcpu(target))
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
