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
"""The agent's pre-issue-29 per-event path, kept only as the reference
``bench/agent_load.py`` prints its figure beside (alternate ticks of the
same run take it): the simulated driver converting every I/O event
timestamp to ns (``tuple(t * 1000 for t in events)``), ISACS's Eq. 1 as a
Python loop over every event, and Eq. 4 summing every credit again for
each CPU-BOOST member. Results are the current code's (the statistic is
the same to the last bit but for float rounding), only the cost differs.
``free_events`` frees a reference tick's per-event tuples on its clock.
"""

import contextlib

from iosched.contract import isacs
from iosched.host_agent import model
from iosched.simdriver import driver as sim_driver


def old_ema_gap_loop(times, weight=0.9, cutoff=10000, scale=1,
                     events=None):
    """The pre-issue-29 Eq. 1: one Python iteration per event, each time
    converted on its own (as the simulated driver did, ``t * 1000``);
    ``events`` is accepted and ignored (the old loop counted). Also the
    reference tests/unit/contract/test_isacs_ema_tail.py checks against.
    """
    events, t_prev, ibar = 0, None, None
    keep = 1.0 - weight
    for t in (t * scale for t in times):
        if t == t_prev:
            continue
        if t_prev is not None:
            gap = t - t_prev
            if 0 < gap <= cutoff:
                ibar = gap if ibar is None else weight * gap + keep * ibar
        events += 1
        t_prev = t
    return events, (ibar or 0.0)


def old_cvcredit_per_member(ivcredits, group_size, consumed,
                            default_credit, total=None):
    """Eq. 4 with the sum of the run-queue's credits taken per call."""
    if group_size <= 0 or default_credit <= 0 or consumed <= 0:
        return 0.0
    return sum(ivcredits) / group_size * consumed / default_credit


def old_vcpu_samples(self, instance):
    """The simulated driver's samples, every event converted to ns."""
    ts = self.now()
    samples = []
    for vcpu in range(instance.vcpus):
        c = self.sim.vcpu_counters(instance.uuid, vcpu)
        events = self.sim.drain_io_deliveries(instance.uuid, vcpu)[0]
        samples.append(model.VcpuSample(
            instance_uuid=instance.uuid, vcpu=vcpu, ts=ts, pcpu=c.pcpu,
            run_ns=c.run_us * 1000, wait_ns=c.wait_us * 1000,
            wakeups=c.wakeups,
            io_events=tuple(t * 1000 for t in events)))
    return samples


def free_events(agent):
    """Free, now, the per-event tuples of the reference tick that just
    ran: the collector keeps each vCPU's last sample until the next tick
    (only its counters are read then), so the ~80,000 ints would be freed
    by the next tick, a current one on alternate ticks. A run of the old
    path frees them in its own next tick: they are the reference's cost.
    """
    for sample in agent.vcpu_collector._prev.values():
        if isinstance(sample.io_events, tuple):
            # frozen, and read by no one after this tick
            object.__setattr__(sample, 'io_events', None)


@contextlib.contextmanager
def reference_path():
    """The old per-event path in place of the current one, then back."""
    saved = (isacs.ema_gap, isacs.cvcredit,
             sim_driver.SimulatedDriver.vcpu_samples)
    isacs.ema_gap = old_ema_gap_loop
    isacs.cvcredit = old_cvcredit_per_member
    sim_driver.SimulatedDriver.vcpu_samples = old_vcpu_samples
    try:
        yield
    finally:
        (isacs.ema_gap, isacs.cvcredit,
         sim_driver.SimulatedDriver.vcpu_samples) = saved
