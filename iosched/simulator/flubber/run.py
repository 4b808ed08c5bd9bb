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
"""Scenarios: VMs with SLOs on one disk, a scheduler, fixed work or a
duration; ``run(scenario)`` returns a ``Result``.

Schedulers: 'noop', 'deadline', 'cfq' (base CFQ, every VM a BE process),
'cfq-prio' (RT for the VMs marked latency, BE for the others),
'edf-credit' (VBC + plain EDF, backup deadline 500 ms) and 'flubber'
(VBC + BD-EDF). ``bd=False`` with 'flubber' is the ablation (identical
to 'edf-credit' but for BD's background handling).
"""

import dataclasses
import random
import typing

from iosched.simulator.flubber import bdedf
from iosched.simulator.flubber import clients
from iosched.simulator.flubber import disk as fdisk
from iosched.simulator.flubber import elevators
from iosched.simulator.flubber import engine as fengine
from iosched.simulator.flubber import vbc as fvbc

SCHEDULERS = ('noop', 'deadline', 'cfq', 'cfq-prio', 'edf-credit',
              'flubber')


@dataclasses.dataclass(frozen=True)
class VmSpec:
    name: str
    workload: clients.Workload
    b_iops: float
    l_ms: float
    latency_class: bool = False     # RT under cfq-prio


@dataclasses.dataclass(frozen=True)
class Scenario:
    vms: typing.Tuple[VmSpec, ...]
    scheduler: str = 'flubber'
    beta: int = 32
    max_interval: int = 1152
    feedback: bool = True
    fb_min_ms: float = 250.0       # shortest interval k between feedbacks
    ratio: typing.Optional[typing.Tuple[int, ...]] = None  # overrides Eq. 1
    bd: bool = True
    bd_hold_ms: float = 0.0        # BD windows close this long past L - M
    round_on_completion: bool = False   # VBC event 1 waits for completions
    readahead: typing.Optional[int] = None  # HDD free prefetch (sectors)
    backup_gb: float = 0.0
    duration_ms: typing.Optional[float] = None   # None: until work done
    max_ms: float = 600_000.0
    device: str = 'hdd'
    sync_unplug: bool = True       # a reader waiting on its page unplugs
    fsync_every: int = 1           # writes between fsyncs
    fsync_scope: str = 'thread'    # 'guest': fsync flushes every dirty page
    merge_max: int = 256           # dom0 back merges up to 128 KiB
    cfq_shared_async: bool = False  # 2.6.18: every write in one async queue
    seed: int = 1


@dataclasses.dataclass
class Result:
    scenario: Scenario
    end_ms: float
    finish: dict                   # vm or 'backup' -> ms (None: not done)
    metrics: object
    vbc: object
    low: object
    guests: dict

    def exec_s(self, vm):
        f = self.finish.get(vm)
        return None if f is None else f / 1000.0

    def server_iops(self, t1=None):
        t1 = t1 or self.end_ms
        n = sum(1 for v in self.guests for t, _ in self.metrics.done[v]
                if t < t1)
        return n * 1000.0 / t1

    def attainment(self, vm, t0=0.0, t1=None):
        """Share (%) of 1 s windows in [t0, t1) in which vm met its SLO:
        b >= B and mean l <= L (the paper reports no such figure).
        """
        spec = [v for v in self.scenario.vms if v.name == vm][0]
        ws = self.metrics.windows(vm, t0, t1 or self.end_ms)
        ok = sum(1 for _, b, lat, _ in ws if b >= spec.b_iops
                 and lat is not None and lat <= spec.l_ms)
        return 100.0 * ok / len(ws) if ws else 0.0

    def wait_success(self):
        if isinstance(self.low, bdedf.BdEdf):
            return self.low.wait_success_ratio()
        return None


def _low(scn, slos, vbc):
    s = scn.scheduler
    if s == 'noop':
        return elevators.Noop()
    if s == 'deadline':
        return elevators.Deadline()
    if s == 'cfq':
        return elevators.Cfq(shared_async=scn.cfq_shared_async)
    if s == 'cfq-prio':
        return elevators.Cfq({v.name: 'rt' if v.latency_class else 'be'
                              for v in scn.vms},
                             shared_async=scn.cfq_shared_async)
    if s == 'edf-credit':
        return elevators.Edf(slos)
    if s == 'flubber':
        return bdedf.BdEdf(slos, bd=scn.bd, can_send=vbc.has_credit,
                           hold_ms=scn.bd_hold_ms)
    raise ValueError('scheduler %r unknown; accepted: %s'
                     % (s, ', '.join(SCHEDULERS)))


def build(scn):
    slos = {v.name: (v.b_iops, v.l_ms) for v in scn.vms}
    vbc = None
    if scn.scheduler in ('edf-credit', 'flubber'):
        vbc = fvbc.Vbc(slos, beta=scn.beta, max_interval=scn.max_interval,
                       feedback_on=scn.feedback, fb_min_ms=scn.fb_min_ms,
                       ratio=dict(zip((v.name for v in scn.vms), scn.ratio))
                       if scn.ratio else None,
                       on_completion=scn.round_on_completion)
    low = _low(scn, slos, vbc)
    if scn.device == 'ssd':
        dev = fdisk.Ssd()
    elif scn.readahead is None:
        dev = fdisk.Hdd()
    else:
        dev = fdisk.Hdd(readahead=scn.readahead)
    eng = fengine.Engine(dev, low, vbc, seed=scn.seed,
                         merge_max=scn.merge_max)
    guests = {}
    for i, v in enumerate(scn.vms):
        guests[v.name] = clients.Guest(
            eng, v.name, i, v.workload, random.Random(scn.seed * 1000 + i),
            sync_unplug=scn.sync_unplug, fsync_every=scn.fsync_every,
            fsync_scope=scn.fsync_scope,
            on_finish=vbc.leave if vbc is not None else None)
    backup = clients.Backup(eng, scn.backup_gb) if scn.backup_gb else None
    return eng, vbc, low, guests, backup


def run(scn):
    eng, vbc, low, guests, backup = build(scn)
    for g in guests.values():
        g.start()
    if backup is not None:
        backup.start()

    def done():
        return all(g.finished is not None or g.wl.total_ops is None
                   for g in guests.values()) and (
            backup is None or backup.finished is not None)

    until = scn.duration_ms if scn.duration_ms is not None else scn.max_ms
    eng.run(until, stop=None if scn.duration_ms is not None else done)
    finish = {v: g.finished for v, g in guests.items()}
    if backup is not None:
        finish['backup'] = backup.finished
    return Result(scn, eng.now, finish, eng.metrics, vbc, low, guests)
