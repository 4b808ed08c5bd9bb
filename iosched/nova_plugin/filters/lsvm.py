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
"""LsvmFilter: place an LSVM only where its host's latency bound holds.

A thin adapter (``report_filter.ReportFilter``): the check is
``iosched.nova_plugin.report_checks.LSVM``, whose rule is
``iosched.nova_plugin.lsvm_rule.check`` (the host agent's vSlicer check redone
with the request added, from the host's HostReport 1.3 and the in-flight
estimate, under the mechanism the host reports: deadline, weight or
slice, with its measured wake-up latency). Requests without
``iosched:latency_sensitive=true`` pass. Config::

    [iosched]
    missing_report_policy = pass
    inflight_vcpu_profile = mixed
"""

from iosched.nova_plugin.filters import report_filter
from iosched.nova_plugin import report_checks


class LsvmFilter(report_filter.ReportFilter):
    """Filter out hosts where an LSVM's worst-case latency cannot hold."""

    check = report_checks.LSVM
