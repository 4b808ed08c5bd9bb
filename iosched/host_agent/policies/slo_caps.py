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
"""The SLO policy's caps: the donors' allowance split, and a cap as iotune.

``policies.slo`` decides the allowance A of the donors; here A becomes one
cap per neighbour (max-min fair, ``split``), a cap moves only by
``min_change`` (``hysteresis``), and a cap in 16 KiB operations becomes
the live iotune dict written on the disk (``iotune``). Pure; ``params`` is
the SLO policy's ``Params``.
"""

import math

from iosched.contract import slo as slo_contract
from iosched.host_agent.policies import slo_window

INF = float('inf')


# Split of the allowance A over the neighbours (disks without an SLO),
# water-filling: one below 90 % of its cap asks for what it used plus the
# margin, one at its cap (or new and busy) for everything; max-min fair up
# to A; what nobody asks for is spread evenly, so caps leave room to grow;
# no cap below min_cap_iops.
def split(allowance, neighbours, held, params):
    """{key: cap (ref ops)} for the neighbours. Pure."""
    asks = {}
    for v in neighbours:
        key = (v.instance_uuid, v.target)
        cap = held.get(key)
        if cap is not None and v.ref_ops < 0.9 * cap:
            asks[key] = v.ref_ops * (1 + params.margin)
        elif cap is None and v.ref_ops == 0:
            asks[key] = params.min_cap_iops
        else:
            asks[key] = INF
    shares = {}
    left = allowance
    pending = sorted(asks, key=lambda k: asks[k])
    while pending:
        fair = left / len(pending)
        key = pending[0]
        if asks[key] > fair:
            for k in pending:
                shares[k] = fair
            left = 0.0
            break
        shares[key] = asks[key]
        left -= asks[key]
        pending.pop(0)
    if left > 0 and shares:
        extra = left / len(shares)
        shares = {k: v + extra for k, v in shares.items()}
    return {k: max(params.min_cap_iops, v) for k, v in shares.items()}


def hysteresis(cap, prev, params):
    """The previous cap while the new one is within min_change of it."""
    if prev is not None and abs(cap - prev) < params.min_change * prev:
        return prev
    return cap


def iotune(snapshot, v, cap):
    """The iotune dict for a cap in ref ops: total_iops_sec in ops of the
    disk's size (its SLO's ref size, else 16 KiB), never above the static
    ceiling of its QoS spec; the spec's bandwidth ceilings kept; no burst
    keys (QEMU's default bucket, avg / 10).
    """
    ref = slo_contract.DEFAULT_REF_IO_BYTES
    size = v.slo.ref_io_bytes if v.slo is not None else ref
    iops = cap * ref / float(size)
    qos = slo_window.qos(snapshot, v)
    static = slo_window.qos_int(qos.get('total_iops_sec'))
    if static:
        iops = min(iops, static)
    value = {'total_iops_sec': max(1, int(math.ceil(iops - 1e-6))),
             'size_iops_sec': int(size)}
    for key in ('total_bytes_sec', 'read_bytes_sec', 'write_bytes_sec'):
        if slo_window.qos_int(qos.get(key)):
            value[key] = slo_window.qos_int(qos.get(key))
    if 'total_bytes_sec' in value:
        value.pop('read_bytes_sec', None)
        value.pop('write_bytes_sec', None)
    return value
