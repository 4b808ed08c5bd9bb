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
"""Simulator and agent cost, each beside a baseline measured in the same run.

* 32-VM minute (issue 29): wall seconds to simulate 60 s of the 32-VM
  host of ``bench/sim_host32.py`` (16 pCPUs, 40 vCPUs, mixed workloads),
  with the simulator's core as installed (compiled or pure Python:
  ``iosched.simulator.compiled``) and, when it is compiled, as pure Python
  in a child process (``IOSCHED_SIMULATOR_PURE=1``), beside a bare heapq
  loop running as many events in the same run, the goal (<= 5 s) and a
  verdict; the runs' result digests are printed (and must agree) so a
  speed change that alters results shows;
* simulator: wall time per event of ``SimHost`` on an embedded-default host
  load, against a bare heapq event loop (the floor of any Python
  discrete-event simulator): the ratio is what the model costs on top.
* agent: wall time of one agent tick (collect, decide, act, build report)
  against the wall time the simulator needs for the same simulated second.

Usage: .venv/bin/python bench/simulator_speed.py [--seconds 10]
       [--host32-seconds 60] [-o out/bench]
Prints the figures and writes simulator_speed.json.
"""

import argparse
import heapq
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))

from bench import sim_host32  # noqa: E402
from iosched.simulator import compiled  # noqa: E402
from tests import fixtures  # noqa: E402

GOAL_S = 5.0        # issue 29: a 32-VM minute in at most 5 s of wall time


def bare_heapq(n):
    """Push/pop n timed events with a trivial callback; seconds per event."""
    heap = []
    count = [0]

    def cb():
        count[0] += 1

    t0 = time.perf_counter()
    for i in range(min(n, 1000)):
        heapq.heappush(heap, (i, i, cb))
    seq = 1000
    while count[0] < n:
        when, _, fn = heapq.heappop(heap)
        fn()
        seq += 1
        heapq.heappush(heap, (when + 7, seq, cb))
    return (time.perf_counter() - t0) / n


def host32_minute(seconds):
    """Run the 32-VM host for ``seconds`` simulated s: its figures."""
    sim = sim_host32.build()
    t0 = time.perf_counter()
    c0 = time.process_time()
    sim.run_until(int(seconds * 1e6))
    wall = time.perf_counter() - t0
    cpu = time.process_time() - c0
    events = sim.events_processed
    floor = bare_heapq(events)
    scale = sim_host32.SIMULATED_S / seconds
    return {
        'host32_simulated_s': seconds,
        'host32_events': events,
        'host32_minute_wall_s': round(wall * scale, 2),
        'host32_minute_cpu_s': round(cpu * scale, 2),
        'host32_bare_heapq_minute_s': round(floor * events * scale, 2),
        'host32_us_per_event': round(wall / events * 1e6, 3),
        'host32_bare_heapq_us_per_event': round(floor * 1e6, 3),
        'host32_over_bare_heapq': round(wall / events / floor, 2),
        'host32_goal_s': GOAL_S,
        'host32_goal_met': wall * scale <= GOAL_S,
        'host32_digest': sim_host32.digest(sim),
        'host32_core': compiled.describe(),
    }


def host32_pure(seconds):
    """``host32_minute`` with the core as pure Python, in a child process
    (this process has the compiled modules loaded): its figures.
    """
    env = dict(os.environ, **{compiled.PURE_ENV: '1'})
    out = subprocess.run(
        [sys.executable, os.path.abspath(__file__), '--host32-only',
         '--host32-seconds', repr(seconds)],
        env=env, check=True, stdout=subprocess.PIPE, text=True).stdout
    return json.loads(out)


def print_host32(f, pure=None):
    """``f``: ``host32_minute``'s figures; ``pure``: the pure-Python
    child's, when the core is compiled.
    """
    print('32-VM minute (16 pCPUs, 40 vCPUs, %d events in %g simulated s):'
          % (f['host32_events'], f['host32_simulated_s']))
    print('  %s: %.2f s wall (%.2f s CPU)'
          % (f['host32_core'], f['host32_minute_wall_s'],
             f['host32_minute_cpu_s']))
    if pure is not None:
        print('  %s, same run: %.2f s wall (%.2f s CPU): compiled %.2fx '
              'its wall, %.2fx its CPU'
              % (pure['host32_core'], pure['host32_minute_wall_s'],
                 pure['host32_minute_cpu_s'],
                 f['host32_minute_wall_s'] / pure['host32_minute_wall_s'],
                 f['host32_minute_cpu_s'] / pure['host32_minute_cpu_s']))
    print('  bare heapq loop, as many events: %.2f s; per event %.2f us vs '
          '%.2f us: %.1fx'
          % (f['host32_bare_heapq_minute_s'], f['host32_us_per_event'],
             f['host32_bare_heapq_us_per_event'],
             f['host32_over_bare_heapq']))
    same = ('' if pure is None else
            ', the same pure' if pure['host32_digest'] == f['host32_digest']
            else ', PURE PYTHON GAVE ANOTHER: %s' % pure['host32_digest'][:16])
    print('  goal <= %.0f s: %s (digest %s%s)'
          % (f['host32_goal_s'],
             'MET' if f['host32_goal_met'] else 'NOT MET',
             f['host32_digest'][:16], same))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('--seconds', type=float, default=10.0,
                   help='simulated seconds (default %(default)s)')
    p.add_argument('--host32-seconds', type=float,
                   default=sim_host32.SIMULATED_S,
                   help='simulated seconds of the 32-VM host (default '
                        '%(default)s; the figure is scaled to a minute)')
    p.add_argument('-o', '--output-dir', default='out/bench')
    p.add_argument('--host32-only', action='store_true',
                   help='only the 32-VM figures, as JSON on stdout (the '
                        'pure-Python child of a run)')
    args = p.parse_args(argv)

    host32 = host32_minute(args.host32_seconds)
    if args.host32_only:
        json.dump(host32, sys.stdout)
        return 0
    pure = host32_pure(args.host32_seconds) if compiled.compiled() else None
    print_host32(host32, pure)
    if pure is not None:
        host32.update({'pure_' + k: v for k, v in pure.items()})

    sim, driver = fixtures.sim_host_with_vms(pcpus=2)
    t0 = time.perf_counter()
    sim.run_until(int(args.seconds * 1e6))
    sim_wall = time.perf_counter() - t0
    events = sim.events_processed
    per_event = sim_wall / events
    floor = bare_heapq(events)

    sim2, driver2 = fixtures.sim_host_with_vms(pcpus=2)
    agent = fixtures.make_agent(driver2)
    tick_wall = 0.0
    step_wall = 0.0
    ticks = int(args.seconds)
    for _ in range(ticks):
        t = time.perf_counter()
        sim2.run_until(sim2.now_us + 1_000_000)
        step_wall += time.perf_counter() - t
        t = time.perf_counter()
        agent.tick()
        tick_wall += time.perf_counter() - t
    agent.shutdown()

    figures = {
        'simulated_s': args.seconds,
        'events': events,
        'sim_us_per_event': round(per_event * 1e6, 3),
        'bare_heapq_us_per_event': round(floor * 1e6, 3),
        'sim_over_bare_heapq': round(per_event / floor, 2),
        'sim_events_per_s': round(events / sim_wall),
        'agent_tick_ms': round(tick_wall / ticks * 1e3, 3),
        'sim_second_ms': round(step_wall / ticks * 1e3, 3),
        'agent_tick_over_sim_second': round(tick_wall / step_wall, 4),
        'vcpus': 5,
    }
    figures.update(host32)
    print('simulator: %.2f us/event vs bare heapq %.2f us/event: %.1fx '
          '(%d events/s)' % (figures['sim_us_per_event'],
                             figures['bare_heapq_us_per_event'],
                             figures['sim_over_bare_heapq'],
                             figures['sim_events_per_s']))
    print('agent: %.3f ms per tick (5 vCPUs, 3 VMs) vs %.3f ms to simulate '
          'that second: %.4fx' % (figures['agent_tick_ms'],
                                  figures['sim_second_ms'],
                                  figures['agent_tick_over_sim_second']))
    os.makedirs(args.output_dir, exist_ok=True)
    path = os.path.join(args.output_dir, 'simulator_speed.json')
    with open(path, 'w') as fh:
        json.dump(figures, fh, indent=2, sort_keys=True)
    print('wrote %s' % path)
    return 0


if __name__ == '__main__':
    sys.exit(main())
