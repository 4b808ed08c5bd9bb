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
"""Options of the ISACS policy (seed 000), group ``[host_agent_policy.isacs]``.

See docs/isacs.md for the control law these parameters feed.
"""

from oslo_config import cfg

ISACS_GROUP = cfg.OptGroup(
    'host_agent_policy.isacs', title='ISACS-style I/O strength policy',
    help='I/O-intensive vCPUs get earlier turns (shorter EEVDF slices) '
         'without extra share, CPU-bound vCPUs get longer slices, and '
         'optionally I/O-heavy vCPUs are spread over pCPUs by pinning.')

ISACS_OPTS = [
    cfg.IntOpt('base_slice_us', default=3000, min=100, max=100000,
               help="""
EEVDF slice of a vCPU with no IVCredit when no vCPU of the host does I/O,
and the upper bound of every I/O vCPU's slice, microseconds.

The default, 3 ms, is Linux's base slice on an 8-CPU host (stock behaviour).

Possible values:

* 100 to 100000.
"""),
    cfg.IntOpt('min_io_slice_us', default=1000, min=100, max=100000,
               help="""
Smallest slice given to an I/O-intensive vCPU, microseconds.

The default, 1 ms, is vSlicer's largest LSVM microslice: ISACS's I/O boost
never gets an earlier deadline than the LSVMs' (measured on the embedded
default: LSVM p99 3.2 ms with 250 us, 2.4 ms with 1 ms).

The I/O slice is base_slice_us / (1 + alpha * IVCredit / mean positive
IVCredit of the host), clamped to min_io_slice_us..base_slice_us.

Possible values:

* 100 to 100000 (values above base_slice_us act as base_slice_us).
"""),
    cfg.IntOpt('cpu_slice_us', default=6000, min=100, max=100000,
               help="""
Slice of a CPU-bound vCPU (IVCredit 0, in the Eq. 3 CPU-BOOST group, CPU
consumed this window) while the host has I/O vCPUs, microseconds.

The CPU-BOOST analogue: fewer preemptions protect throughput. Long slices
cost I/O vCPUs that overran their own slice (vSlicer measured LSVM p99 9.6
ms with 12 ms slices against 5.1 ms stock), hence 2x the base slice.

Possible values:

* 100 to 100000.
"""),
    cfg.FloatOpt('alpha', default=2.0, min=0.0, max=100.0,
                 help="""
How strongly IVCredit shortens the slice (dimensionless).

A vCPU whose IVCredit equals the host's mean positive IVCredit gets
base_slice_us / (1 + alpha): 1 ms with the defaults, vSlicer's microslice.
0 disables the I/O boost.

Possible values:

* 0 to 100.
"""),
    cfg.FloatOpt('ivcredit_floor', default=0.0, min=0.0, max=10.0,
                 help="""
IVCredit at or below this counts as 0, in the collector's unit (fraction of
a window). The paper treats any positive IVCredit as I/O-intensive (0);
raise it when the wake-up estimator gives CPU-bound vCPUs small IVCredit.

Possible values:

* 0 to 10.
"""),
    cfg.IntOpt('vcpu_weight', default=100, min=1, max=10000,
               help="""
Weight every vCPU gets (cgroup v2 cpu.weight scale). Equal for all vCPUs:
credit concealing means IVCredit buys order, not share.

Possible values:

* 1 to 10000.
"""),
    cfg.BoolOpt('balance', default=False,
                help="""
Enable Algorithm 2: move one I/O-intensive vCPU from the pCPU with the most
I/O load (sum of IVCredit) to the one with the least by pinning it.

Pinning overrides Linux's load balancing for that vCPU; off by default.
"""),
    cfg.FloatOpt('balance_hysteresis_abs', default=0.2, min=0.0,
                 max=100.0, help="""
Balancing acts only when the busiest pCPU's I/O load exceeds the least
loaded one's by more than this, in IVCredit units (fraction of a window).

Possible values:

* 0 to 100.
"""),
    cfg.FloatOpt('balance_hysteresis_rel', default=0.25, min=0.0, max=1.0,
                 help="""
Balancing acts only when the I/O load gap is also more than this fraction
of the busiest pCPU's I/O load.

Possible values:

* 0 to 1.
"""),
    cfg.IntOpt('max_moves_per_minute', default=1, min=0, max=60,
               help="""
At most this many vCPU moves (pins) in any 60 s of snapshot time.

Possible values:

* 0 (never move) to 60.
"""),
    cfg.BoolOpt('leave_lsvms', default=True,
                help="""
Leave the vCPUs of latency-sensitive flavors (iosched:latency_sensitive)
to the vSlicer policy: they count in Eqs. 2-4 but get no ISACS slice,
weight or move. Turn off when ISACS runs without vSlicer.
"""),
]


def register_opts(conf):
    conf.register_group(ISACS_GROUP)
    conf.register_opts(ISACS_OPTS, group=ISACS_GROUP)


def list_opts():
    return [(ISACS_GROUP, ISACS_OPTS)]
