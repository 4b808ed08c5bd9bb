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
"""vSlicer on EEVDF: short, frequent slices for LSVMs, same CPU share.

Description:
    vSlicer (seed 001, ch. 2) gives a latency-sensitive VM (LSVM) the same
    CPU share as every other VM, but in microslices, so its pending I/O
    waits less. On Linux >= 6.12 the per-thread EEVDF slice
    (``sched_setattr(SCHED_OTHER, sched_runtime=slice)``) does this: a
    shorter request gives an earlier virtual deadline at the same weight,
    and a woken short-slice task preempts a long-slice one (PREEMPT_SHORT).
Requirements:
    Flavor extra specs ``iosched:latency_sensitive=true`` and optionally
    ``iosched:latency_ms``; a driver with the ``vcpu_slice`` and
    ``vcpu_weight`` knobs.
Limitations:
    EEVDF is not vSlicer's strict micro-round: the (m-1)*T_m bound is not
    enforced by the kernel, only made likely (see docs/architecture.md).
    vCPUs float over the host's pCPUs, so LSVMs per pCPU is an average.
Spec URL:
    ../shared/seeds/001-vslicer-vturbo-vread.md, sections 2.1 and 3.1.
"""

import dataclasses
import math

from host_agent import model
from host_agent.policies import base

# Same string as host_agent.actuators.linux_knobs.ACTION_EMULATOR_SLICE
# (policies import no actuator); drivers without it skip the action.
ACTION_EMULATOR_SLICE = 'emulator_slice'
KERNEL_MIN_SLICE_US = 100
KERNEL_MAX_SLICE_US = 100000


@dataclasses.dataclass(frozen=True)
class Params:
    nlsvm_slice_us: int = 3000
    lsvm_max_slice_us: int = 1000
    min_slice_us: int = 100
    default_latency_ms: float = 2.0
    max_lsvm_per_pcpu: int = 3
    vcpu_weight: int = 100
    lsvm_io_threads: bool = True


@dataclasses.dataclass(frozen=True)
class LsvmState:
    count: int                 # LSVM vCPUs on the host (m)
    per_pcpu: float            # m / P
    capacity: int              # LSVM vCPUs the host can still take
    latency_bound_ms: float    # worst bound over the host's LSVMs


def _clamp(v, lo, hi):
    return max(lo, min(hi, v))


def lsvm_vcpus(instances):
    return sum(i.vcpus for i in instances if i.latency_sensitive)


# Control law (per host, vCPUs float over its P pCPUs):
#   m   = LSVM vCPUs on the host,  k = ceil(m / P) LSVM vCPUs per pCPU
#   L_i = the flavor's iosched:latency_ms (default_latency_ms if unset)
#   T_m,i = clamp(min(lsvm_max_slice, L_i / k), min_slice, 100 ms)
#   every other vCPU: T_NLSVM = nlsvm_slice;  every vCPU: weight = w
# A woken LSVM vCPU preempts a running NLSVM one at once (shorter slice,
# earlier deadline) and waits at most for the k-1 other LSVM vCPUs of its
# pCPU plus the end of its own first request: bound_i = k * T_m,i <= L_i.
# vSlicer's T_m <= T_l / (m-1) is the same rule counted per core. When
# L_i / k < min_slice the bound cannot hold: we set min_slice and say so.
def plan_slices(instances, pcpus, params):
    """Return (actions, notes, LsvmState) for a host. Pure."""
    n_pcpus = max(1, len(pcpus))
    m = lsvm_vcpus(instances)
    k = max(1, math.ceil(m / n_pcpus))
    actions = []
    notes = []
    bound = 0.0
    for inst in sorted(instances, key=lambda i: i.uuid):
        if inst.latency_sensitive:
            lat_ms = inst.latency_ms or params.default_latency_ms
            want = min(params.lsvm_max_slice_us, lat_ms * 1000.0 / k)
            slice_us = int(_clamp(want, max(params.min_slice_us,
                                            KERNEL_MIN_SLICE_US),
                                  KERNEL_MAX_SLICE_US))
            rule = 'vslicer.lsvm_microslice'
            reason = ('LSVM: L=%.3gms, m=%d LSVM vCPUs on %d pCPUs (k=%d): '
                      'T_m=min(%dus, L/k=%dus)=%dus, bound k*T_m=%.3gms'
                      % (lat_ms, m, n_pcpus, k, params.lsvm_max_slice_us,
                         lat_ms * 1000.0 / k, slice_us,
                         k * slice_us / 1000.0))
            if want < slice_us:
                notes.append('refused bound for %s: L=%.3gms needs T_m=%dus '
                             '< min slice %dus with k=%d; set %dus, bound '
                             '%.3gms' % (inst.uuid, lat_ms, want, slice_us,
                                         k, slice_us, k * slice_us / 1000.0))
            bound = max(bound, k * slice_us / 1000.0)
        else:
            slice_us = params.nlsvm_slice_us
            rule = 'vslicer.nlsvm_slice'
            reason = 'not latency-sensitive: T_NLSVM=%dus' % slice_us
        if inst.latency_sensitive and params.lsvm_io_threads:
            # The host half of vTurbo, partly: the LSVM's QEMU main loop
            # (virtio notifications, chardevs) gets the microslice too, so
            # its I/O is not queued behind CPU-bound threads either.
            actions.append(model.Action(
                kind=ACTION_EMULATOR_SLICE, instance_uuid=inst.uuid,
                target='', value=slice_us, rule='vslicer.lsvm_io_thread',
                reason='LSVM I/O thread gets T_m=%dus like its vCPUs'
                % slice_us))
        for vcpu in range(inst.vcpus):
            actions.append(model.Action(
                kind=model.ACTION_VCPU_SLICE, instance_uuid=inst.uuid,
                target=str(vcpu), value=slice_us, rule=rule, reason=reason))
            actions.append(model.Action(
                kind=model.ACTION_VCPU_WEIGHT, instance_uuid=inst.uuid,
                target=str(vcpu), value=params.vcpu_weight,
                rule='vslicer.equal_weight',
                reason='equal weights: no VM gets extra share'))
    state = LsvmState(
        count=m, per_pcpu=m / n_pcpus,
        capacity=max(0, params.max_lsvm_per_pcpu * n_pcpus - m),
        latency_bound_ms=bound)
    return tuple(actions), tuple(notes), state


def params_from_conf(conf):
    g = conf['host_agent_policy.vslicer']
    return Params(nlsvm_slice_us=g.nlsvm_slice_us,
                  lsvm_max_slice_us=g.lsvm_max_slice_us,
                  min_slice_us=g.min_slice_us,
                  default_latency_ms=g.default_latency_ms,
                  max_lsvm_per_pcpu=g.max_lsvm_per_pcpu,
                  vcpu_weight=g.vcpu_weight,
                  lsvm_io_threads=g.lsvm_io_threads)


class VSlicerPolicy(base.Policy):
    name = 'vslicer'

    def decide(self, snapshot):
        actions, notes, lsvm = plan_slices(
            tuple(snapshot.instances.values()), snapshot.pcpus,
            params_from_conf(self.conf))
        return model.Plan(policy=self.name, actions=actions, notes=notes,
                          facts={'lsvm': lsvm})
