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
"""Each request's report figures, read once and shared by every iosched
filter and the weigher.

Description:
    Nova runs a request's filters one after the other on the hosts the
    previous one kept, then the weighers on the survivors, all in the
    thread that serves ``select_destinations``. ``Views.rows`` gives, per
    host, its fresh report's ``prepared.Prepared``, the store's notes
    since that report (``exact``) and, on first use, the in-flight
    estimate (``pending``: ``prepared.pendings``'s rule); the first
    filter of a request reads them from the store (``ReportStore.
    read_many``: one lock for the list) and the others and the weigher
    find them in this thread's view. ``Views.columns`` gives the same as
    ``Columns`` (hosts, validity stamps, rows, prepared figures, in-flight
    estimates): a filter hands the hosts it keeps to the next class
    (``offer``), which takes them after one list comparison and one pass
    over the HostStates' counters; a request whose hosts, reports, notes
    and counters are all those of the previous request's read takes its
    rows whole (``_Read``).

    A view belongs to one request: it is reused only for the same
    RequestSpec object with the same ``instance_uuid`` and flavor (a
    multi-create sets a new uuid per instance), the same
    ``inflight_vcpu_profile``, store and prepared cache; only while the
    store's ``version`` holds (no report stored or evicted, no placement
    noted since) and no report of it has gone stale; and a host's row
    only while its HostState keeps the ``num_instances`` and
    ``vcpus_used`` it had (Nova's ``consume_from_request`` changes them).
    Otherwise the figures are read again (a row of the previous request
    is taken again when the store gives the same report and notes objects
    for the host and its counters and the option are unchanged: its
    in-flight estimate is then the same), so the verdicts and weights are
    those of reading the store at each call (tests/unit/nova_plugin/
    test_request_view.py holds them equal). One view per thread (a
    green thread under eventlet): concurrent requests never share one.

No nova, no I/O; the store's clock.
"""

import operator
import threading

from iosched.nova_plugin import request_columns
from iosched.nova_plugin import request_spec


Row = request_columns.Row
Columns = request_columns.Columns
_stamps_of = request_columns._stamps_of
_STAMP_HOST = request_columns._STAMP_HOST
in_aggregates = request_columns.in_aggregates


def columns(views, reports, cache, spec_obj, host_states, profile,
            counters=True):
    """``Columns`` of ``host_states`` from ``views`` (a ``Views``, or
    anything with its ``rows``); ``counters``: see ``Views.columns``.
    """
    get = getattr(views, 'columns', None)
    if get is not None:
        return get(reports, cache, spec_obj, host_states, profile,
                   counters)
    return Columns(host_states, None, views.rows(
        reports, cache, spec_obj, host_states, profile), profile)


def narrow(views, cols, oks):
    """Hand the hosts of ``cols`` that passed (``oks``) to the next
    class of the request (a filter's survivors are the next one's hosts).
    """
    offer = getattr(views, 'offer', None)
    if offer is not None:
        offer(cols, oks)


class _View(object):
    __slots__ = ('key', 'version', 'earliest', '_rows', '_lazy', '_prev',
                 '_prev_lazy', 'cols', 'read', 'prev_read')

    def __init__(self, key, version, prev, prev_read=None, prev_lazy=None):
        self.key = key
        self.version = version
        self.earliest = None        # (received_at, ttl) due first
        # id(host_state) -> Row, this request; with the rows of ``_lazy``
        # (a _Read taken whole, entered on first use)
        self._rows = {}
        self._lazy = None
        # the previous request's rows, the same way
        self._prev = prev
        self._prev_lazy = prev_lazy
        # the Columns of the hosts the last class kept (``offer``)
        self.cols = None
        # the _Read of this view's last read of a whole host list, and the
        # previous view's
        self.read = None
        self.prev_read = prev_read

    @property
    def rows(self):
        """id(host_state) -> Row of this request."""
        lazy = self._lazy
        if lazy is not None:
            self._lazy = None
            self._rows.update(zip(map(id, lazy.hosts), lazy.rows))
        return self._rows

    @rows.setter
    def rows(self, value):
        self._lazy = None
        self._rows = value

    def take(self, read):
        """``read``'s rows are this request's (entered when used)."""
        if self._lazy is not None:
            self.rows               # enter the ones before
        self._lazy = read

    @property
    def prev(self):
        """id(host_state) -> Row of the previous request."""
        lazy = self._prev_lazy
        if lazy is not None:
            self._prev_lazy = None
            self._prev.update(zip(map(id, lazy.hosts), lazy.rows))
        return self._prev

    @prev.setter
    def prev(self, value):
        self._prev_lazy = None
        self._prev = value

    def has_rows(self):
        return bool(self._rows) or self._lazy is not None


# Nova's HostState counters the in-flight estimate reads
_COUNTS = operator.attrgetter('num_instances', 'vcpus_used')


def _counts(host_state):
    return (getattr(host_state, 'num_instances', 0),
            getattr(host_state, 'vcpus_used', 0))


def _same(a, b):
    return (a[0] is b[0] and a[1] == b[1] and a[2] is b[2] and
            a[3] == b[3] and a[4] is b[4] and a[5] is b[5])


def _expired(view, now):
    earliest = view.earliest
    return earliest is not None and now - earliest[0] > earliest[1]


class Views(object):
    """Per thread: the view of the request being scheduled."""

    def __init__(self):
        self._local = threading.local()

    def clear(self):
        """End this thread's request: the next call starts a new view (as
        a new RequestSpec does); its rows may serve again (``_read``).
        """
        view = getattr(self._local, 'view', None)
        if view is not None:
            view.version = -1

    def _view(self, reports, cache, spec_obj, profile):
        key = (spec_obj, request_spec.stored(spec_obj, 'instance_uuid'),
               request_spec.stored(spec_obj, 'flavor'), profile, reports,
               cache)
        view = getattr(self._local, 'view', None)
        if (view is None or view.version != reports.version or
                not _same(view.key, key) or _expired(view, reports.now())):
            # a row of the previous request serves again once the store
            # says its report and notes are still the host's (_read)
            same = not (view is None or view.key[4] is not reports or
                        view.key[5] is not cache)
            view = self._local.view = (_View(
                key, reports.version, view._rows,
                view.read or view.prev_read, view._lazy) if same else
                _View(key, reports.version, {}))
        return view

    def columns(self, reports, cache, spec_obj, host_states, profile,
                counters=True):
        """``Columns`` of ``host_states`` (a list): those the previous
        class of this request kept (``offer``) when they are the same
        hosts in the same order with the same counters, else those of
        ``rows`` (the previous request's, whole, when ``_read`` takes its
        rows again).

        ``counters`` False: the caller reads neither the in-flight
        estimates (``pendings``) nor anything else the HostStates'
        counters change (the SLO check: the reports and the store's notes,
        which the view's version holds), so the counters are not read
        again to take the previous class's columns.
        """
        view = self._view(reports, cache, spec_obj, profile)
        held = view.cols
        if held is not None and held.counts is not None and (
                held.hosts == host_states):
            if not counters or _stamps_of(host_states) == held.counts:
                return held
        out, read = self._rows(view, reports, cache, host_states, profile)
        if read is not None:
            cols = read.cols
            if cols is None:
                cols = read.cols = Columns(read.hosts, read.counts,
                                           read.rows, profile)
        else:
            cols = Columns(list(host_states), _stamps_of(host_states), out,
                           profile)
        view.cols = cols
        return cols

    def latest(self, host_states):
        """The ``Columns`` this thread's request last gave, if they are
        of ``host_states`` (the same objects in the same order), else None.
        """
        view = getattr(self._local, 'view', None)
        cols = None if view is None else view.cols
        if cols is not None and cols.hosts == host_states:
            return cols
        return None

    def offer(self, cols, oks):
        """The hosts of ``cols`` whose ``oks`` is true are the next
        class's (held while ``cols`` is this thread's latest).
        """
        view = getattr(self._local, 'view', None)
        if view is not None and view.cols is cols:
            view.cols = cols.narrow(oks)

    def rows(self, reports, cache, spec_obj, host_states, profile):
        """The ``Row`` of each of ``host_states`` (a list), in order.

        ``reports`` is the worker's ``store.ReportStore``, ``cache`` its
        ``prepared.Cache``, ``profile`` ``[iosched]
        inflight_vcpu_profile``.
        """
        view = self._view(reports, cache, spec_obj, profile)
        return self._rows(view, reports, cache, host_states, profile)[0]

    def _rows(self, view, reports, cache, host_states, profile):
        """``(rows, read)``: ``read`` is the ``_Read`` of ``host_states``
        when this call read them all (None otherwise).
        """
        out = [None] * len(host_states)
        if not view.has_rows():     # a new view: every host is read
            return out, self._read(view, reports, cache, host_states,
                                   range(len(host_states)), out, profile)
        get = view.rows.get
        todo = []
        for i, host_state in enumerate(host_states):
            row = get(id(host_state))
            if row is not None and row.host_state is host_state:
                try:
                    counts = _COUNTS(host_state)
                except AttributeError:
                    counts = _counts(host_state)
                if row.num == counts[0] and row.used == counts[1]:
                    out[i] = row
                    continue
            todo.append(i)
        read = None
        if todo:
            read = self._read(view, reports, cache, host_states, todo, out,
                              profile)
        return out, read

    def _read(self, view, reports, cache, host_states, todo, out, profile):
        cache.max_hosts = getattr(reports, 'max_hosts', cache.max_hosts)
        stamps = (_stamps_of(host_states) if len(todo) == len(host_states)
                  else None)
        found, exact, version, earliest = reports.read_many(
            [host_states[i].host for i in todo] if stamps is None
            else list(map(_STAMP_HOST, stamps)))
        if version != view.version:
            # the store changed since this view began: start it again
            # from this read, and read the hosts already held anew
            view.version, view.earliest = version, None
            view.cols = None
            if view.rows:
                view.prev = dict(view.prev)
                view.prev.update(view.rows)
                view.rows = {}
            if len(todo) < len(host_states):
                todo = range(len(host_states))
                stamps = _stamps_of(host_states)
                found, exact, version, earliest = reports.read_many(
                    [h.host for h in host_states])
                view.version = version
        if earliest is not None and (
                view.earliest is None or
                earliest[0] + earliest[1] < sum(view.earliest)):
            view.earliest = earliest
        whole = len(todo) == len(host_states)
        counts = stamps if whole else None
        last = view.prev_read
        if counts is not None and last is not None and last.same(
                host_states, found, exact, counts, profile):
            # every host's report, notes and counters are those of the
            # previous request's read: its rows, as the loop below would
            # take them one by one
            out[:] = last.rows
            view.take(last)
            view.read = last
            return last
        held, prev = view.rows, view.prev
        prepared = cache.prepared
        for i, report, notes in zip(todo, found, exact):
            host_state = host_states[i]
            key = id(host_state)
            num, used = _counts(host_state)
            row = prev.get(key)
            if (row is None or row.host_state is not host_state or
                    row.exact is not notes or row.num != num or
                    row.used != used or row.profile != profile or
                    (row.prep.report if row.prep is not None else None)
                    is not report):
                row = Row(host_state, num, used,
                          None if report is None else prepared(report),
                          notes, profile)
            out[i] = held[key] = row
        if counts is None:
            return None
        view.read = _Read(list(host_states), found, exact, counts, list(out),
                          profile)
        return view.read


class _Read(object):
    """One read of a whole host list: the hosts, the reports and notes
    the store gave, the counters, the rows and their ``Columns`` (made
    on first use, shared by the requests that take these rows again).
    """

    __slots__ = ('hosts', 'found', 'exact', 'counts', 'rows', 'profile',
                 'cols')

    def __init__(self, hosts, found, exact, counts, rows, profile):
        self.hosts = hosts
        self.found = found
        self.exact = exact
        self.counts = counts
        self.rows = rows
        self.profile = profile
        self.cols = None

    def same(self, host_states, found, exact, counts, profile):
        """Whether this read holds the same host objects, report
        objects, notes objects, counters and profile.
        """
        is_ = operator.is_
        return (self.profile == profile and
                len(self.hosts) == len(host_states) and
                self.counts == counts and
                all(map(is_, self.hosts, host_states)) and
                all(map(is_, self.found, found)) and
                all(map(is_, self.exact, exact)))
