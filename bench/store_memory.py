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
"""A scheduler worker's report store at 10,000 hosts: measured and bounded.

* Memory (tracemalloc) of the scheduler's store (slim entries,
  ``iosched.nova_plugin.store.slim``) holding ``--hosts`` reports of
  ``--vcpus`` vCPUs and ``--decisions`` decisions each, decoded from JSON and
  fed through ``ReportEndpoint.report_host_io`` as the scheduler's listener
  does (the slim store gets ``HostReport.head_from_dict``); baselines in
  the same run: the same reports held whole (the store before issue 15),
  and Nova's own ``HostState`` per host (``--host-states`` of them, built
  as ``bench.nova_scale.handlers`` builds them; issue 16's target: the
  store at most 0.2x of it).
* The bound: the store capped at ``--hosts`` (``store_max_hosts``), its
  hosts known to the filters, then a flood of ``--flood`` times as many
  invented host names: memory after the flood against before, and how
  many known hosts are still held.

Issue 15's target: memory bounded by ``store_max_hosts`` and measured.

Usage: .venv/bin/python bench/store_memory.py [--hosts 10000]
                                              [--host-states 1000]
                                              [-o out/bench]
"""

import argparse
import gc
import json
import logging
import os
import sys
import time
import tracemalloc

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))

from bench.nova_scale import reports as fake_reports  # noqa: E402
from iosched.nova_plugin import endpoint  # noqa: E402
from iosched.nova_plugin import store  # noqa: E402

TEMPLATES = 200


def wire(n, args, prefix=''):
    """n report JSON texts (TEMPLATES distinct bodies, n host names)."""
    bodies = [fake_reports.report_dict(i, ts=time.time(),
                                       report_interval=3600.0,
                                       vcpus=args.vcpus,
                                       decisions=args.decisions, seed=1)
              for i in range(min(n, TEMPLATES))]
    out = []
    for i in range(n):
        data = dict(bodies[i % len(bodies)])
        data['host'] = prefix + fake_reports.host_name(i)
        out.append(json.dumps(data))
    return out


def feed(ep, texts):
    """As the listener does: decode (oslo.messaging), then the endpoint."""
    for text in texts:
        ep.report_host_io({}, json.loads(text))


def traced(st, texts):
    """Bytes the store holds more after taking ``texts``."""
    ep = endpoint.ReportEndpoint(st)
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    feed(ep, texts)
    gc.collect()
    used = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    return used


def host_state_bytes(n, args):
    """Bytes per host of ``n`` Nova HostStates, as bench-nova builds them
    (the hosts of the same reports: pCPUs, vCPUs, instances).
    """
    from bench.nova_scale import handlers

    handlers.setup_nova()
    data = [fake_reports.report_dict(i, vcpus=args.vcpus, decisions=0,
                                     seed=1)
            for i in range(min(n, TEMPLATES))]
    _, used = handlers._traced(lambda: [
        handlers.host_state(i, data[i % len(data)]) for i in range(n)])
    return used / n


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('--hosts', type=int, default=10000)
    p.add_argument('--vcpus', type=int, default=32,
                   help='vCPU records per report (default 32)')
    p.add_argument('--decisions', type=int, default=50,
                   help='decisions per report (default 50)')
    p.add_argument('--flood', type=int, default=2,
                   help='invented hosts, as a multiple of --hosts')
    p.add_argument('--host-states', type=int, default=1000,
                   help='Nova HostStates built for the per-host baseline '
                        '(0: skip; needs Nova)')
    p.add_argument('-o', '--output-dir', default='out/bench')
    args = p.parse_args(argv)
    if args.hosts < 1 or args.flood < 0 or args.host_states < 0:
        p.error('--hosts must be >= 1, --flood and --host-states >= 0')
    # the flood is refused report by report: one WARNING each
    logging.getLogger('iosched.nova_plugin.endpoint').setLevel(logging.ERROR)
    texts = wire(args.hosts, args)
    mib = 2.0 ** 20
    full = traced(store.ReportStore(max_hosts=args.hosts), texts)
    slim_store = store.ReportStore(max_hosts=args.hosts, slim=True)
    slim = traced(slim_store, texts)
    for host in slim_store.hosts():
        slim_store.get(host)               # as the filters ask: known
    flood = wire(args.hosts * args.flood, args, prefix='invented-')
    t0 = time.monotonic()
    grown = traced(slim_store, flood)
    flood_s = time.monotonic() - t0
    held = slim_store.hosts()
    known_held = sum(1 for h in held if not h.startswith('invented-'))
    default_max = 100000
    state = (host_state_bytes(args.host_states, args)
             if args.host_states else None)
    result = {
        'hosts': args.hosts, 'vcpus': args.vcpus,
        'decisions': args.decisions,
        'report_json_bytes': round(sum(map(len, texts)) / len(texts)),
        'full_bytes_per_host': round(full / args.hosts),
        'slim_bytes_per_host': round(slim / args.hosts),
        'slim_over_full': round(slim / full, 4),
        'slim_total_mib': round(slim / mib, 2),
        'flood_hosts': len(flood),
        'growth_after_flood_bytes': grown,
        'known_held_after_flood': known_held,
        'stats_after_flood': slim_store.stats(),
        'bound_at_default_max_hosts_mib': round(
            slim / args.hosts * default_max / mib, 1),
        'host_states': args.host_states,
        'nova_host_state_bytes_per_host': (round(state) if state
                                           else None),
        'slim_over_host_state': (round(slim / args.hosts / state, 4)
                                 if state else None),
    }
    print('report store, %d hosts (reports of %d vCPUs, %d decisions, '
          '%d B of JSON):' % (args.hosts, args.vcpus, args.decisions,
                              result['report_json_bytes']))
    print('  baseline: whole reports  %8d B/host  %8.1f MiB' % (
        result['full_bytes_per_host'], full / mib))
    print('  scheduler (slim entries) %8d B/host  %8.1f MiB  (%.3fx)' % (
        result['slim_bytes_per_host'], slim / mib, result['slim_over_full']))
    if state:
        print('  Nova HostState           %8d B/host  (%d built); the '
              'store per host is %.3fx of it' % (
                  state, args.host_states, result['slim_over_host_state']))
    print('  flood of %d invented hosts at store_max_hosts = %d: memory '
          '%+.2f MiB, %d of %d known hosts held, %d refused (%.1f s)' % (
              len(flood), args.hosts, grown / mib, known_held, args.hosts,
              result['stats_after_flood']['refused'], flood_s))
    print('  bound at the default store_max_hosts (%d): %.0f MiB per '
          'scheduler worker' % (default_max,
                                result['bound_at_default_max_hosts_mib']))
    os.makedirs(args.output_dir, exist_ok=True)
    with open(os.path.join(args.output_dir, 'store_memory.json'), 'w') as fh:
        json.dump(result, fh, indent=1)
    return 0


if __name__ == '__main__':
    sys.exit(main())
