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
"""Options of the SLO volume policy, ``[host_agent_policy.slo]``."""

from oslo_config import cfg

SLO_GROUP = cfg.OptGroup(
    'host_agent_policy.slo', title='SLO volumes: Flubber VBC over iotune',
    help='Defends the <throughput, latency> SLO of attached volumes '
         '(docs/slo.md): when one misses, disks without an SLO and volumes '
         'beating theirs are held back with live iotune within the '
         'device\'s capacity, and given back when every SLO is met. Enable '
         'it by adding "slo" to [host_agent] policies.')

SLO_OPTS = [
    cfg.FloatOpt('margin', default=0.1, min=0.0, max=0.9, help="""
Relative margin: a volume whose SLO indicator is at most -margin (it beats
both B and L by this fraction) gives capacity to the others; caps are
released once the donors use less than (1 - margin) of their allowance;
the allowance stays (1 - margin) below the level at which an SLO last
missed.
"""),
    cfg.FloatOpt('decrease', default=0.5, min=0.01, max=1.0, help="""
Multiplicative cut of the donors' allowance on a miss: the allowance is
multiplied by 1 - decrease * min(Ind, 1), Ind being the worst volume's
normalised deviation (Flubber Eq. 2).
"""),
    cfg.FloatOpt('min_decrease', default=0.2, min=0.0, max=0.9, help="""
Smallest cut of the allowance on a miss, whatever Ind: a latency miss
usually needs a clearly shorter queue, not a few per cent.
"""),
    cfg.FloatOpt('increase', default=0.05, min=0.001, max=1.0, help="""
Additive give-back per window once every SLO is met, as a share of the
device capacity ([host_agent] disk_capacity_iops; of the donors' use when
the capacity is unknown).
"""),
    cfg.IntOpt('calm_ticks', default=2, min=1, help="""
Windows with every SLO met before the allowance is raised or released.
"""),
    cfg.FloatOpt('min_cap_iops', default=10.0, min=1.0, help="""
Lowest cap of a held-back disk without an SLO, IOPS of 16 KiB: nobody is
starved outright.
"""),
    cfg.FloatOpt('min_change', default=0.1, min=0.0, max=1.0, help="""
A held cap is rewritten only when it moves by at least this fraction:
every live iotune change resets QEMU's throttle buckets.
"""),
    cfg.FloatOpt('min_outstanding', default=0.5, min=0.0, help="""
A volume below its throughput B counts as missing it only when it keeps at
least this many requests in flight on average (Little's law: summed
latency / window); with fewer it simply asks for less than B.
"""),
    cfg.IntOpt('min_reqs', default=5, min=1, help="""
Completions a window needs before its latency is judged.
"""),
    cfg.IntOpt('knee_ticks', default=300, min=1, help="""
Windows during which the allowance at the last miss stays a ceiling; then
the loop probes above it again (at most one miss per knee_ticks windows).
"""),
]


def register_opts(conf):
    conf.register_group(SLO_GROUP)
    conf.register_opts(SLO_OPTS, group=SLO_GROUP)


def list_opts():
    return [(SLO_GROUP, SLO_OPTS)]
