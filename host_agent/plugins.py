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
"""Load drivers, policies and actuators by name through stevedore.

Namespaces (setup.py entry points): ``iosched.host_agent.drivers``,
``iosched.host_agent.policies``, ``iosched.host_agent.actuators``.
"""

from stevedore import driver as sd_driver
from stevedore import exception as sd_exc

DRIVERS = 'iosched.host_agent.drivers'
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


def load_policies(conf):
    return [load_class(POLICIES, name)(conf)
            for name in conf.host_agent.policies]


def load_actuator(conf, name, driver, journal):
    return load_class(ACTUATORS, name)(driver, journal)
