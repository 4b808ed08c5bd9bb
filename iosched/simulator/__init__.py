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
"""iosched host simulator: a deterministic discrete-event model of one host.

Drives the host agent (through ``iosched.simdriver``) and the demo with
what a real KVM host exposes and the knobs the agent turns. Standard
library only; time is integer microseconds; all randomness is seeded.

Modules:

* ``spec`` / ``spec_paper`` / ``spec_kernel``: host, disk, VM and
  workload specifications (the papers' I/O path in ``spec_paper``, the
  kernel's rules in ``spec_kernel``); counter types;
* ``host``: ``SimHost``, the public API;
* ``events``: the event loop (heap of timed callbacks);
* ``eevdf`` / ``cpu`` / ``cpu_wakeup`` / ``cpu_balance``: per-pCPU EEVDF
  scheduling, wake-up placement and preemption, load balancing, affinity;
* ``workloads``: run-time behaviour of the vCPU workloads;
* ``paper_workloads`` / ``paper_workloads_net`` / ``paper_tasks`` /
  ``backend``: the papers' workloads (ping, iperf-like streams, dd,
  sysbench, lookbusy, several on one vCPU) and the dom0-like backend they
  go through;
* ``disk`` / ``throttle``: the shared disk device and QEMU-like iotune
  throttling of each guest disk;
* ``checks``: argument validation with field-naming messages;
* ``compiled``: which modules run compiled (Cython), and running them as
  Python (``IOSCHED_SIMULATOR_PURE=1``).
"""

import os as _os

from iosched.simulator import compiled as _compiled

_compiled.honour_pure_env(_os.path.dirname(_os.path.abspath(__file__)))
