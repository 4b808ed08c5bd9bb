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
"""Pure: the actions of the LSVM mechanisms (slices, deadline, weight).

The vSlicer policy (``vslicer.plan_slices``) decides which LSVMs get which
mechanism and with which T_m; this module admits SCHED_DEADLINE
reservations within the host's bandwidth and builds the knob actions of
each mechanism (slices and equal weights, affinity, reservations,
release, VM weight and cap). The
rules are in ``iosched.contract.lsvm`` (shares, admission) and
``lsvm_bounds`` (runtimes, periods).

Standard library, ``iosched.host_agent.model`` and ``iosched.contract`` only;
no I/O, no clock.
"""

import functools

from iosched.contract import knob_kinds
from iosched.contract import lsvm
from iosched.host_agent import model
from iosched.host_agent.policies import lsvm_bounds


def dedicated(inst):
    """Nova pins hw:cpu_policy=dedicated vCPUs itself; never re-pin them."""
    return inst.dedicated


def latency_ms(inst, params):
    """The flavor's iosched:latency_ms, else the policy's default."""
    return inst.latency_ms or params.default_latency_ms


# Deadline admission (the kernel's own test, done first so that nothing is
# half-applied): LSVMs, strictest iosched:latency_ms first (ties: uuid),
# each reserving u_i = v_i * s (its fair share: lsvm_bounds.reservation
# sizes the vCPU and every I/O-path thread's runtime to it), are admitted
# while (lsvm.admits)
#   reserved + u_i <= dl_bw_limit - dl_bw_foreign
# and never when the root domain is unknown or the flavor is dedicated
# (Nova pins those to single pCPUs, which the kernel refuses). The others
# fall back to slices and their bound is refused.
def admit_deadline(instances, share, sched, params):
    """(admitted uuids, {uuid: why not}, reserved CPUs). Pure."""
    room = sched.dl_bw_limit - sched.dl_bw_foreign
    reserved = 0.0
    admitted = set()
    refused = {}
    for inst in sorted((i for i in instances if i.latency_sensitive
                        and i.vcpus), key=lambda i: (latency_ms(i, params),
                                                     i.uuid)):
        need = inst.vcpus * share
        if not sched.dl_cpus:
            refused[inst.uuid] = 'the deadline root domain is unknown'
        elif dedicated(inst):
            refused[inst.uuid] = ('hw:cpu_policy=dedicated pins it narrower '
                                  'than its root domain')
        elif not lsvm.admits(reserved + need, room):
            refused[inst.uuid] = (
                'deadline admission: %.3g + %.3g CPUs > limit %.3g - '
                'foreign %.3g' % (reserved, need, sched.dl_bw_limit,
                                  sched.dl_bw_foreign))
        else:
            admitted.add(inst.uuid)
            reserved += need
    return admitted, refused, reserved


def deadline_actions(inst, t_m, lat_ms, share, sched, params, reason):
    """(actions, reserved CPUs): affinity, then the reservations of the
    vCPUs and of the ``inst.io_threads`` I/O-path threads. Pure.
    """
    vcpu_res, io_res = lsvm_bounds.reservation(
        inst.vcpus, t_m, lat_ms, share, params.io_thread_runtime_us,
        inst.io_threads)
    # None = every CPU of the host, as the pin knobs read it back.
    cpus = None if sched.dl_all_cpus else tuple(sorted(sched.dl_cpus))
    why = ('%s; SCHED_DEADLINE runtime %dus / deadline %dus / period %dus '
           '= the VM\'s fair share %.3g x %d vCPU(s) with %d I/O-path '
           'thread(s) at %dus' % (
               reason, vcpu_res['runtime_us'], vcpu_res['deadline_us'],
               vcpu_res['period_us'], share, inst.vcpus, inst.io_threads,
               io_res['runtime_us']))
    pin_why = ('SCHED_DEADLINE needs the thread\'s affinity to cover its '
               'root domain, CPUs %s' % (sorted(sched.dl_cpus),))
    out = [model.Action(kind=knob_kinds.VCPU_PIN, instance_uuid=inst.uuid,
                        target=str(v), value=cpus,
                        rule='vslicer.lsvm_dl_affinity', reason=pin_why)
           for v in range(inst.vcpus)]
    out.append(model.Action(kind=knob_kinds.EMULATOR_PIN,
                            instance_uuid=inst.uuid, target='', value=cpus,
                            rule='vslicer.lsvm_dl_affinity', reason=pin_why))
    out.extend(model.Action(kind=knob_kinds.VCPU_DEADLINE,
                            instance_uuid=inst.uuid, target=str(v),
                            value=dict(vcpu_res),
                            rule='vslicer.lsvm_deadline', reason=why)
               for v in range(inst.vcpus))
    out.append(model.Action(kind=knob_kinds.IO_DEADLINE,
                            instance_uuid=inst.uuid, target='',
                            value=dict(io_res),
                            rule='vslicer.lsvm_io_deadline', reason=why))
    return out, lsvm_bounds.reserved_cpus(inst.vcpus, inst.io_threads,
                                          vcpu_res, io_res)


def release_deadline(inst, why):
    """A refused LSVM's threads back to the fair class."""
    out = [model.Action(kind=knob_kinds.VCPU_DEADLINE,
                        instance_uuid=inst.uuid, target=str(v), value=None,
                        rule='vslicer.lsvm_dl_release', reason=why)
           for v in range(inst.vcpus)]
    out.append(model.Action(kind=knob_kinds.IO_DEADLINE,
                            instance_uuid=inst.uuid, target='', value=None,
                            rule='vslicer.lsvm_dl_release', reason=why))
    return out


def weight_actions(inst, pcpus, vcpus, params, weight_group=''):
    """The weight mechanism's actions: the VM's own group in libvirt's
    machine group at ``lsvm_weight`` capped at its fair share, or, with
    ``weight_group``, the same weight and cap on a group of its own below
    that top-level parent, its vCPU and I/O-path threads moved there.
    """
    cap = round(inst.vcpus * lsvm.fair_share(pcpus, vcpus), 4)
    if weight_group:
        return [model.Action(
            kind=knob_kinds.LSVM_GROUP, instance_uuid=inst.uuid, target='',
            value={'weight': lsvm.GROUP_VM_WEIGHT, 'cap': cap},
            rule='vslicer.lsvm_group',
            reason='LSVM: its vCPU and I/O-path threads in a group of its '
            'own below %s (whose weight, weight_group_weight, wins the CPU '
            'when it wakes, against libvirt\'s machine group and the '
            'host\'s other load alike), capped at its fair share %d '
            'vCPU(s) x min(1, %d pCPUs / %d vCPUs) = %.4g CPU' % (
                weight_group, inst.vcpus, pcpus, vcpus, cap))]
    return [
        model.Action(kind=knob_kinds.VM_WEIGHT, instance_uuid=inst.uuid,
                     target='', value=params.lsvm_weight,
                     rule='vslicer.lsvm_vm_weight',
                     reason='LSVM: VM-level weight %d (default 100) so that '
                     'it wins the CPU when it wakes' % params.lsvm_weight),
        model.Action(kind=knob_kinds.VM_CAP, instance_uuid=inst.uuid,
                     target='', value=cap, rule='vslicer.lsvm_vm_cap',
                     reason='the weight buys no extra CPU: capped at its '
                     'fair share %d vCPU(s) x min(1, %d pCPUs / %d vCPUs) = '
                     '%.4g CPU' % (inst.vcpus, pcpus, vcpus, cap))]


# Most ticks plan an instance's turn as the tick before: the same inputs
# give the very same Action objects, which the actuator skips at once
# (``DriverActuator.apply``) and which are not built again. Bounded: a few
# entries per instance of a large host.
@functools.lru_cache(maxsize=2048)
def slice_actions(uuid, vcpus, io_thread, set_slices, slice_us,
                   vcpu_slices, rule, reason, weight):
    """An instance's I/O-thread slice (``io_thread``: an LSVM's), vCPU
    slices and equal weights, as a tuple. Pure.
    """
    actions = []
    per_vcpu = dict(vcpu_slices)
    if io_thread and set_slices:
        # The host half of vTurbo, partly: the LSVM's QEMU main loop
        # (virtio notifications, chardevs) gets the microslice too, so
        # its I/O is not queued behind CPU-bound threads either.
        actions.append(model.Action(
            kind=knob_kinds.EMULATOR_SLICE, instance_uuid=uuid,
            target='', value=slice_us, rule='vslicer.lsvm_io_thread',
            reason='LSVM I/O thread gets T_m=%dus like its vCPUs'
            % slice_us))
    for vcpu in range(vcpus):
        if set_slices:
            actions.append(model.Action(
                kind=knob_kinds.VCPU_SLICE, instance_uuid=uuid,
                target=str(vcpu), value=per_vcpu.get(vcpu, slice_us),
                rule=rule, reason=reason))
        actions.append(model.Action(
            kind=knob_kinds.VCPU_WEIGHT, instance_uuid=uuid,
            target=str(vcpu), value=weight, rule='vslicer.equal_weight',
            reason='equal weights: no VM gets extra share'))
    return tuple(actions)
