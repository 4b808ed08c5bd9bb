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
"""LsvmFilter: place an LSVM only where vSlicer's latency bound holds.

A thin adapter: the rule is ``nova_plugin.lsvm_rule.check`` (the host
agent's vSlicer check redone with the request added, from the host's
HostReport 1.2 and the in-flight estimate). Requests without
``iosched:latency_sensitive=true`` pass. Config::

    [iosched]
    missing_report_policy = pass
    inflight_vcpu_profile = mixed
"""

from oslo_log import log as logging

import nova.conf
from nova.scheduler import filters

from nova_plugin import conf as iosched_conf
from nova_plugin import endpoint
from nova_plugin import explain
from nova_plugin import inflight
from nova_plugin import lsvm_rule
from nova_plugin import request_spec
from nova_plugin import store

LOG = logging.getLogger(__name__)

CONF = nova.conf.CONF
iosched_conf.register_opts(CONF)


class LsvmFilter(filters.BaseHostFilter):
    """Filter out hosts where an LSVM's worst-case latency cannot hold."""

    RUN_ON_REBUILD = False
    # Each instance of a multi-instance request is checked again.
    run_filter_once_per_request = False

    def host_passes(self, host_state, spec_obj):
        request = request_spec.to_request(spec_obj)
        if not request.latency_sensitive:
            return True
        endpoint.ensure_listener(CONF)
        reports = store.get_store(CONF)
        report = reports.get(host_state.host)
        if report is None:
            policy = CONF.iosched.missing_report_policy
            passes = policy == 'pass'
            reason = 'no fresh report (missing_report_policy=%s)' % policy
        else:
            pending = inflight.pending_for(
                reports, host_state, report,
                CONF.iosched.inflight_vcpu_profile)
            passes, reason, _ = lsvm_rule.check(report, pending, request)
        label = request_spec.label(spec_obj)
        explain.record('filter', host_state.host, label, passed=passes,
                       reason=reason)
        if passes:
            LOG.debug('%(host_state)s passes LSVM check for %(request)s: '
                      '%(reason)s', {'host_state': host_state,
                                     'request': label, 'reason': reason})
        else:
            LOG.debug('%(host_state)s fails LSVM check for %(request)s: '
                      '%(reason)s', {'host_state': host_state,
                                     'request': label, 'reason': reason})
        return passes
