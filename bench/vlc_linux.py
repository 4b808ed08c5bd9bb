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
"""What stock Linux gives for Flubber's VLC (issue 11, deliverable 4).

Flubber's low level orders a physical disk's queue by per-request
deadlines (arrival + L_i - M) and batches each VM's contiguous LBAs; Linux
has no such elevator. This benchmark measures what the stock mechanisms
give instead, on one shared device: a loop device with direct I/O over a
file on the root disk, each "VM" a fio process in its own cgroup v1 blkio
group reading or writing its own contiguous region.

* The SLO reader: random 16 KiB reads over region 0 (group ``slo``),
  either closed loop at --reader-qd (always backlogged: shows the split
  a mechanism gives) or paced (Poisson arrivals at --paced-frac of what
  it does alone, up to QD 16: a volume asking for its B and no more;
  shows latency at B and whether the neighbour gets the rest).
* The noisy neighbour (group ``noisy``): random 64 KiB reads at QD 32 or
  sequential 1 MiB writes at QD 8, over region 2.
* Scenarios (--scenarios): closed/randread, closed/seqwrite,
  paced/randread.
* Settings: none (the baseline), mq-deadline (default; tuned:
  read_expire 10 ms, fifo_batch 1; with the neighbour in the idle I/O
  class), kyber (default; read target 0.5 ms), bfq (equal weights;
  weights in proportion to B, --weights; the same with slice_idle 1 ms
  and 0; the neighbour in the idle class), and the reference the agent
  has today:
  none with a blk-throttle cap on the neighbour at --cap-frac of what it
  does alone (QEMU iotune is the same kind of mechanism: it shapes
  arrivals). "alone" is the reader with no neighbour.
* A locality probe: the reader alone at QD 1 over 16 MiB and over the
  whole file; if the two latencies match the device has no seek cost and
  LBA batching has nothing to win here.
* cgroup v2's io controller (io.cost, io.latency) is asked for and what
  the kernel answers is recorded with the kernel's config lines.

Every round runs every setting in a rotated order (interleaved); the table
shows per-setting medians over the rounds beside the ratio to ``none``
measured in the same run. JSON goes to <output-dir>/vlc_linux.json
(--record also writes docs/data/vlc_linux.json). The loop device, its
file and the groups are removed, and every elevator and tunable restored,
also on error or SIGTERM; what a SIGKILLed run left behind is swept by
the next run (bench/vlc_linux_env.sweep). Needs root, fio and a cgroup
v1 blkio hierarchy.

Usage: .venv/bin/python bench/vlc_linux.py [--rounds 3] [--seconds 2]
       [--scenarios closed/randread,paced/randread] [--quick] [--record]
"""

import argparse
import json
import os
import platform
import signal
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))

from bench import vlc_linux_env as env  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TAG = 'iosched-vlc'
CONFIG_KEYS = ('CONFIG_BLK_CGROUP', 'CONFIG_BLK_CGROUP_IOLATENCY',
               'CONFIG_BLK_CGROUP_IOCOST', 'CONFIG_BLK_CGROUP_IOPRIO',
               'CONFIG_BLK_DEV_THROTTLING', 'CONFIG_IOSCHED_BFQ',
               'CONFIG_BFQ_GROUP_IOSCHED', 'CONFIG_MQ_IOSCHED_DEADLINE',
               'CONFIG_MQ_IOSCHED_KYBER', 'CONFIG_BLK_WBT')
NEIGHBOURS = {
    'randread': {'rw': 'randread', 'bs': '64k', 'qd': 32},
    'seqwrite': {'rw': 'write', 'bs': '1M', 'qd': 8},
}
# name: (elevator, tunables, extra) -- extra: 'weights', 'cap', 'idle',
# 'alone' or None.
SETTINGS = [
    ('none', 'none', {}, None),
    ('alone', 'none', {}, 'alone'),
    ('mq-deadline', 'mq-deadline', {}, None),
    ('mq-deadline tuned', 'mq-deadline',
     {'read_expire': 10, 'fifo_batch': 1}, None),
    ('mq-deadline nbr idle', 'mq-deadline', {}, 'idle'),
    ('kyber', 'kyber', {}, None),
    ('kyber read 0.5ms', 'kyber', {'read_lat_nsec': 500000}, None),
    ('bfq equal', 'bfq', {}, None),
    ('bfq weights~B', 'bfq', {}, 'weights'),
    ('bfq weights~B idle1ms', 'bfq', {'slice_idle_us': 1000}, 'weights'),
    ('bfq weights~B idle0', 'bfq', {'slice_idle': 0}, 'weights'),
    ('bfq nbr idle', 'bfq', {}, 'idle'),
    ('throttle nbr (iotune)', 'none', {}, 'cap'),
]


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('--rounds', type=int, default=3)
    p.add_argument('--seconds', type=float, default=2.0,
                   help='measured seconds per run (after 0.5 s ramp)')
    p.add_argument('--reader-qd', type=int, default=4)
    p.add_argument('--weights', default='800:100',
                   help='bfq weights slo:noisy for "weights~B" (B ratio)')
    p.add_argument('--cap-frac', type=float, default=0.25,
                   help='neighbour cap as a fraction of its alone rate')
    p.add_argument('--size-mib', type=int, default=1024,
                   help='loop file size; 4 regions of a quarter each')
    p.add_argument('--dir', default='/var/tmp/%s-%d' % (TAG, os.getpid()))
    p.add_argument('--scenarios',
                   default='closed/randread,closed/seqwrite,paced/randread',
                   help='reader/neighbour pairs; reader closed or paced, '
                   'neighbour %s' % ' or '.join(sorted(NEIGHBOURS)))
    p.add_argument('--paced-frac', type=float, default=0.2,
                   help='paced reader rate as a fraction of its alone IOPS')
    p.add_argument('--quick', action='store_true',
                   help='1 round of 1.5 s runs')
    p.add_argument('--output-dir', default=os.path.join(REPO, 'out',
                                                        'bench'))
    p.add_argument('--record', action='store_true',
                   help='also write docs/data/vlc_linux.json')
    a = p.parse_args(argv)
    if a.quick:
        a.rounds, a.seconds = 1, 1.5
    return a


class Bench(object):
    def __init__(self, args, dev, groups):
        self.a, self.dev, self.groups = args, dev, groups
        self.region = args.size_mib // 4
        self.runs = []

    def job(self, rw, bs, qd, region, span=None, name='job', seconds=None):
        return {'name': name, 'rw': rw, 'bs': bs, 'qd': qd,
                'offset_mib': region * self.region,
                'size_mib': span or self.region,
                'runtime': seconds or self.a.seconds, 'ramp': 0.5}

    def reader(self, mode, cal):
        if mode == 'closed':
            return self.job('randread', '16k', self.a.reader_qd, 0,
                            name='slo')
        j = self.job('randread', '16k', 16, 0, name='slo')
        j['rate_iops'] = max(1, cal['reader']['iops'] * self.a.paced_frac)
        return j

    def neighbour(self, kind):
        n = NEIGHBOURS[kind]
        return self.job(n['rw'], n['bs'], n['qd'], 2, name='noisy')

    def calibrate(self):
        """The neighbours and the closed-loop reader alone (for the cap
        and the paced rate) and the locality probe.
        """
        cal = {}
        for kind in sorted({k for _, k in self.a.scenarios}):
            r = env.run_jobs(self.dev, [('noisy', self.groups['noisy'],
                                         self.neighbour(kind))])
            cal[kind] = r['noisy']
        cal['reader'] = env.run_jobs(self.dev, [(
            'slo', self.groups['slo'], self.reader('closed', cal))])['slo']
        probe = {}
        for label, span in (('16MiB', 16), ('whole', self.a.size_mib)):
            j = self.job('randread', '16k', 1, 0, span=span, name='slo')
            j['offset_mib'] = 0
            probe[label] = env.run_jobs(
                self.dev, [('slo', self.groups['slo'], j)])['slo']['read']
        return cal, probe

    def apply_extra(self, extra, kind, cal):
        notes = {}
        if extra == 'weights':
            w_slo, w_nbr = (int(x) for x in self.a.weights.split(':'))
            notes['weights'] = [
                env.set_bfq_weight(self.groups['slo'], w_slo),
                env.set_bfq_weight(self.groups['noisy'], w_nbr)]
        elif extra == 'cap':
            if NEIGHBOURS[kind]['rw'] == 'randread':
                value = max(1, cal[kind]['iops'] * self.a.cap_frac)
                notes['cap'] = env.set_throttle(self.groups['noisy'],
                                                self.dev, 'read_iops', value)
            else:
                value = max(1 << 20, cal[kind]['mbps'] * 1e6 *
                            self.a.cap_frac)
                notes['cap'] = env.set_throttle(self.groups['noisy'],
                                                self.dev, 'write_bps', value)
        return notes

    def reset_extra(self):
        for g in self.groups.values():
            env.set_bfq_weight(g, 100)
            env.clear_throttles(g, self.dev)

    def run_one(self, rnd, scenario, setting, cal):
        mode, kind = scenario
        name, elev, tunables, extra = setting
        jobs = [('slo', self.groups['slo'], self.reader(mode, cal))]
        if extra != 'alone':
            nbr = self.neighbour(kind)
            if extra == 'idle':
                nbr['ionice'] = 3
            jobs.append(('noisy', self.groups['noisy'], nbr))
        with env.elevator(self.dev, elev, tunables):
            try:
                notes = self.apply_extra(extra, kind, cal)
                res = env.run_jobs(self.dev, jobs)
            finally:
                self.reset_extra()
        row = {'round': rnd, 'scenario': '%s/%s' % scenario,
               'reader': mode, 'neighbour': kind, 'setting': name,
               'elevator': elev, 'tunables': tunables, 'notes': notes,
               'slo': res['slo'], 'noisy': res.get('noisy'),
               'cpu_busy': res['cpu_busy']}
        self.runs.append(row)
        return row


def summarize(runs, scenarios):
    """Per scenario and setting: medians over rounds and ratios to the
    same run's ``none``.
    """
    out = {}
    for scenario in scenarios:
        key = '%s/%s' % scenario
        rows = {}
        for name, _, _, _ in SETTINGS:
            rs = [r for r in runs if r['scenario'] == key and
                  r['setting'] == name]
            if not rs:
                continue
            med = lambda f: statistics.median(f(r) for r in rs)  # noqa
            nbr = med(lambda r: r['noisy']['mbps'] if r['noisy'] else 0.0)
            slo_mbps = med(lambda r: r['slo']['mbps'])
            rows[name] = {
                'n': len(rs),
                'slo_iops': med(lambda r: r['slo']['read']['iops']),
                'slo_mean_us': med(lambda r: r['slo']['read']['mean_us']),
                'slo_p99_us': med(lambda r: r['slo']['read']['p99_us']),
                'slo_mbps': slo_mbps,
                'noisy_mbps': nbr,
                'aggregate_mbps': med(lambda r: r['slo']['mbps'] + (
                    r['noisy']['mbps'] if r['noisy'] else 0.0)),
                'cpu_busy': med(lambda r: r['cpu_busy']),
                'slo_p99_us_range': [min(r['slo']['read']['p99_us']
                                         for r in rs),
                                     max(r['slo']['read']['p99_us']
                                         for r in rs)],
                'noisy_mbps_range': [
                    min(r['noisy']['mbps'] if r['noisy'] else 0.0
                        for r in rs),
                    max(r['noisy']['mbps'] if r['noisy'] else 0.0
                        for r in rs)],
            }
        base = rows.get('none')
        for row in rows.values():
            row['ratio'] = {k: (row[k] / base[k] if base and base[k] else
                                None)
                            for k in ('slo_iops', 'slo_mean_us',
                                      'slo_p99_us', 'noisy_mbps',
                                      'aggregate_mbps')}
        out[key] = rows
    return out


def fmt_table(summary, cal, probe, args):
    lines = []
    for key, rows in summary.items():
        mode, kind = key.split('/')
        c = cal.get(kind, {})
        reader = ('closed loop QD %d' % args.reader_qd if mode == 'closed'
                  else 'paced at %.0f IOPS (%.2f of alone)' % (
                      cal['reader']['iops'] * args.paced_frac,
                      args.paced_frac))
        lines.append('\nSLO reader 16k random, %s; neighbour %s %s QD %d '
                     '(alone: %.0f MB/s, %.0f IOPS)' % (
                         reader, kind, NEIGHBOURS[kind]['bs'],
                         NEIGHBOURS[kind]['qd'], c.get('mbps', 0),
                         c.get('iops', 0)))
        lines.append('%-22s %14s %16s %16s %14s %14s %5s' % (
            'setting', 'SLO IOPS', 'SLO mean us', 'SLO p99 us',
            'nbr MB/s', 'total MB/s', 'CPU'))
        for name, r in rows.items():
            q = r['ratio']

            def cell(v, k, fmt='%.0f'):
                return (fmt % v) + (' (%.2f)' % q[k] if q[k] is not None
                                    else '')
            lines.append('%-22s %14s %16s %16s %14s %14s %4.0f%%' % (
                name, cell(r['slo_iops'], 'slo_iops'),
                cell(r['slo_mean_us'], 'slo_mean_us'),
                cell(r['slo_p99_us'], 'slo_p99_us'),
                cell(r['noisy_mbps'], 'noisy_mbps'),
                cell(r['aggregate_mbps'], 'aggregate_mbps'),
                100 * r['cpu_busy']))
    lines.append('\nlocality probe (reader alone, QD 1, none): mean/p99 us '
                 '16 MiB span %.0f/%.0f, whole file %.0f/%.0f (ratio %.2f)'
                 % (probe['16MiB']['mean_us'], probe['16MiB']['p99_us'],
                    probe['whole']['mean_us'], probe['whole']['p99_us'],
                    probe['whole']['mean_us'] / probe['16MiB']['mean_us']))
    lines.append('(ratio) = setting / none in the same run; medians over '
                 'rounds; CPU = share of all CPUs busy during the run '
                 '(anyone\'s work)')
    return '\n'.join(lines)


def environment(dev):
    vda = '/sys/block/vda/queue'
    info = {'kernel': platform.release(), 'cpus': os.cpu_count(),
            'config': env.kernel_config(CONFIG_KEYS),
            'device': dev, 'loop_dio': env._read(
                '/sys/block/%s/loop/dio' % os.path.basename(dev)),
            'loop_schedulers': env.available_schedulers(dev),
            'loop_rotational': env._read(os.path.join(env.queue_dir(dev),
                                                      'rotational')),
            'loop_hw_queue_depth': env._read(
                '/sys/module/loop/parameters/hw_queue_depth'),
            'loop_nr_requests': env._read(os.path.join(env.queue_dir(dev),
                                                       'nr_requests'))}
    if os.path.isdir(vda):
        info['vda'] = {k: env._read(os.path.join(vda, k))
                       for k in ('scheduler', 'rotational', 'nr_requests')}
    return info


def main(argv=None):
    a = parse_args(argv)
    a.scenarios = [tuple(s.split('/')) for s in a.scenarios.split(',')
                   if s]
    for mode, kind in a.scenarios:
        if mode not in ('closed', 'paced') or kind not in NEIGHBOURS:
            print('bad scenario %s/%s' % (mode, kind), file=sys.stderr)
            return 2
    why = env.missing()
    if why:
        print('cannot run: %s' % why, file=sys.stderr)
        return 2
    t0 = time.time()
    # SIGTERM unwinds like an error, so every finally below runs.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    env.sweep(TAG)
    cg2 = env.probe_cgroup2_io()
    tag = '%s-%d' % (TAG, os.getpid())
    with env.loop_device(a.dir, a.size_mib) as dev, \
            env.blkio_groups(('slo', 'noisy'), tag) as groups:
        info = environment(dev)
        b = Bench(a, dev, groups)
        cal, probe = b.calibrate()
        for rnd in range(a.rounds):
            for scenario in a.scenarios:
                k = (rnd * 5) % len(SETTINGS)
                for setting in SETTINGS[k:] + SETTINGS[:k]:
                    row = b.run_one(rnd, scenario, setting, cal)
                    print('round %d %-15s %-22s SLO %6.0f IOPS p99 %7.0f us'
                          '  nbr %7.1f MB/s' % (
                              rnd, '%s/%s' % scenario, setting[0],
                              row['slo']['read']['iops'],
                              row['slo']['read']['p99_us'],
                              row['noisy']['mbps'] if row['noisy'] else 0),
                          flush=True)
    summary = summarize(b.runs, a.scenarios)
    print(fmt_table(summary, cal, probe, a))
    print('cgroup v2 io: %s' % cg2['result'])
    cfg = info['config']
    print('io.latency: CONFIG_BLK_CGROUP_IOLATENCY %s; io.cost: '
          'CONFIG_BLK_CGROUP_IOCOST %s' % (
              cfg['CONFIG_BLK_CGROUP_IOLATENCY'],
              cfg['CONFIG_BLK_CGROUP_IOCOST']))
    wall = time.time() - t0
    print('wall time %.0f s' % wall)
    doc = {'args': {k: v for k, v in vars(a).items() if k != 'dir'},
           'scenarios': ['%s/%s' % s for s in a.scenarios],
           'environment': info, 'cgroup2_io': cg2,
           'neighbours': NEIGHBOURS,
           'settings': [{'name': n, 'elevator': e, 'tunables': t,
                         'extra': x} for n, e, t, x in SETTINGS],
           'calibration': cal, 'locality_probe': probe,
           'summary': summary, 'runs': b.runs, 'wall_s': wall,
           'date': time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}
    os.makedirs(a.output_dir, exist_ok=True)
    paths = [os.path.join(a.output_dir, 'vlc_linux.json')]
    if a.record:
        paths.append(os.path.join(REPO, 'docs', 'data', 'vlc_linux.json'))
    for path in paths:
        with open(path, 'w') as fh:
            json.dump(doc, fh, indent=1, sort_keys=True)
        print('wrote %s' % path)
    return 0


if __name__ == '__main__':
    sys.exit(main())
