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
"""Arithmetic on the ISACS paper's mixed-environment figures (seed 000,
Tables 4 and 6, Fig. 15; issue 30), pure functions.

A mixed VM's I/O vCPU also runs stress, so it never blocks: an I/O event
waits until the vCPU is next dispatched. If it runs ``run`` us at a time
and gets a share ``s`` of a pCPU (so one dispatch every ``run / s``), an
event at a random time waits on average (run / s - run)^2 / (2 run / s)
= run (1 - s)^2 / (2 s) (``random_wait``). Read backwards on the paper's
figures this says:

* ``run_for_wait``: the dispatch length behind a mean wait;
* ``share_for_wait_factor``: the share that cuts the wait by a factor at
  the same dispatch length (the other way to cut it is shorter runs, in
  proportion, at the same share);
* ``neighbour_share_factor``: the I/O vCPUs' share over their fair one
  that slows a CPU-only neighbour by the paper's Fig. 15 figure (the
  other vCPUs share what the I/O vCPUs leave);
* ``relative_to``: a change against another change (Table 6's gains
  against m1's, where the servers' 4 vCPUs have 5 pCPUs and no
  scheduler can change anything).
"""

import math

PCPUS = 5                       # the guests' pCPUs (network experiments)
VCPUS_PER_VM = 4


def random_wait(share, run):
    """Mean wait of an event arriving at a random time for a vCPU that
    never blocks, runs ``run`` at a time and gets ``share`` of a pCPU.
    """
    return run * (1.0 - share) ** 2 / (2.0 * share)


def run_for_wait(share, wait):
    """The dispatch length that gives a mean wait ``wait`` (inverse of
    ``random_wait``).
    """
    return 2.0 * wait * share / (1.0 - share) ** 2


def share_for_wait_factor(share, factor):
    """The share s' with random_wait(s', run) = factor x
    random_wait(share, run) for the same run: the root in (0, 1) of
    s'^2 - (2 + a) s' + 1 = 0, a = factor (1 - share)^2 / share.
    """
    a = factor * (1.0 - share) ** 2 / share
    b = 2.0 + a
    return (b - math.sqrt(b * b - 4.0)) / 2.0


def neighbour_share_factor(n_vcpus, n_io, slowdown_pct, pcpus=PCPUS):
    """k such that n_io I/O vCPUs at k x the fair share pcpus / n_vcpus
    leave the other vCPUs a share 1 / (1 + slowdown) of the fair one.
    """
    fair = pcpus / n_vcpus
    others = fair / (1.0 + slowdown_pct / 100.0)
    return (pcpus - (n_vcpus - n_io) * others) / (n_io * fair)


def relative_to(change_pct, base_pct):
    """(1 + change) / (1 + base) - 1, in %."""
    return 100.0 * ((1 + change_pct / 100.0) / (1 + base_pct / 100.0) - 1)
