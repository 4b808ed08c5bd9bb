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


class Dom(object):
    def UUIDString(self):
        return 'u-1'


class Dying(Conn):
    """The connection libvirtd drops in the middle of a tick: the stats
    call fails and, when ``dies``, the connection is dead after it.
    """

    def __init__(self, dies):
        super().__init__()
        self.dies = dies

    def domainListGetStats(self, doms, flags):
        self.dead = self.dies
        raise libvirt.libvirtError('End of file while reading data')


@pytest.mark.parametrize('dies, outage', [
    (True, True),     # libvirtd killed mid-tick: the tick is an outage
    (False, False),   # an error on a live connection: that data missing
])
def test_libvirtd_lost_in_the_middle_of_a_tick(daemon, caplog, dies,
                                               outage):
    conn = Dying(dies)
    drv = lv_driver.LibvirtDriver(CONF, conn)
    drv._info = {'u-1': (None, 1, {}, Dom(), 1)}
    with caplog.at_level(logging.WARNING):
        if outage:
            with pytest.raises(base.DriverUnavailable,
                               match='does not answer .End of file'):
                drv._refresh_stats()
        else:
            drv._refresh_stats()
    said = [r.getMessage() for r in caplog.records]
    assert (drv.conn is None) == outage and conn.closed == outage
    assert sum('lost' in m for m in said) == int(outage)
    assert sum('getAllDomainStats failed' in m for m in said) == int(
        not outage)
