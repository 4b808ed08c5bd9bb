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
"""The driver interface: how the agent reads a hypervisor (read only).

A driver answers three kinds of questions, and only a driver reads the
hypervisor (libvirt, procfs, cgroups, or the simulator):

* inventory: ``host_name``, ``pcpus``, ``list_instances``;
* counters: ``vcpu_samples`` and ``disk_samples`` return cumulative raw
  counters (collectors turn two of them into rates);
* clock: ``now()`` is the driver's clock in seconds: wall clock on a
  real host, simulated time in the simulator, so the same agent code
  runs on both.

Drivers write nothing. The knobs are written by the host's knob set
(``iosched.host_agent.actuators.knob_set.KnobSet``), registered under the
driver's ``name`` in the ``iosched.host_agent.knobs`` namespace; the
driver resolves instances for it (threads, cgroups, domains).

Optional probes, looked up by the parts that use them:

* for the LSVM mechanisms (``[host_agent_policy.vslicer] mechanism``; the
  agent falls back to ``slice`` unmeasured without them):
  ``wakeup_probe(cases, wakes=300, hogs_per_cpu=2, lsvm_weight=10000,
  repeats=1, share_ms=0)``
  runs the wake-up self-test (a sleeper among busy loops, no VM) for each
  case in ``cases`` (``model.PROBE_STOCK`` and/or ``model.MECHANISMS``)
  and returns a tuple of ``model.WakeupProbe`` in the same order; a case
  the kernel refuses is a row with ``ok=False`` and its ``error``;
  ``deadline_state()`` returns ``model.DeadlineState`` (root-domain CPUs,
  the kernel's SCHED_DEADLINE limit there, bandwidth held by threads that
  are not VMs' and by VMs' threads);
* ``block_devices()``: ``model.BlockDevice`` per host device under the
  guests' disks (the vaio policy's input);
* ``disk_capacity_iops()``: the disk's capacity when the driver knows it
  (``[host_agent] disk_capacity_iops`` wins).

Implementations: ``iosched.host_agent.drivers.libvirt`` (real guests) and
``iosched.simdriver`` (the simulator), both found through the
``iosched.host_agent.drivers`` entry point namespace.
"""

import abc


class DriverError(Exception):
    """A driver could not read something, or a knob writer could not
    write it; the message says what.
    """


class DriverUnavailable(DriverError):
    """The hypervisor does not answer (yet): libvirtd not started, or
    restarting. Worth waiting for; ``io-host-agent`` waits at start with
    backoff (``[host_agent] driver_retry_interval``).
    """


class Driver(metaclass=abc.ABCMeta):
    name = 'base'
    # True: list_instances gives each disk its live <iotune>
    # (DiskInfo.iotune), a source of SLO ceilings (volume_slo.host_source).
    reads_iotune = False

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

    def io_thread_samples(self, instance):
        """List of ``model.IoThreadSample`` (one, or none when the driver
        cannot read the VM's I/O threads: the default).
        """
        return []

    def close(self):
        """Release connections. Default: nothing to release."""

    @classmethod
    def from_conf(cls, conf):
        """Build the driver from configuration (the daemon's path)."""
        raise NotImplementedError(
            'the %s driver cannot be built from configuration alone' %
            cls.name)
