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
"""Instance -> domain, QEMU process, thread ids and cgroups (read only).

What the knob writers (``iosched.host_agent.actuators.host_knobs``) ask the
libvirt driver: ``domain``, ``parsed`` (its parsed XML), ``qemu_pid``,
``vcpu_tid``, ``io_threads`` (emulator and I/O threads), ``vcpu_cgroup``,
``vm_cgroup``, ``domain_cgroups``, ``vcpu_tids`` and ``vcpu_cgroup_stats``.
``Resolution`` is mixed into
``LibvirtDriver``: it answers from the driver's last ``list_instances``
(``self._info``: uuid -> (parsed XML, QEMU pid, {vCPU: tid}, domain,
domain id)); an instance not running then is a ``DriverError``.
"""

from iosched.host_agent.drivers import base
from iosched.host_agent.drivers.libvirt import threads
from iosched.host_agent.linux import cgroups


class Resolution(object):
    """Needs ``self._info``, ``self.proc_root``, ``self.conf`` and
    ``self._hierarchy`` (None until the first cgroup question).
    """

    def domain(self, uuid):
        try:
            return self._info[uuid][3]
        except KeyError:
            raise base.DriverError('instance %s is not running here' % uuid)

    def parsed(self, uuid):
        try:
            return self._info[uuid][0]
        except KeyError:
            raise base.DriverError('instance %s is not running here' % uuid)

    def qemu_pid(self, uuid):
        try:
            return self._info[uuid][1]
        except KeyError:
            raise base.DriverError('instance %s is not running here' % uuid)

    def _cgroups(self, uuid):
        return cgroups.domain_cgroups(
            self.proc_root, self.qemu_pid(uuid), self._hier(),
            self.conf['host_agent_policy.vslicer'].weight_group or None)

    def vcpu_cgroup(self, uuid, vcpu):
        """The vCPU's cgroup in the cpu hierarchy (for LinuxKnobs)."""
        return self._cgroups(uuid).vcpu(int(vcpu))

    def vcpu_cgroup_stats(self, uuid, vcpu):
        """cpu.stat of the vCPU's cgroup: nr_periods, nr_throttled, ..."""
        try:
            return cgroups.read_cpu_stat(self._hier(),
                                         self.vcpu_cgroup(uuid, vcpu))
        except (OSError, ValueError) as e:
            raise base.DriverError('cannot read cpu.stat of %s vCPU %s: %s'
                                   % (uuid, vcpu, e))

    def _hier(self):
        if self._hierarchy is None:
            self._hierarchy = cgroups.probe(self.conf.host_paths.cgroup_root)
        return self._hierarchy

    def vm_cgroup(self, uuid):
        return self._cgroups(uuid).vm

    def domain_cgroups(self, uuid):
        """``cgroups.DomainCgroups`` of the instance (where libvirt put its
        threads), from the QEMU process's own cgroup.
        """
        return self._cgroups(uuid)

    def vcpu_tids(self, uuid):
        """{vCPU index: thread id} of a running instance."""
        try:
            return dict(self._info[uuid][2])
        except KeyError:
            raise base.DriverError('instance %s is not running here' % uuid)

    def io_threads(self, uuid):
        """The emulator (main loop) and I/O thread ids of an instance."""
        try:
            return threads.io_threads(self.proc_root, self.qemu_pid(uuid))
        except threads.ThreadError as e:
            raise base.DriverError(str(e))

    def vcpu_tid(self, uuid, vcpu):
        try:
            return self._info[uuid][2][int(vcpu)]
        except (KeyError, ValueError):
            raise base.DriverError('no thread for vCPU %s of %s'
                                   % (vcpu, uuid))
