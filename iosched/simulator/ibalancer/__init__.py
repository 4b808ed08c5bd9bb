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
"""I-Balancer (seed 003: Lee, Lee, Yu, IEEE Access 2022) in the simulator.

* ``equations``: Eqs. 1-5 and the EWMA, pure functions;
* ``controller``: ITM, RTM (masking) and Algorithm 3 (trigger, sort and
  pair, delays, termination; ``tav`` = trigger only);
* ``model``: the host (Credit1/Credit2 pCPU pool, dom0 FIFO backend,
  NIC and disk) and ``run(Scenario)``;
* ``guest``: one vCPU's chain of chunks (iperf, dd, stress, sysbench,
  completion handling).
"""
