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
"""The latest HostReport of every compute host, as one scheduler worker has it.

Fed by ``iosched.nova_plugin.endpoint`` (one fanout consumer per scheduler
worker), read by the filters and the weigher; the worker's store is the
``store`` of its ``iosched.nova_plugin.state.SchedulerState`` (slim entries).
Thread-safe: the RPC server's threads write while the scheduler reads.

* Order and replays. A report replaces the held one if its ``ts`` is newer,
  or equal with a higher ``seq``. The held report is the newest ever
  accepted from its host (its *high-water mark*), and it is kept when it
  goes stale (until the host is evicted), so a report not newer is
  refused whether the held one is fresh (``ignored``: out-of-order
  delivery, or a duplicate such as a resync copy, which has the held
  ``ts``/``seq``) or stale (``replayed``: a signed report captured off
  the bus, or the held one itself, re-sent once its host fell silent;
  before issue 27 it was stored as current). An agent whose clock
  stepped back is refused until its clock passes its high-water mark (or
  the host is evicted and the age bound lets it in): the security rule
  wins over a fast recovery.
* Age bound. A report stamped more than ``max_age`` seconds before the
  store's clock is refused outright (``too_old``), whatever the store
  holds: the bound for a host the store never heard of (a worker's empty
  store after a restart) or has evicted. ``max_age`` 0 (the scheduler's
  default, ``[iosched] report_max_age``) is each report's own TTL plus the
  clock skew, ``ttl_intervals * report_interval + max_clock_skew``; None
  (the constructor's default, for stores fed from files or tests) no bound.
* Clock skew. A report stamped more than ``max_clock_skew`` seconds ahead
  of the store's clock is refused (``future``): ordered by the sender's
  ``ts``, one report from the far future would hide every genuine report
  of its host until then. So a bogus ``ts`` costs a host at most
  ``max_clock_skew`` plus one TTL, and none when reports are signed
  (``iosched.nova_plugin.endpoint``, ``[iosched] report_auth``).
* Staleness. A report is stale once ``ttl_intervals * report_interval``
  seconds have passed since this store *received* it, on the store's clock
  (injectable: the demo runs on a simulated clock). The agent's ``ts`` is
  only used for ordering, so clock skew between hosts cannot make a live
  host look dead. ``get()`` returns None for a stale report.
* In-flight estimate. ``note_placement()`` adds up placements made since the
  host's last report; a newer report clears them (it is assumed to include
  them).
* Bounded memory, real hosts first. A host ``get()`` has been asked about
  is *known* (Nova's filters ask only about hosts Nova has). Beyond
  ``max_hosts`` the unknown host whose report was received longest ago is
  evicted (O(1): unknown hosts are kept in order of receipt); a report
  from a new unknown host when every held host is known is refused
  (``refused``); known hosts are evicted (oldest first) only when they
  alone exceed ``max_hosts``. So invented host names cannot push out
  hosts Nova schedules to.
* Slim entries (``slim=True``, the scheduler's store): what the filters
  and the weigher read, not the report's per-vCPU records and decisions
  (``slim()``): 1.1 KB per host instead of 43 KB for a report of 32 vCPUs
  and 50 decisions, so ``max_hosts`` bounds the memory for real
  (``bench/store_memory.py``). The decisions stay on the host, in
  ``iosched-explain`` and ``iosched-status``. Such a store does not keep
  the records (``keeps_records`` is False), so the endpoint does not
  parse them either (``HostReport.head_from_dict``).
* Counts (``stats()``), for logs, a benchmark and the CLI: reports
  ``received`` (the sum of the others but ``evicted``), ``stored``,
  ``ignored`` (out of order or a duplicate, e.g. a resync copy),
  ``replayed`` (not newer than the held report, which is stale),
  ``too_old`` (older than the age bound), ``future`` (stamped beyond the
  clock skew), ``refused`` (a new unknown host while the store is full of
  known ones), ``dropped`` (malformed or
  unauthenticated, counted by the endpoint through ``note_dropped()``),
  ``evicted``; hosts held, fresh and stale; the age of the newest and the
  oldest report held.
* Version. ``version`` grows with every change a reader could see (a
  report stored or evicted, a placement noted, new settings, a clear):
  the filters' per-request figures (``iosched.nova_plugin.request_view``)
  are reused only while it holds.
"""

import collections
import dataclasses
import itertools
import operator
import threading
import time

from iosched.nova_plugin import scoring

# What ``admit()`` did with a report.
STORED = 'stored'
OUT_OF_ORDER = 'out_of_order'
FUTURE = 'future'
REFUSED = 'refused'
REPLAYED = 'replayed'
TOO_OLD = 'too_old'
# What stats() counts as received (= stored + every reason not to).
_RECEIVED = ('stored', 'ignored', 'dropped', 'future', 'refused',
             'replayed', 'too_old')


def slim(report):
    """``report`` without what no filter or weigher reads: the per-vCPU
    records and the decisions. The one figure the filters derive from the
    vCPU records, the count of non-LSVM vCPUs (``lsvm_rule.figures``), is
    kept in ``lsvm.nlsvm_vcpus`` when the agent did not send it (and left
    None without records: the rule derives 0 either way), as
    ``HostReport.head_from_dict`` does.
    """
    if not report.vcpus and not report.decisions:
        return report
    lsvm = report.lsvm
    if lsvm.nlsvm_vcpus is None and report.vcpus:
        lsvm = dataclasses.replace(lsvm, nlsvm_vcpus=max(
            0, len(report.vcpus) - lsvm.count))
    return dataclasses.replace(report, vcpus=(), decisions=(), lsvm=lsvm)


_RECEIVED_AT = operator.attrgetter('received_at')
_INTERVAL = operator.attrgetter('report.report_interval')
_REPORT = operator.attrgetter('report')
_PENDING = operator.attrgetter('pending')


class _Entry(object):
    __slots__ = ('report', 'received_at', 'pending')

    def __init__(self, report, received_at):
        self.report = report
        self.received_at = received_at
        self.pending = scoring.NO_PENDING


class ReportStore(object):
    """Latest report per host, with staleness and an in-flight estimate."""

    def __init__(self, clock=time.time, ttl_intervals=3.0, max_hosts=100000,
                 max_clock_skew=300.0, slim=False, max_age=None):
        self._clock = clock
        self._slim = slim
        # Whether a stored report keeps its per-vCPU records and decisions
        # (the endpoint parses and verifies them only then).
        self.keeps_records = not slim
        self._lock = threading.Lock()
        # host -> _Entry, least recently received first
        self._entries = collections.OrderedDict()
        # held hosts no filter has asked about, least recently received
        # first (the eviction candidates); values unused
        self._unknown = collections.OrderedDict()
        # hosts the filters asked about (bounded like the entries)
        self._known = set()
        self._counts = dict.fromkeys(_RECEIVED + ('evicted',), 0)
        self.ttl_intervals = float(ttl_intervals)
        self.max_hosts = int(max_hosts)
        self.max_clock_skew = float(max_clock_skew)
        self.max_age = None if max_age is None else float(max_age)
        # see the module docstring, "Version"
        self.version = 0

    def configure(self, ttl_intervals=None, max_hosts=None,
                  max_clock_skew=None, max_age=None):
        """Apply new settings (from ``[iosched]``); None keeps the current."""
        with self._lock:
            self.version += 1
            if ttl_intervals is not None:
                self.ttl_intervals = float(ttl_intervals)
            if max_clock_skew is not None:
                self.max_clock_skew = float(max_clock_skew)
            if max_age is not None:
                self.max_age = float(max_age)
            if max_hosts is not None:
                self.max_hosts = int(max_hosts)
                self._evict_locked()

    def now(self):
        """The store's clock (the demo's is simulated)."""
        return self._clock()

    def _is_stale(self, entry, now):
        ttl = self.ttl_intervals * entry.report.report_interval
        return now - entry.received_at > ttl

    def age_limit(self, report):
        """Seconds before the store's clock ``report`` may be stamped
        (None: no bound); see the module docstring, "Age bound".
        """
        if self.max_age is None:
            return None
        if self.max_age > 0:
            return self.max_age
        return (self.ttl_intervals * report.report_interval +
                self.max_clock_skew)

    def high_water(self, host):
        """``(ts, seq)`` of the newest report accepted from ``host`` and
        still held (stale or not), or None.
        """
        with self._lock:
            entry = self._entries.get(host)
            return (None if entry is None else
                    (entry.report.ts, entry.report.seq))

    def _evict_locked(self):
        while len(self._entries) > max(self.max_hosts, 0):
            if self._unknown:
                host, _ = self._unknown.popitem(last=False)
                del self._entries[host]
            else:
                host, _ = self._entries.popitem(last=False)
            self._counts['evicted'] += 1

    def update(self, report):
        """Store ``report`` unless the held one is newer; True if stored."""
        return self.admit(report) == STORED

    def admit(self, report, tail_counts=None):
        """Store ``report`` or say why not: STORED, OUT_OF_ORDER, ...

        ``tail_counts``: the report came head-only (RPC 1.3), with no
        per-vCPU records nor decisions; held as it is.
        """
        now = self._clock()
        host = report.host
        with self._lock:
            if report.ts > now + self.max_clock_skew:
                self._counts['future'] += 1
                return FUTURE
            limit = self.age_limit(report)
            if limit is not None and now - report.ts > limit:
                self._counts['too_old'] += 1
                return TOO_OLD
            held = self._entries.get(host)
            if held is not None:
                old = held.report
                newer = (report.ts > old.ts or
                         (report.ts == old.ts and report.seq > old.seq))
                if not newer:
                    # fresh: late or a duplicate (a resync copy); stale:
                    # a copy re-sent to revive a silent host, or older
                    if self._is_stale(held, now):
                        self._counts['replayed'] += 1
                        return REPLAYED
                    self._counts['ignored'] += 1
                    return OUT_OF_ORDER
            known = host in self._known
            if (held is None and not known and not self._unknown and
                    len(self._entries) >= self.max_hosts):
                # full of hosts Nova asked about: keep them
                self._counts['refused'] += 1
                return REFUSED
            self._entries.pop(host, None)
            self._entries[host] = _Entry(
                slim(report) if self._slim else report, now)
            if not known:
                self._unknown.pop(host, None)
                self._unknown[host] = None
            self._counts['stored'] += 1
            self.version += 1
            self._evict_locked()
            return STORED

    def note_dropped(self):
        """Count a report dropped before it reached the store (malformed)."""
        with self._lock:
            self._counts['dropped'] += 1

    def get(self, host):
        """The host's latest report, or None if missing or stale."""
        now = self._clock()
        with self._lock:
            if host not in self._known:
                self._note_known_locked(host)
            entry = self._entries.get(host)
            if entry is None or self._is_stale(entry, now):
                return None
            return entry.report

    def get_many(self, hosts):
        """``get(host)`` of each of ``hosts``, in order, with one clock
        read and one lock for the list (``read_many``'s reports).
        """
        return self.read_many(hosts)[0]

    def read_many(self, hosts):
        """``(reports, pendings, version, earliest)`` of ``hosts`` under one
        clock read and one lock: ``get(host)`` and ``pending(host)`` of
        each, in order (None and ``scoring.NO_PENDING`` where no fresh
        report), the ``version`` they belong to, and ``(received_at,
        ttl)`` of the fresh report that goes stale first (None if none):
        the figures hold while ``now - received_at <= ttl``.
        """
        now = self._clock()
        with self._lock:
            fast = self._read_fresh_locked(hosts, now)
        if fast is not None:
            return fast
        found, pending = [], []
        no_pending = scoring.NO_PENDING
        earliest, due = None, None
        ttl_intervals = self.ttl_intervals
        with self._lock:
            known, entries = self._known, self._entries
            for host in hosts:
                if host not in known:
                    self._note_known_locked(host)
                entry = entries.get(host)
                if entry is None:
                    found.append(None)
                    pending.append(no_pending)
                    continue
                ttl = ttl_intervals * entry.report.report_interval
                received = entry.received_at
                if now - received > ttl:
                    found.append(None)
                    pending.append(no_pending)
                    continue
                found.append(entry.report)
                pending.append(entry.pending)
                if due is None or received + ttl < due:
                    due, earliest = received + ttl, (received, ttl)
            version = self.version
        return found, pending, version, earliest

    def _read_fresh_locked(self, hosts, now):
        """``read_many``'s answer when every host is known and has a fresh
        report, without a per-host Python loop; else None.

        Every report is fresh when ``now - r0 <= ttl_intervals * i0``
        with r0 the oldest ``received_at`` and i0 the shortest
        ``report_interval`` (IEEE subtraction and multiplication by a
        number >= 0 are monotone: each host's own test then passes).
        ``earliest`` is the first smallest ``received_at + ttl``, as the
        loop finds it.
        """
        ttl_intervals = self.ttl_intervals
        if not hosts or not ttl_intervals >= 0 or not (
                self._known.issuperset(hosts)):
            return None
        entries = list(map(self._entries.get, hosts))
        if None in entries:
            return None
        received = list(map(_RECEIVED_AT, entries))
        intervals = list(map(_INTERVAL, entries))
        if not now - min(received) <= ttl_intervals * min(intervals):
            return None
        dues = list(map(operator.add, received, map(
            operator.mul, itertools.repeat(ttl_intervals), intervals)))
        k = dues.index(min(dues))
        return (list(map(_REPORT, entries)), list(map(_PENDING, entries)),
                self.version,
                (received[k], ttl_intervals * intervals[k]))

    def _note_known_locked(self, host):
        # Only Nova's filters and weighers call get(): the host exists.
        # Bounded (twice the entries: names Nova asks about before their
        # first report, and hosts since deleted from Nova, fit).
        if len(self._known) >= 2 * max(self.max_hosts, 1):
            return
        self._known.add(host)
        self._unknown.pop(host, None)

    def note_placement(self, host, io_vcpus, lsvm_vcpus=0, io_strength=None,
                       vcpus=None):
        """Count a placement on ``host`` until its next report arrives.

        ``io_strength`` defaults to 1.0 per I/O vCPU (see
        ``scoring.request_io_strength`` for a request's estimate); ``vcpus``
        (all of the placement's vCPUs) defaults to the larger of
        ``io_vcpus`` and ``lsvm_vcpus``. A host without a held report has
        nothing to correct: the note is dropped. Returns whether it was
        recorded.
        """
        if io_strength is None:
            io_strength = float(io_vcpus)
        if vcpus is None:
            vcpus = max(int(io_vcpus), int(lsvm_vcpus))
        with self._lock:
            entry = self._entries.get(host)
            if entry is None:
                return False
            p = entry.pending
            entry.pending = scoring.Pending(
                placements=p.placements + 1,
                io_vcpus=p.io_vcpus + int(io_vcpus),
                lsvm_vcpus=p.lsvm_vcpus + int(lsvm_vcpus),
                io_strength=p.io_strength + float(io_strength),
                vcpus=scoring.pending_vcpus(p) + int(vcpus))
            self.version += 1
            return True

    def pending(self, host):
        """Placements noted on ``host`` since its last report."""
        with self._lock:
            entry = self._entries.get(host)
            return entry.pending if entry is not None else scoring.NO_PENDING

    def hosts(self):
        """Sorted names of the hosts held, fresh or stale."""
        with self._lock:
            return sorted(self._entries)

    def stats(self):
        """Counts and staleness, for logs, the CLI and the demo."""
        now = self._clock()
        with self._lock:
            stale = [h for h, e in self._entries.items()
                     if self._is_stale(e, now)]
            # Entries are in order of receipt: oldest first, newest last.
            oldest = next(iter(self._entries.values()), None)
            newest = (self._entries[next(reversed(self._entries))]
                      if self._entries else None)
            return dict(
                self._counts,
                received=sum(self._counts[k] for k in _RECEIVED),
                hosts=len(self._entries),
                known_hosts=len(self._known),
                fresh=len(self._entries) - len(stale),
                stale=len(stale),
                stale_hosts=sorted(stale),
                pending_hosts=sum(1 for e in self._entries.values()
                                  if e.pending.placements),
                oldest_age=(now - oldest.received_at
                            if oldest is not None else None),
                newest_age=(now - newest.received_at
                            if newest is not None else None),
                ttl_intervals=self.ttl_intervals,
                max_age=self.max_age,
                max_hosts=self.max_hosts)

    def clear(self):
        """Forget every report and counter (tests, resync)."""
        with self._lock:
            self.version += 1
            self._entries.clear()
            self._unknown.clear()
            self._known.clear()
            self._counts = dict.fromkeys(self._counts, 0)
