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
"""What the filters and the weigher read, prepared once, not once per host.

Description:
    Nova hands a filter (``filter_all``) and a weigher (``weigh_objects``)
    every host of a request at once. The plugin reads the request and the
    ``[iosched]`` options once per request (``Settings``), and the figures
    it needs from a host's report once per report (``Prepared``: kept in a
    per-host slot, checked by the report object's identity, so a new report
    is prepared again), so that the per-host cost is a lookup and a few
    arithmetic operations. The in-flight baselines of a report live there
    too (``pendings``). The verdicts are the pure rules'
    (``scoring.fits``, ``lsvm_rule.check``, ``slo_rule.admit``,
    ``scoring.score``) with the same arithmetic in the same order; the
    reasons are those rules' texts, written only when read
    (``explain.Explainer.record_batch``) or logged at DEBUG.

Requirements:
    The reports the store returns: ``host``, ``ts``, ``seq``, ``pcpus``,
    ``io_vcpus``, ``io_strength_total``, ``lsvm.*``, ``disk.*``.

Limitations:
    A host's slot holds its last prepared report until that host is looked
    at with a newer one (at most ``max_hosts`` slots: the least recently
    prepared go first). The LSVM verdicts of one report are memoised per
    request shape and pending vCPUs (at most ``MEMO_MAX`` of them).

No nova, no I/O, no clock.
"""

import collections
import math
import threading

from iosched.contract import payload_sections
from iosched.nova_plugin import inflight
from iosched.nova_plugin import lsvm_rule

# LSVM verdicts kept per report (request shapes x pending vCPUs).
MEMO_MAX = 256

Settings = collections.namedtuple('Settings', (
    'missing_report_policy missing_report_weight inflight_vcpu_profile '
    'max_io_vcpus_per_pcpu slo_capacity_fraction slo_lookup_failure_policy '
    'slo_unknown_source_policy'))


def settings(conf):
    """The ``[iosched]`` options the filters and the weigher read."""
    g = conf.iosched
    return Settings(
        missing_report_policy=g.missing_report_policy,
        missing_report_weight=g.missing_report_weight,
        inflight_vcpu_profile=g.inflight_vcpu_profile,
        max_io_vcpus_per_pcpu=g.max_io_vcpus_per_pcpu,
        slo_capacity_fraction=g.slo_capacity_fraction,
        slo_lookup_failure_policy=g.slo_lookup_failure_policy,
        slo_unknown_source_policy=g.slo_unknown_source_policy)


def iops_ok(value):
    """A finite number >= 0 (what ``slo_rule.admit`` accepts)."""
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value) and value >= 0)


class Prepared(object):
    """One report's figures; ``report`` is the report itself."""

    __slots__ = ('report', 'pcpus', 'io_vcpus', 'io_strength',
                 'capacity_iops', 'reserved_iops', 'slo_ok', 'bases',
                 'slo_source', 'unknowing', 'slo_plain',
                 '_lsvm', '_memo')

    def __init__(self, report):
        self.report = report
        self.pcpus = float(report.pcpus)
        self.io_vcpus = report.io_vcpus
        self.io_strength = report.io_strength_total
        disk = report.disk
        self.capacity_iops = disk.capacity_iops
        self.reserved_iops = disk.reserved_iops
        self.slo_source = getattr(disk, 'slo_source', '')
        # its agent cannot know the SLO floors attached there
        self.unknowing = (self.slo_source in
                          payload_sections.SLO_SOURCES_UNKNOWING)
        self.slo_ok = iops_ok(self.capacity_iops) and iops_ok(
            self.reserved_iops)
        # slo_rule.admit decides on the numbers alone (slo_check's
        # shortcut): valid, a capacity > 0, an agent that knows its floors
        self.slo_plain = (self.slo_ok and not self.unknowing and
                          self.capacity_iops > 0)
        # the in-flight baselines of this report (inflight.observe_node)
        self.bases = {}
        self._lsvm = None
        self._memo = {}

    @property
    def lsvm(self):
        """``lsvm_rule.host_terms`` of the report (read on first use)."""
        if self._lsvm is None:
            self._lsvm = lsvm_rule.host_terms(self.report)
        return self._lsvm

    def lsvm_passes(self, request, m_pending, n_pending):
        """``lsvm_rule.passes`` for this report, memoised."""
        key = (request.vcpus, request.latency_ms, request.dedicated,
               m_pending, n_pending)
        found = self._memo.get(key)
        if found is None:
            found = lsvm_rule.passes(self.lsvm, m_pending, n_pending,
                                     request)
            if len(self._memo) >= MEMO_MAX:
                self._memo.clear()
            self._memo[key] = found
        return found


class Cache(object):
    """Per host: the ``Prepared`` of the last report looked at."""

    def __init__(self, max_hosts=100000):
        self.max_hosts = int(max_hosts)
        self._slots = {}
        self._lock = threading.Lock()

    def prepared(self, report):
        """The ``Prepared`` of ``report`` (made if its host's slot holds
        another report).
        """
        held = self._slots.get(report.host)
        if held is not None and held.report is report:
            return held
        made = Prepared(report)
        with self._lock:
            slots = self._slots
            slots.pop(report.host, None)
            slots[report.host] = made
            while len(slots) > max(self.max_hosts, 1):
                del slots[next(iter(slots))]
        return made

    def __len__(self):
        return len(self._slots)

    def clear(self):
        with self._lock:
            self._slots.clear()


def fresh(reports, host_states, cache):
    """The ``Prepared`` of each host's fresh report, None where it has none.

    Reads ``reports.get(host)`` (``reports.get_many(hosts)`` when the store
    has it: one lock for the list); ``cache`` is the worker's ``Cache``
    (its bound follows the store's ``max_hosts``).
    """
    cache.max_hosts = getattr(reports, 'max_hosts', cache.max_hosts)
    get_many = getattr(reports, 'get_many', None)
    if get_many is not None:
        found = get_many([h.host for h in host_states])
    else:
        get = reports.get
        found = [get(h.host) for h in host_states]
    prepared = cache.prepared
    return [None if r is None else prepared(r) for r in found]


def pendings(reports, host_states, preps, profile):
    """The in-flight estimate (``scoring.Pending``) of each host with a
    fresh report, None where ``preps`` has None: the store's notes
    (``reports.pending``) and Nova's placements since the report, with the
    baselines kept in the report's ``Prepared`` (``inflight.observe_node``:
    ``inflight.Tracker``'s rule; a new report starts afresh).
    """
    pending = reports.pending
    observe = inflight.observe_node
    combine = inflight.combine
    return [None if prep is None else
            combine(pending(host_state.host),
                    observe(prep.bases, host_state), profile)
            for host_state, prep in zip(host_states, preps)]
