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
"""The knob writers' interface: the only code that changes a host.

Drivers only read (``iosched.host_agent.drivers.base``). What the agent writes
goes through a ``KnobSet``, one per kind of host, chosen by the driver's
name from the ``iosched.host_agent.knobs`` entry point namespace
(``iosched.host_agent.plugins.load_knobs``), never by probing the driver:

==============  ============================================  =============
driver name     knob set                                      writes
==============  ============================================  =============
``libvirt``     ``iosched.host_agent.actuators.host_knobs.HostKnobs``  the
Linux,
                                                              libvirt and
                                                              block I/O
                                                              writers
``simulated``   ``iosched.simdriver.knobs.SimulatedKnobs``    the simulator
==============  ============================================  =============

A ``KnobWriter`` reads and writes some action kinds (``knobs()``): the
value ``read_knob`` returns is the form ``write_knob`` accepts, so the
journal restores what it read. A ``KnobSet`` is the writer of a whole
host, built for one driver (``for_driver``; the driver resolves instances
to threads, cgroups, domains or simulated VMs), and the journaled
``iosched.host_agent.actuators.driver.DriverActuator`` drives it. A failed read
or write raises ``iosched.host_agent.drivers.base.DriverError``.
"""

import abc

from iosched.host_agent.drivers import base as driver_base


class NoDesired(Exception):
    """Nothing says what the knob should be (``KnobWriter.desired``)."""


class KnobWriter(metaclass=abc.ABCMeta):
    """Reads and writes the action kinds ``knobs()`` lists."""

    @abc.abstractmethod
    def knobs(self):
        """The action kinds this writer can read and write."""

    @abc.abstractmethod
    def read_knob(self, kind, instance_uuid, target):
        """Current value of a knob (the form ``write_knob`` accepts)."""

    @abc.abstractmethod
    def write_knob(self, kind, instance_uuid, target, value):
        """Set a knob. Raise DriverError on failure."""

    def marked_kinds(self):
        """The kinds whose originals this writer also keeps in the
        instance itself (``held_marker``); none by default.
        """
        return ()

    # Reconciliation at start (``iosched.host_agent.actuators.reconcile``):
    # what a knob should be when no agent has changed it, from the
    # instance's own definition and the host's defaults.
    def reconciled_kinds(self):
        """The kinds ``desired`` can answer for; none by default."""
        return ()

    def desired(self, kind, instance_uuid, target):
        """The value the knob has when no agent changed it (the form
        ``read_knob`` returns); ``NoDesired`` when nothing says.
        """
        raise NoDesired('%s keeps no desired state of %s'
                        % (type(self).__name__, kind))


class KnobSet(KnobWriter):
    """Every knob of one host, over the driver that resolves its
    instances (``self.driver``).
    """

    def __init__(self, driver):
        self.driver = driver

    @classmethod
    def prepare(cls, conf):
        """Called once by ``io-host-agent`` before it builds the driver
        (e.g. fork a privileged daemon that must inherit no connection).
        Default: nothing to prepare.
        """

    @classmethod
    @abc.abstractmethod
    def for_driver(cls, conf, driver):
        """The knob set of the host ``driver`` reads."""

    def running(self, uuid):
        """Whether the instance still runs here (a knob of a gone
        instance cannot be restored, and need not be).
        """
        return uuid in {i.uuid for i in self.driver.list_instances()}

    # The held-knobs marker (``held_marker``): only where
    # ``marked_kinds()`` lists kinds.
    def mark_held(self, uuid, held):
        """Record ``held`` ({(kind, target): original}) in the instance;
        {} removes the record.
        """
        raise driver_base.DriverError(
            '%s keeps no held-knobs marker' % type(self).__name__)

    def read_held(self, uuid):
        """(host, {(kind, target): original}) recorded on the instance,
        or None when there is no record.
        """
        return None
