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
"""Policy base: ``decide(snapshot) -> Plan``, pure.

A policy reads only its arguments (a ``model.HostSnapshot`` and its own
parameters); it does no file, libvirt or bus I/O and never reads the clock.
Each policy's options live in its own group ``[host_agent_policy.<name>]``.
"""

import abc


class Policy(metaclass=abc.ABCMeta):
    name = 'base'

    def __init__(self, conf):
        self.conf = conf

    @abc.abstractmethod
    def decide(self, snapshot):
        """Return a ``model.Plan`` for this snapshot."""
