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
"""Does an EEVDF custom slice shorten wake-up latency on this kernel?

No VM involved: three busy loops and one sleeper (wakes every 3 ms and
measures how late it runs) share one CPU. The sleeper's slice is the
kernel default (the baseline, same run) or a custom 1000/200/100 µs, and
each thread is either in the same cgroup or in a cgroup of its own, as
libvirt puts every vCPU thread in its own cgroup. Prints wake lateness
p50/p99 per case and the ratio to the default-slice case; writes JSON.

Needs root and the cgroup v1 cpu controller (cgroup_root/cpu).
Usage: .venv/bin/python bench/slice_probe.py [--samples 600] [--cpu 1]
"""

import argparse
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))

from host_agent.linux import sched  # noqa: E402

ROOT = '/sys/fs/cgroup/cpu/iosched-slice-probe'


def _cg(name, pid):
    d = os.path.join(ROOT, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, 'cgroup.procs'), 'w') as fh:
        fh.write(str(pid))


def _probe(samples, period_s=0.003):
    lat = []
    for _ in range(samples):
        t = time.perf_counter_ns()
        time.sleep(period_s)
        lat.append((time.perf_counter_ns() - t) / 1000 - period_s * 1e6)
    lat.sort()
    return round(lat[len(lat) // 2]), round(lat[int(len(lat) * 0.99)])


def case(cpu, slice_us, groups, samples):
    hogs = [subprocess.Popen(['taskset', '-c', str(cpu), sys.executable,
                              '-c', 'while 1: pass']) for _ in range(3)]
    me = os.getpid()
    old_aff = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {cpu})
    default = sched.get_slice_us(me)
    try:
        if groups:
            for i, h in enumerate(hogs):
                _cg('hog%d' % i, h.pid)
            _cg('probe', me)
        if slice_us:
            sched.set_slice_us(me, slice_us)
        time.sleep(0.5)
        return _probe(samples)
    finally:
        for h in hogs:
            h.kill()
            h.wait()
        if groups:
            with open('/sys/fs/cgroup/cpu/cgroup.procs', 'w') as fh:
                fh.write(str(me))
            for name in os.listdir(ROOT):
                if os.path.isdir(os.path.join(ROOT, name)):
                    os.rmdir(os.path.join(ROOT, name))
            os.rmdir(ROOT)
        if slice_us:
            sched.set_slice_us(me, default)
        os.sched_setaffinity(0, old_aff)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('--samples', type=int, default=600)
    p.add_argument('--cpu', type=int, default=1)
    p.add_argument('-o', '--output-dir', default='out/bench')
    args = p.parse_args(argv)
    rows = []
    for groups in (False, True):
        base = None
        for s in (None, 1000, 200, 100):
            p50, p99 = case(args.cpu, s, groups, args.samples)
            base = base or (p50, p99)
            row = {'cgroup_per_thread': groups, 'slice_us': s or 'default',
                   'p50_us': p50, 'p99_us': p99,
                   'p50_vs_default': round(p50 / max(1, base[0]), 2),
                   'p99_vs_default': round(p99 / max(1, base[1]), 2)}
            rows.append(row)
            print('cgroup per thread=%-5s slice=%-7s wake lateness p50 %6d '
                  'us p99 %6d us (x%.2f, x%.2f of the default slice)' % (
                      groups, row['slice_us'], p50, p99,
                      row['p50_vs_default'], row['p99_vs_default']),
                  flush=True)
    os.makedirs(args.output_dir, exist_ok=True)
    path = os.path.join(args.output_dir, 'slice_probe.json')
    with open(path, 'w') as fh:
        json.dump({'kernel': os.uname().release, 'rows': rows}, fh,
                  indent=2)
    print('wrote %s' % path)
    return 0


if __name__ == '__main__':
    sys.exit(main())
