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
"""The emulator pin knob moves the VM's I/O threads with its main loop,
all or nothing (fake domain and driver; the real guest is in
tests/functional/test_libvirt_agent.py).
"""

import pytest

from iosched.contract import knob_kinds
from iosched.host_agent.actuators import libvirt_knobs
from iosched.host_agent.drivers import base
from tests import fixtures

libvirt = libvirt_knobs.libvirt


class Dom(object):
    def __init__(self):
        self.pin = (False, True)
        self.calls = []

    def emulatorPinInfo(self, flags):
        return self.pin

    def pinEmulator(self, cpumap, flags):
        self.calls.append(tuple(cpumap))
        self.pin = tuple(cpumap)


class Driver(object):
    def __init__(self):
        self.dom = Dom()

    def domain(self, uuid):
        return self.dom

    def io_threads(self, uuid):
        return {'emulator': 10, 'io': {'IO mon_iothread': 12,
                                       'vhost-10': 11}}


@pytest.fixture
def knobs(monkeypatch):
    fixtures.require('libvirt-python', libvirt is not None,
                     'pip install libvirt-python')
    k = libvirt_knobs.LibvirtKnobs(Driver())
    k.moved = []
    monkeypatch.setattr(k, '_set_affinity',
                        lambda tid, cpus: k.moved.append((tid, cpus)))
    return k


def test_io_threads_follow_the_main_loop(knobs):
    knobs.write_knob(knob_kinds.EMULATOR_PIN, 'u', '', None)
    assert knobs.driver.dom.pin == (True, True)
    assert knobs.moved == [(11, [0, 1]), (12, [0, 1])]
    assert knobs.read_knob(knob_kinds.EMULATOR_PIN, 'u', '') is None


def test_a_failure_puts_the_previous_pin_back(knobs, monkeypatch):
    def fail(tid, cpus):
        knobs.moved.append((tid, cpus))
        if tid == 12 and cpus == [0, 1]:
            raise RuntimeError('EPERM')
    monkeypatch.setattr(knobs, '_set_affinity', fail)
    with pytest.raises(base.DriverError, match='emulator pin put back'):
        knobs.write_knob(knob_kinds.EMULATOR_PIN, 'u', '', None)
    assert knobs.driver.dom.pin == (False, True)
    assert knobs.moved[-2:] == [(11, [1]), (12, [1])]
