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
"""The emulator pin knob moves the VM's whole I/O path with its main loop
(libvirt's iothreads through ``pinIOThread``, the other I/O threads by
affinity), all or nothing, and its read-back restores the iothreads' pins
(fake domain and driver; the real guest is in
tests/functional/test_libvirt_agent.py).
"""

import json

import pytest

from iosched.contract import knob_kinds
from iosched.host_agent.actuators import journal as journal_mod
from iosched.host_agent.actuators import libvirt_knobs
from iosched.host_agent.drivers import base
from tests import fixtures

libvirt = libvirt_knobs.libvirt
EMU = knob_kinds.EMULATOR_PIN
ALL = (True, True, True)


class Dom(object):
    """A running domain on 3 host CPUs; ``iothreads`` {id: cpumap} as
    Nova's <iothreads>/<iothreadpin> leave them. Records every pin call;
    ``fail_on`` (a call name) raises libvirtError once on that call.
    """

    def __init__(self, emulator=(False, True, False), iothreads=None):
        self.pin = tuple(emulator)
        self.iothreads = dict(iothreads or {})
        self.calls = []
        self.fail_on = None

    def emulatorPinInfo(self, flags):
        return self.pin

    def ioThreadInfo(self, flags):
        # libvirt-python: [(id, [bool per host CPU])]
        return [(i, list(m)) for i, m in sorted(self.iothreads.items())]

    def _fail(self, call):
        if self.fail_on == call:
            self.fail_on = None
            raise libvirt.libvirtError('%s: Permission denied' % call)

    def pinEmulator(self, cpumap, flags):
        self.calls.append(('pinEmulator', tuple(cpumap)))
        self._fail('pinEmulator')
        self.pin = tuple(cpumap)

    def pinIOThread(self, iothread_id, cpumap, flags):
        assert isinstance(cpumap, tuple)         # what the binding takes
        self.calls.append(('pinIOThread', iothread_id, tuple(cpumap)))
        self._fail('pinIOThread')
        self.iothreads[iothread_id] = tuple(cpumap)


class Driver(object):
    def __init__(self, dom, io):
        self.dom = dom
        self.io = io

    def domain(self, uuid):
        return self.dom

    def io_threads(self, uuid):
        return {'emulator': 10, 'io': dict(self.io)}


NOVA_IO = {'IO iothread1': 12, 'vhost-10': 11}


def make(dom, io=None, fail_tid=None):
    fixtures.require('libvirt-python', libvirt is not None,
                     'pip install libvirt-python')
    k = libvirt_knobs.LibvirtKnobs(Driver(dom, NOVA_IO if io is None
                                          else io))
    k.moved = []

    def set_affinity(tid, cpus):
        k.moved.append((tid, cpus))
        if tid == fail_tid and cpus == [0, 1, 2]:
            raise RuntimeError('EPERM')
    k._set_affinity = set_affinity
    return k


def test_io_threads_follow_the_main_loop():
    # the testbed's domains: no libvirt iothread
    k = make(Dom(), io={'vhost-10': 11})
    k.write_knob(EMU, 'u', '', None)
    assert k.driver.dom.calls == [('pinEmulator', ALL)]
    assert k.moved == [(11, [0, 1, 2])]
    assert k.read_knob(EMU, 'u', '') is None


def test_nova_iothread_is_pinned_through_libvirt():
    # Nova pins iothread1 like the emulator: the read is a plain pin
    dom = Dom(iothreads={1: (False, True, False)})
    k = make(dom)
    assert k.read_knob(EMU, 'u', '') == (1,)
    k.write_knob(EMU, 'u', '', None)
    assert dom.calls == [('pinEmulator', ALL), ('pinIOThread', 1, ALL)]
    # 'IO iothread1' is libvirt's to move (its cgroup's cpuset too)
    assert k.moved == [(11, [0, 1, 2])]
    assert k.read_knob(EMU, 'u', '') is None


# name, emulator pin, iothread pins, value written, want emulator pin,
# want iothread pins
WRITES = [
    ('a tuple pins every iothread alike', (True, False, False),
     {1: (True, False, False), 2: (False, False, True)}, (1, 2),
     (False, True, True), {1: (False, True, True), 2: (False, True, True)}),
    ('the dict form restores each iothread', ALL, {1: ALL, 2: ALL},
     {'emulator': [1], 'iothreads': {'1': [0], '2': None}},
     (False, True, False), {1: (True, False, False), 2: ALL}),
    ('an iothread the dict does not name gets the emulator pin', ALL,
     {1: ALL, 3: ALL}, {'emulator': (2,), 'iothreads': {'1': (0,)}},
     (False, False, True), {1: (True, False, False), 3: (False, False, True)}),
]


@pytest.mark.parametrize('name,emu,iothreads,value,want_emu,want_io',
                         WRITES, ids=[r[0] for r in WRITES])
def test_write(name, emu, iothreads, value, want_emu, want_io):
    dom = Dom(emu, iothreads)
    make(dom).write_knob(EMU, 'u', '', value)
    assert (dom.pin, dom.iothreads) == (want_emu, want_io)


def test_iothreads_pinned_apart_read_back_as_a_dict_that_restores():
    dom = Dom((False, True, False), {1: (True, False, False)})
    k = make(dom)
    before = k.read_knob(EMU, 'u', '')
    assert before == {'emulator': (1,), 'iothreads': {'1': (0,)}}
    k.write_knob(EMU, 'u', '', None)             # the deadline mechanism
    assert k.read_knob(EMU, 'u', '') is None     # idempotent from here
    # through the journal's JSON and back, as an agent restart does
    stored = journal_mod._from_json(EMU, json.loads(json.dumps(
        journal_mod._jsonable(before))))
    k.write_knob(EMU, 'u', '', stored)
    assert (dom.pin, dom.iothreads) == ((False, True, False),
                                        {1: (True, False, False)})
    assert k.read_knob(EMU, 'u', '') == before


@pytest.mark.parametrize('value', [
    {'emulator': None}, {'emulator': None, 'iothreads': [], 'x': 1},
    {'emulator': None, 'iothreads': {'1': (7,)}}, (9,), ()])
def test_a_bad_value_writes_nothing(value):
    dom = Dom(iothreads={1: (False, True, False)})
    with pytest.raises(base.DriverError):
        make(dom).write_knob(EMU, 'u', '', value)
    assert dom.calls == []


# name, the call that fails (a libvirt call, or the affinity of a tid)
FAILURES = [
    ('pinEmulator refused', 'pinEmulator', None),
    ('pinIOThread refused', 'pinIOThread', None),
    ('vhost affinity refused', None, 11),
]


@pytest.mark.parametrize('name,call,tid', FAILURES,
                         ids=[r[0] for r in FAILURES])
def test_a_failure_puts_every_pin_back(name, call, tid):
    emu, io1, io2 = (False, True, False), (True, False, False), (
        False, True, False)
    dom = Dom(emu, {1: io1, 2: io2})
    dom.fail_on = call
    k = make(dom, fail_tid=tid)
    with pytest.raises(base.DriverError, match='pins put back'):
        k.write_knob(EMU, 'u', '', None)
    assert (dom.pin, dom.iothreads) == (emu, {1: io1, 2: io2})
    # the last calls put back what was read before
    assert dom.calls[-3:] == [('pinEmulator', emu), ('pinIOThread', 1, io1),
                              ('pinIOThread', 2, io2)]
    assert k.moved[-1] == (11, [1])              # vhost back too
