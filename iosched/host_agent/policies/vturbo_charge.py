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
"""vTurbo's Algorithm 3 on KVM: the turbo pool's CPU is charged to the VM.

vTurbo (seed 001, Algorithm 3) gives every VM a fair share of both pools
together and takes what its turbo vCPU used out of its regular-pool
credits, so the turbo cores are not free CPU. Here the turbo work is the
VM's QEMU I/O threads pinned to turbo pCPUs (``vturbo``); their CPU per
window comes from the snapshot (``HostSnapshot.io_threads``), and the VM's
regular allowance becomes its VM-level cgroup weight. Pure: no I/O, no
clock.
"""

import dataclasses

from iosched.contract import knob_kinds
from iosched.host_agent import model

MAX_WEIGHT = 10000


@dataclasses.dataclass(frozen=True)
class TurboCharge:
    instance_uuid: str
    fair_share: float          # FS_i, CPUs (both pools)
    turbo_used: float          # T_i, CPUs its I/O threads used on turbo
    regular_allowance: float   # R_i = max(0, FS_i - T_i)
    regular_used: float        # its vCPUs' CPUs (regular pool)
    weight: int                # VM cgroup weight installed
    binds: bool                # regular_used > regular_allowance
    window_s: float            # the window T_i was measured over


# Algorithm 3 (two-pool accounting) per tick (window = the agent tick, not
# Xen's 30 ms; weights are relative, not credits):
#   used_i = V_i + IO_i   (V_i: the VM's vCPUs' run shares, regular pool;
#                          IO_i: its I/O threads' CPUs)
#   C = sum_i used_i   (both pools' use, C^R_tot + C^T_tot)
#   FS_i = C * w_i / sum_j w_j = C / n   (every VM at weight w)
#   turbo VM i (I/O threads on turbo pCPUs): T_i = IO_i,
#     R_i = max(0, FS_i - T_i)             (rcredits = credits - tcredits)
#     weight_i = clamp(round(w * R_i / FS_i), 1, w)
#   a VM that is not a turbo VM keeps w (no action); no I/O-thread figure
#   for a turbo VM, or FS_i <= 0: no action (nothing measured to charge).
# The weight binds only while the VM's regular demand exceeds R_i and the
# regular pCPUs are contended; then its vCPUs get about R_i.
def charge_turbo(instances, vcpus, io_threads, turbo_uuids, weight=100):
    """Return (actions, charges). ``instances`` {uuid: InstanceInfo},
    ``vcpus`` tuple[VcpuIoStrength], ``io_threads`` tuple[IoThreadRates].
    """
    io = {r.instance_uuid: r for r in io_threads}
    if not instances or not io:
        return (), ()
    v = {u: 0.0 for u in instances}
    for s in vcpus:
        if s.instance_uuid in v:
            v[s.instance_uuid] += s.run_share
    used = {u: v[u] + (io[u].cpu_share if u in io else 0.0) for u in v}
    fs = sum(used.values()) / len(used)
    actions, charges = [], []
    for u in sorted(turbo_uuids):
        if u not in io or u not in v or fs <= 0:
            continue
        t = io[u].cpu_share
        allowance = max(0.0, fs - t)
        w = int(min(weight, max(1, round(weight * allowance / fs))))
        charges.append(TurboCharge(
            instance_uuid=u, fair_share=round(fs, 4), turbo_used=round(t, 4),
            regular_allowance=round(allowance, 4),
            regular_used=round(v[u], 4), weight=w,
            binds=v[u] > allowance, window_s=io[u].window_s))
        actions.append(model.Action(
            kind=knob_kinds.VM_WEIGHT, instance_uuid=u, target='', value=w,
            rule='vturbo.charge_turbo',
            reason='Algorithm 3: fair share %.3f CPU of %.3f used by %d VMs; '
                   'I/O threads used %.3f CPU on turbo pCPUs, regular '
                   'allowance %.3f (vCPUs used %.3f%s): weight %d x %.3f / '
                   '%.3f = %d' % (fs, sum(used.values()), len(used), t,
                                  allowance, v[u],
                                  ', binds' if v[u] > allowance else '',
                                  weight, allowance, fs, w)))
    return tuple(actions), tuple(charges)
