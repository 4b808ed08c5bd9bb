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
"""The working records of the vSlicer policy (``vslicer.plan_slices``):
the host-wide figures every instance is planned with, and what one
instance gets. Pure data, no I/O.
"""

import dataclasses
import typing

from iosched.host_agent import model


@dataclasses.dataclass(frozen=True)
class Host:
    """The host-wide figures every instance is planned with."""
    sched: model.HostSched
    bursts: typing.Mapping[str, float]   # uuid -> CPU us per activation
    mech: str                  # the mechanism in force
    n_pcpus: int               # P
    m: int                     # LSVM vCPUs on the host
    n_all: int                 # N, all vCPUs
    k: int                     # ceil(m / P)
    share: float               # a deadline vCPU's share s
    admitted: frozenset = frozenset()    # deadline reservations
    dl_refused: typing.Mapping[str, str] = dataclasses.field(
        default_factory=dict)  # uuid -> why no reservation
    dl_t_m: int = 0            # one T_m for every reservation
    dl_want: float = 0         # its budget
    dl_runtime: int = 0        # largest burst term of a runtime
    dl_term: int = 0           # max_i Q_i = max(dl_t_m, dl_runtime)
    pcpus: tuple = ()          # tuple[vslicer_bound.PcpuPlan]
    # the LSVM vCPUs' own wake-to-run W (vslicer_seen.Seen)
    seen: typing.Any = None


@dataclasses.dataclass
class Turn:
    """What one instance gets: its mechanism's actions, its slices and
    why, and for an LSVM its bound.
    """
    slice_us: int
    rule: str
    reason: str
    set_slices: bool = True    # False: its vCPUs get no slice action
    vcpu_slices: dict = dataclasses.field(default_factory=dict)
    actions: list = dataclasses.field(default_factory=list)
    notes: list = dataclasses.field(default_factory=list)
    bound_ms: float = 0.0
    refused: bool = False
    reserved: float = 0.0      # deadline bandwidth, CPUs
