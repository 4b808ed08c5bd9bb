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
"""The agent's CPU per vCPU with the libvirt driver and tracefs, on real
guests, beside the simulated driver's (issue 29).

Tiny TCG testbed guests, all ``rr`` with one vCPU (the LSVM flavor, as
the simulated host's LSVMs), are booted in steps to ``--counts`` guests
(default 2, 4, 8; vCPUs and emulator threads on ``--guest-cpus``). At
each count the host agent (``[host_agent] policies`` = ``agent_load.py``'s:
vslicer, isacs, slo) ticks every second in a thread (``testbed_common.
AgentThread``: the libvirt driver, wake-ups from a private tracefs
instance) and each tick's thread CPU time is recorded with the I/O events
per vCPU per second the agent counted (E_n); ticks start a second apart.
Phases per count: idle (the guests' own wake-ups: timers), ``--probes``
probes of ``--probe-s`` (how many events a request brings, first at one
event per request, then at the rate the probe before gave: a vCPU idle
between requests wakes more often per request), load (``--ticks`` counted
ticks at the rate that gives the target: ``agent_load_libvirt_calc.
rr_rate``). Per count also the wake-ups and switch-ins the driver drained
from tracefs (it traces the LSVMs' switch-ins too: vSlicer's W).

The target is the simulated host's events per vCPU per second, as the
agent counted them in ``agent_load.py --short`` run first (the baseline,
same run, its own process); without the baseline, the mix's upper bound
(``agent_load_libvirt_calc.mix_event_rates``: RR 100/s, a disk loop at
its share of the one disk, CPU-bound 0, RR 20/s, averaged over the VM's
four vCPUs).

A least-squares line over the counted ticks, CPU per tick = fixed +
per-vCPU x vCPUs, gives the agent's CPU per 100 vCPUs at 1-s ticks (% of a
core) from the slope, the fixed part apart, beside the simulated driver's
figure and issue 29's goal (0.5 %) with a verdict. ``--profile N``: the N
functions with the most own time over ten more ticks at the largest count
(cProfile in the agent's thread). As in ``agent_load.py``, the agent builds
a report every tick (``tests.fixtures``: ``report_every_ticks = 1``).

Needs root, libvirt + QEMU, tracefs and the testbed; under the testbed
lock: ``make bench-agent-libvirt`` (``ARGS=--quick``: 2 and 4 guests, 6
ticks, a 30-s baseline). Prints the table on stdout, progress on stderr,
writes out/bench/agent_load_libvirt.json.
"""

import argparse
import concurrent.futures
import cProfile
import json
import os
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))

from bench import agent_load  # noqa: E402
from bench import agent_load_libvirt_calc as calc  # noqa: E402
from bench import testbed_common as tc  # noqa: E402
from iosched.host_agent import conf as agent_conf  # noqa: E402

CONF = agent_conf.CONF
PREFIX = 'iosched-alv-'
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROFILED_TICKS = agent_load.PROFILED_TICKS


def parse_args(argv):
    p = argparse.ArgumentParser(
        description=__doc__.split('\n\n')[0],
        epilog=__doc__.split('\n\n', 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('--counts', default='2,4,8',
                   help='guest counts, ascending (one vCPU each; default '
                        '%(default)s)')
    p.add_argument('--ticks', type=int, default=30,
                   help='counted ticks per count (default %(default)s)')
    p.add_argument('--idle-ticks', type=int, default=3,
                   help='ticks without requests per count (default '
                        '%(default)s)')
    p.add_argument('--probe-s', type=float, default=5,
                   help='seconds of each probe (default %(default)s)')
    p.add_argument('--probes', type=int, default=2,
                   help='probes of events per request, each at the rate '
                        'the one before gave (default %(default)s)')
    p.add_argument('--burst-us', type=int, default=50,
                   help='guest CPU per request (default %(default)s)')
    tc.add_client_arg(p, default='other')
    p.add_argument('--pin', type=int, default=1,
                   help='pCPU the guests boot pinned to (default '
                        '%(default)s)')
    p.add_argument('--guest-cpus', default='0,1',
                   help='pCPUs the guests are pinned to after boot, and '
                        'the agent\'s [libvirt] guest_pcpus (default '
                        '%(default)s)')
    p.add_argument('--target', type=float, default=0,
                   help='I/O events per vCPU per second (default: the '
                        'baseline\'s, else the mix\'s)')
    p.add_argument('--no-baseline', dest='baseline', action='store_false',
                   help='no agent_load.py run (no simulated figure)')
    p.add_argument('--profile', type=int, default=0, metavar='N',
                   help='cProfile %d more ticks at the largest count, print '
                        'the N functions with the most own time'
                        % PROFILED_TICKS)
    p.add_argument('--quick', action='store_true',
                   help='a smoke run: 2 and 4 guests, 6 ticks, a 30-s '
                        'baseline')
    p.add_argument('-o', '--output-dir', default='out/bench')
    p.add_argument('--report', metavar='FILE',
                   help='print the table, fits and verdict of a recorded '
                        'JSON (runs nothing)')
    args = p.parse_args(argv)
    if args.quick:
        args.counts, args.ticks, args.probe_s = '2,4', 6, 3
    try:
        args.counts = [int(c) for c in args.counts.split(',') if c]
        args.guest_cpus = sorted({int(c) for c in
                                  args.guest_cpus.split(',') if c})
    except ValueError:
        p.error('--counts and --guest-cpus: integers separated by commas')
    if (len(args.counts) < 2 or args.counts != sorted(set(args.counts))
            or args.counts[0] < 1):
        p.error('--counts: at least two ascending counts >= 1')
    if args.ticks < 2 or args.idle_ticks < 1 or args.probes < 1:
        p.error('--ticks >= 2, --idle-ticks >= 1, --probes >= 1')
    return args


# -- the baseline: agent_load.py on the simulated driver ------------------
def baseline(args):
    """agent_load.py (``--short``; ``--quick``: 30 simulated s) in its own
    process: its JSON, with its CPU per 100 vCPUs and events per vCPU.
    """
    out = os.path.abspath(os.path.join(args.output_dir,
                                       'agent_load_libvirt_baseline'))
    cmd = [sys.executable, os.path.join(ROOT, 'bench', 'agent_load.py'),
           '--no-reference', '-o', out]
    cmd += (['--seconds', '30', '--warmup', '10', '--window', '10']
            if args.quick else ['--short'])
    tc.progress('baseline: %s' % ' '.join(cmd[1:]))
    t0 = time.monotonic()
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, cwd=ROOT)
    sys.stderr.write(proc.stdout)
    if proc.returncode:
        raise RuntimeError('agent_load.py failed (%d)' % proc.returncode)
    with open(os.path.join(out, 'agent_load.json')) as fh:
        res = json.load(fh)
    return {k: res.get(k) for k in (
        'vcpus', 'pcpus', 'seconds', 'policies',
        'agent_pct_core_per_100_vcpus', 'agent_us_per_tick_counted',
        'io_events_per_vcpu_s')} | {'wall_s': round(time.monotonic() - t0,
                                                    1)}


def mix_target(vcpus=200, pcpus=32):
    """The mix's events per vCPU per second (upper bound, see calc)."""
    wl = agent_load.vm_workloads()
    vms = vcpus // agent_load.VCPUS_PER_VM
    rates = calc.mix_event_rates(wl, agent_load.host_spec(pcpus).disk,
                                 calc.loops_outstanding(wl, vms))
    return rates, calc.mean(rates)


# -- the agent's ticks ------------------------------------------------------
def traced_lines(driver):
    """(wake-ups, switch-ins) the libvirt driver drained from tracefs in
    its last tick (its private buffers; (0, 0) without a tracer).
    """
    return (sum(map(len, getattr(driver, '_events', {}).values())),
            sum(map(len, getattr(driver, '_runs', {}).values())))


class TickRecorder:
    """Wraps ``agent.tick`` (it runs in the agent's thread): per tick the
    phase it started in (and the phase's generation), its thread CPU time,
    its window, the I/O events per vCPU per second and the vCPUs the agent
    counted, the trace lines it drained; cProfile around the next
    ``profile(n)`` ticks. With ``thread`` (the ``AgentThread``), its wait
    after each tick is what is left of ``period``: ticks start ``period``
    apart, as the simulated host's (not a period plus the tick's time).
    """

    def __init__(self, agent, thread=None, period=1.0):
        self.agent = agent
        self._tick = agent.tick
        agent.tick = self.tick
        self.thread, self.period = thread, period
        self.rows = []
        self.phase, self.gen = 'start', 0
        self.prof, self._prof_left = None, 0

    def set_phase(self, phase):
        self.gen += 1
        self.phase = phase

    def profile(self, n):
        self.prof, self._prof_left = cProfile.Profile(), n

    def tick(self):
        phase, gen = self.phase, self.gen
        prof = self.prof if self._prof_left > 0 else None
        wall = time.monotonic()
        t = time.thread_time()
        if prof is not None:
            prof.enable()
        self._tick()
        if prof is not None:
            prof.disable()
            self._prof_left -= 1
        cpu = time.thread_time() - t
        if self.thread is not None:
            self.thread.interval = max(0.0, self.period - (
                time.monotonic() - wall))
        snap = self.agent.last_snapshot
        rate, n = agent_load.io_events_per_vcpu_s(snap)
        wakes, runs = traced_lines(self.agent.driver)
        self.rows.append({'phase': phase, 'gen': gen, 'cpu_ms': cpu * 1e3,
                          'events_per_vcpu_s': rate, 'vcpus': n,
                          'window_s': snap.window_s if snap else None,
                          'wakeups': wakes, 'switch_ins': runs,
                          'profiled': prof is not None})

    def valid(self, phase, skip=0):
        """Rows of ticks whose whole window (since the tick before) was in
        ``phase``, the first ``skip`` of them left out, no profiled one.
        """
        out = [r for prev, r in zip(self.rows, self.rows[1:])
               if r['phase'] == phase and prev['gen'] == r['gen']
               and not r['profiled'] and r['events_per_vcpu_s'] is not None]
        return out[skip:]

    def wait(self, phase, n, skip=0, timeout=120.0, done=None):
        """Until ``n`` valid rows of ``phase`` (or ``done()``)."""
        end = time.monotonic() + timeout
        while len(self.valid(phase, skip)) < n:
            if (done is not None and done()) or time.monotonic() > end:
                break
            time.sleep(0.1)
        return self.valid(phase, skip)[:n]


def drive(guests, rate, seconds, burst_us, client):
    """Every guest at ``rate`` requests/s for ``seconds`` (in parallel;
    each through ``rr_client``); returns {name: requests answered}.
    """
    from iosched.testbed import rr_client
    if rate <= 0:
        time.sleep(seconds)
        return {n: 0 for n in guests}
    count = max(1, int(rate * seconds))

    def one(g):
        return len(rr_client.session(g, count, rate, burst_us,
                                     client)['rtts'])
    with concurrent.futures.ThreadPoolExecutor(len(guests)) as ex:
        futs = {n: ex.submit(one, g) for n, g in guests.items()}
        return {n: f.result() for n, f in futs.items()}


def measure_count(guests, target, args, profile):
    """One count: idle, probe and load phases under one AgentThread."""
    n = len(guests)
    with tc.AgentThread(CONF, PREFIX) as at:
        rec = TickRecorder(at.agent, at)
        traced = at.driver.tracer is not None
        rec.set_phase('idle')
        idle_rows = rec.wait('idle', args.idle_ticks)
        idle = calc.mean(r['events_per_vcpu_s'] for r in idle_rows)
        per_req, probes = 1.0, []
        rate = calc.rr_rate(target, idle, per_req)
        for k in range(args.probes):
            # events per request change with the rate (a vCPU idle between
            # requests wakes more often per request): probe again at the
            # rate the last probe gave
            rec.set_phase('probe%d' % k)
            drive(guests, rate, args.probe_s, args.burst_us, args.client)
            probe = calc.mean(r['events_per_vcpu_s']
                              for r in rec.valid('probe%d' % k, skip=1))
            per_req = calc.events_per_request(probe, idle, rate) or per_req
            probes.append({'rate_per_s': rate, 'events_per_vcpu_s': probe,
                           'events_per_request': per_req})
            tc.progress('%d guests: idle %.1f events/vCPU/s; probe at %.0f '
                        'requests/s per guest: %.1f events/vCPU/s (%.2f per '
                        'request)' % (n, idle or 0, rate, probe or 0,
                                      per_req))
            rate = calc.rr_rate(target, idle, per_req)
        # a tick every 1 s plus its own time: 20 % spare
        seconds = 1.2 * (args.ticks + 4 + (PROFILED_TICKS if profile else 0))
        tc.progress('%d guests: load at %.0f requests/s per guest for %d '
                    'ticks' % (n, rate, args.ticks))
        rec.set_phase('load')
        box = {}
        th = threading.Thread(target=lambda: box.update(answered=drive(
            guests, rate, seconds, args.burst_us, args.client)),
            daemon=True)
        th.start()
        rows = rec.wait('load', args.ticks, skip=1,
                        timeout=args.ticks * 3 + 60,
                        done=lambda: not th.is_alive())
        prof = None
        if profile:
            rec.profile(PROFILED_TICKS)
            prof = rec.prof
        th.join()
        rec.set_phase('done')
        at.wait_ticks(1)
    cpu = [r['cpu_ms'] for r in rows]
    events = calc.mean(r['events_per_vcpu_s'] for r in rows)
    out = {'guests': n, 'vcpus': [r['vcpus'] for r in rows],
           'traced': traced, 'idle_events_per_vcpu_s': idle,
           'probes': probes, 'events_per_request': per_req,
           'rate_per_s': rate,
           'events_per_vcpu_s': events, 'ticks': len(rows),
           'cpu_ms_per_tick': cpu, 'cpu_ms_mean': calc.mean(cpu),
           'events_per_tick': [r['events_per_vcpu_s'] * r['vcpus']
                               * r['window_s'] for r in rows],
           'window_s_mean': calc.mean(r['window_s'] for r in rows),
           'wakeups_per_vcpu_s': calc.mean(
               r['wakeups'] / r['window_s'] / n for r in rows),
           'switch_ins_per_vcpu_s': calc.mean(
               r['switch_ins'] / r['window_s'] / n for r in rows),
           'answered': box.get('answered'), 'restored': at.restored,
           'agent_errors': at.errors,
           'profiled_ticks': sum(r['profiled'] for r in rec.rows)}
    tc.progress('%d guests: %d ticks, %.2f ms per tick, %.1f events/vCPU/s '
                '(target %.1f), tracefs %s' % (
                    n, len(rows), out['cpu_ms_mean'] or 0, events or 0,
                    target, 'on' if traced else 'OFF'))
    return out, prof


# -- the figures ---------------------------------------------------------
def events_per_tick(count):
    """The I/O events the agent counted in each counted tick of a count
    (a run recorded before they were kept: the count's mean for each).
    """
    if 'events_per_tick' in count:
        return count['events_per_tick']
    mean = (count['events_per_vcpu_s'] * count['guests']
            * (count.get('window_s_mean') or 1.0))
    return [mean] * len(count['cpu_ms_per_tick'])


def summarize(counts, target, base):
    """The fits over every counted tick, the figures and the verdict:
    CPU per tick over vCPUs (the figure), and over the I/O events the
    agent counted (the counts' event rates differ from the target: per
    event, then at the target's rate).
    """
    xs = [v for c in counts for v in c['vcpus']]
    ys = [y for c in counts for y in c['cpu_ms_per_tick']]
    fixed, slope = calc.fit(xs, ys)
    ev_fixed, ms_per_event = calc.fit(
        [e for c in counts for e in events_per_tick(c)], ys)
    pct = agent_load.pct_per_100(slope * 1000, 1)
    sim_vcpus = (base or {}).get('vcpus') or 200
    at_sim = agent_load.pct_per_100((fixed + slope * sim_vcpus) * 1000,
                                    sim_vcpus)
    events = calc.mean(c['events_per_vcpu_s'] for c in counts
                       if c['events_per_vcpu_s'] is not None)
    ratio = events / target if events and target else None
    met, line = calc.verdict(pct, agent_load.GOAL_PCT_PER_100_VCPUS,
                             fixed, ratio)
    return {'fixed_ms_per_tick': fixed, 'ms_per_vcpu_tick': slope,
            'pct_core_per_100_vcpus': pct,
            'fixed_ms_per_tick_over_events': ev_fixed,
            'us_per_event': ms_per_event * 1000,
            'pct_core_per_100_vcpus_at_target_events': agent_load.pct_per_100(
                ms_per_event * 1000 * target, 1),
            'pct_core_per_100_vcpus_at_sim_vcpus': at_sim,
            'sim_vcpus': sim_vcpus, 'events_per_vcpu_s': events,
            'events_over_target': ratio, 'points': len(xs),
            'goal_pct_core_per_100_vcpus':
                agent_load.GOAL_PCT_PER_100_VCPUS,
            'met': met, 'verdict': line}


def print_table(res):
    t = res['target']
    print('agent CPU per vCPU, libvirt driver with tracefs, on TCG testbed '
          'guests (1 vCPU each, rr), policies %s'
          % ','.join(res['policies']))
    print('target I/O events per vCPU per second: %.1f (%s); the mix\'s '
          'upper bound %.1f (per vCPU %s)' % (
              t['events_per_vcpu_s'], t['source'], t['mix_bound'],
              ', '.join('%.0f' % r for r in t['mix_rates'])))
    print('%7s %6s %9s %7s %7s %10s %10s %8s %6s %8s' % (
        'guests', 'ticks', 'idle ev/s', 'ev/req', 'req/s', 'ev/vCPU/s',
        'sw-in/v/s', 'window s', 'trace', 'ms/tick'))
    for c in res['counts']:
        print('%7d %6d %9.1f %7.2f %7.0f %10.1f %10.1f %8.2f %6s %8.2f' % (
            c['guests'], c['ticks'], c['idle_events_per_vcpu_s'] or 0,
            c['events_per_request'], c['rate_per_s'],
            c['events_per_vcpu_s'] or 0, c['switch_ins_per_vcpu_s'] or 0,
            c['window_s_mean'] or 0, 'on' if c['traced'] else 'OFF',
            c['cpu_ms_mean'] or 0))
    s = res['fit']
    print('fit over %d ticks: CPU per tick = %.2f ms + %.3f ms x vCPUs'
          % (s['points'], s['fixed_ms_per_tick'], s['ms_per_vcpu_tick']))
    print('  libvirt driver: %.2f %% of a core per 100 vCPUs at 1-s ticks '
          '(the per-vCPU slope); fixed part %.2f ms per tick (%.2f %% of a '
          'core); at %d vCPUs, fixed part included: %.2f %% per 100'
          % (s['pct_core_per_100_vcpus'], s['fixed_ms_per_tick'],
             s['fixed_ms_per_tick'] / 10.0, s['sim_vcpus'],
             s['pct_core_per_100_vcpus_at_sim_vcpus']))
    print('  over the I/O events the agent counted: %.2f ms + %.2f us per '
          'event; at the target\'s %.1f events per vCPU per s: %.2f %% of a '
          'core per 100 vCPUs' % (
              s['fixed_ms_per_tick_over_events'], s['us_per_event'],
              t['events_per_vcpu_s'],
              s['pct_core_per_100_vcpus_at_target_events']))
    b = res.get('baseline')
    if b:
        print('  simulated driver (agent_load.py, %d vCPUs, same run): %.2f '
              '%% per 100 vCPUs (%.0f us per tick, %.1f events per vCPU '
              'per s); libvirt at %d vCPUs / simulated: %s' % (
                  b['vcpus'], b['agent_pct_core_per_100_vcpus'],
                  b['agent_us_per_tick_counted'],
                  b['io_events_per_vcpu_s'] or 0, s['sim_vcpus'],
                  tc.ratio(s['pct_core_per_100_vcpus_at_sim_vcpus'],
                           b['agent_pct_core_per_100_vcpus'], 2)))
    print('  goal <= %.2f %% of a core per 100 vCPUs'
          % s['goal_pct_core_per_100_vcpus'])
    print(s['verdict'])


def print_profile(rows):
    """A recorded ``profile_top`` (``agent_load.report_profile``'s rows)."""
    print('  profile of %d more ticks at the largest count, own time:'
          % PROFILED_TICKS)
    for r in rows:
        print('    %5.1f %%  %8d calls  %s' % (r['own_pct'], r['calls'],
                                             r['function']))


def report(path):
    """The table, fits and verdict of a recorded JSON (runs nothing)."""
    with open(path) as fh:
        res = json.load(fh)
    res['fit'] = summarize(res['counts'], res['target']['events_per_vcpu_s'],
                           res.get('baseline'))
    print_table(res)
    if res.get('profile_top'):
        print_profile(res['profile_top'])
    return 0


def main(argv=None):
    args = parse_args(argv)
    if args.report:
        return report(args.report)
    names = agent_load.policy_names()
    mix_rates, mix_bound = mix_target()
    base = baseline(args) if args.baseline else None
    if args.target:
        target, source = args.target, '--target'
    elif base and base.get('io_events_per_vcpu_s'):
        target = base['io_events_per_vcpu_s']
        source = 'what the agent counted on the simulated host, same run'
    else:
        target, source = mix_bound, 'the mix\'s upper bound'
    cpus = ','.join(str(c) for c in args.guest_cpus)
    tc.setup_conf(CONF, [('host_agent', 'policies', names),
                         ('libvirt', 'guest_pcpus', cpus)])
    from iosched.host_agent import plugins
    from iosched.host_agent import privsep
    from iosched.testbed import spec
    plugins.load_policies(CONF)        # fail before booting
    privsep.ensure_started(CONF)       # fork it before guest sockets open
    tb, started, guests, counts, prof = None, False, {}, [], None
    try:
        for count in args.counts:
            new = [spec.GuestSpec('g%d' % i, 'rr')
                   for i in range(len(guests) + 1, count + 1)]
            if tb is None:
                tb, booted, started = tc.boot(new, PREFIX, args.pin)
            else:
                booted = {g.name: g for g in tb.up(new, pin=args.pin)}
            for g in booted.values():
                tc.pin_guest(g, set(args.guest_cpus))
            guests.update(booted)
            time.sleep(2)
            last = count == args.counts[-1]
            out, p = measure_count(dict(guests), target, args,
                                   bool(args.profile) and last)
            counts.append(out)
            prof = p or prof
    finally:
        if tb is not None:
            tc.shutdown(tb, started)
    res = {'bench': 'agent_load_libvirt', 'args': vars(args),
           'policies': names,
           'target': {'events_per_vcpu_s': target, 'source': source,
                      'mix_rates': mix_rates, 'mix_bound': mix_bound},
           'baseline': base, 'counts': counts, 'host': os.uname().release,
           'note': 'TCG guests on a shared 2-core machine; the agent\'s '
                   'thread CPU time per tick (time.thread_time)'}
    res['fit'] = summarize(counts, target, base)
    print_table(res)
    if prof is not None:
        res['profile_top'] = agent_load.report_profile(prof, args.profile)
    print('wrote %s' % tc.write_json(res, args.output_dir,
                                     'agent_load_libvirt'))
    return 0


if __name__ == '__main__':
    sys.exit(main())
