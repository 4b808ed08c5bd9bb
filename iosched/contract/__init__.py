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
"""The contract between iosched's parts: one definition of each shared concept.

The agent (``host_agent``), the scheduler plugin (``nova_plugin``), the
simulator, ``cinder_qos``, the demo and the benches import these modules;
they import nothing of those packages: the standard library only, plus
oslo.utils / oslo.config types at most (``tests/unit/test_layering.py``).
A second definition of anything here elsewhere is a bug, even while it agrees.

* ``payload``: the HostReport (agent -> schedulers) and its head parser;
  ``payload_sections`` its sections (vCPUs, LSVM, disk, health, decisions),
  ``payload_check`` the field checks and ``PayloadError``.
* ``signature``: the report signature schemes (HMAC-SHA256 v1, v2).
* ``rpc``: the RPC namespace, methods and version history of both APIs.
* ``slo``, ``slo_units``: the admin's ``<throughput, latency>`` SLO, its
  text and QoS-spec forms (written by cinder_qos, read back by the agent,
  which defends that record), the reference request size and the latency
  histogram bounds.
* ``qos_keys``, ``qos_attach``: the QoS spec keys (Nova's front-end iotune
  keys and ``iosched:*``), the latency statistics (names and quantiles)
  and what Nova gives the guest at attach.
* ``stats``: the one percentile (nearest rank) of samples and of a
  histogram.
* ``isacs``: ISACS's equations (Eq. 1-4, I/O strength, concealing) with
  one set of guards, for the agent and the simulator.
* ``opt_types``: oslo.config number types that refuse NaN and say why,
  for the option modules of all three deployables.
"""
