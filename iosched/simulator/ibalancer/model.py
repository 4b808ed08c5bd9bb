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
"""The host of the I-Balancer experiments (seed 003) as a discrete-event
model on the existing Xen scheduler models.

* guest vCPUs run on a pool of ``pcpus`` under
  ``iosched.simulator.xen.credit`` (Credit1: BOOST/UNDER/OVER, 30 ms slice,
  10 ms tick, multi-boost) or ``iosched.simulator.xen.credit2`` (one
  run-queue, as a one-socket Xen 4.12); subclasses only add RTM's hook at
  the scheduling point (Credit1: the deschedule hook; Credit2: entry of
  ``csched2_schedule``);
* a vCPU's work is a chain of chunks (``guest.Guest``, under the
  ``iosched.simulator.sched_base`` workload protocol): an I/O chunk ends
  in one event sent to dom0 *while the vCPU runs*; a sender keeps at most
  ``window`` events (network) or one event set (disk, ``dd`` with
  direct-like writes) outstanding and blocks, or runs stress, when it is
  full. A completion is an upcall to the VM's interrupt vCPU (vCPU 0,
  where the event channel is bound), which needs ``irq_us`` of CPU to
  handle it; only then does the slot free and a blocked sender wake
  (Credit1 BOOSTs every wake-up);
* dom0 (``dom0_cpus`` dedicated pCPUs) serves every event FIFO in arrival
  order, ``net_service_us`` / ``blk_service_us`` each; network events then
  take ``wire_us``; disk requests queue FIFO at one disk
  (``disk_t0_us`` + size / ``disk_mb_s``);
* a disk write of ``block_kb`` is split into requests of at most 44 KiB
  (11 segments of 4 KiB, blkfront), one event each: an "event set" whose
  rate falls as the block grows;
* I-Balancer (``iosched.simulator.ibalancer.controller``) sees every event
  (ITM) and every scheduling point (RTM); a target's events are deferred
  by its delay without using CPU (a timer, not a busy wait).

VM kinds (vCPU 0 handles the completions of every kind with I/O): ``net``
(iperf on vCPU 1), ``mixed`` (4 vCPUs with stress, iperf on vCPU 1 too),
``cpu`` (sysbench: 4 CPU-bound vCPUs), ``disk`` (dd on vCPU 1),
``disk-mixed`` (4 vCPUs with stress, dd on vCPU 1 too), ``net+disk``
(iperf on vCPU 1, dd on vCPU 2). vCPUs with nothing to do are not
modelled (they never run, never send).

The delay is a non-blocking deferral; ``delay_mode='busy'`` also makes the
sender's vCPU spin for it (the other reading of "apply the delay before
sending"). ``fixed_delay_us`` delays every event (Fig. 8's calibration).
``wire_skew_us`` (a diagnostic, not the paper's) adds that much wire to
the odd-numbered VMs' network events: a persistent per-VM rate imbalance
the vCPU scheduler does not cause.
"""

import collections
import dataclasses
import math
import random

from iosched.simulator.events import EventLoop
from iosched.simulator.ibalancer import controller as ctl
from iosched.simulator.ibalancer import guest
from iosched.simulator.xen import credit
from iosched.simulator.xen import credit2
from iosched.simulator.xen.specs_credit import CreditSpec

SCHEDULERS = {'credit': 30000, 'credit2': 10000}     # default slices
KINDS = ('net', 'mixed', 'cpu', 'disk', 'disk-mixed', 'net+disk')
DELAY_MODES = ('defer', 'busy')


@dataclasses.dataclass(frozen=True)
class Scenario:
    vms: tuple = ('net',) * 10
    scheduler: str = 'credit'
    mode: str = 'off'                # off | tav | ib
    pcpus: int = 5
    dom0_cpus: int = 2
    duration_s: float = 8.0
    warmup_s: float = 1.0
    seed: int = 1
    w: float = 0.25                  # EWMA weight of EI (our choice)
    beta: float = 20.0               # Eq. 2 threshold, normalised D (ours)
    alpha: float = 30.0
    base_delay_us: float = 200.0
    io_chunk_us: int = 150           # guest CPU per network event
    irq_us: int = 20                 # guest CPU per completion (vCPU 0)
    window: int = 4                  # network events outstanding (Fig. 8)
    stress_chunk_us: int = 500       # stress run between checks (mixed)
    net_service_us: int = 25         # dom0 (netback) per event
    wire_us: int = 200
    net_kb: int = 64                 # payload per network event
    block_kb: int = 4
    blk_service_us: int = 20         # dom0 (blkback) per request
    disk_t0_us: int = 20
    disk_mb_s: float = 400.0
    dd_cpu_us_per_kb: float = 1.5   # guest CPU per KiB written (+ 10 us)
    switch_cost_us: int = 2
    delay_mode: str = 'defer'        # defer (timer) | busy (vCPU stalls)
    fixed_delay_us: int = 0          # Fig. 8: every event, no controller
    wire_skew_us: int = 0            # odd VMs' extra wire (diagnostic)

    def __post_init__(self):
        if self.scheduler not in SCHEDULERS:
            raise ValueError('Scenario.scheduler: %r is invalid; accepted: '
                             '%s' % (self.scheduler, ', '.join(SCHEDULERS)))
        if self.mode not in ctl.MODES:
            raise ValueError('Scenario.mode: %r is invalid; accepted: %s'
                             % (self.mode, ', '.join(ctl.MODES)))
        for k in self.vms:
            if k not in KINDS:
                raise ValueError('Scenario.vms: kind %r is invalid; '
                                 'accepted: %s' % (k, ', '.join(KINDS)))
        if not self.vms:
            raise ValueError('Scenario.vms: empty; accepted: 1 or more VM '
                             'kinds')
        if self.pcpus < 1 or self.dom0_cpus < 1:
            raise ValueError('Scenario.pcpus/dom0_cpus: must be >= 1')
        if not 0 <= self.warmup_s < self.duration_s:
            raise ValueError('Scenario.warmup_s: %r is invalid; accepted: '
                             '0 <= warmup_s < duration_s' % self.warmup_s)
        if self.delay_mode not in DELAY_MODES:
            raise ValueError('Scenario.delay_mode: %r is invalid; accepted: '
                             '%s' % (self.delay_mode, ', '.join(DELAY_MODES)))
        if self.block_kb < 1 or self.window < 1:
            raise ValueError('Scenario.block_kb/window: must be >= 1')
        if self.wire_skew_us < 0:
            raise ValueError('Scenario.wire_skew_us: %r is invalid; '
                             'accepted: >= 0' % self.wire_skew_us)

    @property
    def slice_us(self):
        return SCHEDULERS[self.scheduler]


# -- the schedulers with RTM's hook ------------------------------------------
class _Credit(credit.CreditScheduler):
    rtm = None

    def _descheduled(self, p, e, now):
        if self.rtm is not None:
            self.rtm(e)


class _Credit2(credit2.Credit2):
    rtm = None

    def _schedule(self, p, now):
        c = p.curr
        if c is not None and self.rtm is not None:
            self._account(p, now)
            self.rtm(c)
        super()._schedule(p, now)


class _Vm:
    __slots__ = ('uuid', 'kind', 'net_bytes', 'disk_bytes', 'cpu_us',
                 'irq', 'wire_us')

    def __init__(self, uuid, kind, wire_us):
        self.uuid = uuid
        self.kind = kind
        self.wire_us = wire_us      # this VM's network round trip
        self.net_bytes = 0
        self.disk_bytes = 0
        self.cpu_us = 0             # stress / sysbench CPU in the window
        self.irq = None             # the vCPU that handles completions


# -- dom0 and the devices -----------------------------------------------------
class _Fifo:
    """k servers, one FIFO queue; a job is (service_us, callback, arg)."""

    def __init__(self, loop, k):
        self.loop = loop
        self.free = k
        self.q = collections.deque()
        self.served = 0

    def submit(self, service, cb, arg):
        if self.free:
            self.free -= 1
            self.loop.at(self.loop.now + service, self._done, cb, arg)
        else:
            self.q.append((service, cb, arg))

    def _done(self, cb, arg):
        self.served += 1
        if self.q:
            s, c2, a2 = self.q.popleft()
            self.loop.at(self.loop.now + s, self._done, c2, a2)
        else:
            self.free += 1
        cb(arg)


class Host:
    """Build and run one scenario; results in ``Result``."""

    def __init__(self, s):
        self.s = s
        self.rng = random.Random(s.seed)
        self.loop = EventLoop()
        if s.scheduler == 'credit':
            self.sched = _Credit(self.loop, s.pcpus, s.switch_cost_us,
                                 CreditSpec())
        else:
            self.sched = _Credit2(self.loop, s.pcpus, s.switch_cost_us)
        self.ctl = ctl.Controller(s.mode, s.slice_us, s.w, s.beta, s.alpha,
                                  s.base_delay_us)
        self.sched.rtm = self._rtm
        self.dom0 = _Fifo(self.loop, s.dom0_cpus)
        self.disk = _Fifo(self.loop, 1)
        self.t_warm = int(s.warmup_s * 1e6)
        self.t_end = int(s.duration_s * 1e6)
        self.vms = []
        self.guests = []
        self.deferred = 0
        self._by_key = {}
        order = list(range(len(s.vms)))
        self.rng.shuffle(order)            # creation order: placement
        for i in order:
            self._add_vm(i, s.vms[i])
        self.vms.sort(key=lambda v: v.uuid)

    def _add_vm(self, i, kind):
        vm = _Vm('vm%02d' % i, kind,
                 self.s.wire_us + (self.s.wire_skew_us if i % 2 else 0))
        self.vms.append(vm)
        # (net, dd, stress, irq) per vCPU; vCPU 0 handles completions.
        specs = {'net': [(0, 0, 0, 1), (1, 0, 0, 0)],
                 'disk': [(0, 0, 0, 1), (0, 1, 0, 0)],
                 'mixed': [(0, 0, 1, 1), (1, 0, 1, 0)] + [(0, 0, 1, 0)] * 2,
                 'disk-mixed': ([(0, 0, 1, 1), (0, 1, 1, 0)]
                                + [(0, 0, 1, 0)] * 2),
                 'cpu': [(0, 0, 1, 0)] * 4,
                 'net+disk': [(0, 0, 0, 1), (1, 0, 0, 0), (0, 1, 0, 0)]
                 }[kind]
        for idx, (net, dd, stress, irq) in enumerate(specs):
            g = guest.Guest(self, vm, net, dd, stress, irq)
            if irq:
                vm.irq = g
            e = self.sched.new_entity(len(self.guests), vm, idx, 100)
            e.wl = g
            g.e = e
            g.trk = ctl.Tracker((vm.uuid, idx))
            self._by_key[g.trk.key] = e
            self.guests.append(g)

    def _rtm(self, e):
        self.ctl.on_segment(e.wl.trk, e.run_us)

    def send(self, g, kind, kb, now):
        """An inter-domain event to dom0 (ITM, then maybe deferred)."""
        d = self.ctl.on_event(g.trk, now) + self.s.fixed_delay_us
        if d > 0 and self.s.delay_mode == 'busy':
            g.stall += int(round(d))
            self.deferred += 1
            self.loop.at(now + int(round(d)), self._to_dom0, g, (kind, kb))
        elif d > 0:
            self.deferred += 1
            self.loop.at(now + int(round(d)), self._to_dom0, g, (kind, kb))
        else:
            self._to_dom0(g, (kind, kb))

    def _to_dom0(self, g, job):
        kind, kb = job
        s = self.s
        svc = s.net_service_us if kind == 'net' else s.blk_service_us
        self.dom0.submit(svc, self._dom0_done, (g, kind, kb))

    def _dom0_done(self, arg):
        g, kind, kb = arg
        now = self.loop.now
        if kind == 'net':
            self.loop.at(now + g.vm.wire_us, self._complete, g, arg)
        else:
            svc = self.s.disk_t0_us + int(kb * 1024 / self.s.disk_mb_s
                                          / 1.048576)
            self.disk.submit(svc, self._disk_done, arg)

    def _disk_done(self, arg):
        self._complete(arg[0], arg)

    def _complete(self, g, arg):
        g.vm.irq.upcall(arg, self.loop.now)

    def _evaluate(self, _a, _b):
        now = self.loop.now
        nxt = self.ctl.evaluate(now, lambda t: self.sched.counters(
            self._by_key[t.key], now)[0])
        self.loop.at(self.loop.now + nxt, self._evaluate)

    def run(self):
        for g in self.guests:
            if g.work_left > 0:
                self.sched.wake(g.e, 0, initial=True)
        if self.s.mode != 'off':
            self.loop.at(self.ctl.period_us(), self._evaluate)
        self.loop.run_until(self.t_end)
        return Result(self)


def _stats(xs):
    n = len(xs)
    m = sum(xs) / n
    sd = math.sqrt(sum((x - m) ** 2 for x in xs) / n)
    mad = sum(abs(x - m) for x in xs) / n
    jain = (sum(xs) ** 2 / (n * sum(x * x for x in xs))
            if any(xs) else 1.0)
    return {'mean': m, 'sd': sd, 'mad': mad, 'jain': jain,
            'min': min(xs), 'max': max(xs)}


class Result:
    """Per-VM figures of one run (MB/s over the measured window)."""

    def __init__(self, host):
        s = host.s
        secs = (host.t_end - host.t_warm) / 1e6
        self.scenario = s
        self.net = {v.uuid: v.net_bytes / secs / 1e6 for v in host.vms}
        self.disk = {v.uuid: v.disk_bytes / secs / 1e6 for v in host.vms}
        self.cpu_us = {v.uuid: v.cpu_us for v in host.vms}
        self.kinds = {v.uuid: v.kind for v in host.vms}
        self.triggers = list(host.ctl.triggers)
        self.delays = list(host.ctl.delay_log)
        self.track_n = len(host.ctl.track)
        self.control_n = len(host.ctl.control)
        self.deferred = host.deferred
        self.events = host.dom0.served
        self.snaps = {t.key: t.snap for t in host.ctl.track}
        self.windows = {t.key: t.windows for t in host.ctl.track}
        self.ctl = host.ctl

    def values(self, what='net', kinds=None):
        src = self.net if what == 'net' else self.disk
        return [src[u] for u in sorted(src)
                if kinds is None or self.kinds[u] in kinds]

    def stats(self, what='net', kinds=None):
        return _stats(self.values(what, kinds))


def run(scenario):
    return Host(scenario).run()
