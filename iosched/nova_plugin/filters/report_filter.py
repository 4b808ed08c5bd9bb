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

The shared adapter of IoDensityFilter and LsvmFilter, thin like Nova's own
filters: ``filter_all`` (Nova calls it with every host of a request)
reads the request, the options and this worker's state
(``iosched.nova_plugin.state``), calls
``iosched.nova_plugin.report_checks.judge`` with the subclass's ``check`` and
logs each rejection at DEBUG (and each pass, for a check with ``log_passes``).
Loading the class (Nova does it when nova-scheduler starts) makes the worker's
state and starts its report listener. Config::

    [iosched]
    missing_report_policy = pass
    inflight_vcpu_profile = mixed
"""

import logging as std_logging

import nova.conf
from nova.scheduler import filters
from nova.scheduler import utils
from oslo_log import log as logging

from iosched.nova_plugin import conf as iosched_conf
from iosched.nova_plugin import report_checks
from iosched.nova_plugin import state

LOG = logging.getLogger(__name__)

CONF = nova.conf.CONF
iosched_conf.register_opts(CONF)


class ReportFilter(filters.BaseHostFilter):
    """Subclasses set ``check`` (a ``report_checks`` check)."""

    RUN_ON_REBUILD = False
    # Each instance of a multi-instance request is checked again.
    run_filter_once_per_request = False
    check = None

    def __init__(self):
        super().__init__()
        state.for_worker(CONF)

    def host_passes(self, host_state, spec_obj):
        return bool(self._judge(state.current(), [host_state], spec_obj))

    def filter_all(self, filter_obj_list, spec_obj):
        """The hosts of ``filter_obj_list`` that pass, in order (Nova's
        contract: an iterable of the passing HostStates).
        """
        if not self.RUN_ON_REBUILD and utils.request_is_rebuild(spec_obj):
            return list(filter_obj_list)
        return self._judge(state.for_request(), list(filter_obj_list),
                           spec_obj)

    def _judge(self, worker, host_states, spec_obj):
        request, label = worker.requests.read(spec_obj)
        verdicts = report_checks.judge(
            worker.configure(CONF), host_states, request, label,
            self.check, worker.settings(CONF), type(self).__name__,
            spec_obj=spec_obj)
        if verdicts is None:
            return host_states
        if LOG.isEnabledFor(std_logging.DEBUG):
            for i, (host_state, ok) in enumerate(zip(host_states,
                                                     verdicts.oks)):
                if self.check.log_passes or not ok:
                    LOG.debug('%(host_state)s %(verdict)s %(check)s check '
                              'for %(request)s: %(reason)s',
                              {'host_state': host_state,
                               'verdict': 'passes' if ok else 'fails',
                               'check': self.check.name, 'request': label,
                               'reason': verdicts.reason_of(i)})
        return verdicts.passed
