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
"""The iosched Nova plugin at scale, each figure beside a baseline measured
in the same run.

Part 1 (handlers, no broker): filter + weigher wall time per request
through Nova's own HostFilterHandler/HostWeightHandler on real HostState
objects at 100 and 1,000 hosts (and 10,000 with --full): Nova's default
enabled_filters and all_weighers (the baseline) against the same plus every
iosched filter and weigher found at run time, and iosched's classes alone
(the "iosched alone / Nova default" ratio: the plugin's own cost against
Nova's default set); the report store's memory per host (tracemalloc)
against Nova's HostState objects.

Part 2 (RabbitMQ): 1,000 simulated hosts cast a HostReport every interval
to N iosched scheduler workers (iosched.nova_plugin.endpoint.start_listener,
one ReportStore each) and, in a phase of its own before (or with --together,
on the same casts), N bare oslo.messaging servers (the baseline: the bus
alone). Rates, delivery latency, report age and
fresh fraction as a scheduler samples them, worker CPU per 1,000 reports;
--sign: signed reports, workers with report_auth = hmac. --format both
(default): each report cast whole (as before RPC 1.3) and head-only (RPC
1.3, what agents send now), to iosched and bare workers on each.

Part 3 (Nova's functional harness, bench/nova_scale/race.py): a burst of
io boots through several scheduler workers between two reports, counting
over-committed hosts without Placement claims (the baseline) and with
CUSTOM_IOSCHED_IO_VCPU claimed on the agents' child providers. --no-race
skips it (~3 min; ~45 s with --quick).

Figures are ratios against the baseline: the machine is shared and noisy.
Prints tables and writes <output-dir>/nova_scale.json. Takes ~3 min on 2
cores (~8 min with --full, mostly tracemalloc at 10,000 hosts and the
10,000-host requests; ~40 s with --quick, ~20 s with --quick --no-rabbit).

    .venv/bin/python -m bench.nova_scale [--quick | --full] [--no-rabbit]
                                         [--no-race] [--sign]
                                         [--url rabbit://...] [-o out/bench]
"""

import argparse
import collections
import json
import logging
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)


class _CountingHandler(logging.Handler):
    """Count WARNING+ records per logger; keep the first message of each."""

    def __init__(self, echo):
        super().__init__(logging.WARNING)
        self.counts = collections.Counter()
        self.first = {}
        self.echo = echo

    def emit(self, record):
        self.counts[record.name] += 1
        if record.name not in self.first:
            self.first[record.name] = record.getMessage()[:300]
        if self.echo:
            sys.stderr.write('%s %s: %s\n' % (record.levelname, record.name,
                                              record.getMessage()))

    def summary(self):
        return {name: {'count': n, 'first': self.first[name]}
                for name, n in sorted(self.counts.items())}


def _hosts(text):
    return [int(x) for x in text.split(',') if x.strip()]


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        prog='python -m bench.nova_scale',
        description=__doc__.split('\n\n')[0].replace('\n', ' '),
        epilog=__doc__.split('\n\n', 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('--quick', action='store_true',
                   help='smoke test: 20 and 50 hosts in part 1; 100 hosts '
                        'for 8 s in part 2')
    p.add_argument('--full', action='store_true',
                   help='part 1 at 100, 1,000 and 10,000 hosts')
    p.add_argument('--no-rabbit', action='store_true',
                   help='skip part 2 (needs no broker)')
    p.add_argument('--no-handlers', action='store_true',
                   help='skip part 1')
    p.add_argument('-o', '--output-dir', default='out/bench',
                   help='where nova_scale.json goes (default %(default)s)')
    p.add_argument('-v', '--verbose', action='store_true',
                   help='print every WARNING logged in this process (they '
                        'are counted and summarised either way)')
    g = p.add_argument_group('reports (both parts)')
    g.add_argument('--vcpus', type=int, default=32,
                   help='vCPUs per host report (default %(default)s)')
    g.add_argument('--decisions', type=int, default=50,
                   help='decisions per report, the agent\'s [reporter] '
                        'max_decisions (default %(default)s)')
    g.add_argument('--seed', type=int, default=0)
    g = p.add_argument_group('part 1: handlers')
    g.add_argument('--hosts', type=_hosts, default=None,
                   help='host counts, comma separated (default 100,1000; '
                        '100,1000,10000 with --full)')
    g.add_argument('--host-rounds', type=int, default=4000,
                   help='rounds of the request mix per host count: this '
                        'divided by the host count (default %(default)s)')
    g.add_argument('--min-rounds', type=int, default=1,
                   help='at least this many rounds (default %(default)s)')
    g.add_argument('--breakdown-max-hosts', type=int, default=1000,
                   help='time each iosched filter and weigher alone at host '
                        'counts up to this (default %(default)s)')
    g.add_argument('--slo-volumes', choices=('real', 'double', 'off'),
                   default=None,
                   help='what answers SloCapacityFilter\'s volume lookups: '
                        'Cinder\'s API in a child process (real; the '
                        'default when Cinder is installed), an in-process '
                        'double (double; the default otherwise) or nothing '
                        '(off: the lookup fails, every host passes)')
    g.add_argument('--templates', type=int, default=200,
                   help='distinct reports (and HostStates) cycled over the '
                        'hosts; each host is parsed from its own JSON '
                        '(default %(default)s)')
    g = p.add_argument_group('part 2: RabbitMQ pipeline')
    g.add_argument('--url', default=os.environ.get(
        'IOSCHED_RABBIT_URL', 'rabbit://guest:guest@127.0.0.1:5672/'),
        help='transport URL (default: $IOSCHED_RABBIT_URL or %(default)s)')
    g.add_argument('--pipeline-hosts', type=int, default=1000,
                   help='simulated hosts casting reports (default '
                        '%(default)s)')
    g.add_argument('--rate', type=float, default=100.0,
                   help='reports per second in all; sets the report '
                        'interval to hosts/rate (default %(default)s)')
    g.add_argument('--interval', type=float, default=None,
                   help='report interval in seconds (overrides --rate)')
    g.add_argument('--duration', type=float, default=30.0,
                   help='seconds of casting, per phase (default '
                        '%(default)s)')
    g.add_argument('--together', action='store_true',
                   help='run the baseline servers at the same time as the '
                        'iosched workers, on the same casts (default: '
                        'baseline first, then iosched, so that they do not '
                        'compete for the CPUs)')
    g.add_argument('--workers', type=int, default=2,
                   help='iosched scheduler workers, and as many baseline '
                        'servers (default %(default)s)')
    g.add_argument('--publishers', type=int, default=2,
                   help='publisher processes sharing the hosts (default '
                        '%(default)s)')
    g.add_argument('--ttl-intervals', type=float, default=3.0,
                   help='a report is fresh for this many intervals, as '
                        '[iosched] report_ttl_intervals (default '
                        '%(default)s)')
    g.add_argument('--sample-every', type=float, default=0.1,
                   help='seconds between staleness samples (default '
                        '%(default)s)')
    g.add_argument('--startup', type=float, default=60.0,
                   help='seconds allowed for workers to start listening '
                        '(default %(default)s)')
    g.add_argument('--settle', type=float, default=2.0,
                   help='seconds between every worker listening and the '
                        'first cast (default %(default)s)')
    g.add_argument('--drain', type=float, default=30.0,
                   help='after the last cast, wait up to this many seconds '
                        'for the workers to take every report (default '
                        '%(default)s)')
    g.add_argument('--sign', action='store_true',
                   help='agents sign their reports with their host keys '
                        '(RPC 1.2, hmac-sha256-v2) and the iosched workers '
                        'run with [iosched] report_auth = hmac (default: '
                        'unsigned, report_auth = none)')
    g.add_argument('--format', choices=('whole', 'head', 'both'),
                   default='both',
                   help='wire format of the casts: the whole report (as '
                        'agents sent it before RPC 1.3), the head only '
                        '(RPC 1.3, what agents send now), or both, each '
                        'on its own topic to its own iosched and bare '
                        'workers at once (default %(default)s)')
    from bench.nova_scale import race
    race.add_arguments(p)
    p.add_argument('--no-race', action='store_true',
                   help='skip part 3, the Placement-claims race')
    args = p.parse_args(argv)
    if args.hosts is None:
        args.hosts = [100, 1000, 10000] if args.full else [100, 1000]
    if args.slo_volumes is None:
        import importlib.util
        args.slo_volumes = ('real' if importlib.util.find_spec('cinder')
                            else 'double')
    if args.quick:
        args.hosts = [20, 50]
        args.host_rounds = 100
        args.templates = 20
        args.pipeline_hosts = 100
        args.rate = 50.0
        args.duration = 6.0
        args.drain = 10.0
        args.startup = min(args.startup, 60.0)
    return args


def _log(msg):
    sys.stdout.write('[%s] %s\n' % (time.strftime('%H:%M:%S'), msg))
    sys.stdout.flush()


def main(argv=None):
    args = parse_args(argv)
    counter = _CountingHandler(args.verbose)
    root = logging.getLogger()
    root.addHandler(counter)
    root.setLevel(logging.WARNING)
    os.makedirs(args.output_dir, exist_ok=True)
    path = os.path.join(args.output_dir, 'nova_scale.json')
    figures = {'args': {k: v for k, v in vars(args).items() if k != 'url'},
               'handlers': None, 'pipeline': None, 'race': None,
               'machine': {'cpus': os.cpu_count(),
                           'load_average_start': os.getloadavg()}}

    def write():
        figures['warnings_logged'] = counter.summary()
        figures['machine']['load_average_end'] = os.getloadavg()
        with open(path, 'w') as fh:
            json.dump(figures, fh, indent=2, sort_keys=True, default=str)

    if not args.no_handlers:
        from bench.nova_scale import handlers
        figures['handlers'] = handlers.run(args, log=_log)
        write()
    if not args.no_rabbit:
        from bench.nova_scale import pipeline
        figures['pipeline'] = pipeline.run(args, log=_log)
        write()
    if not args.no_race:
        from bench.nova_scale import race
        figures['race'] = race.run(args, log=_log)
        write()
    if figures['handlers']:
        from bench.nova_scale import handlers
        handlers.print_table(figures['handlers'])
    if figures['pipeline']:
        from bench.nova_scale import pipeline
        pipeline.print_table(figures['pipeline'])
    write()
    if counter.counts:
        print('\n%d WARNING(s) logged in this process (all in the JSON):'
              % sum(counter.counts.values()))
        for name, n in sorted(counter.counts.items()):
            print('  %s x%d, first: %s' % (name, n, counter.first[name]))
    m = figures['machine']
    print('machine: %d CPUs, load average %.1f at the start, %.1f at the '
          'end (other work shares these CPUs: read the ratios)' % (
              m['cpus'], m['load_average_start'][0],
              m['load_average_end'][0]))
    print('wrote %s' % path)
    return 0


if __name__ == '__main__':
    sys.exit(main())
