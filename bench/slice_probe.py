#!/usr/bin/env python3
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
"""Which LSVM mechanism shortens wake-up latency on this kernel?

No VM involved: the agent's wake-up self-test (iosched.host_agent.linux
.wakeup_probe: busy loops pinned to every CPU, each in a cgroup of its
own as libvirt puts every VM, and a sleeper that wakes every --period-us
on an absolute timer and spins 50 us) with every mechanism and more:

* stock (the baseline, measured in the same run), deadline (SCHED_DEADLINE
  300 us / 1 ms / period, affinity = all CPUs), weight (own group at
  lsvm_weight, CFS quota at its fair share), slice 1000/200/100 us, and
  the idle floor (no busy loops);
* the pinning study of SCHED_DEADLINE: (a) affinity = all CPUs (the
  deadline row), (b) pinned to one CPU inside an exclusive cpuset
  partition (cgroup v1: the root cpuset's sched_load_balance = 0, two
  children {others} and {cpu} with cpu_exclusive and load balancing, so
  {cpu} is a root domain of its own), (c) pinned without a partition
  (the kernel says EPERM). With libvirt's ``machine`` cpuset present
  (it spans every CPU with load balancing on) (b) is also tried as is,
  and, with --touch-machine, with load balancing off on ``machine`` and
  its multi-CPU descendants. Everything is restored afterwards, also on
  error.

Rounds are interleaved (each round runs every row, in a rotated order);
the figures pool the rounds and each is printed beside its ratio to
stock. JSON goes to <output-dir>/slice_probe.json.

Needs root and a cgroup cpu controller (v1 or v2); the partition study
needs the v1 cpuset hierarchy.
Usage: .venv/bin/python bench/slice_probe.py [--rounds 2] [--wakes 600]
       [--quick] [--touch-machine]
"""

import argparse
import contextlib
import json
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))

from iosched.contract import lsvm as lsvm_bound  # noqa: E402
from iosched.host_agent import linux  # noqa: E402
from iosched.host_agent.linux import cpus as cpulist  # noqa: E402
from iosched.host_agent.linux import wakeup_probe as wp  # noqa: E402
from iosched.host_agent.linux import \
    wakeup_probe_groups as wp_groups  # noqa: E402
from iosched.host_agent.linux import wakeup_probe_rows as wp_rows  # noqa: E402
from iosched.host_agent.linux import \
    wakeup_probe_session as wp_session  # noqa: E402

LB = 'cpuset.sched_load_balance'


# -- cgroup v1 cpuset partitions ---------------------------------------------
def _read(path):
    with open(path) as fh:
        return fh.read().strip()


def _write(path, value):
    with open(path, 'w') as fh:
        fh.write(str(value))


def machine_cpusets(cpuset_root):
    """libvirt's machine cpuset and its descendants: [(dir, cpus, lb)]."""
    top = os.path.join(cpuset_root, 'machine')
    out = []
    for d, dirs, _ in os.walk(top):
        out.append((d, cpulist.parse_cpu_list(_read(os.path.join(d,
                                                            'cpuset.cpus'))),
                    _read(os.path.join(d, LB))))
    return out


@contextlib.contextmanager
def partition(cpuset_root, cpu, cpus, notes, touch_machine=False,
              nest_in=None):
    """{cpu} as a root domain of its own; yields the cpuset directory a
    task must join. ``nest_in``: create the two children inside this
    cpuset (which then gets load balancing off too) instead of the root.
    Restores every file it changed and removes what it created.
    """
    restore = []             # (path, old value), undone in reverse
    created = []
    parent = nest_in or cpuset_root
    tag = 'iosched-bench-part-%d' % os.getpid()
    try:
        if touch_machine:
            for d, span, lb in machine_cpusets(cpuset_root):
                if lb == '1' and len(span) > 1:
                    restore.append((os.path.join(d, LB), lb))
                    _write(os.path.join(d, LB), 0)
        mems = _read(os.path.join(cpuset_root, 'cpuset.mems'))
        dirs = {}
        for name, span in (('others', [c for c in cpus if c != cpu]),
                           ('cpu', [cpu])):
            d = os.path.join(parent, '%s-%s' % (tag, name))
            os.mkdir(d)
            created.append(d)
            _write(os.path.join(d, 'cpuset.cpus'),
                   ','.join(map(str, span)))
            _write(os.path.join(d, 'cpuset.mems'), mems)
            try:
                _write(os.path.join(d, 'cpuset.cpu_exclusive'), 1)
            except OSError as e:
                notes.append('cpu_exclusive on %s refused: %s; continued '
                             'without' % (os.path.relpath(d, cpuset_root),
                                          e.strerror))
            dirs[name] = d
        for d in ([nest_in] if nest_in else []) + [cpuset_root]:
            restore.append((os.path.join(d, LB), _read(os.path.join(d, LB))))
            _write(os.path.join(d, LB), 0)
        yield dirs['cpu']
    finally:
        for path, value in reversed(restore):
            try:
                _write(path, value)
            except OSError as e:
                notes.append('RESTORE FAILED %s = %s: %s' % (path, value, e))
        for d in reversed(created):
            for pid in wp_groups._read_pids(d):     # a sleeper still alive
                try:
                    _write(os.path.join(cpuset_root, 'cgroup.procs'), pid)
                except OSError:
                    pass
            if not wp_groups._rmdir(d):
                notes.append('REMOVE FAILED %s' % d)


# -- rows --------------------------------------------------------------------
def plan_rows(cpus, pin_cpu, cpuset_root, machine, touch_machine):
    """[(name, case, kwargs for measure, partition kwargs or None)]."""
    others = [c for c in cpus if c != pin_cpu]
    rows = [
        ('stock', lsvm_bound.PROBE_STOCK, {}, None),
        ('deadline (a) affinity all CPUs', lsvm_bound.MECH_DEADLINE, {}, None),
        ('weight', lsvm_bound.MECH_WEIGHT, {}, None),
        ('slice 1000 us', lsvm_bound.MECH_SLICE, {'slice_us': 1000}, None),
        ('slice 200 us', lsvm_bound.MECH_SLICE, {'slice_us': 200}, None),
        ('slice 100 us', lsvm_bound.MECH_SLICE, {'slice_us': 100}, None),
        ('deadline (c) pinned to CPU %d, no partition' % pin_cpu,
         lsvm_bound.MECH_DEADLINE, {'affinity': [pin_cpu]}, None),
    ]
    if cpuset_root and others:
        if machine:
            rows.append(('deadline (b) pinned, partition, libvirt machine '
                         'cpuset as is', lsvm_bound.MECH_DEADLINE,
                         {'affinity': [pin_cpu]}, {}))
            if touch_machine:
                rows.append(('deadline (b) pinned, partition, machine '
                             'load balancing off', lsvm_bound.MECH_DEADLINE,
                             {'affinity': [pin_cpu]},
                             {'touch_machine': True}))
                rows.append(('deadline (b) pinned, partition nested in '
                             'machine', lsvm_bound.MECH_DEADLINE,
                             {'affinity': [pin_cpu]},
                             {'touch_machine': True, 'nest_in': machine}))
        else:
            rows.append(('deadline (b) pinned, exclusive partition',
                         lsvm_bound.MECH_DEADLINE, {'affinity': [pin_cpu]},
                         {}))
    return rows


def run_round(args, cpus, rows, order, cpuset_root, notes, pooled):
    with wp_session.Session(cpus, args.hogs_per_cpu, args.lsvm_weight,
                            args.cgroup_root, args.period_us, args.work_us,
                            args.wakes) as s:
        s.spawn_sleepers(len(rows))
        s.start()
        if s.plan is None:
            notes.append('round without cgroups: %s' % s.cg_error)
        for i in order:
            name, case, kwargs, part = rows[i]
            if part is None:
                r, samples = s.measure_samples(case, **kwargs)
            else:
                with partition(cpuset_root, kwargs['affinity'][0], cpus,
                               notes, **part) as d:
                    r, samples = s.measure_samples(
                        case, before=lambda pid: _write(
                            os.path.join(d, 'cgroup.procs'), pid), **kwargs)
            pooled[name]['rounds'].append(r)
            pooled[name]['samples'].extend(samples)
    with wp_session.Session(cpus, 0, args.lsvm_weight, args.cgroup_root,
                            args.period_us, args.work_us, args.wakes) as s:
        s.spawn_sleepers(1)
        s.start()
        r, samples = s.measure_samples(lsvm_bound.PROBE_STOCK)
        pooled['idle (no busy loops)']['rounds'].append(r)
        pooled['idle (no busy loops)']['samples'].extend(samples)


def summarize(pooled):
    out = []
    for name, d in pooled.items():
        oks = [r for r in d['rounds'] if r.ok]
        if oks and d['samples']:
            r = wp_rows.row(d['rounds'][0].mechanism, d['samples'])
            out.append({'name': name, 'mechanism': r.mechanism, 'ok': True,
                        'p50_us': r.p50_us, 'p99_us': r.p99_us,
                        'samples': r.samples, 'error': '',
                        'rounds': [[x.p50_us, x.p99_us] for x in oks]})
        else:
            errors = sorted(set(re.sub(r'tid [0-9]+', 'tid N', r.error)
                                for r in d['rounds']))
            out.append({'name': name, 'mechanism': d['rounds'][0].mechanism,
                        'ok': False, 'p50_us': None, 'p99_us': None,
                        'samples': 0, 'error': '; '.join(errors),
                        'rounds': []})
    stock = out[0]
    for row in out:
        for q in ('p50', 'p99'):
            row['%s_vs_stock' % q] = (
                round(row['%s_us' % q] / max(stock['%s_us' % q], 0.1), 3)
                if row['ok'] and stock['ok'] else None)
    return out


def _ratio(v):
    return '  -  ' if v is None else 'x%.2f' % v


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('--rounds', type=int, default=2)
    p.add_argument('--wakes', type=int, default=600,
                   help='wake-ups per row and round')
    p.add_argument('--period-us', type=int, default=2000)
    p.add_argument('--work-us', type=int, default=50)
    p.add_argument('--hogs-per-cpu', type=int, default=2)
    p.add_argument('--lsvm-weight', type=int, default=10000)
    p.add_argument('--cpus', default=None,
                   help='CPU list (default: every online CPU)')
    p.add_argument('--pin-cpu', type=int, default=None,
                   help='CPU of the pinned deadline rows (default: the '
                        'last of --cpus)')
    p.add_argument('--cgroup-root', default='/sys/fs/cgroup')
    p.add_argument('--touch-machine', action='store_true',
                   help="also try the partition with load balancing off "
                        "on libvirt's machine cpuset and its multi-CPU "
                        'descendants (running VMs lose load balancing '
                        'for that row)')
    p.add_argument('--quick', action='store_true',
                   help='1 round of 150 wakes')
    p.add_argument('-o', '--output-dir', default='out/bench')
    args = p.parse_args(argv)
    if args.quick:
        args.rounds, args.wakes = 1, 150
    start = time.monotonic()
    online = cpulist.online_cpus()
    cpus = cpulist.parse_cpu_list(args.cpus) if args.cpus else online
    wp.check_args(list(lsvm_bound.PROBE_CASES), cpus, args.wakes,
                  args.hogs_per_cpu, args.lsvm_weight, online, args.period_us,
                  args.work_us)
    pin = cpus[-1] if args.pin_cpu is None else args.pin_cpu
    cpuset_root = os.path.join(args.cgroup_root, 'cpuset')
    notes = []
    if not os.path.isfile(os.path.join(cpuset_root, LB)):
        notes.append('no cgroup v1 cpuset hierarchy at %s: no partition '
                     'row (cgroup v2 would use cpuset.cpus.partition = '
                     'root, not implemented here)' % cpuset_root)
        cpuset_root = None
    machine = (os.path.join(cpuset_root, 'machine')
               if cpuset_root and os.path.isdir(os.path.join(
                   cpuset_root, 'machine')) else None)
    if machine:
        notes.append("libvirt's machine cpuset is present: %s" % '; '.join(
            '%s cpus %s load_balance %s' % (os.path.relpath(d, cpuset_root),
                                            ','.join(map(str, c)), lb)
            for d, c, lb in machine_cpusets(cpuset_root)))
    rows = plan_rows(cpus, pin, cpuset_root, machine, args.touch_machine)
    names = [r[0] for r in rows] + ['idle (no busy loops)']
    pooled = {n: {'rounds': [], 'samples': []} for n in names}
    print('kernel %s, CPUs %s, %d busy loop(s) per CPU, %d rounds x %d '
          'wakes every %d us per row (wall clock figures are noisy on a '
          'shared machine)' % (os.uname().release, ','.join(map(str, cpus)),
                               args.hogs_per_cpu, args.rounds, args.wakes,
                               args.period_us), flush=True)
    for rnd in range(args.rounds):
        k = rnd % len(rows)
        order = list(range(len(rows)))[k:] + list(range(len(rows)))[:k]
        run_round(args, cpus, rows, order, cpuset_root, notes, pooled)
        print('round %d done' % (rnd + 1), flush=True)
    table = summarize(pooled)
    for row in table:
        if row['ok']:
            print('%-60s p50 %7.1f us (%s)  p99 %8.1f us (%s)' % (
                row['name'], row['p50_us'], _ratio(row['p50_vs_stock']),
                row['p99_us'], _ratio(row['p99_vs_stock'])))
        else:
            print('%-60s refused: %s' % (row['name'],
                                         row['error'].split(': sched_')[0]))
    notes = list(dict.fromkeys(notes))
    for n in notes:
        print('note: %s' % n)
    wall = time.monotonic() - start
    print('wall time %.1f s' % wall)
    os.makedirs(args.output_dir, exist_ok=True)
    path = os.path.join(args.output_dir, 'slice_probe.json')
    with open(path, 'w') as fh:
        json.dump({'kernel': os.uname().release, 'cpus': list(cpus),
                   'pin_cpu': pin, 'rounds': args.rounds,
                   'wakes': args.wakes, 'period_us': args.period_us,
                   'work_us': args.work_us,
                   'hogs_per_cpu': args.hogs_per_cpu,
                   'lsvm_weight': args.lsvm_weight,
                   'wall_s': round(wall, 1), 'notes': notes,
                   'rows': table}, fh, indent=2)
    print('wrote %s' % path)
    return 0


if __name__ == '__main__':
    try:
        sys.exit(main())
    except linux.LinuxKnobError as e:
        print('slice_probe: error: %s' % e, file=sys.stderr)
        sys.exit(2)
