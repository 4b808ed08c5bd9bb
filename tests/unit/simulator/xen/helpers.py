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
"""Builders shared by the Xen scheduler model tests."""

import types

from iosched.simulator import events
from iosched.simulator import host
from iosched.simulator import spec
from tests.unit.simulator import builders

SEC = builders.SEC
Work = builders.Work


def make_host(sched_spec, pcpus=1, cost=0, seed=1):
    return host.SimHost(spec.HostSpec(name='h', pcpus=pcpus,
                                      switch_cost_us=cost,
                                      scheduler=sched_spec), seed=seed)


def add(h, uuid, *workloads):
    h.add_vm(spec.VmSpec(uuid=uuid, name='instance-' + uuid,
                         vcpus=workloads or (spec.CpuBound(),)))


def trace(sched):
    """Record (time, pCPU id, uuid, vCPU index) of every switch-in."""
    return sched.record_switches()


def waits(log, end, since=0):
    """Per uuid: the gaps between the end of a run and the next switch-in
    (single pCPU logs: a run ends at the next switch-in).
    """
    out = {}
    ended = {}
    for (t, _, u, _i), nxt in zip(log, log[1:] + [(end, None, None, None)]):
        if u in ended and t >= since:
            out.setdefault(u, []).append(t - ended[u])
        ended[u] = nxt[0]
    return out


def sched_only(sched_spec, pcpus=1, cost=0):
    """A bare scheduler on its own loop (no SimHost)."""
    loop = events.EventLoop()
    hs = spec.HostSpec(name='h', pcpus=pcpus, switch_cost_us=cost)
    return loop, sched_spec.build(loop, hs)


def entity(sched, eid, work=None, uuid=None, weight=100):
    vm = types.SimpleNamespace(uuid=uuid or 'vm%d' % eid)
    e = sched.new_entity(eid, vm, 0, weight)
    e.wl = work if work is not None else Work(1 << 60, forever=True)
    return e
