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
simulated driver that is ``build(conf)``: a small simulated host (2 pCPUs;
an LSVM, a CPU-bound VM and a VM with an SLO volume, as the functional
tests use) named ``[host_agent] host`` (else the machine's host name),
whose clock follows the wall clock. Every inventory call (one at the start
of each tick) runs the simulation up to the seconds elapsed since the
driver was built, at most ``MAX_STEP_S`` at once (a stalled process does
not simulate minutes in one tick); ``now()`` is the start's epoch time
plus the simulated time, so reports carry real timestamps.

What it is for: running the real daemon (its configuration, reporter,
resync server, journal, SIGTERM restore) where there is no hypervisor:
CI of the Ansible roles and the service unit, ``iosched-status`` tests.
Nothing on the host changes; knobs are the simulator's
(``iosched.simdriver.knobs``, which also keeps them in
``[host_agent] simulated_state_file`` so that they outlive the agent).
"""

import socket
import time
import zlib

from iosched.host_agent import model
from iosched.simdriver import driver as sim_driver
from iosched.simulator import host as sim_host
from iosched.simulator import spec as sim_spec

MAX_STEP_S = 2.0
KEEP_RESULTS_US = 60_000_000     # simulator latency records kept (60 s)
LSVM_SPECS = {'iosched:latency_sensitive': 'true', 'iosched:latency_ms': '2',
              'iosched:io_profile': 'io'}


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


def _vms():
    return [
        ('lsvm-1', (sim_spec.RequestResponse(rate_per_s=300, burst_us=200),),
         LSVM_SPECS, ()),
        ('cpu-1', (sim_spec.CpuBound(), sim_spec.CpuBound(),
                   sim_spec.CpuBound()), {'iosched:io_profile': 'cpu'}, ()),
        ('db-1', (sim_spec.DiskClosedLoop(outstanding=2),),
         {'iosched:io_profile': 'io'},
         (model.DiskInfo('vda', 'vol-1', {'iosched:min_iops': '100',
                                          'total_iops_sec': '2000'}),)),
    ]


def build(conf, clock=time.time):
    """The daemon's simulated driver, from ``[host_agent] host``."""
    name = conf.host_agent.host or socket.gethostname()
    sim = sim_host.SimHost(sim_spec.HostSpec(name=name, pcpus=2,
                                             default_slice_us=3000),
                           seed=zlib.crc32(name.encode('utf-8')) & 0xffff)
    return add_example_vms(sim, WallClockSimulatedDriver(sim, clock=clock))


def add_example_vms(sim, driver):
    """Boot the example VMs (an LSVM, a CPU-bound VM, a VM with an SLO
    volume) on ``sim`` and give ``driver`` their Nova metadata; returns
    the driver. The tests' ``sim_host_with_vms`` uses the same set.
    """
    for uuid, workloads, specs, disks in _vms():
        sim.add_vm(sim_spec.VmSpec(uuid=uuid, name=uuid, vcpus=workloads,
                                   disks=('vda',)))
        if disks:
            sim.set_disk_iotune(uuid, 'vda', {'total_iops_sec': 2000})
        driver.add_instance(model.InstanceInfo(
            uuid=uuid, name=uuid, flavor=uuid, vcpus=len(workloads),
            extra_specs=specs, disks=disks))
    return driver
