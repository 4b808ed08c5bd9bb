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
"""The simulated hosts ``[host_agent] simulated_profile`` names (pure).

A profile is a host's pCPUs and its load: latency-sensitive vCPUs (an
LSVM with a latency bound), I/O-bound vCPUs and CPU-bound vCPUs, each
kind one VM of that many vCPUs. ``host_spec(name, profile)`` and
``vms(profile)`` map it to the simulator's input; the daemon
(``iosched.simdriver.daemon``) boots them. Used where several simulated
hosts must differ, e.g. the fake computes of ``iosched-cloud up
--fake-computes N`` (docs/cloud.md#a-mixed-cloud-for-placement)::

    [host_agent]
    driver = simulated
    simulated_profile = loaded

What each profile's report shows the Nova plugin (``max_io_vcpus_per_pcpu
= 1``, ``max_per_pcpu = 3``; ``tests/unit/simdriver/test_profiles.py``
runs an agent on each and checks it):

* ``example`` (the default): 2 pCPUs, an LSVM, a 3-vCPU CPU-bound VM and
  a VM with an SLO volume, as the functional tests use;
* ``light``: 4 pCPUs, 2 CPU-bound vCPUs: no I/O vCPU, no LSVM; takes
  every request;
* ``busy``: 4 pCPUs, 2 I/O-bound and 2 CPU-bound vCPUs: a 2-vCPU I/O
  flavor still fits (4 I/O vCPUs on 4 pCPUs) but the weigher ranks it
  below ``light``;
* ``loaded``: 2 pCPUs, 6 LSVM vCPUs (3 per pCPU: vSlicer's
  ``max_per_pcpu``) and 2 I/O-bound vCPUs: ``IoDensityFilter`` refuses
  any I/O vCPU, ``LsvmFilter`` any LSVM.

Workloads (``iosched.simulator.spec``): an LSVM vCPU answers 100
requests/s of 100 us (``RequestResponse``), an I/O-bound vCPU 400/s of
100 us, a CPU-bound vCPU always runs (``CpuBound``). Their cost in the
wall-clock daemon is small: ``loaded``, the largest, simulates a second in
about 20 ms of CPU.
"""

import dataclasses

from iosched.host_agent import model
from iosched.simulator import spec as sim_spec

DEFAULT = 'example'
SLICE_US = 3000

# The workloads of the parametric profiles, one per vCPU.
LSVM_WORKLOAD = sim_spec.RequestResponse(rate_per_s=100, burst_us=100)
IO_WORKLOAD = sim_spec.RequestResponse(rate_per_s=400, burst_us=100)
CPU_WORKLOAD = sim_spec.CpuBound()


@dataclasses.dataclass(frozen=True)
class Profile:
    """A simulated host: pCPUs and the vCPUs of each kind."""

    pcpus: int
    lsvm_vcpus: int = 0
    lsvm_latency_ms: int = 2
    io_vcpus: int = 0
    cpu_vcpus: int = 0
    summary: str = ''
    example: bool = False      # the example set instead of the counts


@dataclasses.dataclass(frozen=True)
class Vm:
    """One VM to boot: the simulator's spec, Nova's metadata, and the
    ``<iotune>`` of its disks (None: none set).
    """

    spec: sim_spec.VmSpec
    info: model.InstanceInfo
    iotune: object = None


PROFILES = {
    DEFAULT: Profile(2, example=True,
                     summary='2 pCPUs: an LSVM, a 3-vCPU CPU-bound VM and '
                             'a VM with an SLO volume'),
    'light': Profile(4, cpu_vcpus=2,
                     summary='4 pCPUs, 2 CPU-bound vCPUs'),
    'busy': Profile(4, io_vcpus=2, cpu_vcpus=2,
                    summary='4 pCPUs, 2 I/O-bound and 2 CPU-bound vCPUs'),
    'loaded': Profile(2, lsvm_vcpus=6, io_vcpus=2,
                      summary='2 pCPUs, 6 LSVM vCPUs (L 2 ms) and 2 '
                              'I/O-bound vCPUs'),
}

# The example set: an LSVM, a CPU-bound VM, a VM with an SLO volume.
EXAMPLE_LSVM_SPECS = {'iosched:latency_sensitive': 'true',
                      'iosched:latency_ms': '2', 'iosched:io_profile': 'io'}


def get(name):
    """The profile ``name`` ('' is the default); a ValueError naming the
    accepted ones otherwise.
    """
    profile = PROFILES.get(name or DEFAULT)
    if profile is None:
        raise ValueError('[host_agent] simulated_profile %r: no such '
                         'profile; accepted: %s' % (
                             name, ', '.join(sorted(PROFILES))))
    return profile


def host_spec(name, profile):
    """The simulator's ``HostSpec`` of host ``name`` under ``profile``."""
    return sim_spec.HostSpec(name=name, pcpus=profile.pcpus,
                             default_slice_us=SLICE_US)


def _vm(uuid, workloads, specs, disks=(), iotune=None):
    return Vm(sim_spec.VmSpec(uuid=uuid, name=uuid, vcpus=tuple(workloads),
                              disks=('vda',)),
              model.InstanceInfo(uuid=uuid, name=uuid, flavor=uuid,
                                 vcpus=len(workloads), extra_specs=specs,
                                 disks=tuple(disks)),
              iotune)


def _example():
    return [
        _vm('lsvm-1', (sim_spec.RequestResponse(rate_per_s=300,
                                                burst_us=200),),
            EXAMPLE_LSVM_SPECS),
        _vm('cpu-1', (sim_spec.CpuBound(),) * 3,
            {'iosched:io_profile': 'cpu'}),
        _vm('db-1', (sim_spec.DiskClosedLoop(outstanding=2),),
            {'iosched:io_profile': 'io'},
            (model.DiskInfo('vda', 'vol-1', {'iosched:min_iops': '100',
                                             'total_iops_sec': '2000'}),),
            {'total_iops_sec': 2000}),
    ]


# vms(p) := [lsvm-1: p.lsvm_vcpus x LSVM_WORKLOAD, latency p.lsvm_latency_ms]
#         + [io-1: p.io_vcpus x IO_WORKLOAD] + [cpu-1: p.cpu_vcpus x CPU]
#           (a kind with no vCPU has no VM); the default: the example set.
def vms(profile):
    """The VMs ``profile`` boots, in order (a list of ``Vm``)."""
    if profile.example:
        return _example()
    out = []
    if profile.lsvm_vcpus:
        out.append(_vm('lsvm-1', (LSVM_WORKLOAD,) * profile.lsvm_vcpus, {
            'iosched:latency_sensitive': 'true',
            'iosched:latency_ms': '%d' % profile.lsvm_latency_ms}))
    if profile.io_vcpus:
        out.append(_vm('io-1', (IO_WORKLOAD,) * profile.io_vcpus,
                       {'iosched:io_profile': 'io'}))
    if profile.cpu_vcpus:
        out.append(_vm('cpu-1', (CPU_WORKLOAD,) * profile.cpu_vcpus,
                       {'iosched:io_profile': 'cpu'}))
    return out
