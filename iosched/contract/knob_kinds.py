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
"""The knobs the agent turns: action kinds, their targets and value forms.

Standard library only. A policy names a knob by its kind in each
``model.Action`` it plans; the actuator's knob set routes the kind to the
writer that owns it; the journal, ``iosched-explain`` and the decisions a
HostReport carries to the schedulers (``payload_sections.DecisionEntry``)
name it the same way. Every kind is defined here and nowhere else.

Target: the vCPU index as a string for per-vCPU kinds, the disk target
(``vda``) for disks, the interface for interfaces, '' for VM- and
device-wide kinds.
"""

# Per vCPU thread.
VCPU_SLICE = 'vcpu_slice'        # slice in us (EEVDF request)
VCPU_WEIGHT = 'vcpu_weight'      # weight, cgroup v2 scale (1..10000)
VCPU_PIN = 'vcpu_pin'            # tuple of pCPU ids, or None = all
VCPU_CAP = 'vcpu_cap'            # fraction of one CPU, or None = none
# SCHED_DEADLINE reservation of a vCPU thread (target: vCPU index) or of
# every I/O-path thread of the VM (target '': QEMU main loop, iothreads,
# vhost): value {'runtime_us', 'deadline_us', 'period_us'} (ints), or None
# = back to SCHED_OTHER (nice 0, default slice).
VCPU_DEADLINE = 'vcpu_deadline'
IO_DEADLINE = 'io_thread_deadline'
DEADLINE_KEYS = ('runtime_us', 'deadline_us', 'period_us')

# The VM-level cgroup (libvirt's machine/<vm> group, which holds its vCPU,
# emulator and iothread groups), target '': weight as cgroup v2 cpu.weight
# 1..10000 (v1 cpu.shares x 100/1024), cap as a fraction of one CPU
# (float) or None = unlimited.
VM_WEIGHT = 'vm_weight'
VM_CAP = 'vm_cap'
# An LSVM's own cpu cgroup at the top of the hierarchy (below the
# ``[host_agent_policy.vslicer] weight_group`` parent, a sibling of
# libvirt's machine group: it wins wake-ups against load outside the VMs
# too), target '': {'weight': 1..10000 (v2 scale), 'cap': fraction of one
# CPU} with every vCPU and I/O-path thread of the VM in it, or None = the
# threads in libvirt's own groups.
LSVM_GROUP = 'lsvm_group'
LSVM_GROUP_KEYS = ('weight', 'cap')
# libvirt's schedinfo of the VM, target '': {'cpu_shares', 'vcpu_period',
# 'vcpu_quota'}.
VM_SCHED = 'vm_sched'
SCHED_KEYS = ('cpu_shares', 'vcpu_period', 'vcpu_quota')

# The QEMU emulator (main loop) threads, target '': their pCPUs (tuple or
# None = all; vTurbo's turbo pCPU, virDomainPinEmulator) and their EEVDF
# slice in us (they carry device emulation: virtio notifications). The pin
# moves the VM's iothreads and vhost workers too; read back while the
# iothreads are pinned apart from the emulator, it is {'emulator': pin,
# 'iothreads': {'<libvirt iothread id>': pin}}, which restores them.
EMULATOR_PIN = 'emulator_pin'
EMULATOR_SLICE = 'emulator_slice'

# A disk's live limits (virDomainSetBlockIoTune), target the disk: a dict
# of iotune keys (``qos_keys.FRONTEND_KEYS``).
DISK_IOTUNE = 'disk_iotune'
# An interface's bandwidth (virDomainSetInterfaceParameters), target the
# interface: {'inbound.average', 'outbound.average'} in KiB/s.
IFACE_BANDWIDTH = 'iface_bandwidth'
IFACE_KEYS = ('inbound.average', 'outbound.average')

# Block I/O (seed 004): the VM's BFQ weight (1..1000; target ''), a host
# device's elevator (target the device: 'bfq', 'mq-deadline', 'none') and
# its BFQ slice_idle in us (target the device).
VM_IO_WEIGHT = 'vm_io_weight'
BLOCK_SCHEDULER = 'block_scheduler'
BFQ_SLICE_IDLE = 'bfq_slice_idle'

KINDS = (VCPU_SLICE, VCPU_WEIGHT, VCPU_PIN, VCPU_CAP, VCPU_DEADLINE,
         IO_DEADLINE, VM_WEIGHT, VM_CAP, LSVM_GROUP, VM_SCHED,
         EMULATOR_PIN, EMULATOR_SLICE, DISK_IOTUNE, IFACE_BANDWIDTH,
         VM_IO_WEIGHT, BLOCK_SCHEDULER, BFQ_SLICE_IDLE)
# Kinds whose value is a tuple of pCPUs (JSON carries it as a list).
PIN_KINDS = (VCPU_PIN, EMULATOR_PIN)

# An action value meaning "back to what the knob held before the agent
# first changed it" (the journaled original); the actuator resolves it.
ORIGINAL = 'original'
