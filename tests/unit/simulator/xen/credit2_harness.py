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
"""Direct harness for the Credit2 and ISACS model tests (no SimHost)."""

import types

from iosched.simulator import events
from iosched.simulator.xen import credit2
from iosched.simulator.xen import isacs
from iosched.simulator.xen import specs_credit2
from tests.unit.simulator import builders

SEC = builders.SEC
Work = builders.Work


def credit2_sched(pcpus=1, cost=0, **kw):
    loop = events.EventLoop()
    return loop, credit2.Credit2(loop, pcpus, cost, **kw)


def isacs_sched(pcpus=1, cost=0, **kw):
    loop = events.EventLoop()
    spec = specs_credit2.IsacsSpec(**kw)
    return loop, isacs.Isacs(loop, pcpus, cost, spec)


def entity(sched, eid, work=None, weight=100):
    """A vCPU with a stub workload (default: CPU-bound forever)."""
    vm = types.SimpleNamespace(uuid='vm%d' % eid)
    e = sched.new_entity(eid, vm, 0, weight)
    e.wl = work if work is not None else Work(1 << 60, forever=True)
    return e


def hogs(sched, n, first=0):
    out = [entity(sched, first + i) for i in range(n)]
    for e in out:
        sched.wake(e, sched.loop.now, initial=True)
    return out


def inject_events(loop, sched, e, start, gap, count):
    """Deliver ``count`` I/O response events to e every ``gap`` us."""
    for i in range(count):
        loop.at(start + i * gap, lambda a, b: sched.io_event(a, loop.now), e)


def check_invariants(sched):
    """Every vCPU in one place: running on its pCPU, queued once, or off."""
    seen = set()
    for rq in sched.rqs:
        for e in rq.runq:
            assert e.id not in seen, 'queued twice: %r' % e
            seen.add(e.id)
            assert e.rq is rq and e.on_rq and not e.running, e
        order = [e.credit for e in rq.runq]
        if sched.name == 'credit2':
            assert order == sorted(order, reverse=True)
        for e in rq.svc:
            assert e.rq is rq
    for p in sched.cpus:
        e = p.curr
        if e is not None:
            assert e.running and e.cpu is p and e.on_rq, e
            assert e.id not in seen, 'running and queued: %r' % e
    assigned = [e.id for rq in sched.rqs for e in rq.svc]
    assert len(assigned) == len(set(assigned))
