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
"""LSVM density on real guests: k = 2, 3, 4 LSVMs on one pCPU beside three
CPU-bound guests, stock vs each mechanism, and the bound the agent reports
beside what was measured (the promise Nova's LsvmFilter admits on).

Per density k: k ``rr`` guests (50 Poisson req/s of 200 us each, all at
once) and three ``burn`` guests pinned to pCPU 1 (``[libvirt] guest_pcpus``
= 1, so k LSVM vCPUs share one pCPU), three busy loops on pCPU 0. The
agent's own self-test runs first (its W). Arms, rotating order over
``--rounds``: idle (one LSVM alone on pCPU 0, the floor), stock, and the
agent (vSlicer policy) with each of ``--mechanisms``. Per arm: every LSVM's
RTT p50/p99 (rounds pooled), the burners' throughput and every guest's CPU
share; for the agent arms the bound it reports (``lsvm.latency_bound_ms``,
W + (k - 1) T_m, never below the seen W) and whether it refused the 2 ms
flavor, and the seen W: the p99 of the LSVM vCPUs' own wake-to-run delays
the agent traced during the arm (``lsvm.seen_us``, with how many).
"Excess p99" is the arm's worst LSVM p99 minus the idle floor's p99: what
the pCPU's sharing added, which the bound is meant to cover (the TCG
request path is in both). JSON: ``out/bench/testbed_lsvm_density.json``.

Needs root, libvirt + QEMU and the testbed; about 4 min per density with
the defaults (``make bench-lsvm-density``), ``--quick`` for a smoke run.
"""

import argparse
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))

from bench import target_verdict  # noqa: E402
from bench import testbed_common as common  # noqa: E402
from bench import testbed_lsvm as tl  # noqa: E402
from bench import testbed_lsvm_density_report as rep  # noqa: E402
from iosched.contract import lsvm as lsvm_bound  # noqa: E402
from iosched.host_agent import privsep  # noqa: E402

CONF = tl.CONF
PREFIX = 'iosched-dens-'


def measure_all(lsvms, guests, seconds, rate, burst_us, label,
                client='fifo'):
    """Traffic to every LSVM at once (one client each, where ``client``
    says: ``common.add_client_arg``): per LSVM its RTTs, plus shares and
    burn rates of every guest.
    """
    probe = common.Probe({g.name: g for g in guests})
    count = max(1, int(rate * seconds))
    rtts = {}

    def one(g):
        rtts[g.name] = common.rr_client.run(g, count, rate, burst_us,
                                            client)

    t0 = time.monotonic()
    run0 = probe.sample()
    with common.BurnSampler([g for g in guests if g.mode == 'burn']) as s:
        threads = [threading.Thread(target=one, args=(g,)) for g in lsvms]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    run1 = probe.sample()
    wall = time.monotonic() - t0
    out = {'rtts': rtts, 'burn_iter_per_s': s.means(),
           'cpu_share': {n: round((run1[n][0] - run0[n][0]) / 1e9 / wall, 4)
                         for n in run0}}
    common.progress('%s: p99 %s' % (label, ' '.join(
        '%s=%.0f' % (n, common.rounded_us(v, 0.99))
        for n, v in sorted(rtts.items()))))
    return out


def pooled(rounds):
    names = sorted(rounds[0]['rtts'])
    per = {n: [r for x in rounds for r in x['rtts'][n]] for n in names}
    shares = {n: round(sum(x['cpu_share'][n] for x in rounds) / len(rounds),
                       4) for n in rounds[0]['cpu_share']}
    burn = sum(sum(x['burn_iter_per_s'].values()) for x in rounds) / len(
        rounds)
    return {'p50_us': {n: common.rounded_us(v, 0.5) for n, v in per.items()},
            'p99_us': {n: common.rounded_us(v, 0.99) for n, v in per.items()},
            'cpu_share': shares, 'burn': burn}


def density(k, args, tb, driver):
    from iosched.testbed import spec
    specs = ([spec.GuestSpec('lsvm%d' % i, 'rr') for i in range(1, k + 1)]
             + [spec.GuestSpec('cpu%d' % i, 'burn') for i in (1, 2, 3)])
    tb.down()
    guests = {g.name: g for g in tb.up(specs, pin=args.shared_cpu)}
    lsvms = [guests['lsvm%d' % i] for i in range(1, k + 1)]
    hogs = tl.HostHogs(args.other_cpu, args.host_hogs)
    time.sleep(3)
    driver.list_instances()
    hogs.start()
    chosen = tl.resolve(driver)
    common.progress('k=%d: self-test picks %s, W %d us (%s)' % (
        k, chosen.mechanism, chosen.wakeup_p99_us, chosen.measured_by))
    scheds = {m: tl.sched_for(m, chosen.probes, driver, chosen.weight_group)
              for m in args.mechanisms}
    arms = {a: [] for a in ['idle', 'stock'] + args.mechanisms}
    facts = {}
    cpu = {'s': 0.0, 'ticks': 0}
    try:
        for r in range(args.rounds):
            tag = 'k=%d round %d/%d' % (k, r + 1, args.rounds)
            hogs.stop()
            common.pin_guest(lsvms[0], {args.other_cpu})
            arms['idle'].append(measure_all(
                lsvms[:1], list(guests.values()), args.seconds, args.rate,
                args.burst_us, tag + ' idle', args.client))
            common.pin_guest(lsvms[0], {args.shared_cpu})
            hogs.start()
            order = ['stock'] + args.mechanisms
            order = order[r % len(order):] + order[:r % len(order)]
            for arm in order:
                label = '%s %s' % (tag, arm)
                if arm == 'stock':
                    arms[arm].append(measure_all(
                        lsvms, list(guests.values()), args.seconds,
                        args.rate, args.burst_us, label, args.client))
                    continue
                with tl.AgentRun(driver, scheds[arm], cpu) as run:
                    arms[arm].append(measure_all(
                        lsvms, list(guests.values()), args.seconds,
                        args.rate, args.burst_us, label, args.client))
                    lsvm = run.agent.last_plan.facts.get('lsvm')
                    facts[arm] = {
                        'bound_ms': lsvm.latency_bound_ms,
                        'per_pcpu': lsvm.per_pcpu,
                        'refused': len(lsvm.refused),
                        'w_us': lsvm.wakeup_us,
                        'seen_us': lsvm.seen_us,
                        'seen_wakes': lsvm.seen_wakes,
                        'latency_ms': lsvm.min_latency_ms}
                for g in lsvms:
                    common.pin_guest(g, {args.shared_cpu})
    finally:
        hogs.stop()
    out = {'k': k, 'selftest': {'auto': chosen.mechanism,
                                'w_us': chosen.wakeup_p99_us,
                                'measured_by': chosen.measured_by},
           'agent': facts}
    for a, rounds in arms.items():
        out[a] = pooled(rounds)
    idle99 = out['idle']['p99_us']['lsvm1']
    for a in ['stock'] + args.mechanisms:
        worst = max(out[a]['p99_us'].values())
        out[a]['worst_p99_us'] = worst
        out[a]['excess_p99_us'] = round(worst - idle99, 1)
        out[a]['burn_over_stock'] = common.ratio(out[a]['burn'],
                                                 out['stock']['burn'])
    out['targets'] = rep.judge_k(out)
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('--densities', default='2,3,4')
    p.add_argument('--mechanisms', default='weight,deadline')
    p.add_argument('--rounds', type=int, default=3)
    p.add_argument('--seconds', type=int, default=10)
    p.add_argument('--rate', type=int, default=50)
    p.add_argument('--burst-us', type=int, default=200)
    p.add_argument('--shared-cpu', type=int, default=1)
    p.add_argument('--other-cpu', type=int, default=0)
    p.add_argument('--host-hogs', type=int, default=3)
    common.add_client_arg(p)
    p.add_argument('--quick', action='store_true',
                   help='k=2 only, 1 round of 5 s')
    p.add_argument('-o', '--output-dir', default='out/bench')
    p.add_argument('--report', metavar='FILE',
                   help='print the table and verdicts of a recorded JSON '
                        '(runs nothing)')
    args = p.parse_args(argv)
    if args.report:
        results = target_verdict.load(args.report)
        print('\n'.join(rep.table(results) + rep.judge(results)))
        return 0
    args.mechanisms = [m for m in args.mechanisms.split(',') if m]
    bad = [m for m in args.mechanisms if m not in lsvm_bound.MECHANISMS]
    if bad:
        p.error('unknown mechanism(s) %s; accepted: %s' % (
            ','.join(bad), ','.join(lsvm_bound.MECHANISMS)))
    ks = [int(x) for x in args.densities.split(',') if x]
    if args.quick:
        ks, args.rounds, args.seconds = ks[:1], 1, 5
    common.setup_conf(CONF)
    CONF.set_override('guest_pcpus', str(args.shared_cpu), 'libvirt')
    os.setpriority(os.PRIO_PROCESS, 0, -20)
    from iosched.testbed import daemons
    from iosched.testbed import testbed
    daemons.ensure_libvirtd()       # and /dev/kvm as udev sets it
    tb = testbed.Testbed(prefix=PREFIX)
    tb.build()
    tb.down()
    privsep.ensure_started(CONF)
    driver = common.ScopedDriver.for_prefix(CONF, PREFIX)
    results = []
    try:
        for k in ks:
            results.append(density(k, args, tb, driver))
    finally:
        driver.close()
        tb.down()
        tb.close()
    print('\n'.join(rep.table(results) + [
        line for r in results for line in r['targets']]))
    for r in results:
        for a in ['idle', 'stock'] + args.mechanisms:
            r[a].pop('rtts', None)
    print('wrote %s' % common.write_json(results, args.output_dir,
                                          'testbed_lsvm_density'))
    return 0


if __name__ == '__main__':
    sys.exit(main())
