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
"""SloCapacityFilter: SLO volume floors within the host's disk capacity.

A thin adapter: the request's floors come from ``slo_request.Resolver``
(BuildRequest or cell mappings, then Cinder), the rule is
``nova_plugin.slo_rule.admit``. ``filter_all`` judges every host of a
request at once: the floors and options read once, each report's figures
prepared once (``nova_plugin.prepared``), the reasons written only when
read (``nova_plugin.explain``) or logged at DEBUG. Config::

    [iosched]
    slo_capacity_fraction = 1.0
    slo_lookup_failure_policy = pass
    missing_report_policy = pass
"""

import logging as std_logging

from oslo_log import log as logging

import nova.conf
from nova.scheduler import filters
from nova.scheduler import utils

from nova_plugin import conf as iosched_conf
from nova_plugin import listener
from nova_plugin import explain
from nova_plugin.filters import slo_request
from nova_plugin import metrics
from nova_plugin import prepared
from nova_plugin import request_spec
from nova_plugin import slo_rule
from nova_plugin import store

LOG = logging.getLogger(__name__)

CONF = nova.conf.CONF
iosched_conf.register_opts(CONF)


def pending_iops(pending):
    """SLO floors placed on a host since its report, if the store has them.

    ``store.ReportStore.pending()`` gives a ``scoring.Pending``; it counts
    SLO IOPS only once it has a ``reserved_iops`` field, else 0.
    """
    return float(getattr(pending, 'reserved_iops', 0.0) or 0.0)


# slo_rule.admit's verdict for valid numbers (B > 0):
#   unknown (None) if C <= 0, else R + P + B <= f * C + eps * max(1, f * C)
def _admit(capacity, reserved, pending, request, fraction):
    if capacity <= 0:
        return None
    limit = fraction * capacity
    return (reserved + pending + request
            <= limit + slo_rule.REL_EPSILON * max(1.0, limit))


class SloCapacityFilter(filters.BaseHostFilter):
    """Filter out hosts whose disk cannot take the request's SLO floors."""

    RUN_ON_REBUILD = False
    # Each instance of a multi-instance request is checked again.
    run_filter_once_per_request = False

    def host_passes(self, host_state, spec_obj):
        return bool(self._judge_all([host_state], spec_obj))

    def filter_all(self, filter_obj_list, spec_obj):
        """The hosts of ``filter_obj_list`` that pass, in order."""
        if not self.RUN_ON_REBUILD and utils.request_is_rebuild(spec_obj):
            return list(filter_obj_list)
        return self._judge_all(filter_obj_list, spec_obj)

    def _judge_all(self, host_states, spec_obj):
        resolver = slo_request.get_resolver(CONF)
        demand = resolver.demand(spec_obj)
        host_states = list(host_states)
        if not demand.iops and not demand.error:
            return host_states      # no SLO volume: nothing to check
        listener.ensure_listener(CONF)
        label = request_spec.label(spec_obj)
        s = prepared.settings(CONF)
        missing = s.missing_report_policy
        if demand.error:
            ok = s.slo_lookup_failure_policy == 'pass'
            why = ('SLO floors unknown (slo_lookup_failure_policy=%s): %s'
                   % (s.slo_lookup_failure_policy, demand.error))
            oks = [ok] * len(host_states)
            passed = host_states if ok else []
            rejected = {metrics.CAUSE_SLO_LOOKUP: 0 if ok else len(oks)}

            def reason_of(i):
                return why
        else:
            oks, passed, rejected, preps, p_iops = self._judge_hosts(
                host_states, demand.iops, s)
            fraction = s.slo_capacity_fraction

            def reason_of(i):
                prep = preps[i]
                if prep is None:
                    return 'no fresh report (missing_report_policy=%s)' % (
                        missing,)
                verdict, why = slo_rule.admit(
                    prep.capacity_iops, prep.reserved_iops, p_iops[i],
                    demand.iops, fraction)
                if verdict is None:
                    why = '%s (missing_report_policy=%s)' % (why, missing)
                return why
        explain.record_batch('filter', label, host_states, reason_of,
                             passed=oks)
        metrics.note_filters(type(self).__name__, len(passed), rejected)
        if LOG.isEnabledFor(std_logging.DEBUG):
            for i, (host_state, ok) in enumerate(zip(host_states, oks)):
                if not ok:
                    LOG.debug('%(host_state)s fails SLO capacity check for '
                              '%(request)s: %(reason)s',
                              {'host_state': host_state, 'request': label,
                               'reason': reason_of(i)})
        return passed

    @staticmethod
    def _judge_hosts(host_states, request_iops, s):
        """(verdicts, passing hosts, rejections by cause, each host's
        ``Prepared`` or None, each host's pending IOPS)."""
        reports = store.get_store(CONF)
        preps = prepared.fresh(reports, host_states)
        fraction = s.slo_capacity_fraction
        missing_passes = s.missing_report_policy == 'pass'
        valid = prepared.iops_ok(request_iops) and prepared.iops_ok(fraction)
        oks, passed, p_iops = [], [], []
        no_report = by_rule = 0
        for host_state, prep in zip(host_states, preps):
            if prep is None:
                ok = missing_passes
                no_report += not ok
                p_iops.append(None)
            else:
                p = pending_iops(reports.pending(host_state.host))
                p_iops.append(p)
                if valid and prep.slo_ok and prepared.iops_ok(p):
                    verdict = _admit(prep.capacity_iops, prep.reserved_iops,
                                     p, request_iops, fraction)
                else:               # raises SloSpecError, as before
                    verdict, _ = slo_rule.admit(
                        prep.capacity_iops, prep.reserved_iops, p,
                        request_iops, fraction)
                ok = missing_passes if verdict is None else verdict
                by_rule += not ok
            oks.append(ok)
            if ok:
                passed.append(host_state)
        return oks, passed, {metrics.CAUSE_RULE: by_rule,
                             metrics.CAUSE_NO_REPORT: no_report}, preps, p_iops
