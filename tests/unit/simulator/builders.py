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
"""Small builders shared by the simulator tests."""

import types

from iosched.simulator import cpu
from iosched.simulator import eevdf
from iosched.simulator import events
from iosched.simulator import host
from iosched.simulator import spec

SEC = 1000000


def make_host(pcpus=1, seed=1, **kw):
    return host.SimHost(spec.HostSpec(name='h', pcpus=pcpus, **kw),
                        seed=seed)


def add(h, uuid, *workloads, disks=('vda',)):
    h.add_vm(spec.VmSpec(uuid=uuid, name='instance-' + uuid,
                         vcpus=workloads or (spec.CpuBound(),),
                         disks=disks))


class Work:
    """A stub workload: ``amount`` us of CPU, then block (or loop)."""

    def __init__(self, amount, forever=False):
        self.work_left = amount
        self.amount = amount
        self.forever = forever
        self.done = []

    def complete(self, now):
        self.done.append(now)
        self.work_left = self.amount if self.forever else 0


def sched(pcpus=1, cost=0, balance_us=0):
    loop = events.EventLoop()
    return loop, cpu.Scheduler(loop, pcpus, cost, balance_us)


def entity(eid, slice_us=3000, weight=100, work=None):
    vm = types.SimpleNamespace(uuid='vm%d' % eid)
    e = eevdf.Entity(eid, vm, 0, weight, slice_us)
    e.wl = work if work is not None else Work(1 << 60, forever=True)
    return e
