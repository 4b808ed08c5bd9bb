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
"""The disks' side of I-Balancer: measured use, floors, caps as iotune.

``policies.ibalancer`` turns a VM's delay into a rate fraction; here are
the figures of its disks that the fraction applies to (use in 16 KiB
operations, requests per operation, the use before a cap), the lowest cap
a disk may get and the iotune a cap is written as. Pure.
"""

import math

from iosched.contract import slo as slo_contract


def disks(snapshot):
    """(uuid, target) -> (DiskInfo, measured 16 KiB ops/s)."""
    rates = {(d.instance_uuid, d.target): d.ref_ops_per_s()
             for d in snapshot.disks}
    out = {}
    for inst in snapshot.instances.values():
        for disk in inst.disks:
            key = (inst.uuid, disk.target)
            out[key] = (disk, rates.get(key, 0.0))
    return out


def requests_per_ref_op(snapshot):
    """(uuid, target) -> requests per 16 KiB op in the window (1 for
    requests of 16 KiB or less).
    """
    out = {}
    for d in snapshot.disks:
        ref = d.ref_ops_per_s()
        out[(d.instance_uuid, d.target)] = d.iops / ref if ref > 0 else 1.0
    return out


def _static_iops(disk):
    try:
        return int(float(disk.qos.get('total_iops_sec') or 0))
    except (TypeError, ValueError):
        return 0


def floor(disk, params):
    """A cap never goes below min_cap_iops, nor below an SLO volume's
    floor B (in 16 KiB ops), which the SLO policy defends.
    """
    floor = params.min_cap_iops
    if disk.slo is not None:
        floor = max(floor, disk.slo.min_iops * disk.slo.ref_io_bytes /
                    float(slo_contract.DEFAULT_REF_IO_BYTES))
    return floor


def iotune(disk, cap):
    """The iotune written for a cap (16 KiB ops): total_iops_sec with
    size_iops_sec 16 KiB, never above the disk's static QoS ceiling.
    """
    iops = int(math.ceil(cap - 1e-6))
    static = _static_iops(disk)
    if static:
        iops = min(iops, static)
    return {'total_iops_sec': max(1, iops),
            'size_iops_sec': slo_contract.DEFAULT_REF_IO_BYTES}


def uncapped(key, used, caps, free):
    """The disk's use before it was capped (16 KiB ops/s): the use at the
    first cap, raised (never lowered) while capped. A window below the
    cap (an iotune write resets QEMU's buckets; a guest pauses) must not
    lower it: the cap would follow the dip down, tick after tick.
    """
    if caps.get(key) is None or key not in free:
        return used
    return max(free[key], used)
