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
"""A bounded ring of recent filter and weigher decisions: the "why".

``IoDensityFilter`` and ``IoStrengthWeigher`` record one ``Decision`` per
host they look at; a CLI or the demo reads them back with ``recent()``::

    for d in explain.recent(request='my-flavor'):
        print(d.stage, d.host, d.passed, d.weight, d.reason)

Pure: no nova, no clock (decisions are numbered, not timestamped). The ring
keeps the last ``maxlen`` decisions of this scheduler worker.
"""

import collections
import itertools
import threading

Decision = collections.namedtuple(
    'Decision', 'seq stage host request passed weight reason')
Decision.__doc__ = """One decision: stage is 'filter' or 'weigher'; passed is
True/False for a filter, None for a weigher; weight is the weigher's raw
value (before Nova normalises it), None for a filter."""


class Explainer(object):
    """Thread-safe ring of the last ``maxlen`` decisions."""

    def __init__(self, maxlen=1000):
        self._ring = collections.deque(maxlen=maxlen)
        self._seq = itertools.count(1)
        self._lock = threading.Lock()

    def record(self, stage, host, request, passed=None, weight=None,
               reason=''):
        with self._lock:
            decision = Decision(next(self._seq), stage, host, request,
                                passed, weight, reason)
            self._ring.append(decision)
        return decision

    def recent(self, host=None, request=None, stage=None, limit=None):
        """Decisions, oldest first, optionally filtered; last ``limit``."""
        with self._lock:
            found = [d for d in self._ring
                     if (host is None or d.host == host) and
                     (request is None or d.request == request) and
                     (stage is None or d.stage == stage)]
        return found[-limit:] if limit else found

    def clear(self):
        with self._lock:
            self._ring.clear()


RING = Explainer()


def record(stage, host, request, passed=None, weight=None, reason=''):
    """Record into the process-wide ring."""
    return RING.record(stage, host, request, passed=passed, weight=weight,
                       reason=reason)


def recent(host=None, request=None, stage=None, limit=None):
    """Read the process-wide ring."""
    return RING.recent(host=host, request=request, stage=stage, limit=limit)
