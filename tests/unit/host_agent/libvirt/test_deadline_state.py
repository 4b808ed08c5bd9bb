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
"""LibvirtDriver.deadline_state: the running domains' QEMU pids go to
iosched.host_agent.linux.deadline.measure (a fake connection and run dir).
"""

import logging

import pytest

from iosched.host_agent import conf as agent_conf
from iosched.host_agent.drivers import base
from iosched.host_agent.drivers.libvirt import driver as lv_driver
from iosched.host_agent import linux
from iosched.host_agent.linux import deadline
from iosched.host_agent import model
from tests import fixtures

CONF = agent_conf.CONF
libvirt = lv_driver.libvirt


class Dom(object):
    def __init__(self, name):
        self._name = name

    def name(self):
        return self._name


class Conn(object):
    def __init__(self, names, ncpus=4):
        self.names = names
        self.ncpus = ncpus

    def getCPUMap(self, flags):
        return self.ncpus, [True] * self.ncpus, self.ncpus

    def listAllDomains(self, flags):
        assert flags == libvirt.VIR_CONNECT_LIST_DOMAINS_ACTIVE
        return [Dom(n) for n in self.names]

    def close(self):
        pass


@pytest.fixture
def driver(tmp_path):
    fixtures.require('libvirt-python', libvirt is not None,
                     'pip install libvirt-python')
    run = tmp_path / 'run'
    run.mkdir()
    (run / 'instance-1.pid').write_text('4242\n')
    (run / 'instance-2.pid').write_text('5151')
    overrides = [('libvirt_run_dir', str(run), 'host_paths'),
                 ('proc_root', str(tmp_path / 'proc'), 'host_paths'),
                 ('sys_root', str(tmp_path / 'sys'), 'host_paths'),
                 ('cgroup_root', str(tmp_path / 'cg'), 'host_paths'),
                 ('trace_wakeups', False, 'libvirt')]
    for name, value, group in overrides:
        CONF.set_override(name, value, group)
    try:
        yield lv_driver.LibvirtDriver(
            CONF, Conn(['instance-2', 'instance-1', 'no-pidfile']))
    finally:
        for name, _, group in overrides:
            CONF.clear_override(name, group)


STATE = model.DeadlineState(cpus=(0, 1), limit=1.9, foreign=0.1,
                            reserved=0.25)


def test_measures_the_running_domains(driver, tmp_path, monkeypatch,
                                      caplog):
    calls = []

    def measure(proc_root, sys_root, pids, cgroup_root=None):
        calls.append((proc_root, sys_root, pids, cgroup_root))
        return deadline.Measured(STATE, deadline.SOURCE_SCAN,
                                 ('servers taken at the default',))

    monkeypatch.setattr(deadline, 'measure', measure)
    with caplog.at_level(logging.WARNING):
        assert driver.deadline_state() == STATE
        assert driver.deadline_state() == STATE
    assert calls[0] == (str(tmp_path / 'proc'), str(tmp_path / 'sys'),
                        [4242, 5151], str(tmp_path / 'cg'))
    said = [r for r in caplog.records if 'servers taken' in r.getMessage()]
    assert len(said) == 1                           # once, not every call
    # The root domain is all the host's CPUs: an affinity over them reads
    # back as None from the pin knobs, so the policy writes None.
    driver.conn.ncpus = 2
    assert driver.deadline_state() == model.DeadlineState(
        cpus=(0, 1), limit=1.9, foreign=0.1, reserved=0.25, all_cpus=True)


def test_errors_are_driver_errors(driver, monkeypatch):
    def measure(*args, **kwargs):
        raise linux.LinuxKnobError('cannot read the online CPUs')

    monkeypatch.setattr(deadline, 'measure', measure)
    with pytest.raises(base.DriverError, match='online CPUs'):
        driver.deadline_state()


def test_on_a_fake_tree_the_real_syscalls_are_refused(driver, tmp_path):
    # proc_root is not this process's procfs: sched_getattr would ask the
    # wrong threads, so the scan refuses instead of guessing.
    cpu = tmp_path / 'sys' / 'devices' / 'system' / 'cpu'
    cpu.mkdir(parents=True)
    (cpu / 'online').write_text('0-1\n')
    kernel = tmp_path / 'proc' / 'sys' / 'kernel'
    kernel.mkdir(parents=True)
    (kernel / 'sched_rt_runtime_us').write_text('950000\n')
    (kernel / 'sched_rt_period_us').write_text('1000000\n')
    with pytest.raises(base.DriverError, match='pid namespace'):
        driver.deadline_state()
