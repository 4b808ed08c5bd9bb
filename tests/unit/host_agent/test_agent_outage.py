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
"""The agent while its driver is down (libvirtd killed or restarting), on
a simulated host: one WARNING for the outage whatever else reads through
the driver, degraded reports naming the cause, ok again after.
"""

import logging

from iosched.contract import lsvm as lsvm_bound
from iosched.host_agent.drivers import base
from iosched.host_agent import model
from tests import fixtures

DOWN = 'libvirt at qemu:///system does not answer'


class _Down(object):
    """A simulated driver whose hypervisor can be made unreachable; it
    has the libvirt driver's deadline admission figures, read through
    the hypervisor too.
    """

    def __init__(self, driver):
        self._d = driver
        self.down = False
        self.deadline_reads = 0

    def __getattr__(self, name):
        return getattr(self._d, name)

    def list_instances(self):
        if self.down:
            raise base.DriverUnavailable(DOWN)
        return self._d.list_instances()

    def deadline_state(self):
        self.deadline_reads += 1
        if self.down:
            raise base.DriverUnavailable(DOWN)
        return model.DeadlineState(cpus=(0, 1), all_cpus=True, limit=1.9,
                                   foreign=0.0)


def test_an_outage_is_said_once_and_every_report_says_it(caplog):
    sim, driver = fixtures.sim_host_with_vms()
    down = _Down(driver)
    agent = fixtures.make_agent(down)
    fixtures.run_ticks(sim, agent, 2)
    # the deadline mechanism: each report re-reads its admission figures
    agent.host_sched = model.HostSched(mechanism=lsvm_bound.MECH_DEADLINE)
    fixtures.run_ticks(sim, agent, 1)
    assert down.deadline_reads == 1
    assert agent.last_report.health.status == 'ok'
    down.down = True
    reports = []
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        for _ in range(5):
            fixtures.run_ticks(sim, agent, 1)
            reports.append(agent.last_report)
    warned = [r.getMessage() for r in caplog.records
              if r.levelno >= logging.WARNING]
    assert len(warned) == 1 and DOWN in warned[0], warned
    assert down.deadline_reads == 1        # not read through a dead driver
    assert [r.health.status for r in reports] == ['degraded'] * 5
    assert all(any(DOWN in e for e in r.health.errors) for r in reports)
    assert [r.seq for r in reports] == list(range(3, 8))
    down.down = False
    fixtures.run_ticks(sim, agent, 1)
    assert down.deadline_reads == 2        # and again once it answers
    assert agent.last_report.health.status == 'ok'
