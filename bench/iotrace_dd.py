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
"""Seed 004's dd test on real guests, recorded with iosched-iotrace.

Four ``dd`` guests (``iosched.testbed`` mode ``dd``: 44 KiB sequential
reads, ``qd`` in flight, a journal-like commit of 4 KiB + 20 KiB every
``--journal-ms`` that the reader waits for, ending with fdatasync) have
their disks on one shared loop device, QEMU cache ``writeback`` (so the
host sees buffered, async writes). ``--scheduler bfq-1group``: BFQ with
every QEMU in one blkio group (per-process sync queues, one shared
async queue: the nearest thing to dom0's CFQ on this kernel); ``none``
and ``mq-deadline`` as they are. One trial (all four start together) is
recorded from start to the last ``DDEND``; the guests' own finish times
become the trace's finish lines. Writes the trace, the analysis
(``analyze --json``) and the rendered page into
``out/iotrace_dd/<scheduler>/``. Run it under
``flock /tmp/iosched-testbed.lock`` (~3 min).
"""

import argparse
import json
import os
import subprocess
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))

from bench import testbed_common as tc  # noqa: E402
from iosched.iotrace import analyze  # noqa: E402
from iosched.iotrace import fmt  # noqa: E402
from iosched.iotrace import hostmap  # noqa: E402
from iosched.iotrace import record  # noqa: E402
from iosched.iotrace import render  # noqa: E402
from iosched.testbed import daemons  # noqa: E402
from iosched.testbed import shared_disk  # noqa: E402
from iosched.testbed import spec as spec_mod  # noqa: E402
from iosched.testbed import testbed as testbed_mod  # noqa: E402

PREFIX = 'iosched-it-'
BLKIO = '/sys/fs/cgroup/blkio'


def _set_sched(loop, name):
    with open('/sys/block/%s/queue/scheduler' % os.path.basename(loop),
              'w') as fh:
        fh.write(name)


def _blkio_group(pid):
    with open('/proc/%d/cgroup' % pid) as fh:
        for line in fh:
            _, ctrl, path = line.rstrip('\n').split(':', 2)
            if 'blkio' in ctrl.split(','):
                return path
    return None


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('--scheduler', default='bfq-1group',
                   choices=('bfq-1group', 'none', 'mq-deadline'))
    p.add_argument('--disk-mib', type=int, default=256)
    p.add_argument('--journal-ms', type=int, default=1000)
    p.add_argument('--qd', type=int, default=3)
    p.add_argument('--output-dir', default='out/iotrace_dd')
    args = p.parse_args(argv)
    out = os.path.join(args.output_dir, args.scheduler)
    os.makedirs(out, exist_ok=True)
    specs = [spec_mod.GuestSpec('dd%d' % (i + 1), 'dd',
                                disk_mib=args.disk_mib,
                                disk_cache='writeback', opts={
                                    'qd': str(args.qd),
                                    'journal_ms': str(args.journal_ms),
                                    'jsync': '1', 'report_ms': '1000'})
             for i in range(4)]
    started = daemons.ensure_libvirtd()
    tb = testbed_mod.Testbed(prefix=PREFIX, log=tc.progress)
    disk = shared_disk.SharedDisk(tb.workdir, PREFIX + 'dddisk',
                                  [s.disk_mib for s in specs])
    own = {}
    try:
        tb.build()
        tb.down()
        disk.create()
        specs = disk.place(specs)
        guests = {g.name: g for g in tb.up(specs)}
        pids = {n: tc.threads.qemu_pid(tc.RUN_DIR, g.domain_name)
                for n, g in guests.items()}
        if args.scheduler == 'bfq-1group':
            _set_sched(disk.loop, 'bfq')
            for n, pid in pids.items():
                own[pid] = _blkio_group(pid)
                disk.attach(pid)
        else:
            _set_sched(disk.loop, args.scheduler)
        subprocess.run(['blockdev', '--flushbufs', disk.loop], check=True)
        hm = hostmap.HostMap(disk.loop).discover()
        rec = record.Recorder('/sys/kernel/tracing', hm)
        done = {}

        def trial():
            t0 = None
            try:
                for g in guests.values():
                    t = g.dd_start(1)
                    t0 = t if t0 is None else t0
                for n, g in guests.items():
                    done[n] = g.dd_wait(1, timeout=900)
            finally:
                rec.stop_requested = True

        th = threading.Thread(target=trial, daemon=True)
        tc.progress('recording one dd trial (%s, %d MiB per guest)'
                    % (args.scheduler, args.disk_mib))
        th_started = False
        try:
            # the recorder starts first; the trial when it records
            threading.Timer(1.0, th.start).start()
            th_started = True
            text, t_a, t_b = rec.capture(None, tc.progress)
        finally:
            if th_started:
                th.join(timeout=900)
        trace = rec.assemble(text, t_a, t_b)
        for n, g in guests.items():
            if n in done:
                trace.finish[g.domain_name] = done[n][0] - t_a
        trace.header['meta']['experiment'] = {
            'scheduler': args.scheduler, 'disk_mib': args.disk_mib,
            'journal_ms': args.journal_ms, 'qd': args.qd,
            'cache': 'writeback', 'jsync': True,
            'ddend': {n: done[n][1] for n in done}}
    finally:
        for pid, group in own.items():
            if group:
                try:
                    with open(os.path.join(BLKIO, group.lstrip('/'),
                                           'cgroup.procs'), 'w') as fh:
                        fh.write(str(pid))
                except OSError:
                    pass
        try:
            tc.shutdown(tb, started)
        finally:
            disk.close()
    path = os.path.join(out, 'trace.jsonl.gz')
    fmt.write(trace, path)
    summary = analyze.summary(trace)
    with open(os.path.join(out, 'analysis.json'), 'w') as fh:
        json.dump(summary, fh, indent=1, sort_keys=True, default=str)
    render.render(trace, out, summary=summary)
    f = summary['fairness']
    print('%s: finish %s; SD %.3f s; slowest/fastest %.3f; Jain %.4f; '
          '%d findings' % (args.scheduler, ', '.join(
              '%s %.2f' % kv for kv in sorted(f['finish'].items())),
              f['sd'], f['ratio'], f['jain'], len(summary['findings'])))
    for x in summary['findings']:
        print(analyze.describe(x))
    print(out)
    return 0


if __name__ == '__main__':
    sys.exit(main())
