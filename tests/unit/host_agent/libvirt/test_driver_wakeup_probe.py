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
"""LibvirtDriver.wakeup_probe: the self-test over the driver's pCPUs
through iosched.host_agent.linux.privileged_probe (faked here), errors as
DriverError.
"""

import pytest

from iosched.host_agent import conf as agent_conf
from iosched.host_agent.drivers import base
from iosched.host_agent.drivers.libvirt import driver as lv_driver
from iosched.host_agent import linux
from iosched.host_agent.linux import privileged_probe
from iosched.host_agent.linux import wakeup_probe
from iosched.host_agent import model

CONF = agent_conf.CONF


@pytest.fixture
def driver(tmp_path):
    cpu = tmp_path / 'sys' / 'devices' / 'system' / 'cpu'
    cpu.mkdir(parents=True)
    (cpu / 'online').write_text('0-3\n')
    overrides = [('sys_root', str(tmp_path / 'sys'), 'host_paths'),
                 ('trace_wakeups', False, 'libvirt')]
    for name, value, group in overrides:
        CONF.set_override(name, value, group)
    try:
        yield lv_driver.LibvirtDriver(CONF, conn=None)
    finally:
        for name, _, group in overrides:
            CONF.clear_override(name, group)
        CONF.clear_override('guest_pcpus', 'libvirt')


@pytest.mark.parametrize('guest_pcpus, cpus', [
    ('', (0, 1, 2, 3)), ('1-2', (1, 2)),
])
def test_runs_over_the_guest_pcpus(driver, monkeypatch, guest_pcpus, cpus):
    CONF.set_override('guest_pcpus', guest_pcpus, 'libvirt')
    calls = []
    rows = (model.WakeupProbe('stock', True, 15.0, 4000.0, 300),
            model.WakeupProbe('deadline', False, error='EBUSY'))

    def probe(conf, cases, cpus, wakes, hogs_per_cpu, lsvm_weight, repeats,
              share_ms):
        calls.append((tuple(cases), tuple(cpus), wakes, hogs_per_cpu,
                      lsvm_weight, repeats, share_ms))
        return rows

    monkeypatch.setattr(privileged_probe, 'probe', probe)
    assert driver.wakeup_probe(['stock', 'deadline'], wakes=120,
                               hogs_per_cpu=3, lsvm_weight=900, repeats=2,
                               share_ms=150) == rows
    assert calls == [(('stock', 'deadline'), cpus, 120, 3, 900, 2, 150)]


@pytest.mark.parametrize('error', [
    wakeup_probe.ProbeArgError('cases [\'x\']: unknown'),
    linux.LinuxKnobError('the self-test sleeper did not start'),
    OSError(13, 'Permission denied'),
])
def test_failures_are_driver_errors(driver, monkeypatch, error):
    def probe(*a, **kw):
        raise error

    monkeypatch.setattr(privileged_probe, 'probe', probe)
    with pytest.raises(base.DriverError, match='wake-up self-test failed'):
        driver.wakeup_probe(['stock'])
