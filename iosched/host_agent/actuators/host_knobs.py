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
"""All knobs of a real compute node, behind one read/write interface.

``HostKnobs(conf, driver)`` is the ``knob_set.KnobSet`` of the libvirt
driver (entry point ``iosched.host_agent.knobs: libvirt``). It routes each
action kind to the writer that owns it: the Linux knobs (EEVDF slice via
``sched_setattr``, cgroup weight and cap; privileged writes through
privsep) and the libvirt knobs (vCPU pinning, live iotune, interface
bandwidth, schedinfo) and the block I/O knobs (a VM's BFQ weight, a
device's scheduler). The driver only reads: it resolves instances to
domains, threads and cgroups for these writers. The journaled
``DriverActuator`` drives it exactly as it drives the simulator's
knob set.
"""

from iosched.contract import knob_kinds
from iosched.host_agent.actuators import blkio_knobs
from iosched.host_agent.actuators import deadline_unstick
from iosched.host_agent.actuators import knob_set
from iosched.host_agent.actuators import libvirt_knobs
from iosched.host_agent.actuators import linux_knobs
from iosched.host_agent.actuators import lsvm_group_knobs
from iosched.host_agent.drivers import base
from iosched.host_agent.linux import cgroups
from iosched.host_agent import privsep

# Cgroup settings whose value libvirt derives from the definition's
# schedinfo: kind -> its (quota, period) keys (the weight: cpu_shares).
_FROM_SCHEDINFO = {
    knob_kinds.VM_WEIGHT: ('cpu_shares', None),
    knob_kinds.VM_CAP: ('global_quota', 'global_period'),
    knob_kinds.VCPU_CAP: ('vcpu_quota', 'vcpu_period'),
}
# CFS's default period, and the quota libvirt reads back for "no limit"
# on some kernels (2^44 - 1: cgroup v1's RUNTIME_INF >> 10).
_DEFAULT_PERIOD_US = 100000
_UNLIMITED_QUOTA = 17592186044415


class HostKnobs(knob_set.KnobSet):

    def __init__(self, conf, driver, linux=None, virt=None, blkio=None,
                 groups=None):
        super().__init__(driver)
        self._by_kind = {}
        self._virt = virt or libvirt_knobs.LibvirtKnobs(driver)
        if groups is None and conf is not None:
            groups = lsvm_group_knobs.LsvmGroupKnobs(conf, driver)
        self._writers = (linux or linux_knobs.LinuxKnobs(conf, driver),
                         self._virt,
                         blkio or blkio_knobs.BlkioKnobs(driver, _sys_root(
                             conf))) + ((groups,) if groups else ())
        # None: built without a configuration (tests give their writers)
        self._unsticker = (deadline_unstick.Unsticker(
            conf.host_paths.proc_root) if conf is not None else None)
        for writer in (self._writers[1], self._writers[0],
                       self._writers[2]) + self._writers[3:]:
            for kind in writer.knobs():
                self._by_kind[kind] = writer

    def weight_group(self):
        """The top-level LSVM parent group, made now if needed, or ''."""
        for writer in self._writers[3:]:
            if writer.knobs():
                return writer.ensure_parent()
        return ''

    def unstick_deadline(self):
        """The guests' deadline threads the kernel left throttled, set
        free (``deadline_unstick``); a list of them.
        """
        if self._unsticker is None:
            return []
        return self._unsticker.unstick()

    @classmethod
    def prepare(cls, conf):
        """Fork the privileged daemons (privsep) before the driver opens
        connections and trace files, so that they inherit none of them,
        and before the agent starts threads: a fork beside running
        threads can copy a lock one of them holds (seen: the second
        daemon, forked during the self-test, hung after its first log
        line). The second one only while the LSVM parent group is missing
        (``lsvm_group_knobs.needs_parent``).
        """
        privsep.ensure_started(conf)
        if lsvm_group_knobs.needs_parent(conf):
            privsep.ensure_cgroup_started(conf)

    @classmethod
    def for_driver(cls, conf, driver):
        return cls(conf, driver)

    def knobs(self):
        return tuple(self._by_kind)

    def _writer(self, kind):
        try:
            return self._by_kind[kind]
        except KeyError:
            raise base.DriverError('no writer for knob %r on this host; '
                                   'available: %s'
                                   % (kind, ', '.join(self._by_kind)))

    def read_knob(self, kind, instance_uuid, target):
        return self._writer(kind).read_knob(kind, instance_uuid, target)

    def write_knob(self, kind, instance_uuid, target, value):
        if self._unsticker is not None:
            self._unsticker.refuse(self._writers[0], kind, instance_uuid,
                                   target, value)
        return self._writer(kind).write_knob(kind, instance_uuid, target,
                                             value)

    # Reconciliation at start (actuators/reconcile.py).
    def reconciled_kinds(self):
        """Each writer's, in order: the Linux ones (deadlines first),
        then libvirt's.
        """
        out = []
        for writer in self._writers:
            out.extend(k for k in writer.reconciled_kinds()
                       if self._by_kind.get(k) is writer)
        out.extend(k for k in _FROM_SCHEDINFO
                   if self._by_kind.get(k) is self._writers[0])
        return tuple(out)

    def desired(self, kind, instance_uuid, target):
        if kind in _FROM_SCHEDINFO and self._by_kind.get(kind) is \
                self._writers[0]:
            return self._from_schedinfo(kind, instance_uuid)
        return self._writer(kind).desired(kind, instance_uuid, target)

    def _from_schedinfo(self, kind, uuid):
        """A cgroup setting libvirt derives from the definition's
        schedinfo: 0 (unset) leaves the cgroup default (weight 100, no
        cap); cpu_shares is v1 shares on cgroup v1 and the weight itself
        on v2 (libvirt writes it to cpu.weight); quota/period caps.
        """
        sched = self._virt.config_sched(uuid)
        hierarchy = self._writers[0].hierarchy
        if hierarchy is None:
            raise knob_set.NoDesired('no CPU cgroup hierarchy')
        if kind == knob_kinds.VM_WEIGHT:
            shares = sched.get('cpu_shares', 0)
            if not shares:
                return cgroups.WEIGHT_DFL
            return (cgroups.shares_to_weight(shares)
                    if hierarchy.version == cgroups.V1 else shares)
        quota_key, period_key = _FROM_SCHEDINFO[kind]
        quota = sched.get(quota_key, 0)
        if quota <= 0 or quota >= _UNLIMITED_QUOTA:
            return None
        period = sched.get(period_key, 0) or _DEFAULT_PERIOD_US
        return cgroups.cap_fraction(quota, period)

    # The held-knobs marker in the domain (actuators/held_marker.py).
    def marked_kinds(self):
        """The kinds whose originals travel in the domain's metadata."""
        return tuple(self._virt.marked_kinds())

    def mark_held(self, uuid, held):
        return self._virt.mark_held(uuid, held)

    def read_held(self, uuid):
        return self._virt.read_held(uuid)


def _sys_root(conf):
    try:
        return conf.host_paths.sys_root
    except Exception:        # a test's bare conf
        return '/sys'
