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
"""ReportFilter: a host filter that judges a host by its agent's report.

The shared adapter of IoDensityFilter and LsvmFilter: read the request
once, the host's fresh report and the in-flight estimate (placements since
that report), apply ``[iosched] missing_report_policy`` to a host without a
fresh report, call the subclass's pure rule, and record the reason (DEBUG
log and ``nova_plugin.explain``). Config::

    [iosched]
    missing_report_policy = pass
    inflight_vcpu_profile = mixed
"""

from oslo_log import log as logging

import nova.conf
from nova.scheduler import filters

from nova_plugin import conf as iosched_conf
from nova_plugin import listener
from nova_plugin import explain
from nova_plugin import inflight
from nova_plugin import metrics
from nova_plugin import request_spec
from nova_plugin import store

LOG = logging.getLogger(__name__)

CONF = nova.conf.CONF
iosched_conf.register_opts(CONF)


class ReportFilter(filters.BaseHostFilter):
    """Subclasses set ``check_name`` and define ``judge``."""

    RUN_ON_REBUILD = False
    # Each instance of a multi-instance request is checked again.
    run_filter_once_per_request = False
    # Words for the DEBUG line: "<host> fails <check_name> check for ...".
    check_name = ''
    # Also log the hosts that pass (the reason then shows the margin).
    log_passes = False

    def wants(self, request):
        """Whether the rule looks at this request at all (else it passes
        without a record)."""
        return True

    def needs_report(self, request):
        """Whether ``missing_report_policy=reject`` applies to it."""
        return True

    def judge(self, report, pending, request):
        """``(passes, reason)`` from the pure rule."""
        raise NotImplementedError

    def host_passes(self, host_state, spec_obj):
        request = request_spec.to_request(spec_obj)
        if not self.wants(request):
            return True
        listener.ensure_listener(CONF)
        reports = store.get_store(CONF)
        report = reports.get(host_state.host)
        if report is None:
            policy = CONF.iosched.missing_report_policy
            passes = policy == 'pass' or not self.needs_report(request)
            reason = 'no fresh report (missing_report_policy=%s)' % policy
        else:
            pending = inflight.pending_for(
                reports, host_state, report,
                CONF.iosched.inflight_vcpu_profile)
            passes, reason = self.judge(report, pending, request)
        label = request_spec.label(spec_obj)
        explain.record('filter', host_state.host, label, passed=passes,
                       reason=reason)
        metrics.note_filter(type(self).__name__, passes,
                            metrics.CAUSE_NO_REPORT if report is None
                            else metrics.CAUSE_RULE)
        if self.log_passes or not passes:
            LOG.debug('%(host_state)s %(verdict)s %(check)s check for '
                      '%(request)s: %(reason)s',
                      {'host_state': host_state,
                       'verdict': 'passes' if passes else 'fails',
                       'check': self.check_name, 'request': label,
                       'reason': reason})
        return passes
