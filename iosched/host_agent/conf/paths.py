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
"""Where the agent finds the host's kernel interfaces and keeps its state.

Every reader and writer takes its root from here, so tests point them at a
fake tree in a temporary directory and containers at bind mounts::

    [host_paths]
    proc_root = /host/proc
    cgroup_root = /host/sys/fs/cgroup

This module also lists ``[host_agent_privsep]`` for the sample file: those
options belong to oslo.privsep, which registers them itself when
``iosched.host_agent.privsep`` creates the agent's privilege context.
"""

import copy

from oslo_config import cfg

GROUP = cfg.OptGroup('host_paths', title='Host paths',
                     help='Mount points of procfs, sysfs, cgroupfs, tracefs '
                          'and the directories the agent reads or keeps.')

OPTS = [
    cfg.StrOpt('proc_root', default='/proc',
               help="""
Mount point of procfs.

Per-thread counters (``<proc_root>/<pid>/task/<tid>/schedstat``,
``status``, ``sched``) and a process's cgroup (``<proc_root>/<pid>/cgroup``)
are read below it.

Possible values:

* An absolute directory path, e.g. ``/host/proc`` in a container.
"""),
    cfg.StrOpt('sys_root', default='/sys',
               help="""
Mount point of sysfs.

Possible values:

* An absolute directory path.
"""),
    cfg.StrOpt('cgroup_root', default='/sys/fs/cgroup',
               help="""
Mount point of the cgroup hierarchies.

At start the agent probes below it for a cgroup v2 unified hierarchy with
the ``cpu`` controller in ``cgroup.controllers``, or a cgroup v1 ``cpu``
hierarchy (``<cgroup_root>/cpu``). The privileged helper writes only files
below this directory (and only CPU weight and bandwidth files).

Possible values:

* An absolute directory path.

Related options:

* ``[host_agent_privsep]``: the helper reads this option from its own
  configuration files, not from the caller.
"""),
    cfg.StrOpt('tracefs_root', default='/sys/kernel/tracing',
               help="""
Mount point of tracefs, for exact wake-up timestamps of vCPU threads.

Possible values:

* An absolute directory path. When nothing is mounted there, the agent
  falls back to counters.
"""),
    cfg.StrOpt('libvirt_run_dir', default='/run/libvirt/qemu',
               help="""
libvirt's QEMU runtime directory, where ``<domain name>.pid`` files are.

Possible values:

* An absolute directory path (``/var/run/libvirt/qemu`` on older hosts).
"""),
    cfg.StrOpt('state_dir', default='/var/lib/iosched',
               help="""
Directory for the agent's own state (journal, caches).

Possible values:

* An absolute directory path writable by the agent's user.
"""),
]

# The section of the agent's oslo.privsep context (iosched.host_agent.privsep).
PRIVSEP_GROUP = 'host_agent_privsep'
# Sample default of ``capabilities`` in that section;
# iosched.host_agent.privsep holds the same list as numbers, and a unit test
# keeps the two equal.
PRIVSEP_CAPABILITIES = ['CAP_SYS_NICE']
# The second context (creating the LSVM parent cgroup only).
PRIVSEP_CGROUP_GROUP = 'host_agent_privsep_cgroup'
PRIVSEP_CGROUP_CAPABILITIES = ['CAP_DAC_OVERRIDE']


def register_opts(conf):
    conf.register_group(GROUP)
    conf.register_opts(OPTS, group=GROUP)


def privsep_opts(capabilities=None):
    """oslo.privsep's options with the agent's defaults, for the sample.

    Copies: the PrivContext registers the library's own Opt objects and
    sets its defaults with ``set_default``; these copies are only listed.
    """
    # NOTE(iosched): imported here, not at the top: oslo_privsep imports
    # eventlet when present, and registering options must stay cheap.
    from oslo_privsep import priv_context
    opts = copy.deepcopy(priv_context.OPTS)
    for opt in opts:
        if opt.dest == 'capabilities':
            opt.default = list(capabilities or PRIVSEP_CAPABILITIES)
    return opts


def list_opts():
    return [(GROUP, OPTS), (PRIVSEP_GROUP, privsep_opts()),
            (PRIVSEP_CGROUP_GROUP,
             privsep_opts(PRIVSEP_CGROUP_CAPABILITIES))]
