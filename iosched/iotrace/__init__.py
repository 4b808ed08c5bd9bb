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
"""``iosched-iotrace``: seed 004's five-layer I/O analysis tool.

Records the five focal layers of a VM's block I/O (Request, Queuing,
Dispatch, Completion, Response) per VM together with each vCPU's state,
from the simulator (``simulate``) or from a real host (``record``), then
analyses (``analyze``) and draws (``render``) them.

* ``fmt``: the trace format (JSON lines, versioned) and its reader;
* ``simconv``: a ``iosched.simulator.vaio`` run as a trace;
* ``record`` / ``hostmap`` / ``qemutrace``: the real-host recorder
  (tracefs block and sched events, QEMU's virtio-blk trace events);
* ``analyze``: pure figures and the inversion detector;
* ``render``: PNGs and one self-contained HTML page;
* ``cli``: the command.

How to read the pictures: docs/iotrace.md.
"""
