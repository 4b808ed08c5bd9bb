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
"""Options of the agent's I/O inventories in Placement: ``[io_inventory]``.

``iosched/host_agent/placement_inventory.py`` keeps a child resource provider
of this host's compute node (``<compute node>:iosched``) with inventories of
the custom resource classes iosched's filters count, sized by
``iosched/host_agent/placement_sizing.py`` from these options. The credentials
are ``[placement]``'s (``iosched/host_agent/conf/placement.py``).
"""

from oslo_config import cfg

GROUP = cfg.OptGroup(
    'io_inventory', title='I/O inventories in Placement',
    help="""
The agent can keep a child resource provider of its compute node in
Placement, named ``<compute node>:iosched``, with inventories of three
custom resource classes, so that Placement itself refuses a host whose I/O
capacity a flavor would overrun (also when several servers are scheduled at
once):

* ``CUSTOM_IOSCHED_IO_VCPU``: I/O-intensive vCPUs (flavors with
  ``iosched:io_profile`` ``io`` or ``mixed`` ask one per vCPU);
* ``CUSTOM_IOSCHED_LSVM_BW``: CPU bandwidth for latency-sensitive vCPUs, in
  thousandths of a CPU (an LSVM flavor asks ``lsvm_vcpu_share`` x 1000 per
  vCPU);
* ``CUSTOM_IOSCHED_SLO_IOPS``: disk I/O operations per second that volume
  SLO floors may reserve.

Needs the ``[placement]`` credentials (rights to create resource classes
and resource providers and to set inventories: admin by default).
""")

OPTS = [
    cfg.BoolOpt('publish', default=False,
                help="""
Keep the ``<compute node>:iosched`` child provider and its inventories in
Placement.

Off by default: an agent without Placement credentials would only log
warnings. When on, the inventories follow the agent's reports (CPU count,
LSVM mechanism, measured disk capacity). The child provider stays when the
agent stops (the capacity is the host's, not the agent's).

Related options:

* ``[placement]``: how to reach and authenticate to Placement.
"""),
    cfg.StrOpt('provider_name',
               help="""
Name of this host's compute node resource provider in Placement, the parent
of the child provider.

Nova names it after the compute node (``openstack hypervisor list`` shows
it, as "Hypervisor Hostname"); with libvirt often the fully qualified name.

Possible values:

* A resource provider name. Empty (default) means ``[lsvm_trait]
  provider_name``, or when that is empty too the agent's host name
  (``[host_agent] host``, or this machine's hostname).
"""),
    cfg.FloatOpt('max_io_vcpus_per_pcpu', default=1.0, min=0.0,
                 help="""
I/O-intensive vCPUs one pCPU may serve: ``CUSTOM_IOSCHED_IO_VCPU`` total is
the host's pCPUs times this, rounded down.

Keep it equal to ``[iosched] max_io_vcpus_per_pcpu`` of nova-scheduler
(``IoDensityFilter``), so that Placement and the filter agree.

Possible values:

* A number of vCPUs per pCPU, 0 or more. Below one vCPU in all (e.g. 0)
  the host gets no inventory of the class and admits no I/O flavor.
"""),
    cfg.FloatOpt('lsvm_vcpu_share', default=0.5, min=0.001, max=1.0,
                 help="""
CPU share one LSVM vCPU is counted for, as a fraction of a CPU.

An LSVM flavor asks ``CUSTOM_IOSCHED_LSVM_BW`` = vCPUs x this x 1000. With
the ``weight`` or ``slice`` mechanism the host's total is pCPUs x
``max_per_pcpu`` (the agent's ``[vslicer] max_lsvm_per_pcpu``) x this x
1000, so a pCPU takes ``max_per_pcpu`` LSVM vCPUs; with ``deadline`` the
total is the SCHED_DEADLINE bandwidth the kernel admits (``dl_bw_limit``
x 1000) whatever this is. Keep it equal to what the flavors ask.

Possible values:

* A fraction of a CPU from 0.001 to 1 (default 0.5).
"""),
    cfg.FloatOpt('slo_capacity_fraction', default=1.0, min=0.0, max=1.0,
                 help="""
Share of the measured disk capacity (``[host_agent] disk_capacity_iops`` or
the driver's measurement) offered as ``CUSTOM_IOSCHED_SLO_IOPS``.

Keep it equal to ``[iosched] slo_capacity_fraction`` of nova-scheduler
(``SloCapacityFilter``). While the capacity is unknown (0) the host gets no
inventory of the class.

Possible values:

* A fraction from 0 to 1; 1 (default) offers the whole measured capacity.
"""),
    cfg.IntOpt('reserved_io_vcpus', default=0, min=0,
               help="""
I/O-intensive vCPUs taken by work Nova does not place (``reserved`` of
``CUSTOM_IOSCHED_IO_VCPU``), e.g. a storage daemon's threads. With
``reserve_unclaimed_io_vcpus`` the measured I/O vCPUs that no allocation
claims are added.

A value above the total is cut to the total (a WARNING says so): then no
I/O flavor fits.
"""),
    cfg.BoolOpt('reserve_unclaimed_io_vcpus', default=True,
                help="""
Also reserve the I/O-intensive vCPUs that hold no ``CUSTOM_IOSCHED_IO_VCPU``
allocation: ``reserved`` = ``reserved_io_vcpus`` + max(0, the I/O vCPUs the
agent measures - the ``CUSTOM_IOSCHED_IO_VCPU`` the child's allocations
use).

Servers whose flavors carry no ``resources:CUSTOM_IOSCHED_IO_VCPU`` (booted
before the keys were set), a ``cpu`` VM that turned out I/O-bound, or a VM
outside Nova load the host without holding a slot, so Placement would offer
slots that are taken. The sum is cut to the total (a WARNING says so): then
no I/O flavor fits. The reserve follows the measurement at once and the
usage at each recheck (``recheck_interval``). Claimed servers that are idle
count nothing (never less than nothing), so an idle claimed server hides as
many busy unclaimed vCPUs.

Turn it off when every I/O server claims its slots and short bursts of a
``cpu`` server should not take slots from new I/O servers, or when the
measurement is not trusted (the slots are then only the static capacity,
and ``IoDensityFilter`` still checks the measured I/O vCPUs).
"""),
    cfg.IntOpt('reserved_lsvm_bw', default=0, min=0,
               help="""
LSVM bandwidth, in thousandths of a CPU, kept from LSVM flavors
(``reserved`` of ``CUSTOM_IOSCHED_LSVM_BW``). With the ``deadline``
mechanism it adds to the SCHED_DEADLINE bandwidth other threads already
hold (``dl_bw_foreign``, always reserved).

A value above the total is cut to the total (a WARNING says so).
"""),
    cfg.IntOpt('reserved_slo_iops', default=0, min=0,
               help="""
Disk I/O operations per second kept from SLO volumes (``reserved`` of
``CUSTOM_IOSCHED_SLO_IOPS``), e.g. for the host's own disk traffic.

A value above the total is cut to the total (a WARNING says so).
"""),
    cfg.FloatOpt('recheck_interval', default=300.0, min=1.0,
                 help="""
Seconds between checks that the inventories are still as wanted once set
(someone may have changed them by hand). A change in the reports is acted
on at once, whatever this is.
"""),
    cfg.FloatOpt('retry_initial_interval', default=2.0, min=0.1,
                 help="""
Seconds to wait before the first retry after a failed attempt (Placement
unreachable, credentials refused, or the compute node's provider not
created yet because nova-compute has not started). Each further failure
doubles the wait, up to ``retry_max_interval``.
"""),
    cfg.FloatOpt('retry_max_interval', default=300.0, min=1.0,
                 help="""
Longest wait, in seconds, between retries after failed attempts.
"""),
]


def register_opts(conf):
    conf.register_group(GROUP)
    conf.register_opts(OPTS, group=GROUP)


def list_opts():
    return [(GROUP, OPTS)]
