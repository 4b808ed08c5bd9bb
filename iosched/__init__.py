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
"""iosched: I/O-aware scheduling for OpenStack Nova and Cinder on KVM.

One top-level package, so nothing generic lands in Nova's site-packages.
The design's three deployables:

* iosched.host_agent: the agent on every compute node (``io-host-agent``).
* iosched.nova_plugin: filters, weighers and extra-spec validators, loaded
  by nova-scheduler and nova-api by class path.
* iosched.cinder_qos: the admins' SLO tooling (``iosched-slo``).

and what they share or are tested with,

* iosched.contract: what the agent, the scheduler plugin, the simulator
  and cinder_qos agree on (the HostReport, its signature, the RPC API, the
  flavor vocabulary, SLO units and keys, the LSVM bound, ISACS's equations,
  percentiles). It imports none of the others.
* iosched.simulator: the discrete-event model of a virtualized host.
* iosched.simdriver: the simulator behind the host agent's driver and
  knob-set interfaces (entry points ``simulated``), so that the agent
  imports nothing of the simulator.
* iosched.demo: the embedded default (``iosched-demo``).
* iosched.iotrace: seed 004's I/O analysis tool (``iosched-iotrace``).
* iosched.testbed: tiny TCG guests for real-VM tests (``iosched-testbed``).
"""
