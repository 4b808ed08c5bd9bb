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
"""Seed 004's virtualization-aware I/O scheduler on KVM: one BFQ group per VM.

Description:
    The paper (Kim, Kang, Choi, IEICE 2014) gives each Xen backend one
    integrated queue holding its sync and async requests, sync first, and
    serves the queues round-robin, so a VM whose only pending I/O is a few
    journal writes is not starved by the other VMs' reads. On Linux the
    closest means is BFQ with one cgroup per VM and equal weights: BFQ
    serves groups by weight (B-WF2Q+), each group has its own sync queues
    and its own async queues, and inside a group sync is favoured (async
    charged 3x). libvirt already puts each VM in its own blkio/io cgroup;
    this policy makes sure the VMs sharing a device are weighted equally
    (libvirt blkiotune weight) and that the device runs BFQ.
Requirements:
    A driver with ``block_devices()`` (the libvirt driver resolves each
    disk's source to its host device and reads its scheduler) and the
    ``vm_io_weight`` knob (``iosched.host_agent.actuators.blkio_knobs``); for
    ``switch_scheduler`` the ``block_scheduler`` knob.
Limitations:
    Sync/async at the host follows the QEMU cache mode: with
    ``cache=none`` a guest's writes are O_DIRECT, hence sync in the VM's
    own group, and the cross-VM inversion cannot arise at the host. With
    ``cache=writeback`` they become page-cache writeback, which cgroup v1
    charges to the root group (shared by all VMs) and only cgroup v2 with
    the memory and io controllers charges to the VM. docs/vaio.md.
Spec URL:
    ../shared/seeds/004-va-io-scheduler.md, sections 2.6 and 3 (item a).
"""

import dataclasses

from iosched.contract import knob_kinds
from iosched.host_agent import model
from iosched.host_agent.policies import base

BFQ = 'bfq'
RULE_WEIGHT = 'vaio.equal_weight'
RULE_SCHEDULER = 'vaio.scheduler'
RULE_RELEASE = 'vaio.release'
RULE_SLICE_IDLE = 'vaio.slice_idle'


@dataclasses.dataclass(frozen=True)
class Params:
    """[host_agent_policy.vaio] (iosched/host_agent/conf/vaio.py)."""
    weight: int
    min_vms: int
    switch_scheduler: bool
    bfq_slice_idle_us: int           # -1: leave BFQ's own


@dataclasses.dataclass(frozen=True)
class VaioState:
    """What the policy saw, for the report: per shared device its
    scheduler and VMs, and the VMs that hold a weight.
    """
    shared: tuple = ()         # ((device, scheduler, (uuid, ...)), ...)
    weighted: tuple = ()       # uuids given the weight


def _vms(dev):
    return tuple(sorted({u for u, _ in dev.disks if u}))


# Control law (per host, every tick; D = host block devices under guest
# disks, V(d) = the distinct VMs with a disk on d):
#   d is shared  <=>  |V(d)| >= min_vms
#   shared d with scheduler bfq:          every v in V(d): weight(v) = w
#   shared d without bfq, switch on and bfq offered:
#                                         scheduler(d) = bfq, and weights
#   shared d without bfq otherwise:       a note; V(d) get no weight there
#   shared d on (or switched to) bfq, bfq_slice_idle_us >= 0:
#                                         slice_idle(d) = bfq_slice_idle_us
#   every other VM of the host:           weight back to its original
# Equal weights w make BFQ's B-WF2Q+ serve the VMs' groups round robin in
# proportion 1:1 (the paper's integrated queues served round robin); each
# group has its own async queues, so one VM's writes wait only behind its
# own reads (charged 3x), never behind another VM's.
def plan_vaio(instances, devices, params):
    """Return (actions, notes, VaioState). Pure."""
    known = {i.uuid for i in instances}
    weighted = {}              # uuid -> [device names]
    shared = []
    actions = []
    notes = []
    for dev in sorted(devices, key=lambda d: d.name):
        vms = tuple(u for u in _vms(dev) if u in known)
        if len(vms) < params.min_vms:
            continue
        shared.append((dev.name, dev.scheduler, vms))
        sched = dev.scheduler
        if sched != BFQ:
            if params.switch_scheduler and BFQ in dev.schedulers:
                actions.append(model.Action(
                    kind=knob_kinds.BLOCK_SCHEDULER, instance_uuid='',
                    target=dev.name, value=BFQ, rule=RULE_SCHEDULER,
                    reason='device %s (%s) holds disks of %d VMs and runs '
                           '%s, which has no per-VM groups; '
                           'switch_scheduler is on' % (
                               dev.name, dev.devno or '?', len(vms),
                               sched or 'an unknown scheduler')))
            else:
                why = ('not offered for it (offered: %s)' % (
                    ', '.join(dev.schedulers) or 'unknown')
                       if BFQ not in dev.schedulers else
                       'set it to bfq or [host_agent_policy.vaio] '
                       'switch_scheduler = true')
                notes.append('vaio: device %s is shared by %d VMs but runs '
                             '%s: no per-VM I/O groups, so its VMs get no '
                             'weight there; bfq %s' % (
                                 dev.name, len(vms), sched or 'an unknown '
                                 'scheduler', why))
                continue
        if params.bfq_slice_idle_us >= 0:
            actions.append(model.Action(
                kind=knob_kinds.BFQ_SLICE_IDLE, instance_uuid='',
                target=dev.name, value=params.bfq_slice_idle_us,
                rule=RULE_SLICE_IDLE,
                reason='device %s shared by %d VMs on bfq; '
                       'bfq_slice_idle_us = %d' % (
                           dev.name, len(vms), params.bfq_slice_idle_us)))
        for u in vms:
            weighted.setdefault(u, []).append((dev.name, len(vms), sched))
    for inst in sorted(instances, key=lambda i: i.uuid):
        on = weighted.get(inst.uuid)
        if on is None:
            actions.append(model.Action(
                kind=knob_kinds.VM_IO_WEIGHT, instance_uuid=inst.uuid,
                target='',
                value=knob_kinds.ORIGINAL, rule=RULE_RELEASE,
                reason='no shared BFQ device under its disks any more'))
            continue
        actions.append(model.Action(
            kind=knob_kinds.VM_IO_WEIGHT, instance_uuid=inst.uuid, target='',
            value=params.weight, rule=RULE_WEIGHT,
            reason='; '.join(
                'device %s: %d VMs, scheduler %s%s' % (
                    name, n, sched, '' if sched == BFQ else ' -> bfq')
                for name, n, sched in on) +
            '; every VM there weight %d (1/%d of the device each when all '
            'are busy)' % (params.weight, max(n for _, n, _ in on))))
    state = VaioState(shared=tuple(shared), weighted=tuple(sorted(weighted)))
    return tuple(actions), tuple(notes), state


class VaioPolicy(base.Policy):
    """Stateless: what it saw goes to the facts ('vaio')."""
    name = 'vaio'
    Params = Params

    def decide(self, snapshot, state=None):
        actions, notes, seen = plan_vaio(
            tuple(snapshot.instances.values()), snapshot.block_devices,
            self.params())
        return model.Plan(policy=self.name, actions=actions, notes=notes,
                          facts={'vaio': seen})
