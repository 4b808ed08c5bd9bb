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

The shared adapter of IoDensityFilter and LsvmFilter. Nova calls
``filter_all`` with every host of a request: read the request and the
options once, each host's fresh report (prepared once per report,
``nova_plugin.prepared``) and the in-flight estimate (placements since that
report), apply ``[iosched] missing_report_policy`` to a host without a
fresh report, apply the subclass's rule, and record every host's reason in
``nova_plugin.explain`` (written when read) and, with DEBUG logging on, in
the log. Config::

    [iosched]
    missing_report_policy = pass
    inflight_vcpu_profile = mixed
"""

import logging as std_logging

from oslo_log import log as logging

import nova.conf
from nova.scheduler import filters
from nova.scheduler import utils

from nova_plugin import conf as iosched_conf
from nova_plugin import listener
from nova_plugin import explain
from nova_plugin import metrics
from nova_plugin import prepared
from nova_plugin import request_spec
from nova_plugin import store

LOG = logging.getLogger(__name__)

CONF = nova.conf.CONF
iosched_conf.register_opts(CONF)


def missing_reason(policy):
    return 'no fresh report (missing_report_policy=%s)' % policy


class ReportFilter(filters.BaseHostFilter):
    """Subclasses set ``check_name`` and define ``tester`` and ``reason``."""

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

    def tester(self, request, settings):
        """``test(prepared, pending) -> passes`` for one request: the
        verdict of ``reason``'s rule, without the text."""
        raise NotImplementedError

    def reason(self, report, pending, request, settings):
        """The rule's reason for one host (written only when read)."""
        raise NotImplementedError

    def judge(self, report, pending, request):
        """``(passes, reason)`` of one host, with the options now."""
        s = prepared.settings(CONF)
        return (self.tester(request, s)(
            prepared.Prepared(report), pending),
            self.reason(report, pending, request, s))

    def host_passes(self, host_state, spec_obj):
        return bool(self._judge_all([host_state], spec_obj))

    def filter_all(self, filter_obj_list, spec_obj):
        """The hosts of ``filter_obj_list`` that pass, in order (Nova's
        contract: an iterable of the passing HostStates)."""
        if not self.RUN_ON_REBUILD and utils.request_is_rebuild(spec_obj):
            return list(filter_obj_list)
        return self._judge_all(filter_obj_list, spec_obj)

    def _judge_all(self, host_states, spec_obj):
        request = request_spec.to_request(spec_obj)
        if not self.wants(request):
            return list(host_states)
        listener.ensure_listener(CONF)
        s = prepared.settings(CONF)
        host_states = list(host_states)
        reports = store.get_store(CONF)
        preps = prepared.fresh(reports, host_states)
        pendings = prepared.pendings(reports, host_states, preps,
                                     s.inflight_vcpu_profile)
        test = self.tester(request, s)
        policy = s.missing_report_policy
        missing_passes = policy == 'pass' or not self.needs_report(request)
        passed = []
        oks = []
        rejected_rule = rejected_missing = 0
        for host_state, prep, pending in zip(host_states, preps, pendings):
            if prep is None:
                ok = missing_passes
                if not ok:
                    rejected_missing += 1
            else:
                ok = test(prep, pending)
                if not ok:
                    rejected_rule += 1
            if ok:
                passed.append(host_state)
            oks.append(ok)

        def reason_of(i):
            prep = preps[i]
            if prep is None:
                return missing_reason(policy)
            return self.reason(prep.report, pendings[i], request, s)

        label = request_spec.label(spec_obj)
        explain.record_batch('filter', label, host_states, reason_of,
                             passed=oks)
        metrics.note_filters(type(self).__name__, len(passed), {
            metrics.CAUSE_RULE: rejected_rule,
            metrics.CAUSE_NO_REPORT: rejected_missing})
        if LOG.isEnabledFor(std_logging.DEBUG):
            for i, (host_state, ok) in enumerate(zip(host_states, oks)):
                if self.log_passes or not ok:
                    LOG.debug('%(host_state)s %(verdict)s %(check)s check '
                              'for %(request)s: %(reason)s',
                              {'host_state': host_state,
                               'verdict': 'passes' if ok else 'fails',
                               'check': self.check_name, 'request': label,
                               'reason': reason_of(i)})
        return passed
