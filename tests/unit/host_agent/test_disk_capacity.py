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
"""disk.capacity_iops in the HostReport: the operator's measurement, else
the driver's model, else 0 (unknown).
"""

import pytest

from iosched.contract import payload
from iosched.host_agent.reporter import build
from iosched.simdriver import driver as sim_driver
from iosched.simulator import host as sim_host
from iosched.simulator import spec as sim_spec
from tests import fixtures


@pytest.mark.parametrize('configured, from_driver, want', [
    (0.0, None, 0.0),           # libvirt: no model, nothing configured
    (0.0, 0.0, 0.0),
    (0.0, 80000.0, 80000.0),    # simulated: the model's capacity
    (5000.0, None, 5000.0),     # the operator's fio measurement
    (5000.0, 80000.0, 5000.0),  # ... wins over the model
    (0.0, -3.0, 0.0),           # a nonsensical driver value is unknown
], ids=['unknown', 'driver-zero', 'driver', 'option', 'option-wins',
        'driver-negative'])
def test_choose_disk_capacity(configured, from_driver, want):
    assert build.choose_disk_capacity(configured, from_driver) == want


@pytest.mark.parametrize('disk, want', [
    # 8 slots / 100 us = 80000 IOPS
    (sim_spec.DiskSpec(service_us=100, parallelism=8), 80000.0),
    # 4 / (100 + 16384 * 0.5 / 1000 = 108.192 us) = 36971.3...
    (sim_spec.DiskSpec(service_us=100, parallelism=4, per_byte_ns=0.5),
     4 * 1e6 / 108.192),
    # 1 / 5000 us = 200 IOPS: a slow disk
    (sim_spec.DiskSpec(service_us=5000, parallelism=1), 200.0),
], ids=['default', 'per-byte', 'slow'])
def test_simulated_driver_tells_the_model_capacity(disk, want):
    sim = sim_host.SimHost(sim_spec.HostSpec(name='h', pcpus=1, disk=disk))
    driver = sim_driver.SimulatedDriver(sim)
    assert driver.disk_capacity_iops() == pytest.approx(want, rel=1e-12)


def test_build_report_carries_the_capacity():
    sim, driver = fixtures.sim_host_with_vms()
    agent = fixtures.make_agent(driver)
    fixtures.run_ticks(sim, agent, 1)
    report = build.build_report(agent.last_snapshot, 0, 1.0,
                                disk_capacity_iops=1234.5)
    assert report.disk.capacity_iops == 1234.5
    back = payload.HostReport.from_dict(report.to_dict())
    assert back.disk.capacity_iops == 1234.5
    # the keyword is optional: unknown
    assert build.build_report(
        agent.last_snapshot, 0, 1.0).disk.capacity_iops == 0.0


@pytest.fixture
def capacity_option():
    yield lambda v: fixtures.CONF.set_override(
        'disk_capacity_iops', v, group='host_agent')
    fixtures.CONF.clear_override('disk_capacity_iops', group='host_agent')


def test_agent_reports_the_model_then_the_option(capacity_option):
    sim, driver = fixtures.sim_host_with_vms()
    agent = fixtures.make_agent(driver)
    fixtures.run_ticks(sim, agent, 1)
    # the fixture host's default DiskSpec: 8 / 100 us
    assert agent.last_report.disk.capacity_iops == 80000.0
    capacity_option(2500.0)
    fixtures.run_ticks(sim, agent, 1)
    assert agent.last_report.disk.capacity_iops == 2500.0


def test_agent_without_a_driver_capacity_reports_unknown():
    sim, driver = fixtures.sim_host_with_vms()

    class NoModel(sim_driver.SimulatedDriver):
        disk_capacity_iops = None       # as the libvirt driver: no method

    agent = fixtures.make_agent(NoModel(sim, driver._instances))
    fixtures.run_ticks(sim, agent, 1)
    assert agent.last_report is not None
    assert agent.last_report.disk.capacity_iops == 0.0


def test_option_rejects_a_negative_capacity():
    with pytest.raises(ValueError):
        fixtures.CONF.set_override('disk_capacity_iops', -1.0,
                                   group='host_agent')
