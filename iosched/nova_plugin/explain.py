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
at in the worker's ``Explainer`` (``iosched.nova_plugin.state.SchedulerState.
explainer``); the demo reads them back with ``recent()``::

    for d in state.explainer.recent(request='my-flavor'):
        print(d.stage, d.host, d.passed, d.weight, d.reason)

A filter judges every host of a request at once and records them as one
batch (``record_batch``): the lists it has anyway (the hosts, their
verdicts or weights) and a ``reason_of(i)`` that writes the i-th host's
reason when ``recent()`` returns that decision (the same pure rule that
gave the verdict). So the hot path formats nothing and allocates nothing
per host, and a reader sees the same reasons as if they had been written
at once (their inputs are immutable: reports, ``scoring.Pending``, the
request and the settings of that request).

Pure: no nova, no clock (decisions are numbered, not timestamped). The ring
keeps the last ``maxlen`` decisions of its scheduler worker.
"""

import collections
import threading

Decision = collections.namedtuple(
    'Decision', 'seq stage host request passed weight reason')
Decision.__doc__ = """One decision: stage is 'filter' or 'weigher'; passed is
True/False for a filter, None for a weigher; weight is the weigher's raw
value (before Nova normalises it), None for a filter."""


def _host_name(host):
    return host if isinstance(host, str) else host.host


class _Batch(object):
    """Decisions ``seq0 + i`` for ``start <= i < len(hosts)``: host
    ``hosts[i]`` (a name, or a HostState: its ``host``), ``passed[i]``,
    ``weights[i]`` (None: all None) and the reason ``reason_of(i)``,
    written once, when first read.
    """

    __slots__ = ('seq0', 'stage', 'request', 'hosts', 'passed', 'weights',
                 'reason_of', 'start', 'reasons')

    def __init__(self, seq0, stage, request, hosts, passed, weights,
                 reason_of):
        self.seq0 = seq0
        self.stage = stage
        self.request = request
        self.hosts = hosts
        self.passed = passed
        self.weights = weights
        self.reason_of = reason_of
        self.start = 0
        self.reasons = {}

    def __len__(self):
        return len(self.hosts) - self.start

    def decision(self, i):
        text = self.reasons.get(i)
        if text is None:
            text = self.reason_of(i)
            self.reasons[i] = text
        return Decision(self.seq0 + i, self.stage, _host_name(self.hosts[i]),
                        self.request,
                        None if self.passed is None else self.passed[i],
                        None if self.weights is None else self.weights[i],
                        text)


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
        seq = self.record_batch(stage, request, [host],
                                lambda i: reason, [passed], [weight])
        return Decision(seq, stage, host, request, passed, weight, reason)

    def record_batch(self, stage, request, hosts, reason_of, passed=None,
                     weights=None):
        """Record one decision of ``stage`` for ``request`` per entry of
        ``hosts`` (names, or HostStates), in that order, with
        ``passed[i]`` and ``weights[i]`` (None: None for all) and the
        reason ``reason_of(i)``, called only when read. Returns the seq of
        the first (None for no host). The ring keeps the sequences: do not
        change them afterwards.
        """
        if not hosts:
            return None
        with self._lock:
            seq0 = self._next
            self._next += len(hosts)
            batch = _Batch(seq0, stage, request, hosts, passed, weights,
                           reason_of)
            if len(hosts) > self.maxlen:
                batch.start = len(hosts) - self.maxlen
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
                     for i in range(b.start, len(b.hosts))
                     if host is None or _host_name(b.hosts[i]) == host]
            if limit:
                found = found[-limit:]
            return [b.decision(i) for b, i in found]

    def clear(self):
        with self._lock:
            self._batches.clear()
            self._count = 0
