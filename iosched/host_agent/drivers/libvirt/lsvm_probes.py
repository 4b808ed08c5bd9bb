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
"""What the libvirt driver measures for the LSVM mechanisms (read only).

* ``deadline_state``: SCHED_DEADLINE admission (``mechanism = deadline``):
  the root domain's CPUs and limit, the bandwidth the VMs' QEMU threads
  hold (``reserved``) and everything else (``foreign``), from
  ``iosched.host_agent.linux.deadline`` over the QEMU processes of the running
  domains;
* ``wakeup_probe``: the wake-up self-test (``mechanism = auto``) over the
  guest pCPUs, in the privsep daemon
  (``iosched.host_agent.linux.privileged_probe``).

Both raise ``DriverError`` with the reason when they cannot say.
"""

import dataclasses

from oslo_log import log as logging

from iosched.host_agent.drivers import base
from iosched.host_agent import linux
from iosched.host_agent.linux import deadline
from iosched.host_agent import paths

LOG = logging.getLogger(__name__)


def deadline_state(conf, qemu_pids, host_cpus, warned):
    """``model.DeadlineState`` of the host. ``qemu_pids``: the running
    domains' QEMU processes; ``host_cpus``: how many CPUs libvirt says the
    host has (None: unknown), to tell a root domain of all of them;
    ``warned``: the set of warnings already logged (each is said once).
    """
    p = conf.host_paths
    try:
        measured = deadline.measure(p.proc_root, p.sys_root, qemu_pids,
                                    cgroup_root=p.cgroup_root)
    except (linux.LinuxKnobError, OSError, ValueError,
            paths.UnsafePath) as e:
        raise base.DriverError('cannot read the deadline admission '
                               'figures: %s' % e)
    if host_cpus is not None and (
            set(measured.state.cpus) == set(range(host_cpus))):
        measured = measured._replace(state=dataclasses.replace(
            measured.state, all_cpus=True))
    for warning in measured.warnings:
        if warning not in warned:
            warned.add(warning)
            LOG.warning('deadline admission: %s', warning)
    LOG.debug('deadline admission (%(s)s): %(st)s',
              {'s': measured.source, 'st': measured.state})
    return measured.state


def wakeup_probe(conf, pcpus, cases, wakes=300, hogs_per_cpu=2,
                 lsvm_weight=10000, repeats=1, share_ms=0, weight_group=''):
    """The wake-up self-test over the guest pCPUs (``pcpus()``, read
    here so that a failure to read them is the self-test's), in the
    privsep daemon: a tuple of ``model.WakeupProbe``, one per case in
    order. Loads every guest pCPU for a few seconds; DriverError when it
    cannot run.
    """
    # NOTE(iosched): imported here: the privsep client (oslo.privsep)
    # is needed only by agents that run the self-test.
    from iosched.host_agent.linux import privileged_probe
    extra = {'weight_group': weight_group} if weight_group else {}
    try:
        return privileged_probe.probe(conf, cases, pcpus(), wakes=wakes,
                                      hogs_per_cpu=hogs_per_cpu,
                                      lsvm_weight=lsvm_weight,
                                      repeats=repeats, share_ms=share_ms,
                                      **extra)
    except (linux.LinuxKnobError, OSError, ValueError) as e:
        raise base.DriverError('wake-up self-test failed: %s' % e)
