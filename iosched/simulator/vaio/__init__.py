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
"""Seed 004: dom0's CFQ, its I/O priority inversion, and VA-CFQ.

Built on Flubber's disk model (``iosched.simulator.flubber``: the event loop,
the HDD, requests, the CFQ elevator). ``sched`` holds the two dom0 elevators:
stock CFQ with per-backend sync queues and one shared async queue, and
the virtualization-aware CFQ (one integrated queue per VM, round robin).
``guest`` is the dd-like reader with journal-like async writes and the
blocking rule that turns a starved write into an idle (inactive) vCPU;
``run`` the paper's 4-VM experiment, its trials and fairness figures.
Choices the paper leaves open: docs/reproduction_models.md, "Seed 004".
"""
