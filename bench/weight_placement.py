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
"""Where should the LSVM weight boost live? Inside libvirt's machine group
or at the top of the cpu hierarchy (issue 28, ``linux.lsvm_group``).

No VM: on one CPU, three busy loops each in a group of its own inside a
machine-like group (as libvirt places guests), ``--outside`` busy loops
outside it (host services, other jobs) and a sleeper that wakes every
``--period-us`` on an absolute timer, spins 50 us and records how late
each wake-up was. The sleeper's group per case:

* ``stock``: a default-weight group inside the machine-like group;
* ``in-machine``: there at weight 10000 with a CFS cap of 0.25 CPU (the
  weight mechanism without a top-level group);
* ``top-<w>``: ``<parent at weight w>/<child capped at 0.25>`` at the top
  of the hierarchy (what the agent makes, ``weight_group_weight`` = w).

Cases interleave over ``--rounds``; per case the wake-up p50/p99 and the
busy guests' CPU share (a mechanism must not move it). cgroup v1 only
(a v2 thread cannot leave its process's subtree). Everything is removed
afterwards, also on error.

Usage (root): .venv/bin/python bench/weight_placement.py [--rounds 3]
       [--outside 1] [--cpu 1] [--wakes 500]
"""

import argparse
import json
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))

from iosched.contract import stats  # noqa: E402
from iosched.host_agent.linux import sched  # noqa: E402

CPU_ROOT = '/sys/fs/cgroup/cpu'
TOP_WEIGHTS = '10000,1000,400,200'


def _mk(path, shares=None, quota=None):
    os.makedirs(path, exist_ok=True)
    if shares:
        _put(path, 'cpu.shares', shares)
    if quota:
        _put(path, 'cpu.cfs_period_us', 100000)
        _put(path, 'cpu.cfs_quota_us', int(quota * 100000))


def _put(path, name, value):
    with open(os.path.join(path, name), 'w') as fh:
        fh.write(str(value))


def _loop(cpu, group):
    """A busy loop on ``cpu`` (None: free to run anywhere) in ``group``."""
    pid = os.fork()
    if pid == 0:
        if cpu is not None:
            os.sched_setaffinity(0, {cpu})
        if group:
            _put(group, 'tasks', os.getpid())
        while True:
            pass
    return pid


def _sleeper(cpu, group, wakes, period_us, work_us=50, slice_us=None):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        os.sched_setaffinity(0, {cpu})
        _put(group, 'tasks', os.getpid())
        if slice_us:
            sched.set_slice_us(os.getpid(), slice_us)
        late = []
        t = time.monotonic_ns() + 10_000_000
        for _ in range(wakes):
            t += period_us * 1000
            time.sleep(max(0.0, (t - time.monotonic_ns()) / 1e9))
            now = time.monotonic_ns()
            late.append(now - t)
            while time.monotonic_ns() < now + work_us * 1000:
                pass
        os.write(w, ' '.join(map(str, late)).encode())
        os._exit(0)
    os.close(w)
    data = b''
    while True:
        chunk = os.read(r, 65536)
        if not chunk:
            break
        data += chunk
    os.close(r)
    os.waitpid(pid, 0)
    return [int(x) / 1000.0 for x in data.split()]


def _run_ns(pid):
    with open('/proc/%d/schedstat' % pid) as fh:
        return int(fh.read().split()[0])


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('--rounds', type=int, default=3)
    p.add_argument('--wakes', type=int, default=500)
    p.add_argument('--period-us', type=int, default=2000)
    p.add_argument('--outside', type=int, default=1,
                   help='busy loops outside the machine-like group')
    p.add_argument('--floating', action='store_true',
                   help='outside loops free to run on any CPU (default: on '
                   '--cpu)')
    p.add_argument('--cpu', type=int, default=1)
    p.add_argument('--weights', default=TOP_WEIGHTS,
                   help='weights of the top-level parent to try (v2 scale, '
                   'comma-separated; default %(default)s)')
    p.add_argument('-o', '--output-dir', default='out/bench')
    args = p.parse_args(argv)
    weights = [int(w) for w in args.weights.split(',')]
    if not os.path.isfile(os.path.join(CPU_ROOT, 'cpu.cfs_quota_us')):
        p.error('needs root and a cgroup v1 cpu hierarchy at %s' % CPU_ROOT)
    tag = 'iosched-wp-%d' % os.getpid()
    machine = os.path.join(CPU_ROOT, tag + '-machine')
    cases = {'stock': os.path.join(machine, 'stock'),
             'in-machine': os.path.join(machine, 'lsvm')}
    for w in weights:
        cases['top-%d' % w] = os.path.join(CPU_ROOT, '%s-top%d' % (tag, w),
                                           'vm')
    # The default weight at the top, the sleeper with a 100 us EEVDF slice
    # (6.12+ propagates a group's shortest child slice to its entity).
    cases['top-100-slice'] = os.path.join(CPU_ROOT, '%s-top100s' % tag,
                                          'vm')
    made, pids = [], []
    late = {k: [] for k in cases}
    share = {k: [] for k in cases}
    try:
        made.append(machine)
        _mk(machine)
        hogs = []
        for i in range(3):
            made.append(os.path.join(machine, 'hog%d' % i))
            _mk(made[-1])
            hogs.append(_loop(args.cpu, made[-1]))
        pids += hogs
        pids += [_loop(None if args.floating else args.cpu, None)
                 for _ in range(args.outside)]
        made.append(cases['stock'])
        _mk(cases['stock'])
        made.append(cases['in-machine'])
        _mk(cases['in-machine'], shares=102400, quota=0.25)
        for w in weights:
            top = os.path.dirname(cases['top-%d' % w])
            made.append(top)
            _mk(top, shares=(w * 1024 + 50) // 100)
            made.append(cases['top-%d' % w])
            _mk(cases['top-%d' % w], quota=0.25)
        top = os.path.dirname(cases['top-100-slice'])
        made.append(top)
        _mk(top)
        made.append(cases['top-100-slice'])
        _mk(cases['top-100-slice'], quota=0.25)
        time.sleep(0.5)
        names = list(cases)
        for r in range(args.rounds):
            order = names[r % len(names):] + names[:r % len(names)]
            for case in order:
                t0, r0 = time.monotonic(), sum(_run_ns(h) for h in hogs)
                late[case] += _sleeper(
                    args.cpu, cases[case], args.wakes, args.period_us,
                    slice_us=100 if case.endswith('-slice') else None)
                share[case].append((sum(_run_ns(h) for h in hogs) - r0)
                                   / 1e9 / (time.monotonic() - t0))
                print('round %d/%d %-11s done' % (r + 1, args.rounds, case),
                      flush=True)
    finally:
        for pid in pids:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        time.sleep(0.2)
        for path in reversed(made):
            for _ in range(40):
                try:
                    os.rmdir(path)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.05)
    rows = {}
    stock_p99 = stats.percentile(late['stock'], 0.99)
    print('sleeper on CPU %d beside 3 busy guests and %d %s busy loop(s) '
          'outside them, %d rounds; load %s' % (
              args.cpu, args.outside,
              'floating' if args.floating else 'pinned', args.rounds,
              open('/proc/loadavg').read().split()[0]))
    print('%-11s %8s %9s %9s %12s' % ('case', 'p50 us', 'p99 us',
                                      'p99/stock', 'guests share'))
    for case in cases:
        p50 = stats.percentile(late[case], 0.5)
        p99 = stats.percentile(late[case], 0.99)
        guests = sum(share[case]) / len(share[case])
        rows[case] = {'p50_us': round(p50, 1), 'p99_us': round(p99, 1),
                      'guests_share': round(guests, 3)}
        print('%-11s %8.0f %9.0f %9.3f %12.3f' % (
            case, p50, p99, p99 / stock_p99, guests))
    os.makedirs(args.output_dir, exist_ok=True)
    with open(os.path.join(args.output_dir, 'weight_placement.json'),
              'w') as fh:
        json.dump({'config': vars(args), 'rows': rows}, fh, indent=1)


if __name__ == '__main__':
    main()
