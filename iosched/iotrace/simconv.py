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
"""A ``iosched.simulator.vaio`` run (seed 004's 4-VM dd experiment) as a trace.

Reads are sync, writes async (the paper's classification). Times go
from the simulator's ms to the trace's seconds; sectors are the HDD's.
"""

import dataclasses

from iosched.iotrace import fmt
from iosched.simulator.vaio import run as vrun
from iosched.simulator.vaio import trace as vtrace

SOURCES = {
    'req': 'simulator: the guest submits (no ring delay modelled, so the '
           'same time as Queuing)',
    'que': "simulator: the request enters dom0's elevator",
    'dis': 'simulator: the elevator hands it to the disk',
    'com': 'simulator: the disk finishes it',
    'rsp': 'simulator: the guest sees the completion (no event-channel '
           'delay modelled, so the same time as Completion)',
    'vcpu': 'simulator: running while the guest has work, idle then '
            'inactive (after 30 ms) while it is blocked on its journal '
            'writes with no read in flight',
}


def scenario(scheduler='cfq', vms=4, gib=1.0, seed=1, commit_ms=None):
    """A ``run.Scenario``; ``commit_ms`` defaults to the model's value
    scaled with ``gib`` (the same number of commits per run).
    """
    kw = dict(scheduler=scheduler, vms=int(vms), gib=float(gib),
              seed=int(seed))
    if commit_ms is None:
        commit_ms = vrun.Scenario.commit_ms * min(1.0, float(gib))
    kw['commit_ms'] = float(commit_ms)
    return vrun.Scenario(**kw)


def simulate(scn):
    """The trace of one run of ``scn`` (a ``run.Scenario``)."""
    result, rows, spans = vtrace.traced_run(scn)
    io = []
    layers = fmt.LAYERS
    for row in rows:
        rid, vm, write, nsect, lba = row[:5]
        op = 'W' if write else 'R'
        for layer, t in zip(layers, row[5:]):
            if t is not None:
                io.append(fmt.Io(t / 1e3, vm, layer, op, not write,
                                 nsect * 512, lba, rid))
    io.sort(key=lambda e: e.ts)
    vcpu = [fmt.Span(vm, 0, state, a / 1e3, b / 1e3)
            for vm, state, a, b in spans]
    finish = {vm: t for vm, t in result.finish.items() if t is not None}
    header = {'source': 'simulator',
              'scenario': dataclasses.asdict(scn),
              'sources': dict(SOURCES),
              'vms': sorted(result.finish),
              'meta': {'model': 'iosched.simulator.vaio (seed 004)',
                       'finish_sd_s': result.std()
                       if None not in result.finish.values() else None}}
    return fmt.Trace(header, io, vcpu, finish)
