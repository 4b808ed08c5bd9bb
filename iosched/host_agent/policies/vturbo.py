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
"""vTurbo's host half on KVM: a turbo pCPU for LSVMs' I/O threads.

Description:
    vTurbo (seed 001, ch. 3) runs each VM's IRQ work on a "turbo" vCPU
    pinned to turbo cores with a 0.1 ms quantum, while the VM's regular
    vCPUs keep 30 ms slices on the other cores. On KVM the host-side I/O
    work of a VM runs in its QEMU emulator (main loop) thread, so the host
    half is: pin the I/O threads of turbo VMs (LSVM flavors, or
    ``iosched:turbo=true``) to the turbo pCPUs with a 0.1 ms EEVDF slice,
    and keep every guest vCPU on the regular pCPUs, so the turbo pCPUs
    carry only short I/O work and a woken I/O thread runs at once.
Requirements:
    ``turbo_pcpus`` set to a proper subset of the host's pCPUs; a driver
    with the ``emulator_pin``, ``emulator_slice`` and ``vcpu_pin`` knobs
    (libvirt). Drivers without the emulator knobs (the simulator) skip
    those actions.
Limitations:
    The guest half (an extra turbo vCPU, IRQ affinity, bigger receive
    buffers, the TCP early-ACK patch) needs tenant cooperation and is not
    done. Algorithm 3's two-pool accounting (``vturbo_charge``, on by
    ``charge_turbo``) charges the I/O threads' turbo CPU to the VM through
    its VM cgroup weight: relative, so it binds only while the VM's vCPUs
    want more than their allowance on contended regular pCPUs.
    Listed last, its vCPU pins override vSlicer's ``pin_lsvms`` and ISACS's
    balancing, which plan over all pCPUs.
Spec URL:
    ../shared/seeds/001-vslicer-vturbo-vread.md, sections 2.2 and 3.2.
"""

import dataclasses

from iosched.contract import knob_kinds
from iosched.contract import lsvm
from iosched.host_agent import model
from iosched.host_agent.policies import base
from iosched.host_agent.policies import vturbo_charge


@dataclasses.dataclass(frozen=True)
class Params:
    """[host_agent_policy.vturbo] (iosched/host_agent/conf/vturbo.py)."""
    turbo_pcpus: tuple
    turbo_slice_us: int
    pin_regular_vcpus: bool
    charge_turbo: bool
    vm_weight: int


@dataclasses.dataclass(frozen=True)
class TurboState:
    turbo_pcpus: tuple         # turbo pCPUs in effect (() = off)
    regular_pcpus: tuple
    turbo_instances: tuple     # uuids whose I/O threads run on turbo pCPUs
    charges: tuple = ()        # tuple[vturbo_charge.TurboCharge]


# turbo(i) := latency_sensitive or iosched:turbo (iosched.contract.flavor)
def is_turbo(inst):
    return inst.latency_sensitive or inst.flavor_specs.turbo


# Control law (per host, every tick; P = the host's pCPUs):
#   T = turbo_pcpus & P,  R = P - T;  off (no action, a note) unless
#   T and R are both non-empty.
#   turbo instance i (LSVM flavor or iosched:turbo=true):
#       emulator threads pinned to T, emulator slice = turbo_slice (0.1 ms,
#       vTurbo's turbo quantum and the kernel's minimum slice)
#   every vCPU of every instance not hw:cpu_policy=dedicated: pinned to R
#       (vTurbo's regular vCPUs stay in the regular pool)
# A woken I/O thread on a turbo pCPU competes only with other I/O threads
# of 0.1 ms requests: its wait is at most about k * 0.1 ms for k turbo VMs
# (digest 001 C11), instead of a CPU-bound vCPU's slice.
def plan_turbo(instances, pcpus, params):
    """Return (actions, notes, TurboState). Pure."""
    host = tuple(sorted(pcpus))
    turbo = tuple(p for p in sorted(set(params.turbo_pcpus)) if p in host)
    regular = tuple(p for p in host if p not in turbo)
    if not params.turbo_pcpus:
        return (), (), TurboState((), host, ())
    if not turbo or not regular:
        note = ('vturbo off: turbo_pcpus %s must be a proper subset of this '
                'host\'s pCPUs %s' % (list(params.turbo_pcpus), list(host)))
        return (), (note,), TurboState((), host, ())
    slice_us = max(lsvm.KERNEL_MIN_SLICE_US, params.turbo_slice_us)
    actions = []
    chosen = []
    for inst in sorted(instances, key=lambda i: i.uuid):
        if is_turbo(inst):
            chosen.append(inst.uuid)
            why = ('%s: its I/O (emulator) threads run on turbo pCPUs %s '
                   'among %d turbo VMs' % (
                       'LSVM flavor' if inst.latency_sensitive
                       else 'iosched:turbo=true', list(turbo),
                       sum(1 for i in instances if is_turbo(i))))
            actions.append(model.Action(
                kind=knob_kinds.EMULATOR_PIN, instance_uuid=inst.uuid,
                target='',
                value=turbo, rule='vturbo.io_thread_pin', reason=why))
            actions.append(model.Action(
                kind=knob_kinds.EMULATOR_SLICE, instance_uuid=inst.uuid,
                target='', value=slice_us, rule='vturbo.io_thread_slice',
                reason='turbo quantum %dus on turbo pCPUs' % slice_us))
        if params.pin_regular_vcpus and not inst.dedicated:
            for v in range(inst.vcpus):
                actions.append(model.Action(
                    kind=knob_kinds.VCPU_PIN, instance_uuid=inst.uuid,
                    target=str(v), value=regular,
                    rule='vturbo.regular_pool',
                    reason='guest vCPUs stay off turbo pCPUs %s: regular '
                    'pool %s' % (list(turbo), list(regular))))
    return tuple(actions), (), TurboState(turbo, regular, tuple(chosen))


class VTurboPolicy(base.Policy):
    """Stateless: what it did goes to the facts ('vturbo')."""
    name = 'vturbo'
    Params = Params

    def decide(self, snapshot, state=None):
        params = self.params()
        actions, notes, turbo = plan_turbo(
            tuple(snapshot.instances.values()), snapshot.pcpus, params)
        if params.charge_turbo and turbo.turbo_instances:
            charged, charges = vturbo_charge.charge_turbo(
                snapshot.instances, snapshot.vcpus,
                getattr(snapshot, 'io_threads', ()), turbo.turbo_instances,
                params.vm_weight)
            actions += charged
            turbo = dataclasses.replace(turbo, charges=charges)
        return model.Plan(policy=self.name, actions=actions, notes=notes,
                          facts={'vturbo': turbo})
