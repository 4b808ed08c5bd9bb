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
"""Pure rules of SloCapacityFilter: SLO volumes within measured disk capacity.

Description:
    A Flubber SLO volume type guarantees a throughput floor B
    (``iosched:min_iops`` in its QoS spec, see ``docs/slo.md``). The host
    agent reports ``disk.reserved_iops`` (the sum of B of the SLO volumes
    attached on the host, read from Cinder by volume id; see the note
    below) and ``disk.capacity_iops`` (the device capacity
    the operator measured, 0 = unknown). ``admit`` says whether a request
    whose SLO volumes add up to B still fits: reserved + pending + B within
    ``fraction`` of the capacity. ``volume_ref`` says, for one block device
    mapping, where its volume type comes from; ``min_iops_from_qos`` reads B
    out of one QoS spec.

Requirements:
    A report of schema ``iosched.contract.payload`` 1.x; QoS specs as
    ``iosched.cinder_qos.translate`` writes them.

Limitations:
    B and the capacity are in IOPS of the SLO's reference size S (16 KiB by
    default); the capacity must be measured at that size. Reads and writes
    are not separated.

No nova, no I/O, no clock: table-tested without Nova installed
(``tests/unit/nova_plugin/test_slo_rule.py``).
"""

import dataclasses
import math

from iosched.contract import qos_keys

# B never reaches the compute host with the attachment: Cinder copies a
# spec of qos_keys.HOST_CONSUMERS into the attachment's connection_info,
# but Nova writes only its front-end keys into the disk's <iotune>. The
# agent reads each attached volume's spec from Cinder by the disk's
# <serial> (iosched.host_agent.cinder_slo, any consumer) and counts its B
# in reserved_iops; without Cinder (or a volume_qos_file) it counts the
# <iotune> ceiling total_iops_sec, an upper bound of B, and says where its
# figure comes from in disk.slo_source (payload 1.5; what the filter does
# with "none": [iosched] slo_unknown_source_policy, slo_check).

# Where a block device mapping's volume type comes from (volume_ref()).
REF_TYPE = 'type'           # an explicit volume type, name or id
REF_VOLUME = 'volume'       # an existing volume: its type
REF_SNAPSHOT = 'snapshot'   # a new volume from a snapshot: the source's type
REF_DEFAULT = 'default'     # a new volume without a type: Cinder's default

# Relative slack of the comparison, so that a sum of float B values that
# equals the limit on paper is not rejected by rounding.
REL_EPSILON = 1e-9


class SloSpecError(ValueError):
    """A QoS spec or a mapping the rule cannot read; the message says why."""


@dataclasses.dataclass(frozen=True)
class VolumeRef:
    """Where one volume of a request gets its type: ``kind`` and ``ref``."""

    kind: str
    ref: object = None


class _Short(object):
    """``%r`` of a value, cut to 80 characters with the length said."""

    def __init__(self, value):
        self.value = value

    def __repr__(self):
        text = repr(self.value)
        return text if len(text) <= 80 else '%s...(%d characters)' % (
            text[:80], len(text))


def _text(value):
    return '' if value is None else str(value).strip()


# volume_ref(bdm) :=
#   None                        if destination_type != 'volume'
#   (type, volume_type)         if volume_type is set (API 2.67+)
#   (volume, volume_id)         if volume_id is set (existing or created)
#   (snapshot, snapshot_id)     if source_type == 'snapshot'
#   (default, None)             if source_type in {image, blank}
#   error                       otherwise
def volume_ref(destination_type, source_type=None, volume_id=None,
               volume_type=None, snapshot_id=None):
    """The ``VolumeRef`` of one block device mapping, None if no volume."""
    if _text(destination_type) != 'volume':
        return None
    if _text(volume_type):
        return VolumeRef(REF_TYPE, _text(volume_type))
    if _text(volume_id):
        return VolumeRef(REF_VOLUME, _text(volume_id))
    source = _text(source_type)
    if source == 'snapshot' and _text(snapshot_id):
        return VolumeRef(REF_SNAPSHOT, _text(snapshot_id))
    if source in ('image', 'blank'):
        return VolumeRef(REF_DEFAULT)
    raise SloSpecError(
        'block device mapping with destination_type=volume and '
        'source_type=%r has no volume_id, volume_type or snapshot_id; '
        'accepted sources: volume (with volume_id), snapshot (with '
        'snapshot_id), image, blank' % (source_type,))


# B(spec) := float(specs['iosched:min_iops'])  if consumer in {front-end,
#            both} and the key is set;  0 otherwise (not an SLO spec).
# A value that is not a finite number >= 0 is an error.
def min_iops_from_qos(consumer, specs, name='?'):
    """B of one QoS spec (0.0 when it carries no SLO the host sees).

    ``name`` names the spec (or the volume type) in the error message.
    """
    if _text(consumer) not in qos_keys.HOST_CONSUMERS:
        return 0.0
    raw = (specs or {}).get(qos_keys.MIN_IOPS)
    if raw is None or _text(raw) == '':
        return 0.0
    try:
        value = float(_text(raw))
    except ValueError:
        value = None
    if value is None or not math.isfinite(value) or value < 0:
        raise SloSpecError(
            'QoS spec of %s: %s=%r is invalid; accepted: a finite number '
            '>= 0 (IOPS)' % (name, qos_keys.MIN_IOPS, _Short(raw)))
    return value


# admit(C, R, P, B, f) :=
#   pass       if B == 0                      (no SLO volume in the request)
#   unknown    if C <= 0                      (capacity not measured)
#   pass       if R + P + B <= f * C          (within the admissible share)
#   reject     otherwise
def admit(capacity_iops, reserved_iops, pending_iops, request_iops,
          fraction=1.0):
    """Whether a request of ``request_iops`` of SLO floors fits the disk.

    Returns ``(passes, reason)``: ``passes`` is True, False, or None when
    the capacity is unknown (the caller applies its missing-report policy).
    The reason carries every term of the sum.
    """
    for name, value in (('capacity_iops', capacity_iops),
                        ('reserved_iops', reserved_iops),
                        ('pending_iops', pending_iops),
                        ('request_iops', request_iops),
                        ('fraction', fraction)):
        if (not isinstance(value, (int, float)) or isinstance(value, bool)
                or not math.isfinite(value) or value < 0):
            raise SloSpecError('%s=%r is invalid; accepted: a finite '
                               'number >= 0' % (name, value))
    if request_iops == 0:
        return True, 'no SLO volume in the request'
    if capacity_iops <= 0:
        return None, ('disk capacity unknown (capacity_iops=0) for a '
                      'request of %.1f IOPS' % request_iops)
    total = reserved_iops + pending_iops + request_iops
    limit = fraction * capacity_iops
    terms = ('reserved %.1f + pending %.1f + request %.1f = %.1f IOPS, '
             'limit %.2f x capacity %.1f = %.1f IOPS'
             % (reserved_iops, pending_iops, request_iops, total,
                fraction, capacity_iops, limit))
    if total <= limit + REL_EPSILON * max(1.0, limit):
        return True, 'SLO floors fit: ' + terms
    return False, 'SLO floors exceed disk capacity: ' + terms
