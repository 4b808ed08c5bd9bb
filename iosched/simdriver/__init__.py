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
"""The simulated host behind the host agent's driver interface.

An adapter between two packages that do not know each other: the host
agent (``host_agent``: its driver and knob-set interfaces) and the
simulator (``iosched.simulator``: standard library only). The agent
reaches it only through entry points (setup.cfg), so ``host_agent``
imports nothing of the simulator:

* ``iosched.host_agent.drivers: simulated`` ->
  ``driver.SimulatedDriver``: inventory, counters, clock and probes of a
  ``SimHost`` (read only);
* ``iosched.host_agent.knobs: simulated`` -> ``knobs.SimulatedKnobs``:
  the only writer of the simulated host's knobs;
* ``daemon``: the wall-clock simulated host ``io-host-agent`` runs with
  ``[host_agent] driver = simulated`` (``SimulatedDriver.from_conf``);
* ``profiles``: the simulated hosts ``[host_agent] simulated_profile``
  names (pCPUs and load);
* ``state_file``: its knob values kept in ``simulated_state_file``.
"""
