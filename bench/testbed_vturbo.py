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
"""vTurbo's host half on real guests: a turbo pCPU for an LSVM's I/O.

One LSVM (``rr`` request/response guest, an ``lsvm.small`` flavor) and
three ``burn`` guests share the regular pCPU (vCPUs and emulator threads
pinned there). Arms, interleaved in ABBA order over ``--rounds``:

* stock: no agent, everything on the regular pCPU;
* agent: the host agent with ``[host_agent] policies = vturbo``
  (``--policies``) and ``[host_agent_policy.vturbo] turbo_pcpus`` = the
  other pCPU: the LSVM's emulator (QEMU main loop and its helper threads,
  libvirt's emulator pin) moves to the turbo pCPU with a 0.1 ms slice,
  every guest vCPU stays on the regular pCPU; Algorithm 3 charges the
  LSVM for the turbo CPU its I/O threads used (its VM cgroup weight,
  ``charge_turbo``). Restored after each round;
* nocharge: the same with ``charge_turbo = false`` (``--no-charge-arm``
  drops it): what the charge itself changes.

Under TCG the main loop carries the host-to-guest half of each request
(socket read, virtqueue, interrupt), so a request needs one wake-up on a
busy pCPU fewer with vTurbo; the vCPU still has to wake among the burners.

Per arm: LSVM request RTT p50/p99 (pooled over rounds), the burners'
throughput, CPU shares of each guest's vCPU thread and of its other QEMU
threads (the emulator work vTurbo moves off the regular pCPU is the LSVM's
CPU the burners no longer pay for, unless Algorithm 3 charges it), ratios
to stock, the pins in libvirt during each arm, and the charge: CPU seconds
the agent charged (its I/O-thread figure x tick) against the CPU seconds
the bench measured on the LSVM's non-vCPU threads, the weights installed
and the ticks where the charge bound.

Needs root, libvirt + QEMU, two or more host CPUs and the testbed.
Prints the table on stdout, progress on stderr, writes
out/bench/testbed_vturbo.json. Example:
.venv/bin/python bench/testbed_vturbo.py --quick
"""

import argparse
import collections
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))

from bench import target_verdict  # noqa: E402
from bench import testbed_common as tc  # noqa: E402
import dataclasses  # noqa: E402

from iosched.host_agent import conf as agent_conf  # noqa: E402
from iosched.host_agent.policies import vturbo  # noqa: E402
from iosched.host_agent import privsep  # noqa: E402

CONF = agent_conf.CONF
PREFIX = 'iosched-vtb-'
LSVM = 'lsvm'
BURNERS = ('cpu1', 'cpu2', 'cpu3')


def parse_args(argv):
    p = argparse.ArgumentParser(
        description=__doc__.split('\n\n')[0],
        epilog=__doc__.split('\n\n', 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('--seconds', type=float, default=10,
                   help='seconds per arm and round (default %(default)s)')
    p.add_argument('--rounds', type=int, default=5,
                   help='interleaved rounds (ABBA order; default '
                   '%(default)s)')
    tc.add_client_arg(p)
    p.add_argument('--quick', action='store_true',
                   help='a smoke run: 2 rounds of 4 s')
    p.add_argument('--rate', type=int, default=50,
                   help='LSVM requests per second (Poisson; default '
                   '%(default)s)')
    p.add_argument('--burst-us', type=int, default=200,
                   help='guest CPU per request (default %(default)s)')
    p.add_argument('--policies', default='vturbo',
                   help='[host_agent] policies of the agent arm (default '
                   '%(default)s)')
    p.add_argument('--no-charge-arm', action='store_true',
                   help='drop the nocharge arm')
    p.add_argument('--regular-cpu', type=int, default=1,
                   help='the pCPU all guests share (default %(default)s)')
    p.add_argument('--turbo-cpu', type=int, default=0,
                   help='the turbo pCPU (default %(default)s)')
    p.add_argument('-o', '--output-dir', default='out/bench')
    p.add_argument('--json-name', default='testbed_vturbo',
                   help='JSON file name without .json (default '
                   '%(default)s)')
    p.add_argument('--report', metavar='FILE',
                   help='print the table and verdicts of a recorded JSON '
                   '(runs nothing)')
    args = p.parse_args(argv)
    if args.quick:
        args.rounds, args.seconds = 2, 4
    if args.rounds < 1 or args.seconds <= 0:
        p.error('--rounds must be >= 1 and --seconds > 0')
    if args.turbo_cpu == args.regular_cpu:
        p.error('--turbo-cpu must differ from --regular-cpu')
    ncpu = os.cpu_count() or 1
    if max(args.turbo_cpu, args.regular_cpu) >= ncpu:
        p.error('this host has CPUs 0..%d' % (ncpu - 1))
    return args


class NoCharge(vturbo.VTurboPolicy):
    """The vturbo policy with ``charge_turbo`` off (the nocharge arm)."""

    def params(self):
        return dataclasses.replace(super().params(), charge_turbo=False)


# vTurbo's claims on this testbed (seed 001; issue 28): the LSVM's p99
# drops, and the turbo CPU it uses is charged to it.
TARGET_P99 = 0.9               # agent p99 <= 0.9 x stock
TARGET_CHARGED = 0.8           # charged >= 80 % of the measured turbo CPU


def _arm_mean(res, arm, key, pick=None):
    vals = []
    for r in (res.get('rounds') or {}).get(arm, []):
        v = r.get(key)
        v = v if pick is None or v is None else v.get(pick)
        if v is not None:
            vals.append(v)
    return round(sum(vals) / len(vals), 3) if vals else None


def turbo_reason(res):
    """Why the turbo pCPU did not shorten the tail, from the run's own
    figures: how busy it was, and how long the LSVM's I/O threads waited
    per run there (agent) against on the regular pCPU (stock).
    """
    args = res.get('args') or {}
    turbo = str(args.get('turbo_cpu'))
    busy = {a: _arm_mean(res, a, 'cpu_busy', turbo)
            for a in ('stock', 'agent')}
    wait = {a: _arm_mean(res, a, 'io_wait_us_per_run')
            for a in ('stock', 'agent')}
    vwait = {a: _arm_mean(res, a, 'vcpu_wait_us_per_run')
             for a in ('stock', 'agent')}
    if busy['agent'] is None or wait['agent'] is None:
        return 'turbo pCPU load and the I/O threads\' waits not recorded'
    out = ('the turbo pCPU %s was %.0f %% busy in the agent arm (%.0f %% in '
           'stock); the LSVM\'s I/O threads waited %.0f us per run there '
           'against %s us on the regular pCPU in stock%s' % (
               turbo, 100 * busy['agent'], 100 * (busy['stock'] or 0),
               wait['agent'], wait['stock'],
               ': a busy turbo pCPU gives them no shorter wait'
               if wait['stock'] is not None and
               wait['agent'] >= 0.5 * wait['stock'] else ''))
    if vwait['agent'] is not None and vwait['stock'] is not None:
        out += ('; its vCPU waited %.0f us per run (stock %.0f)%s' % (
            vwait['agent'], vwait['stock'],
            ': the tail is the vCPU\'s, which the turbo pCPU does not '
            'serve' if vwait['agent'] >= 0.9 * vwait['stock'] else ''))
    return out


def judge(res):
    out = []
    r = res['ratios']['agent']
    val = r['p99_over_stock']
    met = val is not None and val <= TARGET_P99
    out.append('target LSVM p99 <= %.2f x stock: %s (%s; p50 %s)%s' % (
        TARGET_P99, 'met' if met else 'NOT met', val, r['p50_over_stock'],
        '' if met else ' (measured: %s)' % turbo_reason(res)))
    c = res['charge']
    # per second: the agent's ticks also span the arm's settle ticks,
    # outside the bench's measured phases
    frac = (c['turbo_used_mean'] / c['measured_turbo_cpu_mean']
            if c['measured_turbo_cpu_mean'] else 0.0)
    out.append('target turbo CPU charged to the LSVM (>= %d%% of what the '
               'bench measured): %s (%.3f CPU-s charged over %d ticks, '
               '%.3f CPU-s measured on its non-vCPU threads in the agent '
               'arm\'s phases; per second %.4f charged vs %.4f measured, '
               'ratio %.2f)' % (
                   TARGET_CHARGED * 100,
                   'met' if frac >= TARGET_CHARGED else 'NOT met',
                   c['charged_cpu_s'], c['ticks'],
                   c['measured_turbo_cpu_s'], c['turbo_used_mean'],
                   c['measured_turbo_cpu_mean'], frac))
    out.append('charge bound in %d of %d ticks (LSVM vCPUs used %.3f CPU, '
               'allowance %.3f, weight %s): %s' % (
                   c['bound_ticks'], c['ticks'], c['regular_used_mean'],
                   c['allowance_mean'], c['weights'],
                   'the LSVM\'s vCPUs use less than its allowance, so a '
                   'relative weight cannot take CPU from it' if
                   c['bound_ticks'] == 0 else 'its vCPUs were held to the '
                   'allowance'))
    nc = res['ratios'].get('nocharge')
    if nc is not None:
        out.append('nocharge/stock: p50 %s, p99 %s (the charge itself: '
                   'agent/nocharge p99 %s)' % (
                       nc['p50_over_stock'], nc['p99_over_stock'],
                       tc.ratio(res['pooled']['agent']['rtt_p99_us'],
                                res['pooled']['nocharge']['rtt_p99_us'])))
    return out


def summarize(pooled, stock, rounds, stock_rounds):
    burn = pooled['burn_iter_per_s']
    return {
        'p50_per_round': tc.round_ratios(rounds, stock_rounds, 'rtt_p50_us'),
        'p99_per_round': tc.round_ratios(rounds, stock_rounds, 'rtt_p99_us'),
        'p50_over_stock': tc.ratio(pooled['rtt_p50_us'], stock['rtt_p50_us']),
        'p99_over_stock': tc.ratio(pooled['rtt_p99_us'], stock['rtt_p99_us']),
        'burners_burn_over_stock': tc.ratio(
            sum(burn[n] for n in BURNERS),
            sum(stock['burn_iter_per_s'][n] for n in BURNERS)),
        'cpu_share_delta_vs_stock': {
            n: round(pooled['cpu_share'][n] - stock['cpu_share'][n], 4)
            for n in pooled['cpu_share']},
    }


def charge_summary(charges, agent_rounds):
    """What Algorithm 3 charged the LSVM over the agent arm's ticks, and
    what the bench measured its non-vCPU QEMU threads using.
    """
    n = max(1, len(charges))
    return {
        'ticks': len(charges),
        'charged_cpu_s': round(sum(c['turbo_used'] * c['window_s']
                                   for c in charges), 3),
        'measured_turbo_cpu_s': round(sum(
            r['qemu_other_share'][LSVM] * r['wall_s']
            for r in agent_rounds), 3),
        'measured_turbo_cpu_mean': round(sum(
            r['qemu_other_share'][LSVM] for r in agent_rounds)
            / max(1, len(agent_rounds)), 4),
        'bound_ticks': sum(1 for c in charges if c['binds']),
        'regular_used_mean': round(sum(c['regular_used'] for c in charges)
                                   / n, 4),
        'allowance_mean': round(sum(c['regular_allowance']
                                    for c in charges) / n, 4),
        'fair_share_mean': round(sum(c['fair_share'] for c in charges)
                                 / n, 4),
        'turbo_used_mean': round(sum(c['turbo_used'] for c in charges)
                                 / n, 4),
        'weights': dict(sorted(collections.Counter(
            c['weight'] for c in charges).items())),
    }


def print_table(res, args):
    print('vTurbo host half on real guests: 1 LSVM (rr) + 3 burners on '
          'regular pCPU %d, turbo pCPU %d; %d rounds x %gs, ABBA; rr %d/s, '
          'burst %d us' % (args.regular_cpu, args.turbo_cpu, args.rounds,
                           args.seconds, args.rate, args.burst_us))
    print('%-6s %8s %8s %10s %8s %9s %s' % (
        'arm', 'p50 us', 'p99 us', 'burn M/s', 'lsvm sh', 'lsvm emu',
        'burner shares'))
    for arm in res['arms']:
        a = res['pooled'][arm]
        print('%-6s %8.0f %8.0f %10.1f %8.3f %9.3f %s' % (
            arm, a['rtt_p50_us'], a['rtt_p99_us'],
            sum(a['burn_iter_per_s'][n] for n in BURNERS) / 1e6,
            a['cpu_share'][LSVM], a['qemu_other_share'][LSVM],
            ' '.join('%.3f' % a['cpu_share'][n] for n in BURNERS)))
    for line in res['targets']:
        print(line)
    r = res['ratios']['agent']
    print('agent/stock: p50 %s, p99 %s (median of rounds %s, %s), burners '
          'burn %s, share delta %s' % (
              r['p50_over_stock'], r['p99_over_stock'],
              r['p50_per_round']['median'], r['p99_per_round']['median'],
              r['burners_burn_over_stock'],
              ' '.join('%s%+.3f' % kv for kv in sorted(
                  r['cpu_share_delta_vs_stock'].items()))))
    for arm in res['arms']:
        p = res['pooled'][arm]
        print('%s per round p50 %s p99 %s guests CPU %s' % (
            arm, p['rounds_p50_us'], p['rounds_p99_us'],
            p['rounds_guests_cpu_total']))
    for arm, view in sorted(res['knobs'].items()):
        v = view[LSVM]
        print('%s: LSVM emulator pin %s slice %s us, vCPU pin %s; burners '
              'vCPU pins %s' % (arm, v['emulator_pin'],
                                v['emulator_slice_us'], v['vcpu_pin'],
                                [view[n]['vcpu_pin'] for n in BURNERS]))
    print('agent CPU per tick: %.3f ms' % res['agent_cpu_ms_per_tick'])


def report(path):
    """The table and verdicts of a recorded JSON (judged again)."""
    res = target_verdict.load(path)
    res['targets'] = judge(res)
    print_table(res, argparse.Namespace(**res['args']))
    return 0


def main(argv=None):
    args = parse_args(argv)
    if args.report:
        return report(args.report)
    tc.setup_conf(CONF, [
        ('host_agent', 'policies', args.policies.split(',')),
        ('libvirt', 'guest_pcpus', '%d,%d' % tuple(sorted(
            (args.regular_cpu, args.turbo_cpu)))),
        ('host_agent_policy.vturbo', 'turbo_pcpus', [args.turbo_cpu])])
    privsep.ensure_started(CONF)       # fork it before guest sockets open
    from iosched.testbed import spec
    specs = [spec.GuestSpec(LSVM, 'rr')] + [spec.GuestSpec(n, 'burn')
                                            for n in BURNERS]
    tb, guests, started = tc.boot(specs, PREFIX, args.regular_cpu)
    knobs = {}
    totals = tc.AgentTotals()
    charges = []
    lsvm_uuid = guests[LSVM].uuid

    def record(agent):
        plan = agent.last_plan
        facts = plan.facts.get('vturbo') if plan is not None else None
        for c in (getattr(facts, 'charges', ()) or ()):
            if c.instance_uuid == lsvm_uuid:
                charges.append(dataclasses.asdict(c))

    def knobs_now(label):
        knobs.setdefault(label.split()[0], tc.knob_view(guests))

    def run(n, label):
        c0, w0 = tc.cpu_times(), tc.thread_waits(guests[LSVM])
        out = tc.measure(guests[LSVM], guests.values(), args.seconds,
                         args.rate, args.burst_us, label, args.client)
        # what the turbo pCPU offered the LSVM's I/O threads, and what its
        # vCPU waited (the reason when the p99 target is not met)
        out['cpu_busy'] = tc.cpu_busy(c0, tc.cpu_times())
        w1 = tc.thread_waits(guests[LSVM])
        out['io_wait_us_per_run'] = tc.wait_us_per_run(w0['other'],
                                                       w1['other'])
        out['vcpu_wait_us_per_run'] = tc.wait_us_per_run(w0['vcpu'],
                                                         w1['vcpu'])
        return out

    def stock(n, label):
        knobs_now(label)
        return run(n, label)

    arms = [('stock', stock),
            ('agent', tc.agent_arm(CONF, PREFIX, run, totals=totals,
                                   on_tick=record, during=knobs_now))]
    if not args.no_charge_arm:
        arms.append(('nocharge', tc.agent_arm(
            CONF, PREFIX, run, policies=[NoCharge(CONF)], totals=totals,
            during=knobs_now)))
    try:
        time.sleep(2)
        rounds = tc.interleave(args.rounds, arms)
        knobs['after'] = tc.knob_view(guests)
    finally:
        tc.shutdown(tb, started)
    names = [a for a, _ in arms]
    pooled = {a: tc.pool(rounds[a]) for a in names}
    res = {
        'bench': 'testbed_vturbo', 'arms': names,
        'args': dict(vars(args)),
        'policies': args.policies.split(','),
        'pooled': pooled,
        'rounds': {a: tc.strip_samples(rounds[a]) for a in names},
        'ratios': {a: summarize(pooled[a], pooled['stock'], rounds[a],
                                rounds['stock'])
                   for a in names if a != 'stock'},
        'charge': charge_summary(charges, rounds['agent']),
        'knobs': knobs,
        'agent_cpu_ms_per_tick': totals.cpu_ms_per_tick,
        'agent_errors': totals.errors,
        'host': os.uname().release,
        'note': 'TCG guests on a shared 2-core machine: latency figures are '
                'noisy; compare arms of the same run only',
    }
    res['targets'] = judge(res)
    print_table(res, args)
    path = tc.write_json(res, args.output_dir, args.json_name)
    print('wrote %s' % path)
    return 0


if __name__ == '__main__':
    sys.exit(main())
