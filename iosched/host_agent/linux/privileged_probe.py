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
"""The wake-up self-test in the privsep daemon, and its client side.

``run_wakeup_probe`` is an entrypoint of ``iosched.host_agent.privsep
.sys_admin_pctxt`` (the daemon keeps uid 0 and CAP_SYS_NICE: SCHED_DEADLINE
and slices need CAP_SYS_NICE, the temporary cgroups need uid 0 as owner of
the cgroup directories). It re-checks every argument, because the daemon
must not trust its caller: cases from the known set without repeats, CPUs
a non-empty subset of the online ones (read by the daemon below its own
``[host_paths] sys_root``), wakes, busy loops per CPU and weight within
``iosched.host_agent.linux.wakeup_probe``'s bounds; the cgroup root is the
daemon's ``[host_paths] cgroup_root``, never the caller's. The worst a
rogue caller can do is load the CPUs for ~40 s (5000 wakes x 4 cases).

``probe(conf, cases, cpus, ...)`` is the caller's side (the libvirt
driver, ``iosched-wakeup-probe``): starts the daemon if needed and turns
the rows back into ``model.WakeupProbe``.
"""

from iosched.host_agent import conf as agent_conf
from iosched.host_agent.linux import cpus as cpulist
from iosched.host_agent.linux import wakeup_probe
from iosched.host_agent.linux import wakeup_probe_rows
from iosched.host_agent import privsep

CONF = agent_conf.CONF


@privsep.sys_admin_pctxt.entrypoint
def run_wakeup_probe(cases, cpus, wakes=300, hogs_per_cpu=2,
                     lsvm_weight=10000, repeats=1, share_ms=0,
                     weight_group=''):
    """The self-test's rows as dicts (``wakeup_probe_rows.to_dict``);
    ``weight_group``: '' or the configured LSVM parent, where the weight
    case's group then goes.
    """
    paths = CONF.host_paths
    if weight_group and (
            weight_group != CONF['host_agent_policy.vslicer'].weight_group):
        raise wakeup_probe.ProbeArgError(
            'weight_group %r is not the configured %r' % (
                weight_group,
                CONF['host_agent_policy.vslicer'].weight_group))
    cases, cpus = wakeup_probe.check_args(
        cases, cpus, wakes, hogs_per_cpu, lsvm_weight,
        cpulist.online_cpus(paths.sys_root), repeats=repeats,
        share_ms=share_ms)
    rows = wakeup_probe.run(cases, cpus, wakes=wakes,
                            hogs_per_cpu=hogs_per_cpu,
                            lsvm_weight=lsvm_weight,
                            cgroup_root=paths.cgroup_root,
                            sys_root=paths.sys_root, repeats=repeats,
                            share_ms=share_ms, lsvm_parent=weight_group)
    return [wakeup_probe_rows.to_dict(r) for r in rows]


def probe(conf, cases, cpus, wakes=300, hogs_per_cpu=2, lsvm_weight=10000,
          repeats=1, share_ms=0, weight_group=''):
    """Run the self-test through the daemon: tuple of model.WakeupProbe.

    Raises ``wakeup_probe.ProbeArgError`` for arguments the daemon refuses
    and ``iosched.host_agent.linux.LinuxKnobError`` when the test cannot run.
    """
    privsep.ensure_started(conf)
    rows = run_wakeup_probe(list(cases), list(cpus),
                            wakes=wakes, hogs_per_cpu=hogs_per_cpu,
                            lsvm_weight=lsvm_weight, repeats=repeats,
                            share_ms=share_ms, weight_group=weight_group)
    return tuple(wakeup_probe_rows.from_dict(r) for r in rows)
