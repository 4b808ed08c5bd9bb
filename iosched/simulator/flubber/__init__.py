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
"""Flubber (seed 002): a disk-scheduling discrete-event model.

Two-level disk scheduling for VMs sharing one rotational disk: VBC credit
rounds (``vbc``) over a low level that is BD-EDF (``bdedf``) or one of the
paper's baselines (``elevators``). ``disk`` holds the HDD and SSD service
models, ``layout`` the LBA map, ``clients`` the sysbench-like guests and
the host backup, ``engine`` the event loop and dispatch glue, ``metrics``
what a run records and ``run`` the scenarios. Time is in milliseconds
(floats), positions in 512-byte sectors; every run is seeded.
"""
