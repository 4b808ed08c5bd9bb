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
"""Options of the virtualization-aware I/O policy,
``[host_agent_policy.vaio]``.
"""

from oslo_config import cfg

VAIO_GROUP = cfg.OptGroup(
    'host_agent_policy.vaio',
    title='Virtualization-aware I/O scheduling: one BFQ group per VM',
    help='Seed 004 on a real host: every VM with a disk on a host block '
         'device shared with other VMs gets its own BFQ group weight '
         '(libvirt blkiotune weight), equal for all VMs, so the device '
         'is shared per VM, not per process, and a VM whose queue holds '
         'only writes still gets its turn. Enable it by adding "vaio" to '
         '[host_agent] policies. docs/vaio.md.')

VAIO_OPTS = [
    cfg.IntOpt('weight', default=100, min=100, max=1000, help="""
The BFQ weight every VM on a shared device gets (blkiotune weight; cgroup
v1 ``blkio.bfq.weight``, v2 ``io.bfq.weight``).

Equal weights are the paper's round robin across VMs. 100 is BFQ's default,
so on a host where libvirt already gives each VM its own group this
confirms (and journals) what is there rather than changing it.

Possible values:

* 100 to 1000 (libvirt's accepted range).
"""),
    cfg.IntOpt('min_vms', default=2, min=1, help="""
A device is "shared" when disks of at least this many VMs are on it;
only VMs on shared devices get a weight.

Possible values:

* 1 or more.
"""),
    cfg.BoolOpt('switch_scheduler', default=False, help="""
Set a shared device's I/O scheduler to ``bfq`` when it runs another one
(journaled; the original scheduler is restored when the agent stops).

Off (the default): the agent only names the device (a WARNING in its log,
once) and gives its VMs no weight, since no other scheduler reads it.
"""),
    cfg.IntOpt('bfq_slice_idle_us', default=-1, min=-1, max=1000000,
               help="""
BFQ's ``slice_idle_us`` on the shared devices the policy manages (while
they run bfq; restored when the agent stops).

-1 (the default) leaves BFQ's own value (8000 us). BFQ idles up to this
long for the next request of the queue in service before serving another
VM: on a disk with seeks that keeps a sequential reader's stream together;
on a device with internal parallelism (SSD, NVMe, a loop device over a
file) it leaves the device idle while other VMs wait. On the testbed (loop
device over a virtio disk, TCG guests) idling let one of four equal VMs
finish about twice as fast as the others, and 0 made them finish together
(docs/vaio.md).

Possible values:

* -1: leave as is
* 0: no idling
* 1 to 1000000: microseconds
"""),
]


def register_opts(conf):
    conf.register_group(VAIO_GROUP)
    conf.register_opts(VAIO_OPTS, group=VAIO_GROUP)


def list_opts():
    return [(VAIO_GROUP, VAIO_OPTS)]
