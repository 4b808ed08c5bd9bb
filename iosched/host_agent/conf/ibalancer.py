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
"""Options of the I-Balancer policy (seed 003),
``[host_agent_policy.ibalancer]``.

See docs/ibalancer.md for the control law these parameters feed.
"""

from oslo_config import cfg

from iosched.contract import ibalancer as ib_contract

IBALANCER_GROUP = cfg.OptGroup(
    'host_agent_policy.ibalancer', title='I-Balancer: per-VM I/O fairness',
    help='Evens out I/O between VMs whose vCPUs get unequal CPU '
         'opportunity (docs/ibalancer.md): when the I/O-intensive vCPUs\' '
         'event counts deviate by more than beta, the heavy half gets '
         'I-Balancer\'s per-event delays, applied as live iotune caps on '
         'their VMs\' disks. Off unless "ibalancer" is in [host_agent] '
         'policies.')

IBALANCER_OPTS = [
    cfg.StrOpt('event_source', default=ib_contract.DEFAULT_EVENT_SOURCE,
               choices=ib_contract.EVENT_SOURCES, help="""
What a vCPU's I/O events are (iosched/contract/ibalancer.py).

Possible values:

* requests: the disk requests its VM completed in the window (libvirt
  block stats rd_req + wr_req), shared among the VM's vCPUs by their
  wake-ups. Unbiased: equal throughputs give equal counts.
* wakeups: the vCPU's I/O wake-ups. Biased on a host with CPU
  contention: a vCPU that waits for a pCPU finds several completions per
  wake-up, so a slow guest looks lighter than its throughput
  (docs/ibalancer.md).
"""),
    cfg.FloatOpt('mask_slice_ms', default=30.0, min=0.0, max=1000.0,
                 help="""
Masking window S: a vCPU's events are counted over S of its own runtime
per control period (S x the number of tracked vCPUs), milliseconds.

30 ms is Xen Credit1's slice, the paper's default (10 ms mirrors Credit2).
A vCPU that ran less than S in a period counts all of its events. 0 turns
masking off: events per second of wall clock.

Possible values:

* 0 to 1000.
"""),
    cfg.FloatOpt('alpha', default=30.0, min=0.0, max=100.0, help="""
A vCPU is I/O-intensive when VR/PR, the share of its runtime spent in run
segments that handled I/O events, is at least alpha per cent (Eq. 1; the
paper's value).
"""),
    cfg.FloatOpt('alpha_hysteresis', default=5.0, min=0.0, max=100.0,
                 help="""
A vCPU already I/O-intensive stays so until VR/PR falls below alpha minus
this many percentage points (no flapping at alpha).
"""),
    cfg.FloatOpt('beta', default=10.0, min=0.0, max=1000.0, help="""
Unfairness trigger: the I/O-intensive vCPUs' relative mean absolute
deviation of event counts (Eq. 2 divided by the pool size), per cent. The
paper gives no value; 10 is 2-3x the 3-5 % of the pools the caps had made
fair in the simulated agent test (docs/ibalancer.md).
"""),
    cfg.FloatOpt('release_fraction', default=0.7, min=0.0, max=1.0, help="""
Caps are held while the deviation is above beta x release_fraction, and
given back below it (hysteresis around beta).
"""),
    cfg.FloatOpt('base_delay_us', default=200.0, min=0.0, max=100000.0,
                 help="""
Mean per-event delay of the target vCPUs (Eq. 5), microseconds. 200 is the
paper's value (half of the 400 us that visibly changed a VM's traffic).
"""),
    cfg.FloatOpt('ei_weight', default=0.25, min=0.01, max=1.0, help="""
Weight of the newest tick in the EWMA of each vCPU's inter-event interval
(EI); the paper gives none.
"""),
    cfg.IntOpt('min_events', default=10, min=1, help="""
Events a vCPU needs in a tick to be tracked (the TRACK-POOL).
"""),
    cfg.IntOpt('calm_ticks', default=2, min=1, help="""
Calm ticks (deviation at most beta x release_fraction) before caps are
given back.
"""),
    cfg.FloatOpt('increase', default=0.1, min=0.0, max=10.0, help="""
Give-back per calm tick: each cap is multiplied by 1 + increase; a cap its
disk no longer reaches (used < 0.9 x cap) is removed.
"""),
    cfg.FloatOpt('min_cap_iops', default=10.0, min=1.0, help="""
Lowest cap, IOPS of 16 KiB. An SLO volume is never capped below its B.
"""),
    cfg.FloatOpt('min_change', default=0.05, min=0.0, max=1.0, help="""
A held cap is rewritten only when it moves by at least this fraction:
every live iotune change resets QEMU's throttle buckets.
"""),
]


def register_opts(conf):
    conf.register_group(IBALANCER_GROUP)
    conf.register_opts(IBALANCER_OPTS, group=IBALANCER_GROUP)


def list_opts():
    return [(IBALANCER_GROUP, IBALANCER_OPTS)]
