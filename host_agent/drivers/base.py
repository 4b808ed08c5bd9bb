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
"""The driver interface: how the agent sees and touches a hypervisor.

A driver answers three kinds of questions, and only a driver talks to the
hypervisor (libvirt, procfs, cgroups, or the simulator):

* inventory: ``host_name``, ``pcpus``, ``list_instances``;
* counters: ``vcpu_samples`` and ``disk_samples`` return cumulative raw
  counters (collectors turn two of them into rates);
* knobs: ``read_knob`` / ``write_knob`` for the action kinds in
  ``host_agent.model.ACTION_KINDS`` that ``knobs()`` lists. Only actuators
  call ``write_knob``.

Optional, for the LSVM mechanisms (``[host_agent_policy.vslicer]
mechanism``; the agent falls back to ``slice`` unmeasured without them):

* ``wakeup_probe(cases, wakes=300, hogs_per_cpu=2, lsvm_weight=10000)``
  runs the wake-up self-test (a sleeper among busy loops, no VM) for each
  case in ``cases`` (``model.PROBE_STOCK`` and/or ``model.MECHANISMS``)
  and returns a tuple of ``model.WakeupProbe`` in the same order; a case
  the kernel refuses is a row with ``ok=False`` and its ``error``;
* ``deadline_state()`` returns ``model.DeadlineState`` (root-domain CPUs,
  the kernel's SCHED_DEADLINE limit there, bandwidth held by threads that
  are not VMs' and by VMs' threads).

``now()`` is the driver's clock in seconds: wall clock on a real host,
simulated time in the simulator, so the same agent code runs on both.
"""

import abc


class DriverError(Exception):
    """A driver could not read or write something; the message says what."""


class Driver(metaclass=abc.ABCMeta):
    name = 'base'

    @abc.abstractmethod
    def host_name(self):
        """The compute host name (Nova's HostState.host)."""

    @abc.abstractmethod
    def pcpus(self):
        """Tuple of guest-usable pCPU ids."""

    @abc.abstractmethod
    def now(self):
        """Seconds on the driver's clock."""

    @abc.abstractmethod
    def list_instances(self):
        """List of ``model.InstanceInfo`` for running guests."""

    @abc.abstractmethod
    def vcpu_samples(self, instance):
        """List of ``model.VcpuSample`` for one instance, one per vCPU."""

    @abc.abstractmethod
    def disk_samples(self, instance):
        """List of ``model.DiskSample`` for one instance, one per disk."""

    @abc.abstractmethod
    def knobs(self):
        """The action kinds this driver can read and write."""

    @abc.abstractmethod
    def read_knob(self, kind, instance_uuid, target):
        """Current value of a knob (the form ``write_knob`` accepts)."""

    @abc.abstractmethod
    def write_knob(self, kind, instance_uuid, target, value):
        """Set a knob. Raise DriverError on failure."""

    def close(self):
        """Release connections. Default: nothing to release."""

    @classmethod
    def from_conf(cls, conf):
        """Build the driver from configuration (the daemon's path)."""
        raise NotImplementedError(
            'the %s driver cannot be built from configuration alone' %
            cls.name)
