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
"""Seed 004's dd test on real guests: stock vs the vaio agent (``make
bench-vaio``).

Four ``dd`` guests (``iosched.testbed`` mode ``dd``) have their disks on
one shared loop device (``iosched.testbed.shared_disk``, direct I/O over
a file on the host disk; no blk-throttle limit, see docs/vaio.md for
why). Per trial all four start together (one request each over their
channels) and read their whole data area sequentially in 44 KiB requests
(``qd`` in flight), with a journal-like commit (4 KiB + 20 KiB written at
the disk's end, reads held while it is outstanding) every ``journal_ms``.
A guest's finish time is the arrival of its ``DDEND`` line, from the first
start.

Arms (interleaved per trial, the order reversed every other trial):

* ``stock``: ``--stock-scheduler`` (``none``, what a loop device starts
  with) and every QEMU in its own libvirt blkio group, which nothing
  reads: no per-VM isolation.
* ``mq-deadline``: the same with mq-deadline (global write anti-
  starvation, no per-VM fairness).
* ``bfq-1group``: BFQ with every QEMU moved into one blkio group: per
  process sync queues, one shared async queue per priority, the closest
  thing here to the paper's dom0 CFQ.
* ``agent``: the host agent with ``[host_agent] policies = vaio``,
  ``switch_scheduler = true`` and ``weight`` (500): it switches the
  device to bfq and gives each VM's own group the equal weight; it
  restores both when it stops (checked after every trial).

An arm ``bfq-1group`` or ``agent`` may carry BFQ tunables, set after the
switch to bfq: ``bfq-1group:low_latency=0;slice_idle_us=0`` (names of
``/sys/block/<dev>/queue/iosched/``); for ``agent``, ``slice_idle_us`` is
the policy's ``bfq_slice_idle_us`` (the agent writes it, journaled).

Per arm: per-trial finish times, population SD per trial (the
simulator's rows use the same) and its mean over the trials, slowest /
fastest, Jain's index over 1 / finish time, unfair trials (slowest /
fastest > 1.1, as bench/reproduce/vaio.py), the aggregate throughput
(bytes of all guests / makespan) and the ratios to ``stock``; per
agent arm the targets (SD <= 0.5x, throughput >= 0.95x stock) met or
the measured reason (``testbed_vaio_report.judge``, stored as
``targets``). JSON: ``out/bench/testbed_vaio.json`` (``--record``: also
``docs/data/<--name>.json``). Run it under ``flock
/tmp/iosched-testbed.lock``. ``--report FILE`` prints the table and
verdicts of a recorded JSON without running anything.
"""

import argparse
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import hang_probe  # noqa: E402
import testbed_common as tc  # noqa: E402
import trial_load  # noqa: E402

from bench import target_verdict  # noqa: E402
from bench import testbed_vaio_report as rep  # noqa: E402
from iosched.host_agent import conf as agent_conf  # noqa: E402

CONF = agent_conf.CONF
PREFIX = 'iosched-va-'
DISK_NAME = 'iosched-va-disk'
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ARMS = ('stock', 'mq-deadline', 'bfq-1group', 'agent')
DEFAULT_ARMS = ('stock', 'mq-deadline', 'bfq-1group', 'agent',
                'agent:slice_idle_us=0')
UNFAIR = rep.UNFAIR
TRIAL_TIMEOUT_S = 300        # a 1 GiB trial takes 8-20 s here
BS = 45056                   # the dd guest's default: blkif's 11 segments
BLKIO = '/sys/fs/cgroup/blkio'


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('--trials', type=int, default=5,
                   help='trials per arm')
    p.add_argument('--guests', type=int, default=4)
    p.add_argument('--disk-mib', type=int, default=1024,
                   help="each guest's region; dd reads all but its last "
                        'MiB (the journal area)')
    p.add_argument('--qd', type=int, default=3,
                   help='reads in flight per guest (readahead)')
    p.add_argument('--journal-ms', type=int, default=1000,
                   help='a commit every this many ms (0: none)')
    p.add_argument('--cache', default='none',
                   help="the disks' QEMU cache mode (none: O_DIRECT; "
                        'writeback: the host page cache, dropped for the '
                        'device before every trial with blockdev '
                        '--flushbufs)')
    p.add_argument('--jsync', action='store_true',
                   help='each commit ends with fdatasync (a virtio flush), '
                        "as ext4's commit block does")
    p.add_argument('--weight', type=int, default=500,
                   help='[host_agent_policy.vaio] weight in the agent arm')
    p.add_argument('--arms', default=','.join(DEFAULT_ARMS))
    p.add_argument('--stock-scheduler', default='none',
                   help="the device's scheduler in the stock arm and "
                        'between arms (a loop device starts with none; '
                        'one detached by another run keeps what it had)')
    p.add_argument('--bs', type=int, default=BS,
                   help='bytes per read (the guest\'s bs; 45056 = 44 KiB)')
    p.add_argument('--trial-timeout', type=float, default=TRIAL_TIMEOUT_S,
                   help='seconds to wait for every DDEND before the host '
                        'state is probed (bench/hang_probe.py)')
    p.add_argument('--hang-retries', type=int, default=1,
                   help='after a probe, wait --trial-timeout this many '
                        'more times (probing again each time) before the '
                        'trial fails: a slow trial finishes, a hang is '
                        'probed twice')
    p.add_argument('--name', default='testbed_vaio',
                   help='output file name (without .json)')
    p.add_argument('--quick', action='store_true',
                   help='smoke run: 2 trials, 256 MiB regions')
    p.add_argument('--output-dir', default=os.path.join(ROOT, 'out',
                                                        'bench'))
    p.add_argument('--record', action='store_true',
                   help='also write docs/data/<name>.json')
    p.add_argument('--report', metavar='FILE',
                   help='print the table and verdicts of a recorded JSON '
                        '(runs nothing)')
    args = p.parse_args(argv)
    if args.quick:
        args.trials, args.disk_mib = 2, 256
    args.arms = [a for a in args.arms.split(',') if a]
    for arm in args.arms:
        try:
            split_arm(arm)
        except ValueError as e:
            p.error(str(e))
    if args.guests < 2:
        p.error('--guests: at least 2')
    return args


def split_arm(arm):
    """('agent', {'low_latency': '0'}) from 'agent:low_latency=0'."""
    base, _, tune = arm.partition(':')
    if base not in ARMS:
        raise ValueError('unknown arm %r; accepted: %s, and bfq-1group or '
                         'agent with :k=v;k=v BFQ tunables'
                         % (arm, ', '.join(ARMS)))
    kv = {}
    for item in filter(None, tune.split(';')):
        k, sep, v = item.partition('=')
        if not sep or not k.replace('_', '').isalnum() or not v.isdigit():
            raise ValueError('arm %r: tunable %r is not name=integer'
                             % (arm, item))
        kv[k] = v
    if kv and base not in ('bfq-1group', 'agent'):
        raise ValueError('arm %r: BFQ tunables only for bfq-1group and '
                         'agent' % arm)
    return base, kv


def tune(loop, kv):
    for k, v in kv.items():
        with open('/sys/block/%s/queue/iosched/%s' % (
                os.path.basename(loop), k), 'w') as fh:
            fh.write(v)


def read_tunable(loop, name):
    try:
        with open('/sys/block/%s/queue/iosched/%s' % (
                os.path.basename(loop), name)) as fh:
            return int(fh.read())
    except (OSError, ValueError):
        return None          # not on bfq


# -- the device and the groups ----------------------------------------------
def sched_path(loop):
    return '/sys/block/%s/queue/scheduler' % os.path.basename(loop)


def get_sched(loop):
    with open(sched_path(loop)) as fh:
        return [w[1:-1] for w in fh.read().split() if w.startswith('[')][0]


def set_sched(loop, name):
    with open(sched_path(loop), 'w') as fh:
        fh.write(name)


def blkio_group(pid):
    """The QEMU process's blkio cgroup (v1), e.g.
    /machine/qemu-1-x.libvirt-qemu.
    """
    with open('/proc/%d/cgroup' % pid) as fh:
        for line in fh:
            _, ctrl, path = line.rstrip('\n').split(':', 2)
            if 'blkio' in ctrl.split(','):
                return path
    raise RuntimeError('pid %d has no blkio cgroup' % pid)


def move(pid, group):
    with open(os.path.join(BLKIO, group.lstrip('/'), 'cgroup.procs'),
              'w') as fh:
        fh.write(str(pid))


def bfq_weight(group):
    try:
        with open(os.path.join(BLKIO, group.lstrip('/'),
                               'blkio.bfq.weight')) as fh:
            return int(fh.read().split()[-1])
    except (OSError, ValueError, IndexError):
        return None


# -- one trial ----------------------------------------------------------------
def pstdev(xs):
    return statistics.pstdev(xs)


def jain(xs):
    return sum(xs) ** 2 / (len(xs) * sum(x * x for x in xs))


def wait_ddend(guests, name, seq, label, args, hang):
    """(arrival, fields) of ``name``'s DDEND; each --trial-timeout without
    it the host state is probed (``hang(name, attempt)``), at most
    --hang-retries + 1 times before the trial fails.
    """
    g = guests[name]
    for attempt in range(args.hang_retries + 1):
        try:
            return g.dd_wait(seq, timeout=args.trial_timeout)
        except Exception as e:   # say who hung and where it was
            where = hang(name, attempt)
            err = ('%s: trial %d of %s: no DDEND after %d s (%s); its last '
                   'progress line: %s; the others: %s; host state in %s'
                   % (label, seq, name, args.trial_timeout * (attempt + 1),
                      e, g.dd_progress(), {
                          n: o.dd_progress() for n, o in guests.items()
                          if n != name}, where))
            tc.progress(err)
    raise RuntimeError(err)


def trial(guests, seq, label, args, sampler, hang):
    """All guests start their dd together; per guest the finish time (s
    from the first start) and its DDEND fields; the trial's CPU and device
    use (``trial_load``).
    """
    sampler.start()
    t0 = None
    for g in guests.values():
        t = g.dd_start(seq)
        t0 = t if t0 is None else t0
    out = {}
    for name in guests:
        at, fields = wait_ddend(guests, name, seq, label, args, hang)
        out[name] = {'finish_s': round(at - t0, 3), **fields}
    load = sampler.stop()
    times = [r['finish_s'] for r in out.values()]
    nbytes = sum(r['bytes'] for r in out.values())
    row = {'guests': out, 'sd_s': round(pstdev(times), 3),
           'slowest_fastest': round(max(times) / min(times), 3),
           'jain': round(jain([1.0 / t for t in times]), 4),
           'makespan_s': round(max(times), 3),
           'aggregate_mib_s': round(nbytes / 2**20 / max(times), 1),
           'journal_wait_max_ms': round(max(
               r['write_wait_max_us'] for r in out.values()) / 1000.0, 1),
           'load': load}
    tc.progress('%s: finish %s s; SD %.2f s, slowest/fastest %.3f, '
                '%.0f MiB/s; QEMU %.2f CPUs, host %.2f/%d, busy %s' % (
                    label, ' '.join('%s=%.2f' % (n, r['finish_s'])
                                    for n, r in sorted(out.items())),
                    row['sd_s'], row['slowest_fastest'],
                    row['aggregate_mib_s'], load['qemu_cpus_total'],
                    load['host_busy_cpus'], load['host_cpus'],
                    load['device_busy']))
    return row


def load_summary(rows):
    """Means over trials of the QEMU and host CPUs and each device's
    busy fraction.
    """
    loads = [r['load'] for r in rows if 'load' in r]
    if not loads:
        return {}
    devs = sorted(loads[0]['device_busy'])
    return {'qemu_cpus_mean': round(statistics.fmean(
                x['qemu_cpus_total'] for x in loads), 3),
            'host_busy_cpus_mean': round(statistics.fmean(
                x['host_busy_cpus'] for x in loads), 3),
            'device_busy_mean': {d: round(statistics.fmean(
                x['device_busy'][d] for x in loads), 3) for d in devs}}


def summarise(rows, base=None, base_rows=()):
    sds = [r['sd_s'] for r in rows]
    out = {'trials': len(rows),
           'finish_s': [[r['guests'][n]['finish_s']
                         for n in sorted(r['guests'])] for r in rows],
           'sd_s_per_trial': sds,
           'sd_s_mean': round(statistics.fmean(sds), 3),
           'slowest_fastest_mean': round(statistics.fmean(
               r['slowest_fastest'] for r in rows), 3),
           'slowest_fastest_max': max(r['slowest_fastest'] for r in rows),
           'jain_mean': round(statistics.fmean(r['jain'] for r in rows), 4),
           'unfair_trials': sum(1 for r in rows
                                if r['slowest_fastest'] > UNFAIR),
           'aggregate_mib_s_mean': round(statistics.fmean(
               r['aggregate_mib_s'] for r in rows), 1),
           'makespan_s_mean': round(statistics.fmean(
               r['makespan_s'] for r in rows), 3),
           'journal_wait_max_ms': max(r['journal_wait_max_ms']
                                      for r in rows),
           'load': load_summary(rows)}
    if base is not None:
        out['sd_ratio_to_stock'] = tc.ratio(out['sd_s_mean'],
                                            base['sd_s_mean'])
        out['throughput_ratio_to_stock'] = tc.ratio(
            out['aggregate_mib_s_mean'], base['aggregate_mib_s_mean'])
        # Trial by trial against the stock trial of the same round
        # (adjacent in time): robust to a round the host was busy in.
        out['throughput_ratio_per_trial'] = tc.round_ratios(
            rows, base_rows, 'aggregate_mib_s')
    return out


def print_table(res):
    """The table, then the verdicts (``res['targets']``)."""
    print('\n'.join([''] + rep.table(res) + [''] + list(res['targets'])))


def main(argv=None):
    args = parse_args(argv)
    if args.report:
        res = target_verdict.load(args.report)
        print_table(dict(res, targets=rep.judge(res)))
        return 0
    from iosched.host_agent.drivers.libvirt import threads
    from iosched.host_agent import privsep
    from iosched.testbed import daemons
    from iosched.testbed import shared_disk
    from iosched.testbed import spec
    from iosched.testbed import testbed
    tc.setup_conf(CONF, [('host_agent', 'policies', ['vaio']),
                         ('host_agent_policy.vaio', 'switch_scheduler',
                          True),
                         ('host_agent_policy.vaio', 'weight', args.weight)])
    privsep.ensure_started(CONF)       # fork it before guest sockets open
    started = daemons.ensure_libvirtd()
    names = ['vm%d' % (i + 1) for i in range(args.guests)]
    specs = [spec.GuestSpec(n, 'dd', disk_mib=args.disk_mib,
                            disk_cache=args.cache, opts={
                                'qd': str(args.qd), 'bs': str(args.bs),
                                'journal_ms': str(args.journal_ms),
                                'jsync': '1' if args.jsync else '0',
                                'report_ms': '1000'}) for n in names]
    workdir = testbed.DEFAULT_WORKDIR
    disk = shared_disk.SharedDisk(workdir, DISK_NAME,
                                  [s.disk_mib for s in specs])
    tb = testbed.Testbed(workdir=workdir, prefix=PREFIX, log=tc.progress)
    stock_sched = None
    try:
        tb.build()
        tb.down()
        tc.progress('writing the %d MiB shared file' % (
            shared_disk.total_bytes([s.disk_mib for s in specs]) // 2**20))
        disk.create()
        set_sched(disk.loop, args.stock_scheduler)
        stock_sched = get_sched(disk.loop)
        specs = disk.place(specs)
        guests = {g.name: g for g in tb.up(specs)}
        pids = {n: threads.qemu_pid(tc.RUN_DIR, g.domain_name)
                for n, g in guests.items()}
        own = {n: blkio_group(p) for n, p in pids.items()}
        tc.progress('device %s, stock scheduler %s; groups %s' % (
            disk.loop, stock_sched, own))
        seq = [0]
        agent_log = []
        hangs = []
        under = trial_load.backing_device(disk.loop)
        sampler = trial_load.Sampler(pids, [disk.loop, under])

        def hang(name, attempt):
            probe = hang_probe.probe(pids, [d for d in (disk.loop, under)
                                            if d],
                                     {n: g.domain for n, g in
                                      guests.items()},
                                     {n: g.console_log for n, g in
                                      guests.items()})
            probe.update({'trial': seq[0], 'waiting_for': name,
                          'attempt': attempt, 'when': time.strftime(
                              '%H:%M:%S', time.gmtime())})
            hangs.append(probe)
            return tc.write_json({'hangs': hangs}, args.output_dir,
                                 args.name + '_hang')

        def run(label):
            seq[0] += 1
            if args.cache != 'none':      # no trial reads from memory
                subprocess.run(['blockdev', '--flushbufs', disk.loop],
                               check=True)
            return trial(guests, seq[0], label, args, sampler, hang)

        def with_sched(name):
            def arm(n, label):
                set_sched(disk.loop, name)
                try:
                    return run(label)
                finally:
                    set_sched(disk.loop, stock_sched)
            return arm

        def one_group(n, label, kv):
            set_sched(disk.loop, 'bfq')
            tune(disk.loop, kv)
            for p in pids.values():
                disk.attach(p)
            try:
                return run(label)
            finally:
                for n_, p in pids.items():
                    move(p, own[n_])
                set_sched(disk.loop, stock_sched)

        def agent_arm(n, label, kv):
            kv = dict(kv)
            # slice_idle_us is the policy's own option (bfq_slice_idle_us)
            idle = int(kv.pop('slice_idle_us', -1))
            CONF.set_override('bfq_slice_idle_us', idle,
                              'host_agent_policy.vaio')
            try:
                return _agent_arm(label, kv)
            finally:
                CONF.clear_override('bfq_slice_idle_us',
                                    'host_agent_policy.vaio')

        def _agent_arm(label, kv):
            with tc.AgentThread(CONF, PREFIX) as at:
                at.wait_ticks(2)
                tune(disk.loop, kv)
                held = {'scheduler': get_sched(disk.loop),
                        'slice_idle_us': read_tunable(disk.loop,
                                                      'slice_idle_us'),
                        'weights': {k: bfq_weight(g)
                                    for k, g in own.items()}}
                notes = list(at.agent.last_plan.notes)
                out = run(label)
            after = {'scheduler': get_sched(disk.loop),
                     'slice_idle_us': read_tunable(disk.loop,
                                                   'slice_idle_us'),
                     'weights': {k: bfq_weight(g) for k, g in own.items()}}
            agent_log.append({'label': label, 'during': held,
                              'after_stop': after, 'notes': notes,
                              'restored': at.restored,
                              'errors': at.errors})
            tc.progress('%s: agent held %s; after stop %s (restored %s)'
                        % (label, held, after, at.restored))
            return out

        fns = {'stock': lambda n, label, kv: run(label),
               'mq-deadline': lambda n, label, kv: with_sched(
                   'mq-deadline')(n, label),
               'bfq-1group': one_group, 'agent': agent_arm}

        def fn(arm):
            base, kv = split_arm(arm)
            return lambda n, label: fns[base](n, label, kv)
        tc.progress('warm-up trial (not counted)')
        run('warm-up')
        rounds = tc.interleave(args.trials, [(a, fn(a)) for a in args.arms])
        base = (summarise(rounds['stock']) if 'stock' in rounds else None)
        res = {
            'bench': 'testbed_vaio', 'when': time.strftime(
                '%Y-%m-%d %H:%M:%S UTC', time.gmtime()),
            'guests': args.guests, 'disk_mib': args.disk_mib,
            'qd': args.qd, 'journal_ms': args.journal_ms,
            'bs': args.bs, 'cache': args.cache,
            'trial_timeout_s': args.trial_timeout,
            'hang_retries': args.hang_retries, 'hangs': hangs,
            'host_cpus': os.cpu_count(), 'backing_device': under,
            'jsync': args.jsync,
            'device': {'loop': disk.loop, 'stock_scheduler': stock_sched,
                       'regions': disk.regions},
            'vm_groups': own, 'arms': args.arms,
            'summary': {a: summarise(rounds[a], base, rounds.get('stock',
                                                                  ()))
                        for a in args.arms},
            'per_trial': rounds, 'agent': agent_log,
            'agent_weight': args.weight}
        res['targets'] = rep.judge(res)
        print_table(res)
        path = tc.write_json(res, args.output_dir, args.name)
        tc.progress('wrote %s' % path)
        if args.record:
            tc.progress('wrote %s' % tc.write_json(
                res, os.path.join(ROOT, 'docs', 'data'), args.name))
        return 0
    finally:
        try:
            tb.down()
        finally:
            tb.close()
            if disk.loop and stock_sched:
                try:
                    set_sched(disk.loop, stock_sched)
                except OSError:
                    pass
            disk.close()
            if started:
                daemons.stop_libvirtd()


if __name__ == '__main__':
    sys.exit(main())
