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
"""I-Balancer on real guests (``make bench-ibalancer``): per-VM fairness.

Four identical disk guests (closed-loop random reads, ``--bs``, ``--qd``)
have their disks on one capacity-limited loop device
(``iosched.testbed.shared_disk``). Their CPU opportunity is unequal, the
paper's scheduling dependency (a TCG guest's I/O rate is bound by the CPU
its threads get):

* ``--layout shares`` (default): every guest floats over both pCPUs;
  ``s1``/``s2`` have libvirt ``cpu_shares`` ``--slow-shares`` (256),
  ``f1``/``f2`` the default 1024, so under contention the slow guests get
  a quarter of the fast ones' CPU. CPU a capped guest leaves idle goes to
  the others, as pCPU time does in the paper's shared pool.
* ``--layout pinned``: ``s1``/``s2`` (all their threads) pinned to pCPU 1
  together with ``--burners`` CPU-burning guests, ``f1``/``f2`` to pCPU 0.

Arms, ABBA over ``--rounds`` rounds, each ``--settle`` s unmeasured then
``--seconds`` s measured:

* ``stock``: no agent, no iotune.
* ``agent``: the host agent with ``[host_agent] policies = ibalancer``
  (options ``--opt name=value`` of ``[host_agent_policy.ibalancer]``),
  ticking every second; it restores every iotune when it stops.

Per VM the throughput from libvirt's block counters (IOPS and MiB/s),
per arm the spread SD/mean (population SD) and Jain's index, per round
the agent/stock spread ratio and aggregate ratio (adjacent in time), and
their medians; then the targets met or the measured reason
(``testbed_ibalancer_report.judge``, stored as ``targets``). JSON:
``out/bench/testbed_ibalancer.json`` (``--record``: also
``docs/data/<--name>.json``). ``--report FILE`` prints the table and
verdicts of a recorded JSON without running anything.
"""

import argparse
import dataclasses
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import testbed_common as tc  # noqa: E402

from bench import target_verdict  # noqa: E402
from bench import testbed_ibalancer_report as rep  # noqa: E402
from iosched.host_agent import conf as agent_conf  # noqa: E402

CONF = agent_conf.CONF
PREFIX = 'iosched-ib-'
DISK_NAME = 'iosched-ib-disk'
SLOW, FAST, VMS = rep.SLOW, rep.FAST, rep.VMS
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ARMS = ('stock', 'agent')


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('--rounds', type=int, default=3)
    p.add_argument('--seconds', type=int, default=30,
                   help='measured seconds per arm and round')
    p.add_argument('--settle', type=int, default=10,
                   help='seconds discarded at the start of each arm-round '
                        '(the agent ticks meanwhile)')
    p.add_argument('--quick', action='store_true',
                   help='smoke run: 1 round x 10 s, 5 s settle')
    p.add_argument('--capacity-mib', type=float, default=8.0,
                   help='the shared device limit, MiB/s of reads '
                        '(0: no limit)')
    p.add_argument('--bs', type=int, default=4096)
    p.add_argument('--qd', type=int, default=4)
    p.add_argument('--layout', choices=('shares', 'pinned'),
                   default='shares')
    p.add_argument('--slow-shares', type=int, default=256,
                   help='cpu_shares of s1/s2 (shares layout; f1/f2 1024)')
    p.add_argument('--burners', type=int, default=None,
                   help='CPU-burning guests (pinned layout: on the slow '
                        'guests\' pCPU; default 1 pinned, 0 shares)')
    p.add_argument('--opt', action='append', default=[],
                   metavar='NAME=VALUE',
                   help='an option of [host_agent_policy.ibalancer]')
    p.add_argument('--output-dir', default=os.path.join(ROOT, 'out',
                                                        'bench'))
    p.add_argument('--name', default='testbed_ibalancer',
                   help='output file name (without .json)')
    p.add_argument('--record', action='store_true',
                   help='also write docs/data/<name>.json')
    p.add_argument('--report', metavar='FILE',
                   help='print the table and verdicts of a recorded JSON '
                        '(runs nothing)')
    args = p.parse_args(argv)
    if args.quick:
        args.rounds, args.seconds, args.settle = 1, 10, 5
    opts = []
    for item in args.opt:
        name, eq, value = item.partition('=')
        if not eq:
            p.error('--opt %r: want NAME=VALUE' % item)
        opts.append(('host_agent_policy.ibalancer', name, value))
    args.opts = opts
    if args.burners is None:
        args.burners = 1 if args.layout == 'pinned' else 0
    return args


def guest_specs(args):
    from iosched.testbed import spec
    disk = {'bs': str(args.bs), 'qd': str(args.qd)}
    return ([spec.GuestSpec(n, 'disk', opts=dict(disk)) for n in VMS] +
            [spec.GuestSpec('burn%d' % i, 'burn')
             for i in range(args.burners)])


def iotune_now(guest):
    got = guest.domain.blockIoTune('vda', 1)
    return {k: v for k, v in got.items() if v and k.endswith('_sec')}


def clear_iotune(guests):
    for n in VMS:
        guests[n].domain.setBlockIoTune('vda', {'total_iops_sec': 0,
                                                'size_iops_sec': 0}, 1)


def counters(guests):
    out = {}
    for n in VMS:
        s = guests[n].domain.blockStatsFlags('vda', 0)
        out[n] = (s.get('rd_operations', 0) + s.get('wr_operations', 0),
                  s.get('rd_bytes', 0) + s.get('wr_bytes', 0))
    return out


def spread(values):
    """SD/mean with the population SD (the paper's SD over VMs)."""
    m = statistics.mean(values)
    return statistics.pstdev(values) / m if m else None


def jain(values):
    s = sum(values)
    sq = sum(v * v for v in values)
    return s * s / (len(values) * sq) if sq else None


def measure(guests, seconds, settle, label, caps=None):
    tc.progress('%s: %d s settle + %d s' % (label, settle, seconds))
    time.sleep(settle)
    c0, t0 = counters(guests), time.monotonic()
    seen = {n: [] for n in VMS}
    for _ in range(seconds):
        time.sleep(1.0)
        for n in VMS:
            cap = iotune_now(guests[n]).get('total_iops_sec')
            if cap:
                seen[n].append(cap)
    c1, t1 = counters(guests), time.monotonic()
    dt = t1 - t0
    iops = {n: round((c1[n][0] - c0[n][0]) / dt, 1) for n in VMS}
    mib = {n: round((c1[n][1] - c0[n][1]) / dt / 2**20, 3) for n in VMS}
    vals = [iops[n] for n in VMS]
    out = {'iops': iops, 'mib_s': mib, 'aggregate_iops': round(sum(vals), 1),
           'spread': round(spread(vals), 4), 'jain': round(jain(vals), 4),
           'capped_seconds': {n: len(seen[n]) for n in VMS},
           'mean_cap_iops': {n: (round(statistics.mean(seen[n]), 1)
                                 if seen[n] else None) for n in VMS}}
    tc.progress('%s: %s  spread %.3f  aggregate %.0f IOPS  capped s %s' % (
        label, ' '.join('%s=%.0f' % (n, iops[n]) for n in VMS),
        out['spread'], out['aggregate_iops'], out['capped_seconds']))
    return out


def pool(rounds):
    """Per arm: per-VM IOPS averaged over rounds, and the spread and
    aggregate of each round, with their means.
    """
    iops = {n: round(statistics.mean(r['iops'][n] for r in rounds), 1)
            for n in VMS}
    return {'iops': iops,
            'spread_of_means': round(spread(list(iops.values())), 4),
            'spread_rounds': [r['spread'] for r in rounds],
            'spread_mean': round(statistics.mean(r['spread']
                                                 for r in rounds), 4),
            'aggregate_rounds': [r['aggregate_iops'] for r in rounds],
            'aggregate_mean': round(statistics.mean(
                r['aggregate_iops'] for r in rounds), 1),
            'jain_mean': round(statistics.mean(r['jain'] for r in rounds),
                               4)}


def print_table(res):
    """The table, then the verdicts (``res['targets']``)."""
    print('\n'.join(rep.table(res) + list(res['targets'])))


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
    from iosched.testbed import testbed
    specs = guest_specs(args)
    workdir = testbed.DEFAULT_WORKDIR
    tc.setup_conf(CONF, [('host_agent', 'policies', ['ibalancer'])] +
                  args.opts)
    privsep.ensure_started(CONF)
    started = daemons.ensure_libvirtd()
    disk_specs = [s for s in specs if s.mode == 'disk']
    disk = shared_disk.SharedDisk(workdir, DISK_NAME,
                                  [s.disk_mib for s in disk_specs])
    tb = testbed.Testbed(workdir=workdir, prefix=PREFIX, log=tc.progress)
    try:
        tb.build()
        tb.down()
        disk.create()
        disk.set_capacity(read_bps=int(args.capacity_mib * 2**20))
        specs = [dataclasses.replace(s, disk_dev=disk.loop,
                                     disk_offset=disk.regions[i][0])
                 if s.mode == 'disk' else s
                 for i, s in enumerate(specs)]
        tc.progress('shared device %s, limit %s MiB/s; booting %s' % (
            disk.loop, args.capacity_mib or 'none',
            ', '.join(s.name for s in specs)))
        guests = {g.name: g for g in tb.up(specs)}
        for n in VMS:
            disk.attach(threads.qemu_pid(tc.RUN_DIR, guests[n].domain_name))
        if args.layout == 'pinned':
            for n, g in guests.items():
                tc.pin_guest(g, (0,) if n in FAST else (1,))
        else:
            for n, g in guests.items():
                tc.pin_guest(g, (0, 1))
                g.domain.setSchedulerParametersFlags(
                    {'cpu_shares': args.slow_shares if n in SLOW else 1024},
                    1)                                  # AFFECT_LIVE
        by_uuid = {g.uuid: n for n, g in guests.items()}
        ticks = []

        def on_tick(agent):
            plan = agent.last_plan
            if plan is None:
                return
            f = plan.facts.get('ibalancer')
            ticks.append({
                'ts': round(time.monotonic(), 3),
                'verdict': getattr(f, 'verdict', None),
                'd_n': round(getattr(f, 'd_n', 0.0), 2),
                'vcpus': [[by_uuid.get(v.instance_uuid), v.vcpu, v.events,
                           round(v.pr_s * 1e3, 1), round(v.vr_pr),
                           round(v.en, 1), round(v.ei_us), v.io,
                           round(v.delay_us), v.wakeups]
                          for v in getattr(f, 'vcpus', ())],
                'actions': [[by_uuid.get(a.instance_uuid), a.rule,
                             a.value] for a in plan.actions]})

        totals = tc.AgentTotals()
        restored = []

        def stock(n, label):
            clear_iotune(guests)
            return measure(guests, args.seconds, args.settle, label)

        def agent(n, label):
            clear_iotune(guests)
            with tc.AgentThread(CONF, PREFIX, on_tick=on_tick) as at:
                out = measure(guests, args.seconds, args.settle, label)
            totals.add(at)
            restored.append({'label': label, 'restored': at.restored,
                             'iotune_after': {n: iotune_now(guests[n])
                                              for n in VMS}})
            return out

        rounds = tc.interleave(args.rounds, [('stock', stock),
                                             ('agent', agent)])
        res = {
            'bench': 'testbed_ibalancer',
            'when': time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime()),
            'rounds': args.rounds, 'seconds': args.seconds,
            'settle_s': args.settle, 'bs': args.bs, 'qd': args.qd,
            'capacity_mib': args.capacity_mib, 'burners': args.burners,
            'layout': args.layout, 'placement': (
                {'pCPU1': list(SLOW) + ['burn%d' % i for i in range(
                    args.burners)], 'pCPU0': list(FAST)}
                if args.layout == 'pinned' else
                {'pCPU0-1': list(VMS) + ['burn%d' % i for i in range(
                    args.burners)], 'cpu_shares': {
                        n: args.slow_shares if n in SLOW else 1024
                        for n in VMS}}),
            'options': {name: value for _, name, value in args.opts},
            'event_source': CONF['host_agent_policy.ibalancer'].event_source,
            'agent_tick_fields': ['vm', 'vcpu', 'events', 'pr_ms',
                                  'vr_pr', 'en', 'ei_us', 'io',
                                  'delay_us', 'wakeups'],
            'arms': list(ARMS),
            'pooled': {a: pool(rounds[a]) for a in ARMS},
            'per_round': rounds,
            'ratios': {
                'spread': tc.round_ratios(rounds['agent'], rounds['stock'],
                                          'spread'),
                'aggregate': tc.round_ratios(rounds['agent'],
                                             rounds['stock'],
                                             'aggregate_iops')},
            'agent_restore': restored,
            'agent_cpu_ms_per_tick': totals.cpu_ms_per_tick,
            'agent_errors': totals.errors,
            'agent_ticks': ticks}
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
            disk.close()
            if started:
                daemons.stop_libvirtd()


if __name__ == '__main__':
    sys.exit(main())
