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
"""What recording with ``iosched-iotrace record`` costs real guests' disk
throughput.

Three ``disk`` guests (closed loop, 2 x 16 KiB O_DIRECT requests in
flight; one of them half writes) have their disks on one shared loop
device (``iosched.testbed.shared_disk``, elevator mq-deadline, no
throttle), not pinned: on this 2-CPU host the TCG guests keep both CPUs
busy, so whatever CPU the recorder takes shows as lost guest I/O.

Arms, interleaved ABBA over ``--rounds`` rounds of ``--seconds`` each:

* ``off``: nothing recorded;
* ``on``: the recorder (``iosched.iotrace.record.Recorder``, what the
  CLI runs) traces the device and the VMs' threads for the phase;
* ``block-only`` (``--no-sched-arm``): the same with ``--no-sched``;
* ``text-pipe`` (``--text-arm``): the same reading the text trace_pipe.

Throughput per phase: the sum over the guests of the I/O operations
their own ``DISK`` reports count (every 500 ms) in the phase minus its
first second. The ratio on / off per round pair, then the median and the
spread; the loss is 1 - median ratio. The trace is parsed after each
``on`` phase (not inside it): that post-processing time is reported
separately per recorded second. JSON: ``out/bench/iotrace_overhead.json``.
Run it under ``flock /tmp/iosched-testbed.lock`` (~3 min).
"""

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))

from bench import testbed_common as tc  # noqa: E402
from iosched.iotrace import hostmap  # noqa: E402
from iosched.iotrace import record  # noqa: E402
from iosched.testbed import daemons  # noqa: E402
from iosched.testbed import shared_disk  # noqa: E402
from iosched.testbed import spec as spec_mod  # noqa: E402
from iosched.testbed import testbed as testbed_mod  # noqa: E402

PREFIX = 'iosched-it-'
OPTS = {'bs': '16384', 'qd': '2', 'report_ms': '500'}
SPECS = [
    spec_mod.GuestSpec('ov1', 'disk', opts=dict(OPTS)),
    spec_mod.GuestSpec('ov2', 'disk', opts=dict(OPTS, write_pct='50')),
    spec_mod.GuestSpec('ov3', 'disk', opts=dict(OPTS)),
]


def ops_between(guests, a, b):
    """Operations per second over the guests' reports in (a, b]."""
    ops = secs = 0
    for g in guests.values():
        reps = g.disk_reports(since=a, until=b)
        ops += sum(r.ops for r in reps)
        secs = max(secs, sum(r.interval_us for r in reps) / 1e6)
    return ops / secs if secs else 0.0


def phase(guests, disk, seconds, on, sched=True, raw=True):
    out = {}
    rec = None
    if on:
        hm = hostmap.HostMap(disk.loop, sorted(
            g.domain_name for g in guests.values())).discover()
        rec = record.Recorder('/sys/kernel/tracing', hm, sched=sched,
                              raw=raw)
    t0 = time.monotonic()
    if rec is not None:
        cpu0 = time.thread_time()
        text, t_a, t_b = rec.capture(seconds)
        t1 = time.monotonic()
        out['recorder_cpu_pct'] = 100 * (time.thread_time() - cpu0) / (
            t_b - t_a)
        p0 = time.monotonic()
        trace = rec.assemble(text, t_a, t_b)
        out['parse_s_per_s'] = (time.monotonic() - p0) / seconds
        out['events_per_s'] = trace.header['meta']['events'] / seconds
        out['requests'] = trace.header['meta']['counts'].get('requests', 0)
    else:
        time.sleep(seconds)
        t1 = time.monotonic()
    time.sleep(0.6)                          # the last report arrives
    out['iops'] = ops_between(guests, t0 + 1.0, t1)
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('--rounds', type=int, default=12)
    p.add_argument('--seconds', type=float, default=5.0)
    p.add_argument('--output-dir', default='out/bench')
    p.add_argument('--text-arm', action='store_true',
                   help='also an arm reading the text trace_pipe')
    p.add_argument('--no-sched-arm', action='store_true',
                   help="also an arm recording with --no-sched (block "
                        "events only)")
    args = p.parse_args(argv)
    started = daemons.ensure_libvirtd()
    tb = testbed_mod.Testbed(prefix=PREFIX, log=tc.progress)
    disk = shared_disk.SharedDisk(tb.workdir, PREFIX + 'ovdisk',
                                  [s.disk_mib for s in SPECS])
    try:
        tb.build()
        tb.down()
        disk.create()
        with open('/sys/block/%s/queue/scheduler'
                  % os.path.basename(disk.loop), 'w') as fh:
            fh.write('mq-deadline')
        specs = disk.place(SPECS)
        guests = {g.name: g for g in tb.up(specs)}
        for g in guests.values():
            g.disk_rate(timeout=60)
        time.sleep(2)

        def arm(on, sched=True, raw=True):
            def fn(n, label):
                r = phase(guests, disk, args.seconds, on, sched, raw)
                tc.progress('%s: %.0f IOPS%s' % (
                    label, r['iops'], '' if not on else
                    ', %.0f events/s, recorder %.1f %% CPU, parse %.3f s '
                    'per recorded s' % (r['events_per_s'],
                                        r['recorder_cpu_pct'],
                                        r['parse_s_per_s'])))
                return r
            return fn

        arms = [('off', arm(False)), ('on', arm(True))]
        if args.no_sched_arm:
            arms.append(('block-only', arm(True, sched=False)))
        if args.text_arm:
            arms.append(('text-pipe', arm(True, raw=False)))
        res = tc.interleave(args.rounds, arms)
    finally:
        try:
            tc.shutdown(tb, started)
        finally:
            disk.close()
    ratios = [b['iops'] / a['iops'] for a, b in zip(res['off'], res['on'])
              if a['iops']]
    med = statistics.median(ratios)
    out = {'rounds': res, 'ratios': ratios, 'median_ratio': med,
           'loss_pct': round(100 * (1 - med), 2),
           'min_ratio': min(ratios), 'max_ratio': max(ratios),
           'off_iops_median': statistics.median(r['iops']
                                                for r in res['off']),
           'on_iops_median': statistics.median(r['iops']
                                               for r in res['on']),
           'events_per_s_median': statistics.median(
               r['events_per_s'] for r in res['on']),
           'parse_s_per_s_median': statistics.median(
               r['parse_s_per_s'] for r in res['on']),
           'recorder_cpu_pct_median': statistics.median(
               r['recorder_cpu_pct'] for r in res['on']),
           'loadavg_end': os.getloadavg(),
           'seconds': args.seconds, 'guests': len(SPECS)}
    q = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else ratios * 3
    out['ratio_iqr'] = [q[0], q[2]]
    for label in ('block-only', 'text-pipe'):
        if label not in res:
            continue
        br = [b['iops'] / a['iops'] for a, b in zip(res['off'], res[label])
              if a['iops']]
        out[label.replace('-', '_')] = {
            'ratios': br, 'median_ratio': statistics.median(br),
            'loss_pct': round(100 * (1 - statistics.median(br)), 2),
            'recorder_cpu_pct_median': statistics.median(
                r['recorder_cpu_pct'] for r in res[label]),
            'events_per_s_median': statistics.median(
                r['events_per_s'] for r in res[label])}
    path = tc.write_json(out, args.output_dir, 'iotrace_overhead')
    print('iotrace recording overhead (%d rounds x %.0f s, %d guests):'
          % (args.rounds, args.seconds, len(SPECS)))
    print('  IOPS median off %.0f, on %.0f' % (out['off_iops_median'],
                                              out['on_iops_median']))
    print('  on/off per round: %s' % ', '.join('%.3f' % r for r in ratios))
    print('  median ratio %.3f (min %.3f, max %.3f): loss %.1f %% '
          '(target <= 5 %%)' % (med, out['min_ratio'], out['max_ratio'],
                                out['loss_pct']))
    print('  on/off interquartile range %.3f..%.3f' % (q[0], q[2]))
    print('  %.0f events/s recorded; the recorder used %.1f %% of one CPU '
          'while recording; parsing afterwards takes %.3f s per recorded s'
          % (out['events_per_s_median'], out['recorder_cpu_pct_median'],
             out['parse_s_per_s_median']))
    print('  load average at the end: %.1f %.1f %.1f (2 CPUs; other work '
          'on the host makes the ratios noisy)' % out['loadavg_end'])
    for key, what in (('block_only', '--no-sched (block events only)'),
                      ('text_pipe', '--text-pipe (text trace_pipe)')):
        if key in out:
            b = out[key]
            print('  %s: median ratio %.3f, loss %.1f %%, %.0f events/s, '
                  'recorder %.1f %% CPU' % (
                      what, b['median_ratio'], b['loss_pct'],
                      b['events_per_s_median'],
                      b['recorder_cpu_pct_median']))
    print('  ' + path)
    return 0


if __name__ == '__main__':
    sys.exit(main())
