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
"""Options of the agent daemon itself: the tick loop, plugins, state."""

from importlib import metadata

from oslo_config import cfg
from oslo_config import types

from iosched.contract import payload_bounds


class PluginName(types.String):
    """A plugin name of an entry point namespace, checked when the option
    is read (at start), so a misspelt policy is a one-line error naming
    the option rather than a traceback once the driver already runs.
    """

    def __init__(self, namespace):
        super(PluginName, self).__init__()
        self.namespace = namespace

    def __call__(self, value):
        name = super(PluginName, self).__call__(value).strip()
        names = sorted({e.name for e in metadata.entry_points(
            group=self.namespace)})
        if names and name not in names:    # none: not installed, not known
            raise ValueError("'%s': no such plugin in %s; accepted: %s" % (
                name[:80], self.namespace, ', '.join(names)))
        return name

    def __eq__(self, other):
        return (super(PluginName, self).__eq__(other)
                and self.namespace == other.namespace)


GROUP = cfg.OptGroup('host_agent', title='iosched host agent',
                     help='The iosched agent on a compute node.')

OPTS = [
    cfg.StrOpt('host',
               help="""
Compute host name the agent reports as.

Must equal the ``host`` of the nova-compute service on this node, since the
Nova plugin looks reports up by HostState.host.

Possible values:

* A host name. Empty (default) means this machine's hostname.
"""),
    cfg.FloatOpt('tick_interval', default=1.0,
                 min=payload_bounds.TICK_INTERVAL_MIN,
                 max=payload_bounds.TICK_INTERVAL_MAX,
                 mutable=True,
                 help="""
Seconds between two ticks (measure, decide, act).

Each tick's measurements are rates over the time since the previous tick,
so this is also the measurement window of the I/O strength.

Possible values:

* 0.05 to 60 seconds.

Related options:

* ``report_every_ticks``
"""),
    cfg.IntOpt('report_every_ticks', default=10, min=1,
               max=payload_bounds.REPORT_EVERY_TICKS_MAX,
               mutable=True,
               help="""
Send a HostReport to the schedulers every N ticks.

Every report is fanned out to every scheduler worker, and a worker spends
about 4.5 ms of CPU to parse and store one (``make bench-nova``): 1,000
hosts reporting every 10 s cost each worker about 45 % of a core, every
second 4.5 cores. Schedulers count a report as missing after
``[iosched] report_ttl_intervals`` (3) of these intervals, and a new
scheduler worker asks for a resync, so a longer interval only delays
changes, never a worker's start.

Possible values:

* 1 to 3600. The report interval is tick_interval * report_every_ticks
  (default 10 x 1 s = 10 s).
"""),
    cfg.StrOpt('driver', default='libvirt',
               help="""
Hypervisor driver to measure and act through.

Loaded from the ``iosched.host_agent.drivers`` entry point namespace.

Possible values:

* ``libvirt``: the local libvirt daemon (issue 3).
* ``simulated``: a simulated host (tests, the embedded default).
"""),
    cfg.ListOpt('policies', default=['vslicer'],
                item_type=PluginName('iosched.host_agent.policies'),
                help="""
Policies run every tick, in order; later ones override earlier actions on
the same knob.

Loaded from the ``iosched.host_agent.policies`` namespace.

Possible values:

* A list of policy names, e.g. ``vslicer``.
"""),
    cfg.Opt('actuator', default='driver',
            type=PluginName('iosched.host_agent.actuators'),
            help="""
How plans are applied.

Possible values:

* ``driver``: write through the host's knob set, journaled.
* ``noop``: dry run: log the plan, write nothing.
"""),
    cfg.StrOpt('journal_path', default='/var/lib/iosched/journal.jsonl',
               help="""
File where every change the agent makes is journaled (before/after).

On stop the agent restores every journaled knob; after a crash it restores
them at the next start, before its first tick.

Possible values:

* A writable file path. Empty keeps the journal in memory only (tests);
  then a crash cannot be undone.

One agent per journal: the agent locks ``<journal_path>.lock`` (holding
its PID) and a second one refuses to start, naming the first's PID. A
journal that can be read but not written (a read-only filesystem) makes
the agent restore what it records and exit with status 1 rather than act
unjournaled; so does a journal that stops taking entries while it runs
(a full disk). A damaged line is skipped with a WARNING naming it; every
valid entry is still restored.
"""),
    cfg.BoolOpt('reconcile_at_start', default=True,
                help="""
At start, after restoring what the journal records, compare each running
instance's knobs with what its own definition and the host's defaults say
(SCHED_OTHER and the default slice for QEMU threads, the default weight
for vCPU cgroups, the vCPU and emulator pins of the persistent domain)
and put back any that differ, with a WARNING naming the knob: a change
whose journal record was lost is found anyway. Turn it off only on a host
where something else sets these knobs live.
"""),
    cfg.FloatOpt('disk_capacity_iops', default=0.0, min=0.0,
                 help="""
Measured I/O capacity of the disk that backs this host's volumes, in IOPS.

Reported as ``disk.capacity_iops``; the Nova ``SloCapacityFilter`` admits
SLO volumes only while the sum of their floors B stays within it. Measure
it when the host is commissioned, with fio at the SLOs' reference size
(16 KiB, ``[cinder_qos] default_ref_io_bytes``), random I/O, the queue
depth the host sees under load, e.g.::

    fio --name=cap --filename=/dev/<disk> --direct=1 --rw=randrw \\
        --bs=16k --iodepth=32 --ioengine=libaio --runtime=60 \\
        --time_based --group_reporting

and set the sum of read and write IOPS.

Possible values:

* 0 (default): unknown, unless the driver can tell (the simulated driver
  reports its model's capacity); the scheduler then treats the host like
  one without a fresh report.
* A positive number of IOPS; it wins over the driver's value.

Related options:

* ``[iosched] slo_capacity_fraction`` in nova.conf of nova-scheduler.
* ``[host_agent_policy.slo]``: the SLO policy cuts neighbours to what the
  SLOs leave of this capacity.
"""),
    cfg.StrOpt('volume_qos_file', default='',
               help="""
JSON file giving attached volumes' QoS specs, by volume id.

A JSON object ``{"<volume id>": {"<QoS spec key>": "<value>", ...}}``: for
each guest disk whose ``<serial>`` (the Cinder volume id Nova sets) is a
key, the agent reads the SLO from the ``iosched:*`` keys (as written by
``iosched-slo translate``) and the static ceiling from the front-end keys.
Re-read when the file changes; a bad file is reported once and the last
good content kept. Used where the agent does not read Cinder (tests, the
real-guest testbed, hosts without Cinder credentials). The SLO is in no
other file of the host: Nova copies only the front-end keys into the
disk's ``<iotune>``.

Possible values:

* Empty (default): no file; disks get SLOs from Cinder (``[volume_slo]
  from_cinder``, ``[cinder]`` credentials), else only their ``<iotune>``
  ceiling is known (``disk.slo_source`` iotune, no SLO to defend).
* A readable file path.
"""),
    cfg.StrOpt('simulated_state_file', default='',
               help="""
``driver = simulated`` only: a file holding the simulated host's knob
values, so that they outlive the agent process as a real host's cgroup
files, thread attributes and libvirt settings do. Each knob write is
saved (atomically) and a new agent process starts from the saved values.
Used by the fault-injection tests (an agent killed with SIGKILL, then
restarted: docs/reliability.md).

Possible values:

* Empty (default): every start is a fresh simulated host.
* A writable file path (created on the first write).
"""),
    cfg.StrOpt('simulated_profile', default='',
               help="""
``driver = simulated`` only: which simulated host the agent measures, so
that several simulated agents (the fake computes of ``iosched-cloud up
--fake-computes N``) report different loads to the schedulers
(``iosched/simdriver/profiles.py`` defines them).

Possible values:

* Empty (default) or ``example``: 2 pCPUs, an LSVM, a CPU-bound VM and a
  VM with an SLO volume.
* ``light``: 4 pCPUs, 2 CPU-bound vCPUs (no I/O vCPU, no LSVM).
* ``busy``: 4 pCPUs, 2 I/O-bound and 2 CPU-bound vCPUs.
* ``loaded``: 2 pCPUs, 6 LSVM vCPUs and 2 I/O-bound vCPUs (the Nova
  plugin's filters refuse it any I/O or LSVM request).

An unknown name stops the agent at start (exit status 2).
"""),
    cfg.FloatOpt('driver_retry_interval', default=1.0, min=0.1, max=3600.0,
                 help="""
Seconds before the first new attempt when the hypervisor does not answer
at start (libvirtd not running yet); each next wait doubles, up to
``driver_retry_max_interval``. The agent says once that it waits (the URI
and the error) and once that it connected; SIGTERM ends the wait at once.

Possible values:

* 0.1 to 3600 seconds.

Related options:

* ``driver_retry_max_interval``, ``driver_wait_timeout``
"""),
    cfg.FloatOpt('driver_retry_max_interval', default=60.0, min=0.1,
                 max=3600.0,
                 help="""
The longest wait between two attempts to reach the hypervisor at start.

Possible values:

* 0.1 to 3600 seconds (not less than ``driver_retry_interval``).

Related options:

* ``driver_retry_interval``, ``driver_wait_timeout``
"""),
    cfg.FloatOpt('driver_wait_timeout', default=0.0, min=0.0,
                 help="""
How long to wait for the hypervisor at start before giving up (exit
status 2; the unit's restart policy starts the agent again).

Possible values:

* 0 (default): wait as long as it takes, as nova-compute does;
  nothing is regulated meanwhile.
* A positive number of seconds.

Related options:

* ``driver_retry_interval``, ``driver_retry_max_interval``
"""),
]


def register_opts(conf):
    conf.register_group(GROUP)
    conf.register_opts(OPTS, group=GROUP)


def list_opts():
    return [(GROUP, OPTS)]
