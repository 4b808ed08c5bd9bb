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

A thin adapter (``report_filter.ReportFilter``): the check is
``iosched.nova_plugin.report_checks.DENSITY``, whose rule is
``iosched.nova_plugin.scoring.fits``. Config::

    [iosched]
    max_io_vcpus_per_pcpu = 1.0
    missing_report_policy = pass
    inflight_vcpu_profile = mixed
"""

from iosched.nova_plugin.filters import report_filter
from iosched.nova_plugin import report_checks


class IoDensityFilter(report_filter.ReportFilter):
    """Filter out hosts that would exceed max_io_vcpus_per_pcpu."""

    check = report_checks.DENSITY
