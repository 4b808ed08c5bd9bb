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
"""LSVM on a shared pCPU, real guests: stock vs the agent, same run.

One latency-sensitive guest (request/response) and three CPU-bound guests
share one pCPU (all vCPUs and emulator threads pinned there). Three phases:

* idle floor: the LSVM alone on the other, idle pCPU;
* stock: all four on the shared pCPU, no agent;
* agent: the same, with the host agent (vSlicer policy) ticking every 1 s;
  stock and agent alternate for ``--rounds`` rounds (the agent restores
  everything between rounds) so that drift of a shared machine hits both,
  and their samples are pooled.

Per phase: LSVM request RTT p50/p99, each guest's CPU share (vCPU thread
run time / wall time), the CPU-bound guests' throughput (loop iterations
per second reported by the guests). Printed and written as JSON, with
p99(agent)/p99(stock), p99(agent)/p99(idle), the CPU-share spread, the
throughput ratio, and the agent's CPU time per tick. Also the I/O strength
of the LSVM vCPU from exact tracepoint timestamps vs the counter-based
estimate, per tick (docs/architecture.md 3.2).

Needs root, libvirt + QEMU and the testbed (python -m iosched_testbed
build). Usage: .venv/bin/python bench/testbed_lsvm.py [--seconds 30]
"""

import argparse
import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))

from host_agent.actuators import driver as driver_act  # noqa: E402
from host_agent.actuators import host_knobs  # noqa: E402
from host_agent.actuators import journal as journal_mod  # noqa: E402
from host_agent import agent as agent_mod  # noqa: E402
from host_agent.collectors import rates  # noqa: E402
from host_agent import conf as agent_conf  # noqa: E402
from host_agent.drivers.libvirt import driver as lv_driver  # noqa: E402
from host_agent.policies import vslicer  # noqa: E402
from host_agent import privsep  # noqa: E402

CONF = agent_conf.CONF


def pct(values, p):
    return round(rates.percentile(values, p), 1)


def run_ns(driver, uuid):
    return driver.vcpu_samples(
        next(i for i in driver.list_instances() if i.uuid == uuid))[0].run_ns


def measure(guests, driver, seconds, rate, burst_us, label, progress):
    lsvm = guests['lsvm']
    burners = [g for n, g in sorted(guests.items()) if n != 'lsvm']
    driver.list_instances()
    run0 = {n: run_ns(driver, g.uuid) for n, g in guests.items()}
    burn = {g.name: [] for g in burners}
    stop = threading.Event()

    def sample():
        while not stop.wait(1.0):
            t = time.monotonic() - 1.0
            for g in burners:
                try:
                    burn[g.name].append(g.burn_rate(timeout=3,
                                                    fresher_than=t))
                except Exception:
                    pass

    sampler = threading.Thread(target=sample, daemon=True)
    t0 = time.monotonic()
    sampler.start()
    progress('%s: %d requests at %d/s over %ds' % (
        label, int(rate * seconds), rate, seconds))
    rtts = lsvm.rr(int(rate * seconds), rate_per_s=rate, burst_us=burst_us)
    wall = time.monotonic() - t0
    stop.set()
    sampler.join()
    driver.list_instances()
    share = {n: round((run_ns(driver, g.uuid) - run0[n]) / 1e9 / wall, 4)
             for n, g in guests.items()}
    tput = {n: round(sum(v) / len(v)) if v else 0 for n, v in burn.items()}
    return {'rtt_p50_us': pct(rtts, 50), 'rtt_p99_us': pct(rtts, 99),
            'requests': len(rtts), 'cpu_share': share,
            'burn_iter_per_s': tput, 'rtts': rtts}


def pool(rounds):
    """Pool the rounds of one phase: RTTs together, shares averaged."""
    rtts = [r for x in rounds for r in x['rtts']]
    names = rounds[0]['cpu_share']
    return {
        'rtt_p50_us': pct(rtts, 50), 'rtt_p99_us': pct(rtts, 99),
        'requests': len(rtts),
        'rounds_p50_us': [x['rtt_p50_us'] for x in rounds],
        'rounds_p99_us': [x['rtt_p99_us'] for x in rounds],
        'cpu_share': {n: round(sum(x['cpu_share'][n] for x in rounds) /
                               len(rounds), 4) for n in names},
        'burn_iter_per_s': {n: round(sum(x['burn_iter_per_s'][n]
                                         for x in rounds) / len(rounds))
                            for n in rounds[0]['burn_iter_per_s']}}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('--seconds', type=int, default=10,
                   help='seconds per phase and round (default %(default)s)')
    p.add_argument('--rounds', type=int, default=3,
                   help='stock/agent rounds, interleaved (default '
                   '%(default)s): drift of a shared machine hits both')
    p.add_argument('--rate', type=int, default=50, help='LSVM requests/s')
    p.add_argument('--burst-us', type=int, default=200)
    p.add_argument('--lsvm-slice-us', type=int, default=None,
                   help='override [host_agent_policy.vslicer] '
                   'lsvm_max_slice_us (the microslice cap)')
    p.add_argument('--shared-cpu', type=int, default=1)
    p.add_argument('--idle-cpu', type=int, default=0)
    p.add_argument('-o', '--output-dir', default='out/bench')
    args = p.parse_args(argv)
    CONF([], project='iosched', default_config_files=[])
    CONF.set_override('journal_path', '', 'host_agent')
    if args.lsvm_slice_us:
        CONF.set_override('lsvm_max_slice_us', args.lsvm_slice_us,
                          'host_agent_policy.vslicer')

    def progress(msg):
        print(msg, file=sys.stderr, flush=True)

    from iosched_testbed import spec
    from iosched_testbed import testbed
    tb = testbed.Testbed()
    tb.build()
    tb.down()
    progress('booting 4 tiny guests (TCG) pinned to pCPU %d ...'
             % args.shared_cpu)
    started = tb.up([spec.GuestSpec('lsvm', 'rr'),
                     spec.GuestSpec('cpu1', 'burn'),
                     spec.GuestSpec('cpu2', 'burn'),
                     spec.GuestSpec('cpu3', 'burn')], pin=args.shared_cpu)
    guests = {g.name: g for g in started}
    privsep.ensure_started(CONF)    # fork it before any fd is open
    driver = lv_driver.LibvirtDriver.from_conf(CONF)
    results = {}
    try:
        time.sleep(3)
        lsvm_dom = guests['lsvm'].domain
        ncpu = len(lsvm_dom.vcpuPinInfo(0)[0])

        def pin_lsvm(cpu):
            cpumap = tuple(i == cpu for i in range(ncpu))
            lsvm_dom.pinVcpuFlags(0, cpumap, 1)
            lsvm_dom.pinEmulator(cpumap, 1)

        pin_lsvm(args.idle_cpu)
        rtts = guests['lsvm'].rr(args.rate * 10, rate_per_s=args.rate,
                                 burst_us=args.burst_us)
        results['idle'] = {'rtt_p50_us': pct(rtts, 50),
                           'rtt_p99_us': pct(rtts, 99),
                           'requests': len(rtts)}
        progress('idle floor: p50 %.0f us, p99 %.0f us' % (
            results['idle']['rtt_p50_us'], results['idle']['rtt_p99_us']))
        pin_lsvm(args.shared_cpu)
        cpu = {'s': 0.0, 'ticks': 0}
        strength = []
        rounds = {'stock': [], 'agent': []}
        for n in range(args.rounds):
            rounds['stock'].append(measure(
                guests, driver, args.seconds, args.rate, args.burst_us,
                'round %d/%d stock' % (n + 1, args.rounds), progress))
            agent = agent_mod.Agent(
                CONF, driver, [vslicer.VSlicerPolicy(CONF)],
                driver_act.DriverActuator(host_knobs.knobs_for(CONF, driver),
                                          journal_mod.Journal()))
            stop = threading.Event()

            def loop():
                while not stop.is_set():
                    t = time.thread_time()
                    agent.tick()
                    cpu['s'] += time.thread_time() - t
                    cpu['ticks'] += 1
                    snap = agent.last_snapshot
                    if snap is not None:
                        for v in snap.vcpus:
                            if v.instance_uuid == guests['lsvm'].uuid:
                                strength.append(v)
                    stop.wait(1.0)

            th = threading.Thread(target=loop, daemon=True)
            th.start()
            time.sleep(2.5)          # two ticks: the plan is applied
            rounds['agent'].append(measure(
                guests, driver, args.seconds, args.rate, args.burst_us,
                'round %d/%d agent' % (n + 1, args.rounds), progress))
            stop.set()
            th.join()
            agent.shutdown()         # restores: the next stock is stock
        results['stock'] = pool(rounds['stock'])
        results['agent'] = pool(rounds['agent'])
        exact = [v for v in strength if v.exact]
        results['agent_cpu_ms_per_tick'] = round(
            cpu['s'] / max(1, cpu['ticks']) * 1e3, 3)
        results['lsvm_io_strength'] = {
            'exact': [round(v.io_strength, 3) for v in exact],
            'estimate': [round(v.io_strength_estimate, 3) for v in exact],
            'mean_abs_diff': round(sum(abs(v.io_strength -
                                           v.io_strength_estimate)
                                       for v in exact) / max(1, len(exact)),
                                   3)}
    finally:
        driver.close()
        tb.down()
        tb.close()

    s, a, i = results['stock'], results['agent'], results['idle']
    burners = sorted(s['burn_iter_per_s'])
    shares = [a['cpu_share'][n] for n in burners]
    results['ratios'] = {
        'p99_agent_over_stock': round(a['rtt_p99_us'] / s['rtt_p99_us'], 3),
        'p99_agent_over_idle': round(a['rtt_p99_us'] / i['rtt_p99_us'], 3),
        'p50_agent_over_stock': round(a['rtt_p50_us'] / s['rtt_p50_us'], 3),
        'cpu_share_spread_agent': round(max(shares) - min(shares), 4),
        'cpu_share_spread_stock': round(
            max(s['cpu_share'][n] for n in burners) -
            min(s['cpu_share'][n] for n in burners), 4),
        'burn_throughput_agent_over_stock': round(
            sum(a['burn_iter_per_s'].values()) /
            max(1, sum(s['burn_iter_per_s'].values())), 3),
    }
    print(json.dumps(results['ratios'], indent=2))
    print('RTT us       p50      p99')
    for k in ('idle', 'stock', 'agent'):
        print('%-8s %8.0f %8.0f' % (k, results[k]['rtt_p50_us'],
                                    results[k]['rtt_p99_us']))
    print('agent CPU per tick: %.3f ms' % results['agent_cpu_ms_per_tick'])
    results['lsvm_max_slice_us'] = CONF[
        'host_agent_policy.vslicer'].lsvm_max_slice_us
    os.makedirs(args.output_dir, exist_ok=True)
    path = os.path.join(args.output_dir, 'testbed_lsvm.json')
    with open(path, 'w') as fh:
        json.dump(results, fh, indent=2, sort_keys=True)
    print('wrote %s' % path)
    return 0


if __name__ == '__main__':
    sys.exit(main())
