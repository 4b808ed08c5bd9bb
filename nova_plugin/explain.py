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

The plugin's filters and weigher record one ``Decision`` per host they look
at; a CLI or the demo reads them back with ``recent()``::

    for d in explain.recent(request='my-flavor'):
        print(d.stage, d.host, d.passed, d.weight, d.reason)

A filter judges every host of a request at once and records them as one
batch (``record_batch``): per host only its name, verdict or weight and the
inputs of its reason; the reason text is written when ``recent()`` returns
that decision, by the batch's ``reason_of`` (the same pure rule that gave
the verdict). So the hot path formats nothing, and a reader sees the same
reasons as if they had been written at once (the inputs are immutable:
reports, ``scoring.Pending``, the request and the settings of that
request).

Pure: no nova, no clock (decisions are numbered, not timestamped). The ring
keeps the last ``maxlen`` decisions of this scheduler worker.
"""

import collections
import threading

Decision = collections.namedtuple(
    'Decision', 'seq stage host request passed weight reason')
Decision.__doc__ = """One decision: stage is 'filter' or 'weigher'; passed is
True/False for a filter, None for a weigher; weight is the weigher's raw
value (before Nova normalises it), None for a filter."""


def _given(reason):
    return reason


class _Batch(object):
    """Decisions ``seq0 + i`` for ``items[i]``, ``start <= i``; each item
    is ``(host, passed, weight, args)`` and its reason ``reason_of(args)``,
    written once, when first read."""

    __slots__ = ('seq0', 'stage', 'request', 'items', 'reason_of', 'start',
                 'reasons')

    def __init__(self, seq0, stage, request, items, reason_of):
        self.seq0 = seq0
        self.stage = stage
        self.request = request
        self.items = items
        self.reason_of = reason_of
        self.start = 0
        self.reasons = {}

    def __len__(self):
        return len(self.items) - self.start

    def reason(self, i):
        text = self.reasons.get(i)
        if text is None:
            text = self.reason_of(self.items[i][3])
            self.reasons[i] = text
        return text


class Explainer(object):
    """Thread-safe ring of the last ``maxlen`` decisions."""

    def __init__(self, maxlen=1000):
        if int(maxlen) < 1:
            raise ValueError('maxlen must be >= 1, got %r' % (maxlen,))
        self.maxlen = int(maxlen)
        self._batches = collections.deque()
        self._count = 0             # decisions held
        self._next = 1              # seq of the next decision
        self._lock = threading.Lock()

    def record(self, stage, host, request, passed=None, weight=None,
               reason=''):
        """Record one decision whose reason is already written."""
        seq = self.record_batch(stage, request,
                                [(host, passed, weight, reason)], _given)
        return Decision(seq, stage, host, request, passed, weight, reason)

    def record_batch(self, stage, request, items, reason_of):
        """Record ``items``, each ``(host, passed, weight, args)``, as
        decisions of ``stage`` for ``request`` in that order; the reason of
        one is ``reason_of(args)``, called only when it is read. Returns
        the seq of the first item (the ring takes the list: do not change
        it afterwards)."""
        if not items:
            return None
        with self._lock:
            seq0 = self._next
            self._next += len(items)
            batch = _Batch(seq0, stage, request, items, reason_of)
            if len(items) > self.maxlen:
                batch.start = len(items) - self.maxlen
            self._batches.append(batch)
            self._count += len(batch)
            excess = self._count - self.maxlen
            while excess > 0:
                oldest = self._batches[0]
                if len(oldest) <= excess:
                    self._batches.popleft()
                    self._count -= len(oldest)
                    excess -= len(oldest)
                else:
                    oldest.start += excess
                    self._count -= excess
                    excess = 0
            return seq0

    def recent(self, host=None, request=None, stage=None, limit=None):
        """Decisions, oldest first, optionally filtered; last ``limit``."""
        with self._lock:
            found = [(b, i) for b in self._batches
                     if (request is None or b.request == request) and
                     (stage is None or b.stage == stage)
                     for i in range(b.start, len(b.items))
                     if host is None or b.items[i][0] == host]
            if limit:
                found = found[-limit:]
            out = []
            for b, i in found:
                item = b.items[i]
                out.append(Decision(b.seq0 + i, b.stage, item[0], b.request,
                                    item[1], item[2], b.reason(i)))
        return out

    def clear(self):
        with self._lock:
            self._batches.clear()
            self._count = 0


RING = Explainer()


def record(stage, host, request, passed=None, weight=None, reason=''):
    """Record into the process-wide ring."""
    return RING.record(stage, host, request, passed=passed, weight=weight,
                       reason=reason)


def record_batch(stage, request, items, reason_of):
    """Record a batch into the process-wide ring (``Explainer.record_batch``)."""
    return RING.record_batch(stage, request, items, reason_of)


def recent(host=None, request=None, stage=None, limit=None):
    """Read the process-wide ring."""
    return RING.recent(host=host, request=request, stage=stage, limit=limit)
