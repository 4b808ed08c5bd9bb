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
"""What Nova receives for a volume at attach time, from its QoS spec.

Cinder's volume manager (``_parse_connection_options``, Cinder 29) passes
the whole spec of a ``front-end`` or ``both`` QoS spec in the connection
info, after turning each per-GB key into its absolute value for the
volume's size::

    x = max(x_per_gb_min, x_per_gb * size_gb), capped by x_max

(``x_per_gb``, ``x_per_gb_min`` and ``x_max`` are consumed) for x in
``{read,write,total}_{iops,bytes}_sec``. A ``back-end`` spec gives Nova
nothing. Nova then copies ``qos_keys.FRONTEND_KEYS`` into ``<iotune>``. The
agent uses this to re-apply a volume's limits after an online extend or an
edited QoS spec, which Nova does not (Cinder refuses an in-use retype that
changes front-end QoS).
"""

from iosched.contract import qos_keys


def specs_at_attach(specs, consumer, size_gb):
    """The QoS dict Cinder puts in the connection info, or None."""
    if consumer not in qos_keys.HOST_CONSUMERS or specs is None:
        return None
    out = dict(specs)
    for option in qos_keys.RATE_KEYS:
        per_gb = '%s_per_gb' % option
        if per_gb in out:
            minimum = int(out.pop('%s_per_gb_min' % option, 0))
            value = max(minimum, int(out[per_gb]) * int(size_gb))
            top = int(out.pop('%s_max' % option, value))
            out[option] = min(value, top)
            out.pop(per_gb)
    return out


def _limit(value):
    """A front-end key's value as libvirt's whole number, 0 if it is none
    (not a number, NaN or infinite: Nova could not have applied it).
    """
    try:
        return int(float(value))
    except (TypeError, ValueError, OverflowError):
        return 0


def iotune(specs):
    """The ``<iotune>`` Nova writes for those connection-info specs."""
    out = {}
    for k, v in (specs or {}).items():
        if k in qos_keys.FRONTEND_KEYS and _limit(v) > 0:
            out[k] = _limit(v)
    return out
