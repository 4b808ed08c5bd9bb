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
"""Judge every host of a request by its SLO floors: ``SloCapacityFilter``'s
check.

``judge(state, host_states, demand, label, settings, name)`` takes the
request's floors (``slo_lookup.Demand``, read once per request), applies
``[iosched] slo_lookup_failure_policy`` when they could not be read, and
else ``slo_rule.admit`` to each host's fresh report (prepared once per
report, ``iosched.nova_plugin.prepared``) with the SLO IOPS placed since it,
``[iosched] missing_report_policy`` where the report is missing or says
nothing of its disk, ``[iosched] slo_unknown_source_policy`` where its
agent cannot know the floors attached there (``disk.slo_source`` none, or
a report older than 1.5: ``unknowing``; one WARNING per host). Every
host's reason goes to the worker's explain ring (written when read), the
verdicts to its metrics. The filter calls it and only logs the
rejections.

No nova import.
"""

import itertools

from oslo_log import log as logging

from iosched.nova_plugin import metrics
from iosched.nova_plugin import prepared
from iosched.nova_plugin import report_checks
from iosched.nova_plugin import request_view
from iosched.nova_plugin import scoring
from iosched.nova_plugin import slo_rule

LOG = logging.getLogger(__name__)


def unknowing(prep):
    """True when the report's agent cannot know its SLO reservations."""
    return prep.unknowing


def _unknowing_reason(prep, policy):
    return ('the agent cannot know the SLO floors attached here '
            '(slo_source=%s), reported reserved_iops %.1f; '
            'slo_unknown_source_policy=%s. On that host configure the '
            "agent's [cinder] credentials (or [host_agent] "
            'volume_qos_file)' % (prep.slo_source or 'unknown, report %s'
                                  % prep.report.version,
                                  prep.reserved_iops, policy))


def _warn_unknowing(warned, host, prep, policy):
    # one WARNING per host and scheduler worker: ``warned`` is the worker's
    # (state.SchedulerState.slo_unknowing_warned)
    if host in warned:
        return
    warned.add(host)
    LOG.warning('SloCapacityFilter: host %s: %s', host,
                _unknowing_reason(prep, policy))


def pending_iops(pending):
    """SLO floors placed on a host since its report, if the store has them.

    ``store.ReportStore.pending()`` gives a ``scoring.Pending``; it counts
    SLO IOPS only once it has a ``reserved_iops`` field, else 0.
    """
    return float(getattr(pending, 'reserved_iops', 0.0) or 0.0)


# slo_rule.admit's verdict for valid numbers (B > 0):
#   unknown (None) if C <= 0, else R + P + B <= f * C + eps * max(1, f * C)
def judge(state, host_states, demand, label, settings, name,
          spec_obj=None):
    """``report_checks.Verdicts`` of the floors ``demand`` on
    ``host_states`` (a list), recorded in ``state`` under the filter
    ``name``; None for a request without SLO floors (every host passes,
    nothing recorded). ``spec_obj`` keys the figures shared with the
    other filters and the weigher (``request_view``).
    """
    if not demand.iops and not demand.error:
        return None
    if demand.error:
        oks, passed, rejected, reason_of = _lookup_failed(
            host_states, demand, settings)
    else:
        # the SLO rule reads the reports and the store's notes only, not
        # the in-flight estimate of Nova's counters
        cols = request_view.columns(
            state.views, state.store, state.prepared, spec_obj,
            host_states, settings.inflight_vcpu_profile, counters=False)
        oks, passed, rejected, reason_of = _judge_hosts(
            cols, host_states, demand.iops, settings,
            state.slo_unknowing_warned)
        request_view.narrow(state.views, cols, oks)
    state.explainer.record_batch('filter', label, host_states, reason_of,
                                 passed=oks)
    state.metrics.note_filters(name, len(passed), rejected)
    return report_checks.Verdicts(host_states, oks, passed, reason_of)


def _lookup_failed(host_states, demand, settings):
    policy = settings.slo_lookup_failure_policy
    ok = policy == 'pass'
    why = ('SLO floors unknown (slo_lookup_failure_policy=%s): %s'
           % (policy, demand.error))
    oks = [ok] * len(host_states)
    return (oks, list(host_states) if ok else [],
            {metrics.CAUSE_SLO_LOOKUP: 0 if ok else len(oks)},
            lambda i: why)


def _judge_hosts(cols, host_states, request_iops, settings, warned):
    """(verdicts, passing hosts, rejections by cause, reason_of)."""
    rows, preps = cols.rows, cols.preps
    fraction = settings.slo_capacity_fraction
    missing = settings.missing_report_policy
    missing_passes = missing == 'pass'
    blind = settings.slo_unknown_source_policy
    valid = prepared.iops_ok(request_iops) and prepared.iops_ok(fraction)
    no_pending = scoring.NO_PENDING
    epsilon = slo_rule.REL_EPSILON
    if valid:
        # slo_rule.admit's verdict, its arithmetic in its order, where the
        # report's figures are valid numbers, its agent knows the floors,
        # its capacity is > 0 and nothing was placed since (``plain``);
        # None elsewhere: _judge_host decides those
        oks = [(p.reserved_iops + 0.0 + request_iops
                <= fraction * p.capacity_iops + epsilon * max(
                    1.0, fraction * p.capacity_iops))
               if p is not None and p.slo_plain and r.exact is no_pending
               else None
               for p, r in zip(preps, rows)]
    else:
        oks = [None] * len(preps)
    no_report = by_rule = by_source = 0
    blind_rejects = blind == 'reject'
    for i, ok in enumerate(oks):
        if ok is not None:
            by_rule += not ok
            continue
        prep = preps[i]
        if prep is None:
            ok = missing_passes
            no_report += not ok
        elif prep.unknowing and blind_rejects:
            ok = False
            by_source += 1
        else:
            if prep.unknowing:
                _warn_unknowing(warned, host_states[i].host, prep, blind)
            exact = rows[i].exact
            if exact is no_pending:
                p, p_ok = 0.0, True
            else:
                p = pending_iops(exact)
                p_ok = prepared.iops_ok(p)
            if valid and prep.slo_ok and p_ok:
                # slo_rule.admit's verdict, its arithmetic in its order
                capacity = prep.capacity_iops
                if capacity <= 0:
                    verdict = None
                else:
                    limit = fraction * capacity
                    verdict = (prep.reserved_iops + p + request_iops
                               <= limit + epsilon * max(1.0, limit))
            else:               # raises SloSpecError, as before
                verdict, _ = slo_rule.admit(
                    prep.capacity_iops, prep.reserved_iops, p,
                    request_iops, fraction)
            ok = missing_passes if verdict is None else verdict
            by_rule += not ok
        oks[i] = ok
    passed = list(itertools.compress(host_states, oks))

    def reason_of(i):
        prep = preps[i]
        if prep is None:
            return report_checks.missing_reason(missing)
        if unknowing(prep) and blind == 'reject':
            return _unknowing_reason(prep, blind)
        exact = rows[i].exact
        p = 0.0 if exact is no_pending else pending_iops(exact)
        verdict, why = slo_rule.admit(
            prep.capacity_iops, prep.reserved_iops, p, request_iops,
            fraction)
        if verdict is None:
            why = '%s (missing_report_policy=%s)' % (why, missing)
        if unknowing(prep):
            why = '%s; %s' % (why, _unknowing_reason(prep, blind))
        return why

    return oks, passed, {metrics.CAUSE_RULE: by_rule + by_source,
                         metrics.CAUSE_NO_REPORT: no_report}, reason_of
