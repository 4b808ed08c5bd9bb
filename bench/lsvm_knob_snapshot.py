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
"""Where the LSVM's vCPU thread really competes, read from procfs and the
cpu cgroup hierarchy, for the testbed benches' diagnosis of a starved
round: its cgroup and every ancestor's weight, cap and throttling
counters, and the thread's scheduling class.

``snapshot(pid, tid)`` reads once; ``delta(a, b)`` gives what changed over
a phase (throttled periods and time per group, the thread's switches), so a
round whose LSVM share collapsed says whether a cap throttled it, its
weight was wrong, or its class was. Read only: nothing here writes.
"""

import os

from iosched.host_agent import linux
from iosched.host_agent.linux import cgroups

# sched(7) policies as /proc/<pid>/stat's field 41 numbers them
POLICIES = {0: 'other', 1: 'fifo', 2: 'rr', 3: 'batch', 5: 'idle',
            6: 'deadline'}


def _thread_stat(proc, pid, tid):
    """(policy name, rt priority, nice) from /proc/<pid>/task/<tid>/stat."""
    with open('%s/%d/task/%d/stat' % (proc, pid, tid)) as fh:
        fields = fh.read().rsplit(')', 1)[1].split()
    # after the comm: field 3 is fields[0]; nice is 19, rt_priority 40,
    # policy 41
    return (POLICIES.get(int(fields[38]), fields[38]), int(fields[37]),
            int(fields[16]))


def _switches(proc, pid, tid):
    out = {}
    with open('%s/%d/task/%d/status' % (proc, pid, tid)) as fh:
        for line in fh:
            if line.startswith(('voluntary_ctxt_switches',
                                'nonvoluntary_ctxt_switches')):
                key, value = line.split(':')
                out[key] = int(value)
    return out


def _group(hier, cg):
    row = {'cgroup': '/' + cg}
    try:
        row['weight'] = cgroups.read_weight(hier, cg)
        quota, period = cgroups.read_cap(hier, cg)
        row['cap'] = cgroups.cap_fraction(quota, period)
        stat = cgroups.read_cpu_stat(hier, cg)
        row['nr_throttled'] = stat.get('nr_throttled')
        row['throttled_ms'] = round(stat.get(
            'throttled_time', stat.get('throttled_usec', 0) * 1000) / 1e6, 1)
    except linux.LinuxKnobError as e:
        row['error'] = str(e)
    return row


def snapshot(pid, tid, proc='/proc', cgroup_root='/sys/fs/cgroup'):
    """The thread's class and its cpu cgroup with every ancestor."""
    out = {'tid': tid}
    try:
        policy, rt_prio, nice = _thread_stat(proc, pid, tid)
        out.update(policy=policy, rt_priority=rt_prio, nice=nice,
                   **_switches(proc, pid, tid))
        hier = cgroups.probe(cgroup_root)
        with open('%s/%d/task/%d/cgroup' % (proc, pid, tid)) as fh:
            cg = cgroups.cpu_cgroup(fh.read(), hier)
    except (OSError, ValueError, IndexError, linux.LinuxKnobError) as e:
        out['error'] = str(e)
        return out
    groups = []
    while True:
        groups.append(_group(hier, cg))
        if not cg:
            break
        cg = os.path.dirname(cg)
    out['groups'] = groups          # the thread's own group first
    return out


def delta(before, after):
    """What changed between two snapshots of one thread: its groups as
    ``after`` has them with their throttling over the interval, and its
    switches over the interval.
    """
    out = {k: after.get(k) for k in ('tid', 'policy', 'rt_priority',
                                      'nice', 'error') if k in after}
    for key in ('voluntary_ctxt_switches', 'nonvoluntary_ctxt_switches'):
        if key in before and key in after:
            out[key] = after[key] - before[key]
    was = {g['cgroup']: g for g in before.get('groups', ())}
    rows = []
    for g in after.get('groups', ()):
        row = dict(g)
        b = was.get(g['cgroup'])
        for key in ('nr_throttled', 'throttled_ms'):
            if b is not None and b.get(key) is not None and (
                    g.get(key) is not None):
                row[key] = round(g[key] - b[key], 1)
            else:
                row[key] = None     # a group new over the interval
        rows.append(row)
    out['groups'] = rows
    return out


def describe(knobs):
    """One line: class, then each group from the thread's own up, with
    weight, cap and what it throttled over the phase.
    """
    if not knobs:
        return 'no snapshot'
    head = '%s' % knobs.get('policy', '?')
    if knobs.get('error'):
        head += ' (%s)' % knobs['error']
    parts = []
    for g in knobs.get('groups', ()):
        cap = g.get('cap')
        parts.append('%s w=%s%s%s' % (
            g['cgroup'], g.get('weight'),
            '' if cap is None else ' cap=%.3g' % cap,
            '' if not g.get('nr_throttled') else
            ' throttled %s x (%s ms)' % (g['nr_throttled'],
                                         g.get('throttled_ms'))))
    return '%s; switches vol %s invol %s; %s' % (
        head, knobs.get('voluntary_ctxt_switches'),
        knobs.get('nonvoluntary_ctxt_switches'), ' < '.join(parts))
