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
"""The contract between ``SimHost``, its workloads and a CPU scheduler.

Every scheduler model (EEVDF in ``iosched.simulator.cpu``; Xen Credit, Credit2,
ISACS, vSlicer and vTurbo in ``iosched.simulator.xen``) derives from
``Scheduler`` and its entities from ``Entity``.

Entity (one vCPU), fields every scheduler maintains:

* ``on_rq`` runnable (queued or running); ``running`` on a pCPU now;
* ``last_cpu`` id of the pCPU it last ran on (None: never ran);
* ``allowed`` None (all pCPUs) or a tuple of pCPU ids (hard affinity);
* ``run_us`` / ``wait_us`` cumulative run time and runnable-not-running
  time (``counters`` adds the live part); ``wakeups`` blocked ->
  runnable transitions (not the initial start); ``switches`` times it
  was put on a pCPU;
* ``wl`` the workload; ``io_events`` / ``io_distinct`` / ``io_dropped``
  see ``io_event``;
  ``alive`` False once removed.

Workload protocol (``iosched.simulator.workloads``): while an entity runs for d
us the scheduler subtracts d from ``e.wl.work_left``; when that reaches
0 on a pCPU it calls ``e.wl.complete(now)``, and if ``work_left`` is
still 0 the entity blocks (``on_rq`` False). A workload calls
``sched.wake(e, now)`` only for a blocked entity (``not e.on_rq``), and
``sched.io_event(e, now)`` for every I/O response event delivered to the
vCPU (a scheduler like ISACS counts them; the base records them for the
agent's collector to drain).
"""

import array

IO_EVENTS_CAP = 100000


def io_event_buffer():
    """A vCPU's undrained I/O event times (integer us): one flat array of
    64-bit ints, not a list of int objects (a busy host's 80,000 a second
    cost the agent their freeing, memory scattered over a second).
    """
    return array.array('q')


class Entity:
    """The fields shared by every scheduler's vCPU entity."""
    __slots__ = ('id', 'vm', 'index', 'weight', 'on_rq', 'running',
                 'last_cpu', 'allowed', 'wl', 'run_us', 'wait_us',
                 'wait_start', 'wakeups', 'switches', 'io_events',
                 'io_distinct', 'io_dropped', 'alive')

    def __init__(self, eid, vm, index, weight):
        self.id = eid
        self.vm = vm
        self.index = index
        self.weight = weight        # cgroup v2 scale, default 100
        self.on_rq = False
        self.running = False
        self.last_cpu = None
        self.allowed = None
        self.wl = None
        self.run_us = 0
        self.wait_us = 0
        self.wait_start = 0
        self.wakeups = 0
        self.switches = 0
        self.io_events = io_event_buffer()
        self.io_distinct = 0
        self.io_dropped = 0
        self.alive = True

    def allows(self, cpu_id):
        return self.allowed is None or cpu_id in self.allowed

    def __repr__(self):
        return '<vcpu %s/%d>' % (getattr(self.vm, 'uuid', '?'), self.index)


class Scheduler:
    """What ``SimHost`` and the workloads call. Subclasses implement it."""

    name = 'base'
    # The knobs this model honours, for error messages.
    knobs = ('weight', 'affinity')

    def new_entity(self, eid, vm, index, weight):
        raise NotImplementedError

    def wake(self, e, now, initial=False):
        """Blocked e became runnable: place it, maybe preempt."""
        raise NotImplementedError

    def remove(self, e, now):
        """e's VM is gone: take it off every queue for good."""
        raise NotImplementedError

    def counters(self, e, now):
        """(run_us, wait_us) of e, live up to ``now``."""
        run, wait = e.run_us, e.wait_us
        if e.running:
            d = now - self._run_since(e)
            if d > 0:
                run += d
        elif e.on_rq:
            wait += now - e.wait_start
        return run, wait

    def _run_since(self, e):
        """When the running e's run time was last charged (us)."""
        raise NotImplementedError

    def set_weight(self, e, weight, now):
        raise NotImplementedError

    def set_affinity(self, e, allowed, now):
        raise NotImplementedError

    def set_slice(self, e, slice_us, now):
        raise ValueError('vcpu slice: the %s scheduler model has no '
                         'per-vCPU slice; accepted knobs: %s'
                         % (self.name, ', '.join(self.knobs)))

    def get_slice(self, e):
        return None

    def set_deadline(self, e, params, now):
        raise ValueError('vcpu deadline: the %s scheduler model has no '
                         'SCHED_DEADLINE; accepted knobs: %s'
                         % (self.name, ', '.join(self.knobs)))

    def get_deadline(self, e):
        return None

    def deadline_bw(self):
        """Bandwidth held by SCHED_DEADLINE reservations, in CPUs."""
        return 0.0

    def check_affinity(self, e, allowed):
        """Raise ValueError if e may not get this affinity."""

    def set_cap(self, ents, cap, now):
        raise ValueError('vm cap: the %s scheduler model has no CFS '
                         'bandwidth cap; accepted knobs: %s'
                         % (self.name, ', '.join(self.knobs)))

    def get_cap(self, e):
        return None

    def io_event(self, e, now):
        """An I/O response event reached vCPU e (kept for the agent), and
        how many of the kept ones differ from the one before them: Eq. 1's
        E_n as ``iosched.contract.isacs.ema_gap`` counts it, counted here
        while the time is at hand so the agent need not read every event.
        """
        events = e.io_events
        if len(events) < IO_EVENTS_CAP:
            if not events or events[-1] != now:
                e.io_distinct += 1
            events.append(now)
        else:
            e.io_dropped += 1

    def stats(self):
        """Model-specific figures (e.g. credit resets), JSON-able."""
        return {}
