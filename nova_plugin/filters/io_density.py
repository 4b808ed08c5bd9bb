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
"""IoDensityFilter: keep I/O-intensive vCPUs per pCPU under a bound.

A thin adapter: the rule is ``nova_plugin.scoring.fits``. Config::

    [iosched]
    max_io_vcpus_per_pcpu = 1.0
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
from nova_plugin import request_spec
from nova_plugin import scoring
from nova_plugin import store

LOG = logging.getLogger(__name__)

CONF = nova.conf.CONF
iosched_conf.register_opts(CONF)


class IoDensityFilter(filters.BaseHostFilter):
    """Filter out hosts that would exceed max_io_vcpus_per_pcpu."""

    RUN_ON_REBUILD = False
    # Each instance of a multi-instance request is checked again.
    run_filter_once_per_request = False

    def host_passes(self, host_state, spec_obj):
        endpoint.ensure_listener(CONF)
        request = request_spec.to_request(spec_obj)
        reports = store.get_store(CONF)
        report = reports.get(host_state.host)
        if report is None:
            policy = CONF.iosched.missing_report_policy
            passes = policy == 'pass' or not scoring.needs_report(request)
            reason = 'no fresh report (missing_report_policy=%s)' % policy
        else:
            pending = inflight.pending_for(
                reports, host_state, report,
                CONF.iosched.inflight_vcpu_profile)
            passes, reason = scoring.fits(
                report, pending, request, CONF.iosched.max_io_vcpus_per_pcpu)
        label = request_spec.label(spec_obj)
        explain.record('filter', host_state.host, label, passed=passes,
                       reason=reason)
        if not passes:
            LOG.debug('%(host_state)s fails I/O density check for '
                      '%(request)s: %(reason)s',
                      {'host_state': host_state, 'request': label,
                       'reason': reason})
        return passes
