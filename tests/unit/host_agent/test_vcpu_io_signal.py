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
"""The collector's I/O signal per vCPU: wake-ups, or the VM's requests when
the vCPU takes them without waking (issue 28, collectors.rates
.request_events), carried in the snapshot as io_source / io_requests.
"""

import types

import pytest

from iosched.host_agent.collectors import vcpu_io_strength
from iosched.host_agent import model

CONF = types.SimpleNamespace(collectors=types.SimpleNamespace(
    gap_cutoff_ms=10, ema_weight=0.9, io_strength_threshold=0.1,
    cpu_share_threshold=0.5, idle_share_threshold=0.02))


class Driver(object):
    def __init__(self):
        self.samples = {}

    def vcpu_samples(self, inst):
        return self.samples[inst.uuid]


def sample(uuid, vcpu, ts, run_ns, wakeups, requests):
    return model.VcpuSample(instance_uuid=uuid, vcpu=vcpu, ts=ts, pcpu=1,
                            run_ns=run_ns, wait_ns=0, wakeups=wakeups,
                            io_requests=requests)


# (name, vCPUs, wake-ups in the 1 s window, VM requests (None: unknown),
#  run share, want source, want E_n, want I/O)
CASES = [
    ('busy hybrid, channel requests seen', 1, 0, 50, 1.0, 'requests', 50,
     True),
    ('busy hybrid, no request counter: invisible (before issue 28)', 1, 0,
     None, 1.0, 'wakeups', 0, False),
    ('sleeping rr vCPU: wake-ups as before', 1, 60, 50, 0.2, 'wakeups', 60,
     True),
    ('burner: no request, no wake-up', 1, 0, 0, 1.0, 'wakeups', 0, False),
    ('2-vCPU VM: requests split', 2, 0, 100, 1.0, 'requests', 50, True),
]


@pytest.mark.parametrize('name,vcpus,wakeups,requests,share,source,n,io',
                         CASES)
def test_io_source(name, vcpus, wakeups, requests, share, source, n, io):
    col = vcpu_io_strength.VcpuIoStrengthCollector(CONF)
    drv = Driver()
    inst = model.InstanceInfo(uuid='u', name='vm', vcpus=vcpus)
    other = model.InstanceInfo(uuid='w', name='burner', vcpus=1)
    r1 = None if requests is None else 1000
    r2 = None if requests is None else 1000 + requests
    drv.samples = {
        'u': [sample('u', v, 10.0, 0, 0, r1) for v in range(vcpus)],
        'w': [sample('w', 0, 10.0, 0, 0, 0)]}
    col.collect(drv, [inst, other])
    drv.samples = {
        'u': [sample('u', v, 11.0, int(share * 1e9), wakeups, r2)
              for v in range(vcpus)],
        'w': [sample('w', 0, 11.0, int(1e9), 0, 0)]}
    out = {(m.instance_uuid, m.vcpu): m for m in col.collect(
        drv, [inst, other])}
    m = out[('u', 0)]
    assert m.io_source == source, name
    assert m.events == n, name
    assert (m.io_strength > 0) == io, name
    assert (m.ivcredit > 0) == io, name
    assert out[('w', 0)].ivcredit == 0.0
