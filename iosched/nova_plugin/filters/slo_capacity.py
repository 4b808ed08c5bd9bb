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

A thin adapter: the request's floors come from this worker's
``iosched.nova_plugin.slo_lookup.Resolver`` (its BuildRequest or cell mappings,
then Cinder, through ``slo_request.NovaVolumeLookup``), the verdicts from
``iosched.nova_plugin.slo_check.judge`` (the rule is ``slo_rule.admit``);
``filter_all`` judges every host of a request at once and logs each
rejection at DEBUG. Config::

    [iosched]
    slo_capacity_fraction = 1.0
    slo_lookup_failure_policy = pass
    missing_report_policy = pass
"""

import logging as std_logging

import nova.conf
from nova.scheduler import filters
from nova.scheduler import utils
from oslo_log import log as logging

from iosched.nova_plugin import conf as iosched_conf
from iosched.nova_plugin.filters import slo_request
from iosched.nova_plugin import slo_check
from iosched.nova_plugin import state

LOG = logging.getLogger(__name__)

CONF = nova.conf.CONF
iosched_conf.register_opts(CONF)


class SloCapacityFilter(filters.BaseHostFilter):
    """Filter out hosts whose disk cannot take the request's SLO floors."""

    RUN_ON_REBUILD = False
    # Each instance of a multi-instance request is checked again.
    run_filter_once_per_request = False

    def __init__(self):
        super().__init__()
        self.volumes = slo_request.NovaVolumeLookup()
        state.for_worker(CONF)

    def host_passes(self, host_state, spec_obj):
        return bool(self._judge(state.current(), [host_state], spec_obj))

    def filter_all(self, filter_obj_list, spec_obj):
        """The hosts of ``filter_obj_list`` that pass, in order."""
        if not self.RUN_ON_REBUILD and utils.request_is_rebuild(spec_obj):
            return list(filter_obj_list)
        return self._judge(state.for_request(), list(filter_obj_list),
                           spec_obj)

    def _judge(self, worker, host_states, spec_obj):
        worker.configure(CONF)
        demand = worker.resolver.demand(spec_obj, self.volumes)
        label = worker.requests.read(spec_obj)[1]
        verdicts = slo_check.judge(worker, host_states, demand, label,
                                   worker.settings(CONF),
                                   type(self).__name__, spec_obj=spec_obj)
        if verdicts is None:
            return host_states      # no SLO volume: nothing to check
        if LOG.isEnabledFor(std_logging.DEBUG):
            for i, (host_state, ok) in enumerate(zip(host_states,
                                                     verdicts.oks)):
                if not ok:
                    LOG.debug('%(host_state)s fails SLO capacity check for '
                              '%(request)s: %(reason)s',
                              {'host_state': host_state, 'request': label,
                               'reason': verdicts.reason_of(i)})
        return verdicts.passed
