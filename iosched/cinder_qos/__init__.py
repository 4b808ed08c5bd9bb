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

"""SLO volume types: turn a <throughput, latency> tuple into Cinder QoS specs.

* ``iosched.contract.slo`` parses and validates the admin's SLO text.
* ``iosched.cinder_qos.translate`` derives the QoS spec keys (pure) and checks
a
  spec the way QEMU would.
* ``iosched.contract.qos_keys`` names every key we may emit.
* ``iosched.cinder_qos.conf`` holds the ``[cinder_qos]`` options.
* ``iosched.cinder_qos.cmd.slo`` is the ``iosched-slo`` admin CLI.

The rule is documented for admins in ``docs/slo.md``.
"""
