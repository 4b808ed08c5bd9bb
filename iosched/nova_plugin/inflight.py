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
"""In-flight estimate inside nova-scheduler, from Nova's own HostState.

Description:
    No filter or weigher hook sees Nova's final choice, but Nova tells it
    anyway: ``HostState.consume_from_request`` on the chosen host adds the
    flavor's vCPUs to ``vcpus_used`` and 1 to ``num_instances``, and the
    scheduler reuses the same HostState objects for the next requests until
    the compute node record refreshes. So, per host, the ``Tracker``
    remembers ``(num_instances, vcpus_used)`` the first time this worker
    looks at the host after a new report was stored (a report is known by
    its ``(ts, seq)``); a later look sees the placements made since that
    report as the growth of both. A newer report resets the baseline (it is
    assumed to include those VMs). The filters and the weigher keep the
    baselines with the report's prepared figures instead
    (``observe_node``, ``iosched.nova_plugin.prepared``: the same rule, no
    lock, no lookup of its own).

    ``combine`` turns that delta into a ``scoring.Pending`` on top of what
    ``ReportStore.note_placement`` recorded (exact): placements the notes
    already explain are not counted twice, and the vCPUs of the others are
    counted by ``[iosched] inflight_vcpu_profile``: ``mixed`` (default: I/O
    vCPUs, 0.5 I/O strength each), ``io`` (worst case: 1.0 each) or ``cpu``
    (ignored). They never count as LSVM vCPUs: this worker does not know
    their flavor; they count as other (non-LSVM) vCPUs for the LSVM
    filter's fairness room.

Requirements:
    Duck-typed HostState (``host``, ``nodename``, ``num_instances``,
    ``vcpus_used``). No nova import, no clock.

Limitations:
    A compute node refresh that drops ``vcpus_used`` below the baseline (a
    VM deleted) hides placements until the next report: negative deltas
    count as 0. Placements made before this worker's first look after a
    report (another worker's, or during the same request) are not seen;
    every worker keeps its own estimate.

Spec URL:
    docs/nova.md ("Rules, with numbers"), issue 5.
"""

import collections
import dataclasses
import threading

from iosched.nova_plugin import scoring

PROFILES = ('mixed', 'cpu', 'io')
# Estimated I/O strength per vCPU of a placement of unknown flavor.
STRENGTH_PER_VCPU = {'mixed': 0.5, 'io': 1.0, 'cpu': 0.0}


@dataclasses.dataclass(frozen=True)
class Delta:
    """Nova's placements on a host since the baseline."""

    placements: int = 0
    vcpus: int = 0


NO_DELTA = Delta()


# delta := (max(0, num_instances - base_instances),
#           max(0, vcpus_used - base_vcpus))
# base := (num_instances, vcpus_used) at the first look after report key
def delta_since(base, num_instances, vcpus_used):
    """Delta from ``base`` = (num_instances, vcpus_used); never negative."""
    placements = max(0, num_instances - base[0])
    vcpus = max(0, vcpus_used - base[1])
    if not placements and not vcpus:
        return NO_DELTA
    return Delta(placements=placements, vcpus=vcpus)


class Tracker(object):
    """Per host: the baseline of the held report; bounded, thread-safe."""

    def __init__(self, max_hosts=100000):
        self.max_hosts = int(max_hosts)
        self._lock = threading.Lock()
        # host -> (report_key, (num_instances, vcpus_used)), LRU first
        self._base = collections.OrderedDict()

    def observe(self, host, report_key, num_instances, vcpus_used):
        """Delta of ``host`` since its baseline for ``report_key``.

        The first look with a new ``report_key`` takes the baseline and
        returns no delta.
        """
        if self.max_hosts < 1:
            raise ValueError('max_hosts must be >= 1, got %r'
                             % (self.max_hosts,))
        now = (int(num_instances or 0), int(round(vcpus_used or 0)))
        with self._lock:
            held = self._base.get(host)
            if held is None or held[0] != report_key:
                self._base[host] = (report_key, now)
                self._base.move_to_end(host)
                while len(self._base) > self.max_hosts:
                    self._base.popitem(last=False)
                return NO_DELTA
            self._base.move_to_end(host)
            return delta_since(held[1], *now)

    def __len__(self):
        with self._lock:
            return len(self._base)

    def clear(self):
        with self._lock:
            self._base.clear()


# With e = exact (note_placement) and d = Nova's delta:
#   unknown_placements = max(0, d.placements - e.placements)
#   unknown_vcpus      = max(0, d.vcpus - all_vcpus(e)) if unknown_placements
#                        else 0
#   io_vcpus    = e.io_vcpus    + (unknown_vcpus if profile in {mixed, io})
#   io_strength = e.io_strength + unknown_vcpus * {mixed: .5, io: 1, cpu: 0}
#   lsvm_vcpus  = e.lsvm_vcpus             (unknown flavors are not LSVM)
#   vcpus       = max(d.vcpus, all_vcpus(e))
def combine(exact, delta, profile):
    """``scoring.Pending`` = exact notes + the profile's estimate."""
    if profile not in PROFILES:
        raise ValueError('inflight_vcpu_profile must be one of %s, got %r'
                         % (', '.join(PROFILES), profile))
    exact = exact or scoring.NO_PENDING
    delta = delta or NO_DELTA
    if delta is NO_DELTA and exact is scoring.NO_PENDING:
        return exact        # the common case: nothing placed since
    known = scoring.pending_vcpus(exact)
    unknown_p = max(0, delta.placements - exact.placements)
    unknown_v = max(0, delta.vcpus - known) if unknown_p else 0
    io_v = unknown_v if profile in ('mixed', 'io') else 0
    return scoring.Pending(
        placements=exact.placements + unknown_p,
        io_vcpus=exact.io_vcpus + io_v,
        lsvm_vcpus=exact.lsvm_vcpus,
        io_strength=exact.io_strength + unknown_v * STRENGTH_PER_VCPU[profile],
        vcpus=max(delta.vcpus, known),
        estimated_placements=unknown_p,
        estimated_vcpus=unknown_v,
        profile=profile if unknown_p else None)


def _attr(obj, name):
    value = getattr(obj, name, 0)
    return value if isinstance(value, (int, float)) else 0


def pending_for(reports, host_state, report, profile, tracker):
    """The Pending of ``host_state`` given its fresh ``report``.

    ``reports`` is the ``store.ReportStore``; ``tracker`` a ``Tracker``
    (its bound follows the store's max_hosts). The reference form of the
    rule the filters apply through ``observe_node``
    (tests/unit/nova_plugin/test_prepared.py holds them equal).
    """
    tracker.max_hosts = getattr(reports, 'max_hosts', tracker.max_hosts)
    key = (host_state.host, getattr(host_state, 'nodename', None))
    # A report is known by its (ts, seq); id() tells apart two stores (or a
    # cleared store) holding different report objects with the same pair.
    delta = tracker.observe(key, (report.ts, report.seq, id(report)),
                            _attr(host_state, 'num_instances'),
                            _attr(host_state, 'vcpus_used'))
    return combine(reports.pending(host_state.host), delta, profile)


def _count(value):
    return value if isinstance(value, (int, float)) else 0


# The same baseline rule as Tracker.observe, for the baselines of one
# report (``bases``: nodename -> (num_instances, vcpus_used as read,
# (num_instances, vcpus_used) as counted)), which the caller keeps with
# that report (``iosched.nova_plugin.prepared``): a new report comes with empty
# baselines.
def observe_node(bases, host_state, max_nodes=64):
    """Delta of ``host_state`` since its baseline in ``bases``.

    The first look takes the baseline (``dict.setdefault``: one thread
    takes it) and returns no delta; no lock, and nothing allocated when
    the host is unchanged since its baseline.
    """
    num = getattr(host_state, 'num_instances', 0)
    used = getattr(host_state, 'vcpus_used', 0)
    node = getattr(host_state, 'nodename', None)
    held = bases.get(node)
    if held is None:
        if len(bases) >= max_nodes:
            bases.clear()
        new = (num, used, (int(_count(num) or 0),
                           int(round(_count(used) or 0))))
        held = bases.setdefault(node, new)
        if held is new:
            return NO_DELTA
    if ((num is held[0] or num == held[0]) and
            (used is held[1] or used == held[1])):
        return NO_DELTA
    return delta_since(held[2], int(_count(num) or 0),
                       int(round(_count(used) or 0)))
