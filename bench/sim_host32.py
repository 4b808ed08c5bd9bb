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
"""The 32-VM host of the simulator's speed figure, and a digest of a run.

A fixed, deterministic load (issue 29): 16 pCPUs, 32 VMs, 40 vCPUs of
mixed workloads on the default EEVDF model, seed 29:

* 7 LSVMs, 1 vCPU each: 300 requests/s of 200 us;
* 7 I/O VMs, 1 vCPU each: 400 requests/s of 100 us (jitter 0.5);
* 6 disk VMs, 1 vCPU each: 2 requests in flight on an iotune-capped
  (2000 IOPS) disk of the shared device;
* 4 CPU-bound VMs, 2 vCPUs each;
* 4 duty-cycle VMs, 2 vCPUs each: 30 % CPU in 10 ms periods plus 100
  requests/s of 100 us;
* 4 timer VMs, 1 vCPU each: a 3 ms ``Sleeper`` of 50 us.

``digest(sim)`` hashes everything a run produced that a caller can read
(request and disk latencies, vCPU counters, I/O event times): two runs
with the same digest gave the same results (the speed work must keep it;
``tests/unit/simulator/test_speed_digest.py`` holds main's values).
"""

import hashlib

from iosched.simulator import host as sim_host
from iosched.simulator import spec as sim_spec
from iosched.simulator import spec_kernel

SEED = 29
PCPUS = 16
SIMULATED_S = 60


def vm_specs():
    """The 32 VMs, in the order they are added: a list of (VmSpec, iotune
    of its disk or None).
    """
    out = []

    def add(prefix, count, workloads, iotune=None):
        for i in range(count):
            uuid = '%s-%02d' % (prefix, i)
            out.append((sim_spec.VmSpec(uuid=uuid, name=uuid,
                                        vcpus=tuple(workloads)), iotune))

    add('lsvm', 7, [sim_spec.RequestResponse(rate_per_s=300, burst_us=200)])
    add('io', 7, [sim_spec.RequestResponse(rate_per_s=400, burst_us=100,
                                           burst_jitter=0.5)])
    add('db', 6, [sim_spec.DiskClosedLoop(outstanding=2)],
        {'total_iops_sec': 2000})
    add('cpu', 4, [sim_spec.CpuBound()] * 2)
    add('mixed', 4, [sim_spec.Mixed(cpu_fraction=0.3, rate_per_s=100)] * 2)
    add('timer', 4, [sim_spec.Sleeper(period_us=3000, work_us=50)])
    return out


def build(kernel=None, seed=SEED):
    """A ``SimHost`` with the 32 VMs started at time 0 (``kernel``: a
    ``spec_kernel.KERNELS`` name, None = the default model).
    """
    kspec = (spec_kernel.KernelSpec() if kernel is None
             else spec_kernel.kernel(kernel))
    sim = sim_host.SimHost(sim_spec.HostSpec(name='host32', pcpus=PCPUS,
                                             kernel=kspec), seed=seed)
    for vm, iotune in vm_specs():
        sim.add_vm(vm)
        if iotune:
            sim.set_disk_iotune(vm.uuid, 'vda', iotune)
    return sim


def apply_knobs(sim):
    """Turn every knob the agent uses on a few VMs (the digest test's
    second case: the paths beside the hot ones): VM weight and cap,
    vCPU weight, slice, affinity and SCHED_DEADLINE.
    """
    sim.set_vm_weight('lsvm-00', 1000)
    sim.set_vcpu_slice('lsvm-01', 0, 200)
    sim.set_vm_cap('cpu-00', 0.5)
    sim.set_vm_cap('mixed-00', 0.2)
    sim.set_vcpu_weight('io-00', 0, 400)
    sim.set_vcpu_affinity('io-01', 0, (0, 1))
    sim.set_vcpu_affinity('cpu-01', 1, (2,))
    sim.set_vcpu_deadline('lsvm-02', 0, {'runtime_us': 300,
                                         'deadline_us': 1000,
                                         'period_us': 1000})
    sim.set_disk_iotune('db-00', 'vda', {'total_iops_sec': 500})


def digest(sim):
    """sha256 (hex) of every result ``sim`` can report, VM by VM."""
    h = hashlib.sha256()
    h.update(b'%d' % sim.now_us)
    for uuid in sim.vm_uuids():
        h.update(uuid.encode())
        h.update(repr(sim.request_latencies_us(uuid)).encode())
        h.update(repr(sim.request_completions_us(uuid)).encode())
        h.update(repr(sim.disk_latencies_us(uuid, 'vda')).encode())
        h.update(repr(sim.disk_counters(uuid, 'vda')).encode())
        for vcpu in range(sim.vcpu_count(uuid)):
            h.update(repr(sim.vcpu_counters(uuid, vcpu)).encode())
            h.update(repr(sim.drain_io_events(uuid, vcpu)).encode())
    return h.hexdigest()
