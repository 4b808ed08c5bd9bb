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
"""EEVDF bookkeeping: scheduling entities and per-pCPU run-queue math.

Models the Linux (6.12+) fair class for one level of entities (each vCPU
thread is an entity; cgroup group entities are not modelled):

* ``lw`` load weight = round(1024 * weight / 100) (cgroup v2 weight scale,
  as ``sched_weight_from_cgroup``), at least 2;
* vruntime advances by ``delta * 1024 / lw``, kept as an integer in
  virtual nanoseconds (``VSCALE`` per microsecond at weight 100), so all
  run-queue math is exact integer arithmetic;
* V, the run-queue's virtual time, is the load-weighted average vruntime
  of the runnable entities including the running one; an entity is
  eligible when ``vruntime <= V`` (checked as ``v * W <= S`` without
  division, as the kernel does);
* the virtual deadline of a request is ``vruntime + slice * 1024 / lw``;
  ``slice_left`` tracks the same request in real microseconds so slice
  expiry is an exact event time;
* pick = the eligible entity with the earliest deadline (ties: lower id);
  RUN_TO_PARITY keeps the current entity while it is eligible and has not
  started a new request since it was picked (``protected``) and, in the
  6.17+ rule (``KernelSpec.protect_min_slice``), while its vruntime is
  below ``vprot`` (set at pick: the vruntime after min(its slice, the
  shortest queued slice) of run, at most its deadline).

This module holds state and pure math only; ``iosched.simulator.cpu`` drives
it.
"""

from iosched.simulator import sched_base

VSCALE = 1024 * 1000        # virtual ns per us of run time at lw 1024
TICK_US = 1000              # lag clamp floor, as TICK_NSEC at HZ=1000
NO_VPROT = 1 << 100         # no vruntime limit on protection (6.12 rule)


def load_weight(weight):
    """cgroup v2 weight (1..10000, default 100) -> kernel load weight."""
    return max(2, (weight * 1024 + 50) // 100)


class Entity(sched_base.Entity):
    """One vCPU thread: EEVDF state on top of the shared fields."""
    __slots__ = ('lw', 'slice_us', 'vslice', 'v', 'deadline', 'slice_left',
                 'protected', 'vprot', 'cpu', 'vlag', 'dl', 'group',
                 'throttled')

    def __init__(self, eid, vm, index, weight, slice_us):
        super().__init__(eid, vm, index, weight)
        self.lw = load_weight(weight)
        self.slice_us = slice_us
        self.vslice = slice_us * VSCALE // self.lw
        self.v = 0
        self.deadline = 0
        self.slice_left = slice_us
        self.protected = False
        self.vprot = NO_VPROT       # protection ends at this vruntime
        self.cpu = None             # PCpu while on a fair run-queue
        self.vlag = 0               # lag kept across sleep (place_lag)
        self.dl = None              # deadline.DlState: SCHED_DEADLINE
        self.group = None           # cpu_bandwidth.Group: the VM's cap
        self.throttled = False      # runnable, held by its group's cap

    def set_weight(self, weight):
        self.weight = weight
        self.lw = load_weight(weight)
        self.vslice = self.slice_us * VSCALE // self.lw

    def set_slice(self, slice_us):
        self.slice_us = slice_us
        self.vslice = slice_us * VSCALE // self.lw

    def new_request(self):
        """Start a new slice request: fresh deadline and slice budget."""
        self.deadline = self.v + self.vslice
        self.slice_left = self.slice_us


class PCpu:
    """One pCPU and its run-queue.

    ``queue`` holds the runnable entities that are not running; ``sum_w``
    and ``sum_wv`` are their total load weight and load-weighted vruntime
    (the running entity ``curr`` is added on the fly, as in
    ``avg_vruntime``). ``gen`` invalidates the pending CPU event.
    ``dl_curr`` is the SCHED_DEADLINE entity running here (then ``curr``
    is None: the fair class waits); ``dl_gen`` invalidates its event.
    """
    __slots__ = ('id', 'curr', 'queue', 'sum_w', 'sum_wv', 'gen',
                 'last_update', 'ev_time', 'idle_v', 'dl_curr', 'dl_gen')

    def __init__(self, cpu_id):
        self.id = cpu_id
        self.curr = None
        self.queue = []
        self.sum_w = 0
        self.sum_wv = 0
        self.gen = 0
        self.last_update = 0        # curr accrues run time from here
        self.ev_time = -1           # time of the pending CPU event
        self.idle_v = 0             # V of the queue when it went empty
        self.dl_curr = None
        self.dl_gen = 0

    @property
    def nr_running(self):
        return len(self.queue) + (self.curr is not None)

    def enqueue(self, e):
        self.queue.append(e)
        self.sum_w += e.lw
        self.sum_wv += e.lw * e.v

    def dequeue(self, e):
        self.queue.remove(e)
        self.sum_w -= e.lw
        self.sum_wv -= e.lw * e.v
        if self.curr is None and not self.queue:
            self.idle_v = e.v

    def totals(self):
        """(W, S): total load weight and load-weighted vruntime."""
        c = self.curr
        if c is None:
            return self.sum_w, self.sum_wv
        return self.sum_w + c.lw, self.sum_wv + c.lw * c.v

    def avg_v(self):
        """V (floor of the weighted average); ``idle_v`` when empty."""
        w, s = self.totals()
        if not w:
            return self.idle_v
        return s // w

    def pick(self, protect=True):
        """pick_eevdf: protected curr, else earliest eligible deadline
        (``protect`` False: __pick_eevdf(protect=false), PREEMPT_SHORT).
        """
        w, s = self.totals()
        c = self.curr
        best = None
        if c is not None and c.v * w <= s:
            if protect and c.protected and c.v < c.vprot:
                return c
            best = c
        for x in self.queue:
            if x.v * w <= s and (best is None or x.deadline < best.deadline
                                 or (x.deadline == best.deadline
                                     and x.id < best.id)):
                best = x
        return best


def entity_lag(e, avg_v, tick_us=TICK_US):
    """V - v clamped like update_entity_lag (2 slices, at least a tick)."""
    limit = max(2 * e.vslice, tick_us * VSCALE // e.lw)
    lag = avg_v - e.v
    if lag > limit:
        return limit
    if lag < -limit:
        return -limit
    return lag
