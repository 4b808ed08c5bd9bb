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
"""LibvirtDriver's connection: libvirtd restarted under it (a fake
connection that dies as libvirt-python's does: the next call fails and
``isAlive()`` turns 0). The real restart is
``tests/functional/test_libvirt_agent.py::test_libvirtd_restart_under_the_agent``.
"""

import logging

import pytest

from iosched.host_agent import conf as agent_conf
from iosched.host_agent.drivers import base
from iosched.host_agent.drivers.libvirt import driver as lv_driver
from tests import fixtures

CONF = agent_conf.CONF
libvirt = lv_driver.libvirt


class Conn(object):
    def __init__(self):
        self.dead = False
        self.closed = False
        self.lists = 0

    def isAlive(self):
        return 0 if self.dead else 1

    def listAllDomains(self, flags):
        if self.dead:
            raise libvirt.libvirtError('Cannot write data: Broken pipe')
        self.lists += 1
        return []

    def close(self):
        self.closed = True


class Libvirtd(object):
    """libvirt.open: a fresh Conn while up, libvirtError while down."""

    def __init__(self):
        self.up = True
        self.opened = []

    def open(self, uri):
        if not self.up:
            raise libvirt.libvirtError('Failed to connect socket to '
                                       "'/run/libvirt/libvirt-sock'")
        self.opened.append(Conn())
        return self.opened[-1]


@pytest.fixture
def daemon(monkeypatch):
    fixtures.require('libvirt-python', libvirt is not None,
                     'pip install libvirt-python')
    d = Libvirtd()
    monkeypatch.setattr(libvirt, 'open', d.open)
    CONF.set_override('trace_wakeups', False, 'libvirt')
    yield d
    CONF.clear_override('trace_wakeups', 'libvirt')


def test_a_restarted_libvirtd_is_reconnected_on_the_first_call(daemon,
                                                              caplog):
    first = Conn()
    drv = lv_driver.LibvirtDriver(CONF, first)
    assert drv.list_instances() == []
    first.dead = True                       # libvirtd restarted meanwhile
    with caplog.at_level(logging.INFO):
        assert drv.list_instances() == []   # same call: reopened
    assert first.closed and drv.conn is daemon.opened[0]
    said = [r.getMessage() for r in caplog.records]
    assert sum('lost' in m for m in said) == 1
    assert sum('reconnected' in m for m in said) == 1


def test_while_libvirtd_is_down_every_call_is_a_driver_error(daemon,
                                                            caplog):
    first = Conn()
    drv = lv_driver.LibvirtDriver(CONF, first)
    first.dead = True
    daemon.up = False
    with caplog.at_level(logging.WARNING):
        for _ in range(3):
            with pytest.raises(base.DriverError, match='does not answer'):
                drv.list_instances()
            # the deadline admission asks the same way
            with pytest.raises(base.DriverError, match='does not answer'):
                drv.deadline_state()
    # One warning for the loss; the repeats are the agent's to say once.
    assert sum('lost' in r.getMessage() for r in caplog.records) == 1
    assert drv.conn is None
    daemon.up = True
    assert drv.list_instances() == []
    assert drv.conn is daemon.opened[0]
    drv.close()
    assert drv.conn.closed


def test_an_error_on_a_live_connection_is_not_a_reconnect(daemon):
    class Refusing(Conn):
        def listAllDomains(self, flags):
            raise libvirt.libvirtError('access denied')

    conn = Refusing()
    drv = lv_driver.LibvirtDriver(CONF, conn)
    with pytest.raises(base.DriverError, match='access denied'):
        drv.list_instances()
    assert drv.conn is conn and not daemon.opened
