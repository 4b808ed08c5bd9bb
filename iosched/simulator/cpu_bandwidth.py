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
"""A VM's CFS bandwidth cap for ``iosched.simulator.cpu.Scheduler``.

libvirt's VM-level cgroup (``machine/<vm>``) with ``cpu.cfs_quota_us`` /
``cpu.cfs_period_us`` (cgroup v2 ``cpu.max``): the fair vCPU entities of
the VM share one pool of ``quota = cap x period`` us of run time per
period (``KernelSpec.cfs_period_us``, 100 ms by default):

* run time of a member is charged to the pool as it runs (deadline
  entities are not: the kernel does not throttle them by CFS bandwidth);
* the pool running out is an event of the running member: exact with
  ``KernelSpec.hrtick``, else at the next tick (the kernel notices in
  ``update_curr``, mostly on the tick, so a group overruns by up to a
  tick); then the group is throttled: every runnable member leaves its
  run-queue (counted as waiting) and a member that wakes meanwhile stays
  off them;
* at each period the pool is refilled to the quota, less any overrun
  (the kernel's runtime debt: ``distribute_cfs_runtime`` hands a
  throttled run-queue what it overspent first); a throttled group with
  runtime left is unthrottled and its members placed as wake-ups;
* changing the cap refills the pool and unthrottles (as
  ``tg_set_cfs_bandwidth``); None removes it.

Simplification: one pool per VM, without the 5 ms slices
(``sched_cfs_bandwidth_slice_us``) each run-queue borrows from it: with
one vCPU per pCPU the two are the same; two members running at once can
overrun the pool until one of them reaches its event, paid back at the
next refill.
"""

from iosched.simulator import cpu_deadline
from iosched.simulator import eevdf


class Group:
    """The cap of one VM: its pool and the fair entities it holds."""
    __slots__ = ('quota', 'period', 'runtime', 'throttled', 'members',
                 'gen', 'cap')

    def __init__(self, cap, period_us):
        self.cap = cap
        self.period = period_us
        self.quota = max(1, int(round(cap * period_us)))
        self.runtime = self.quota
        self.throttled = False
        self.members = []
        self.gen = 0


class BandwidthMixin(cpu_deadline.DeadlineMixin):
    __slots__ = ()

    def set_cap(self, ents, cap, now):
        """Cap the VM whose vCPU entities are ``ents`` at ``cap`` CPUs
        (a float > 0), or remove its cap (None).
        """
        g = ents[0].group if ents else None
        if g is not None:
            self._settle_group(g, now)
            g.gen += 1
            for e in g.members:
                e.group = None
            self._unthrottle(g, now)
            g.members = []
        if cap is None:
            return
        g = Group(cap, self.kernel.cfs_period_us)
        for e in ents:
            e.group = g
            g.members.append(e)
        self.loop.at(now + g.period, self._on_period, g, g.gen)
        # running members' events must see the new pool
        for e in ents:
            if e.running and e.dl is None:
                p = e.cpu
                self._settle(p, now)
                if p.curr is e:
                    self._arm(p, max(now, p.last_update))

    def get_cap(self, e):
        return None if e.group is None else e.group.cap

    def _leave_group(self, e, now):
        g = e.group
        if g is not None:
            e.group = None
            if e in g.members:
                g.members.remove(e)

    def _settle_group(self, g, now):
        """Charge the running members' run time to the pool up to now."""
        for e in g.members:
            if e.running and e.dl is None:
                self._update_curr(e.cpu, now)

    def _throttle(self, g, now):
        """The pool is spent: take every runnable member off its queue."""
        g.throttled = True
        for e in g.members:
            if not e.on_rq or e.dl is not None or e.throttled:
                continue
            p = e.cpu
            if e.running:
                self._update_curr(p, now)
            if self.place_lag:
                e.vlag = eevdf.entity_lag(e, p.avg_v(), self.lag_tick_us)
            if e.running:
                e.running = False
                p.curr = None
                p.gen += 1
                if not p.queue:
                    p.idle_v = e.v
                e.cpu = None
                e.throttled = True
                e.wait_start = now
                self._dl_next(p, now)
            else:
                p.dequeue(e)
                self.nr_waiting -= 1
                e.wait_us += now - e.wait_start
                e.wait_start = now
                e.cpu = None
                e.throttled = True

    def _park_throttled(self, e, now):
        """A member of a throttled group became runnable: it waits."""
        e.on_rq = True
        e.throttled = True
        e.cpu = None
        e.wait_start = now

    def _unthrottle(self, g, now):
        if not g.throttled:
            return
        g.throttled = False
        for e in list(g.members):
            if e.throttled:
                e.throttled = False
                e.wait_us += now - e.wait_start
                self._fair_enqueue(e, now)

    def _on_period(self, g, gen):
        if gen != g.gen:
            return
        now = self.loop.now
        self.loop.at(now + g.period, self._on_period, g, gen)
        self._settle_group(g, now)
        g.runtime = g.quota + min(g.runtime, 0)
        if g.throttled and g.runtime > 0:
            self._unthrottle(g, now)
