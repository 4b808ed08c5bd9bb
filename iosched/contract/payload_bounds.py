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
"""What a HostReport may claim: bounds checked before any expensive work.

A well-formed report (even a validly signed one: a node that leaked its
key, or a buggy agent) could claim figures no agent sends: a
``report_interval`` of 1e300 s never goes stale; 70,000 vCPU records on
8 pCPUs cost every scheduler worker the parsing and the signature's
digest. ``check(data)`` looks at the raw dict (O(1): lengths and a few
numbers, no iteration over records) and raises
``payload_check.Implausible`` naming the field, what it got and what is
accepted. The scheduler's endpoint calls it before the signature is
checked or any field parsed; ``HostReport.from_dict`` and
``head_from_dict`` call it too, so every reader applies the same bounds.
A field of the wrong type is left to the parser, which names it.

The bounds, each defined once here:

* ``report_interval``: the agent's own option bounds, ``[host_agent]
  tick_interval`` (``TICK_INTERVAL_MIN`` .. ``TICK_INTERVAL_MAX``) times
  ``report_every_ticks`` (1 .. ``REPORT_EVERY_TICKS_MAX``); the agent's
  options are declared with these constants.
* ``pcpus``: 1 .. ``MAX_PCPUS`` (the largest ``NR_CPUS`` of a Linux build).
* ``vcpus`` records and ``io_vcpus``: at most ``MAX_VCPUS_PER_PCPU`` per
  pCPU (4x Nova's historic ``cpu_allocation_ratio`` of 16).
* ``decisions``: at most ``payload.MAX_DECISIONS`` (checked there).
* ``host``: at most ``MAX_HOST_CHARS`` characters (Nova's ``host`` column,
  String(255)).
* Top-level fields: at most ``MAX_FIELDS`` (a newer minor version adds a
  few; thousands only make the signature's canonical head expensive).

The serialized size is not reachable here: oslo.messaging hands the
endpoint a decoded dict. The broker bounds it (RabbitMQ's
``max_message_size``), the operator guide says how.

Standard library only: nova-scheduler imports this module.
"""

import math

from iosched.contract import payload_check

# [host_agent] tick_interval and report_every_ticks (the agent's options
# are declared with these).
TICK_INTERVAL_MIN = 0.05
TICK_INTERVAL_MAX = 60.0
REPORT_EVERY_TICKS_MAX = 3600
REPORT_INTERVAL_MIN = TICK_INTERVAL_MIN
REPORT_INTERVAL_MAX = TICK_INTERVAL_MAX * REPORT_EVERY_TICKS_MAX
MAX_PCPUS = 8192
MAX_VCPUS_PER_PCPU = 64
MAX_HOST_CHARS = 255
MAX_FIELDS = 64


def _number(data, name):
    value = data.get(name)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None         # the parser names a wrong type
    if isinstance(value, float) and not math.isfinite(value):
        return None         # ... and a value that is not a finite number
    return value


def _length(data, name):
    value = data.get(name)
    return len(value) if isinstance(value, (list, tuple)) else None


def check(data, counts=None):
    """Raise ``payload_check.Implausible`` if the report dict ``data``
    claims more than any agent sends; anything not a dict, or a field of
    the wrong type, is left to the parser. ``counts``: ``data`` is a
    head-only message whose ``vcpus`` records these tail counts count.
    """
    if not isinstance(data, dict):
        return
    bad = payload_check.Implausible
    if len(data) > MAX_FIELDS:
        raise bad('<root>', 'got %d fields, accepted: at most %d'
                  % (len(data), MAX_FIELDS))
    host = data.get('host')
    if isinstance(host, str) and len(host) > MAX_HOST_CHARS:
        raise bad('host', 'got a name of %d characters, accepted: at most '
                  '%d' % (len(host), MAX_HOST_CHARS))
    interval = _number(data, 'report_interval')
    # <= 0 (or NaN) is malformed: the parser says so
    if interval is not None and interval > 0 and not (
            REPORT_INTERVAL_MIN <= interval <= REPORT_INTERVAL_MAX):
        raise bad('report_interval', 'got %r, accepted: %g to %g seconds '
                  '([host_agent] tick_interval x report_every_ticks)'
                  % (interval, REPORT_INTERVAL_MIN, REPORT_INTERVAL_MAX))
    pcpus = _number(data, 'pcpus')
    if pcpus is not None and pcpus > MAX_PCPUS:
        raise bad('pcpus', 'got %r, accepted: 1 to %d' % (pcpus, MAX_PCPUS))
    if pcpus is None or pcpus < 1:
        return              # the parser names it
    most = MAX_VCPUS_PER_PCPU * int(pcpus)
    records = (_length(data, 'vcpus') if counts is None
               else _number(counts, 'vcpus') if isinstance(counts, dict)
               else None)
    for name, count in (('vcpus', records),
                        ('io_vcpus', _number(data, 'io_vcpus'))):
        if count is not None and count > most:
            raise bad(name, 'got %d vCPUs on %d pCPUs, accepted: at most '
                      '%d per pCPU (%d)' % (count, pcpus,
                                            MAX_VCPUS_PER_PCPU, most))
