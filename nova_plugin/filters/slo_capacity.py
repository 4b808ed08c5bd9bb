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
``nova_plugin.slo_rule.admit``. Config::

    [iosched]
    slo_capacity_fraction = 1.0
    slo_lookup_failure_policy = pass
    missing_report_policy = pass
"""

from oslo_log import log as logging

import nova.conf
from nova.scheduler import filters

from nova_plugin import conf as iosched_conf
from nova_plugin import listener
from nova_plugin import explain
from nova_plugin.filters import slo_request
from nova_plugin import metrics
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


class SloCapacityFilter(filters.BaseHostFilter):
    """Filter out hosts whose disk cannot take the request's SLO floors."""

    RUN_ON_REBUILD = False
    # Each instance of a multi-instance request is checked again.
    run_filter_once_per_request = False

    def host_passes(self, host_state, spec_obj):
        resolver = slo_request.get_resolver(CONF)
        demand = resolver.demand(spec_obj)
        if not demand.iops and not demand.error:
            return True             # no SLO volume: nothing to check
        listener.ensure_listener(CONF)
        label = request_spec.label(spec_obj)
        if demand.error:
            policy = CONF.iosched.slo_lookup_failure_policy
            passes = policy == 'pass'
            cause = metrics.CAUSE_SLO_LOOKUP
            reason = ('SLO floors unknown (slo_lookup_failure_policy=%s): '
                      '%s' % (policy, demand.error))
        else:
            reports = store.get_store(CONF)
            report = reports.get(host_state.host)
            cause = metrics.CAUSE_RULE
            if report is None:
                passes = None
                reason = 'no fresh report'
                cause = metrics.CAUSE_NO_REPORT
            else:
                passes, reason = slo_rule.admit(
                    report.disk.capacity_iops, report.disk.reserved_iops,
                    pending_iops(reports.pending(host_state.host)),
                    demand.iops, CONF.iosched.slo_capacity_fraction)
            if passes is None:
                policy = CONF.iosched.missing_report_policy
                passes = policy == 'pass'
                reason = '%s (missing_report_policy=%s)' % (reason, policy)
        explain.record('filter', host_state.host, label, passed=passes,
                       reason=reason)
        metrics.note_filter(type(self).__name__, passes, cause)
        if not passes:
            LOG.debug('%(host_state)s fails SLO capacity check for '
                      '%(request)s: %(reason)s',
                      {'host_state': host_state, 'request': label,
                       'reason': reason})
        return passes
