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
"""Load drivers, knob sets, policies and actuators by name (stevedore).

Namespaces (setup.cfg entry points): ``iosched.host_agent.drivers``
(``[host_agent] driver``), ``iosched.host_agent.knobs`` (the knob set of
each driver, under the driver's ``name``), ``iosched.host_agent.policies``
and ``iosched.host_agent.actuators``.
"""

from stevedore import driver as sd_driver
from stevedore import exception as sd_exc

DRIVERS = 'iosched.host_agent.drivers'
KNOBS = 'iosched.host_agent.knobs'
POLICIES = 'iosched.host_agent.policies'
ACTUATORS = 'iosched.host_agent.actuators'


class PluginError(Exception):
    pass


def load_class(namespace, name):
    try:
        mgr = sd_driver.DriverManager(namespace, name, invoke_on_load=False)
    except sd_exc.NoMatches:
        from stevedore import extension
        names = sorted(extension.ExtensionManager(namespace).names())
        raise PluginError('no %s named %r; available: %s'
                          % (namespace, name, ', '.join(names) or 'none'))
    return mgr.driver


def load_policies(conf, names=None):
    """The policies ``names`` (default ``[host_agent] policies``), in
    order, each built from ``conf``.
    """
    if names is None:
        names = conf.host_agent.policies
    return [load_class(POLICIES, name)(conf) for name in names]


def knobs_class(driver_name):
    """The ``knob_set.KnobSet`` class registered for a driver's name."""
    return load_class(KNOBS, driver_name)


def load_knobs(conf, driver):
    """The knob set that writes the host ``driver`` reads."""
    return knobs_class(driver.name).for_driver(conf, driver)


def load_actuator(conf, name, knobs, journal):
    return load_class(ACTUATORS, name)(knobs, journal)
