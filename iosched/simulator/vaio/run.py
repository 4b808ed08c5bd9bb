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
"""Seed 004's experiment (§4.1): ``vms`` identical VMs, each a dd of
``gib`` GiB from its own partition of one HDD, all started together, under
dom0's 'cfq' (shared async queue) or 'va-cfq'; ``run(scn)`` returns a
``Result``, ``trials(scn, n)`` the results of n seeds (seed, seed+1, ...:
the commit phases, rotational latencies and escapes differ).

The disk is Flubber's HDD without the free track read-ahead (a dd
stream is media-bound) and, with ``stream=True``, without the command
overhead on a read that continues the previous one (the drive streams a
sequential run: 44 KiB in 0.38 ms, 118 MB/s). Partition i starts
at i x 125 GB (the paper's four 125 GB partitions) and its file 10 GB
in. Fairness figures: the finish-time standard deviation (population,
s), slowest / fastest, Jain's index over per-VM throughput.
"""

import dataclasses
import math
import random

from iosched.simulator.flubber import disk as fdisk
from iosched.simulator.flubber import engine as fengine
from iosched.simulator.flubber import metrics as fmetrics
from iosched.simulator.vaio import guest as vguest
from iosched.simulator.vaio import sched

SCHEDULERS = ('cfq', 'va-cfq')
PART_SECT = 125_000_000_000 // 512
FILE_OFF = 10_000_000_000 // 512
GIB_SECT = (1 << 30) // 512


@dataclasses.dataclass(frozen=True)
class Scenario:
    scheduler: str = 'cfq'
    vms: int = 4
    gib: float = 1.0
    depth: int = 3
    commit_ms: float = 20000.0     # VM4: two stalls in a ~38 s run
    periodic: bool = False         # True: every commit_ms (ext4's 5 s)
    block: bool = True             # False: the native control
    p_quiet: float = 0.4
    stream: bool = True            # no command overhead in a read stream
    seed: int = 1
    max_ms: float = 1_200_000.0


class Hdd(fdisk.Hdd):
    """Flubber's HDD; a sequential read continuation costs the media
    transfer only (no per-command overhead) when ``stream``.
    """

    def __init__(self, stream=True):
        super().__init__(readahead=0)
        self.stream = stream

    def service(self, req, rng):
        seq = not req.write and req.lba == self.head
        t = super().service(req, rng)
        return t - fdisk.CMD_MS if self.stream and seq else t


class Metrics(fmetrics.Metrics):
    """Flubber's metrics plus each async request's queue-to-dispatch gap
    per VM ([(queued ms, gap ms)]).
    """

    def __init__(self):
        super().__init__()
        self.async_gaps = {}

    def dispatch(self, req, last, now, svc):
        super().dispatch(req, last, now, svc)
        if req.write:
            self.async_gaps.setdefault(req.vm, []).append(
                (req.t_arrive, now - req.t_arrive))


@dataclasses.dataclass
class Result:
    scenario: Scenario
    finish: dict                   # vm -> s (None: not done)
    inactive: dict                 # vm -> [(start s, end s)]
    metrics: object
    low: object

    def times(self):
        return [self.finish[v] for v in sorted(self.finish)]

    def std(self):
        return pstdev(self.times())

    def ratio(self):
        t = self.times()
        return max(t) / min(t)

    def jain(self):
        return jain([1.0 / t for t in self.times()])

    def max_async_gap(self):
        return max((g for gs in self.metrics.async_gaps.values()
                    for _, g in gs), default=0.0) / 1000.0

    def async_gaps(self):
        """Every async write's queue-to-dispatch gap (s)."""
        return [g / 1000.0 for gs in self.metrics.async_gaps.values()
                for _, g in gs]

    def slowest(self):
        return max(self.finish, key=lambda v: self.finish[v])

    def fastest(self):
        return min(self.finish, key=lambda v: self.finish[v])

    def inactive_s(self, vm):
        return sum(b - a for a, b in self.inactive[vm])


def pstdev(xs):
    m = sum(xs) / len(xs)
    return math.sqrt(sum((x - m) ** 2 for x in xs) / len(xs))


def jain(xs):
    return sum(xs) ** 2 / (len(xs) * sum(x * x for x in xs))


def _low(scn):
    if scn.scheduler == 'cfq':
        return sched.SharedAsyncCfq(p_quiet=scn.p_quiet,
                                    seed=scn.seed * 7919 + 1)
    if scn.scheduler == 'va-cfq':
        return sched.VaCfq(no_idle=())
    raise ValueError('scheduler %r unknown; accepted: %s'
                     % (scn.scheduler, ', '.join(SCHEDULERS)))


def run(scn, metrics=None):
    """``metrics``: a ``Metrics`` (subclass) to record into, e.g.
    ``iosched.simulator.vaio.trace.TraceMetrics`` (the five layers).
    """
    low = _low(scn)
    eng = fengine.Engine(Hdd(scn.stream), low, seed=scn.seed)
    eng.metrics = metrics if metrics is not None else Metrics()
    guests = {}
    for i in range(scn.vms):
        vm = 'VM%d' % (i + 1)
        guests[vm] = vguest.DdGuest(
            eng, vm, i * PART_SECT + FILE_OFF, int(scn.gib * GIB_SECT),
            random.Random(scn.seed * 1000 + i), depth=scn.depth,
            commit_ms=scn.commit_ms, block=scn.block,
            periodic=scn.periodic)
    for g in guests.values():
        g.start()
    eng.run(scn.max_ms, stop=lambda: all(
        g.finished is not None for g in guests.values()))
    return Result(scn, {v: None if g.finished is None else g.finished / 1e3
                        for v, g in guests.items()},
                  {v: [(a / 1e3, b / 1e3) for a, b in g.inactive]
                   for v, g in guests.items()}, eng.metrics, low)


def trials(scn, n):
    return [run(dataclasses.replace(scn, seed=scn.seed + k))
            for k in range(n)]
