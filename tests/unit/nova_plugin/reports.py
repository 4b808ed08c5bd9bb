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
"""Build HostReports for the nova_plugin tests (no nova import)."""

from iosched.contract import payload
from iosched.contract import payload_sections


def report(host='host1', ts=100.0, seq=1, pcpus=4, io_vcpus=0,
           io_strength_total=0.0, report_interval=1.0, lsvm=None):
    """A valid HostReport with the fields the plugin reads."""
    return payload.HostReport(
        host=host, ts=ts, seq=seq, report_interval=report_interval,
        pcpus=pcpus, io_vcpus=io_vcpus, io_strength_total=io_strength_total,
        io_strength_per_pcpu=io_strength_total / pcpus,
        lsvm=lsvm if lsvm is not None else payload_sections.LsvmState())


def lsvm(count=0, nlsvm_vcpus=0, min_latency_ms=0.0, supported=True,
         pcpus=4, **params):
    """A 1.2 ``lsvm`` object: agent defaults unless given in ``params``
    (nlsvm_slice_ms, min_slice_ms, max_slice_ms, max_per_pcpu,
    default_latency_ms, wakeup_preemption).
    """
    return payload_sections.LsvmState(
        supported=supported, count=count, per_pcpu=count / float(pcpus),
        capacity=0, latency_bound_ms=0.0, min_latency_ms=min_latency_ms,
        nlsvm_vcpus=nlsvm_vcpus, **params)


class FakeClock(object):
    """A settable clock for ReportStore."""

    def __init__(self, now=1000.0):
        self.now = now

    def __call__(self):
        return self.now
