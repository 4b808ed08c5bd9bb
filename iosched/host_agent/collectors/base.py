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
"""Collector base: collectors read through the driver and never write.

A collector keeps the previous raw sample per key and returns rates over
the time since then; the first call for a key yields nothing (there is no
window yet), like koordlet's collectors.
"""

import abc

from oslo_log import log as logging

LOG = logging.getLogger(__name__)


class Collector(metaclass=abc.ABCMeta):
    name = 'base'

    def __init__(self, conf):
        self.conf = conf
        self.errors = []   # this tick's read problems, for health
        self._prev = {}    # (instance uuid, key) -> previous raw sample

    @abc.abstractmethod
    def collect(self, driver, instances):
        """Return a tuple of measurements for ``instances``."""

    def forget(self, instance_uuids):
        """Drop the previous samples of instances that went away."""
        gone = set(instance_uuids)
        for key in [k for k in self._prev if k[0] in gone]:
            del self._prev[key]

    def read(self, reader, instance):
        """Call ``reader(instance)``; on failure log, remember, return []."""
        try:
            return reader(instance)
        except Exception as e:  # one bad VM must not stop the others
            LOG.warning('%(c)s: cannot read %(uuid)s: %(err)s',
                        {'c': self.name, 'uuid': instance.uuid, 'err': e})
            self.errors.append('%s: %s: %s' % (self.name, instance.uuid, e))
            return []
