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
"""``[host_agent] driver = simulated`` in the daemon: a wall-clock sim host.

``io-host-agent`` builds its driver with ``Driver.from_conf``. For the
simulated driver that is ``build(conf)``: a small simulated host named
``[host_agent] host`` (else the machine's host name), shaped by
``[host_agent] simulated_profile`` (``iosched.simdriver.profiles``; the
default: 2 pCPUs, an LSVM, a CPU-bound VM and a VM with an SLO volume, as
the functional tests use), whose clock follows the wall clock. Every
inventory call (one at the start of each tick) runs the simulation up to
the seconds elapsed since the driver was built, at most ``MAX_STEP_S`` at
once (a stalled process does not simulate minutes in one tick); ``now()``
is the start's epoch time plus the simulated time, so reports carry real
timestamps.

What it is for: running the real daemon (its configuration, reporter,
resync server, journal, SIGTERM restore) where there is no hypervisor:
CI of the Ansible roles and the service unit, ``iosched-status`` tests,
the fake computes of ``iosched-cloud up --fake-computes N``.
Nothing on the host changes; knobs are the simulator's
(``iosched.simdriver.knobs``, which also keeps them in
``[host_agent] simulated_state_file`` so that they outlive the agent).
"""

import socket
import time
import zlib

from iosched.simdriver import driver as sim_driver
from iosched.simdriver import profiles
from iosched.simulator import host as sim_host

MAX_STEP_S = 2.0
KEEP_RESULTS_US = 60_000_000     # simulator latency records kept (60 s)
LSVM_SPECS = profiles.EXAMPLE_LSVM_SPECS


class WallClockSimulatedDriver(sim_driver.SimulatedDriver):
    """A SimulatedDriver whose simulated time keeps up with the wall clock."""

    def __init__(self, sim, instances=None, clock=time.time):
        super().__init__(sim, instances)
        self._clock = clock
        self._epoch = clock() - sim.now_us / 1e6
        self._trimmed_at_us = sim.now_us

    def now(self):
        return self._epoch + self.sim.now_us / 1e6

    def advance(self):
        """Simulate up to the wall clock (at most MAX_STEP_S at once)."""
        behind = self._clock() - self.now()
        if behind <= 0:
            return
        step = min(behind, MAX_STEP_S)
        self.sim.run_until(self.sim.now_us + int(step * 1e6))
        # Time lost beyond the cap is skipped, not simulated later.
        self._epoch = self._clock() - self.sim.now_us / 1e6
        # A daemon runs for hours: keep the simulator's per-request
        # latency records for a window only (the agent reads counters).
        if self.sim.now_us - self._trimmed_at_us >= KEEP_RESULTS_US // 6:
            self.sim.forget_results_before(self.sim.now_us - KEEP_RESULTS_US)
            self._trimmed_at_us = self.sim.now_us

    def list_instances(self):
        self.advance()
        return super().list_instances()


def build(conf, clock=time.time):
    """The daemon's simulated driver, from ``[host_agent] host`` and
    ``simulated_profile`` (a ValueError names an unknown profile).
    """
    name = conf.host_agent.host or socket.gethostname()
    profile = profiles.get(conf.host_agent.simulated_profile)
    sim = sim_host.SimHost(profiles.host_spec(name, profile),
                           seed=zlib.crc32(name.encode('utf-8')) & 0xffff)
    return add_vms(sim, WallClockSimulatedDriver(sim, clock=clock),
                   profiles.vms(profile))


def add_vms(sim, driver, vms):
    """Boot ``vms`` (``profiles.Vm``) on ``sim`` and give ``driver`` their
    Nova metadata; returns the driver.
    """
    for vm in vms:
        sim.add_vm(vm.spec)
        for disk in vm.info.disks:
            if vm.iotune:
                sim.set_disk_iotune(vm.info.uuid, disk.target, vm.iotune)
        driver.add_instance(vm.info)
    return driver


def add_example_vms(sim, driver):
    """Boot the example VMs (an LSVM, a CPU-bound VM, a VM with an SLO
    volume: ``profiles.DEFAULT``) on ``sim`` and give ``driver`` their
    Nova metadata; returns the driver. The tests' ``sim_host_with_vms``
    uses the same set.
    """
    return add_vms(sim, driver, profiles.vms(profiles.get(profiles.DEFAULT)))
