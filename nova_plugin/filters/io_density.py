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

A thin adapter (``report_filter.ReportFilter``): the rule is
``nova_plugin.scoring.fits``. Config::

    [iosched]
    max_io_vcpus_per_pcpu = 1.0
    missing_report_policy = pass
    inflight_vcpu_profile = mixed
"""

from nova_plugin.filters import report_filter
from nova_plugin import scoring


class IoDensityFilter(report_filter.ReportFilter):
    """Filter out hosts that would exceed max_io_vcpus_per_pcpu."""

    check_name = 'I/O density'

    def needs_report(self, request):
        return scoring.needs_report(request)

    # scoring.fits's verdict: io_vcpus(r) == 0, or
    # (h.io_vcpus + p.io_vcpus + io_vcpus(r)) / h.pcpus
    #     <= max_io_vcpus_per_pcpu + 1e-9
    def tester(self, request, settings):
        wanted = scoring.request_io_vcpus(request)
        if wanted == 0:
            return _always
        limit = settings.max_io_vcpus_per_pcpu + 1e-9

        def test(prep, pending):
            return ((prep.io_vcpus + pending.io_vcpus + wanted)
                    / prep.pcpus <= limit)
        return test

    def reason(self, report, pending, request, settings):
        return scoring.fits(report, pending, request,
                            settings.max_io_vcpus_per_pcpu)[1]


def _always(prep, pending):
    return True
