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

from iosched.host_agent.actuators import blkio_knobs
from iosched.host_agent.actuators import knob_set
from iosched.host_agent.actuators import libvirt_knobs
from iosched.host_agent.actuators import linux_knobs
from iosched.host_agent.drivers import base
from iosched.host_agent import privsep


class HostKnobs(knob_set.KnobSet):

    def __init__(self, conf, driver, linux=None, virt=None, blkio=None):
        super().__init__(driver)
        self._by_kind = {}
        self._virt = virt or libvirt_knobs.LibvirtKnobs(driver)
        for writer in (self._virt,
                       linux or linux_knobs.LinuxKnobs(conf, driver),
                       blkio or blkio_knobs.BlkioKnobs(driver, _sys_root(
                           conf))):
            for kind in writer.knobs():
                self._by_kind[kind] = writer

    @classmethod
    def prepare(cls, conf):
        """Fork the privileged daemon (privsep) before the driver opens
        connections and trace files, so that it inherits none of them.
        """
        privsep.ensure_started(conf)

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
        return self._writer(kind).write_knob(kind, instance_uuid, target,
                                             value)

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
