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
"""The scheduler race of issue 16, repeated: over-committed hosts without
and with Placement claims of CUSTOM_IOSCHED_IO_VCPU.

Each burst is one run of tests/nova/race_harness.py's ``RaceCase`` in
Nova's functional harness (API, conductor, --workers scheduler services
with their own report store and in-flight tracker, --hosts fake computes,
in-process Placement): every host is reported with room for two 2-vCPU io
servers, then --boots io servers are POSTed at once. Without claims (the
baseline, today's code) against with claims (child providers
``<node>:iosched`` with CUSTOM_IOSCHED_IO_VCPU and the flavor's
``resources:`` keys), each --repeats times, with the claim gate (every
request decides before any claims: deterministic) and, unless --gated-only,
without it (the harness's own interleaving).

The bursts run in a child process (Nova's harness monkey-patches eventlet,
which must not leak into a benchmark that imports this module). Prints
"over-committed hosts: without claims X / with claims Y" (totals over the
repeats) and writes <output-dir>/nova_race.json; the child's log goes to
<output-dir>/nova_race.log. About 12 s a burst (~1 min with --quick).

    .venv/bin/python -m bench.nova_scale.race [--quick] [--workers 3]
        [--hosts 3] [--boots N] [--repeats 3] [--gated-only] [-o out/bench]
"""

import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

SLOTS_PER_HOST = 4          # 4 pCPUs x max_io_vcpus_per_pcpu 1.0
FLAVOR_VCPUS = 2


def add_arguments(parser):
    """The race's options (prefixed so they fit in bench.nova_scale)."""
    g = parser.add_argument_group('race: Placement claims (issue 16)')
    g.add_argument('--race-workers', type=int, default=3,
                   help='scheduler services (default %(default)s)')
    g.add_argument('--race-hosts', type=int, default=3,
                   help='fake computes (default %(default)s)')
    g.add_argument('--race-boots', type=int, default=None,
                   help='io servers per burst (default: 1.5 x the room)')
    g.add_argument('--race-repeats', type=int, default=3,
                   help='bursts per configuration (default %(default)s)')
    g.add_argument('--race-gated-only', action='store_true',
                   help='skip the bursts without the claim gate')
    return parser


def _settings(args):
    quick = getattr(args, 'quick', False)
    workers = getattr(args, 'race_workers', 3)
    hosts = getattr(args, 'race_hosts', 3)
    repeats = getattr(args, 'race_repeats', 3)
    if quick:
        workers, hosts, repeats = min(workers, 2), min(hosts, 2), 1
    room = hosts * (SLOTS_PER_HOST // FLAVOR_VCPUS)
    boots = getattr(args, 'race_boots', None) or room + max(1, room // 2)
    for name, value in (('workers', workers), ('hosts', hosts),
                        ('boots', boots), ('repeats', repeats)):
        if value < 1:
            raise ValueError('--race-%s must be >= 1, got %d'
                             % (name, value))
    gates = (True,) if getattr(args, 'race_gated_only', False) else (
        True, False)
    return {'workers': workers, 'hosts': hosts, 'boots': boots,
            'room': room, 'repeats': repeats, 'gates': list(gates)}


def _child(settings, path):
    """In the child: run every burst, write the results to ``path``."""
    import importlib
    import unittest

    # Nova's log lines go to the child's log; progress to the parent
    progress = os.fdopen(os.dup(1), 'w')
    os.dup2(2, 1)
    importlib.import_module('tests.nova.conftest')  # Nova harness shims
    from nova import objects

    from tests.nova import race_harness

    objects.register_all()
    results = []
    total = len(settings['gates']) * 2 * settings['repeats']

    def test_race(case):
        results.append(case.race())

    for gate in settings['gates']:
        for claims in (False, True):
            for _ in range(settings['repeats']):
                case_class = type('Race', (race_harness.RaceCase,), {
                    'workers': settings['workers'],
                    'hosts': settings['hosts'],
                    'boots': settings['boots'],
                    'claims': claims, 'gate': gate,
                    'test_race': test_race})
                before = len(results)
                outcome = unittest.TextTestRunner(
                    stream=sys.stderr, verbosity=0).run(
                        case_class('test_race'))
                if not outcome.wasSuccessful() or len(results) == before:
                    results.append({'claims': claims, 'gate': gate,
                                    'failed': True})
                last = results[-1]
                progress.write('burst %d/%d (gate %s, claims %s): %s\n' % (
                    len(results), total, 'on' if gate else 'off',
                    'on' if claims else 'off', 'FAILED' if last.get(
                        'failed') else '%d over-committed host(s), %d '
                    'active, %d NoValidHost' % (
                        last['over_committed_hosts'], last['active'],
                        last['no_valid_host'])))
                progress.flush()
    with open(path, 'w') as fh:
        json.dump(results, fh)


def summarise(settings, results):
    """Totals per (gate, claims): the JSON-ready figures."""
    out = []
    for gate in settings['gates']:
        for claims in (False, True):
            runs = [r for r in results
                    if r['gate'] == gate and r['claims'] == claims]
            ok = [r for r in runs if not r.get('failed')]
            out.append({
                'gate': gate, 'claims': claims, 'bursts': len(runs),
                'failed_bursts': len(runs) - len(ok),
                'over_committed_hosts': sum(r['over_committed_hosts']
                                            for r in ok),
                'bursts_with_over_commit': sum(
                    1 for r in ok if r['over_committed_hosts']),
                'excess_io_vcpus': sum(r['excess_io_vcpus'] for r in ok),
                'active': sum(r['active'] for r in ok),
                'no_valid_host': sum(r['no_valid_host'] for r in ok),
                'claims_refused': sum(r['claims_refused'] for r in ok),
                'seconds_per_burst': (round(sum(r['seconds'] for r in ok)
                                            / len(ok), 2) if ok else None),
            })
    return out


def _ratio(a, b):
    return '%.2fx' % (a / b) if a and b else 'n/a'


def run(args, log=print):
    """Run the bursts in a child process; returns the JSON-ready figures
    (also written to <output_dir>/nova_race.json).
    """
    settings = _settings(args)
    out_dir = getattr(args, 'output_dir', None) or 'out/bench'
    os.makedirs(out_dir, exist_ok=True)
    raw = os.path.join(out_dir, 'nova_race.raw.json')
    log_path = os.path.join(out_dir, 'nova_race.log')
    n = len(settings['gates']) * 2 * settings['repeats']
    log('race: %(workers)d scheduler workers, %(hosts)d hosts (room for '
        '%(room)d io servers), %(boots)d boots per burst' % settings)
    log('  %d bursts in a child process (log: %s)' % (n, log_path))
    start = time.monotonic()
    with open(log_path, 'w') as child_log:
        child = subprocess.Popen(
            [sys.executable, '-m', 'bench.nova_scale.race', '--child', raw,
             '--settings', json.dumps(settings)],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=child_log, text=True)
        for line in child.stdout:
            log('  ' + line.rstrip())
        rc = child.wait()
    if rc != 0:
        raise RuntimeError('the race child failed (exit %d): see %s'
                           % (rc, log_path))
    with open(raw) as fh:
        results = json.load(fh)
    summary = summarise(settings, results)
    by = {(s['gate'], s['claims']): s for s in summary}
    for gate in settings['gates']:
        base, fixed = by[(gate, False)], by[(gate, True)]
        log('%s (%d bursts each):' % (
            'claim gate on: every request decides before any claim' if gate
            else 'no gate: the harness\'s own interleaving',
            base['bursts']))
        log('  over-committed hosts: without claims %d / with claims %d'
            % (base['over_committed_hosts'], fixed['over_committed_hosts']))
        log('  bursts with an over-committed host: %d / %d'
            % (base['bursts_with_over_commit'],
               fixed['bursts_with_over_commit']))
        log('  I/O vCPUs beyond the bound: %d / %d'
            % (base['excess_io_vcpus'], fixed['excess_io_vcpus']))
        log('  servers active: %d / %d (NoValidHost %d / %d; room %d a '
            'burst)' % (base['active'], fixed['active'],
                        base['no_valid_host'], fixed['no_valid_host'],
                        settings['room']))
        log('  claims refused by Placement: %d / %d'
            % (base['claims_refused'], fixed['claims_refused']))
        log('  seconds per burst: %s / %s (%s)' % (
            base['seconds_per_burst'], fixed['seconds_per_burst'],
            _ratio(fixed['seconds_per_burst'], base['seconds_per_burst'])))
        if base['failed_bursts'] or fixed['failed_bursts']:
            log('  FAILED bursts: %d / %d (see %s)' % (
                base['failed_bursts'], fixed['failed_bursts'], log_path))
    figures = {'settings': settings, 'summary': summary, 'runs': results,
               'seconds': round(time.monotonic() - start, 1)}
    with open(os.path.join(out_dir, 'nova_race.json'), 'w') as fh:
        json.dump(figures, fh, indent=2, sort_keys=True)
    return figures


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        prog='python -m bench.nova_scale.race',
        description=__doc__.split('\n\n')[0].replace('\n', ' '),
        epilog=__doc__.split('\n\n', 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('--quick', action='store_true',
                   help='2 workers, 2 hosts, one burst per configuration')
    p.add_argument('-o', '--output-dir', default='out/bench',
                   help='where nova_race.json goes (default %(default)s)')
    add_arguments(p)
    for short, long_ in (('--workers', '--race-workers'),
                         ('--hosts', '--race-hosts'),
                         ('--boots', '--race-boots'),
                         ('--repeats', '--race-repeats')):
        p.add_argument(short, dest=long_[2:].replace('-', '_'), type=int,
                       help='same as %s' % long_, default=argparse.SUPPRESS)
    p.add_argument('--gated-only', dest='race_gated_only',
                   action='store_true', help='same as --race-gated-only')
    p.add_argument('--child', help=argparse.SUPPRESS)
    p.add_argument('--settings', help=argparse.SUPPRESS)
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    if args.child:
        _child(json.loads(args.settings), args.child)
        return 0
    try:
        run(args, log=lambda msg: print('[%s] %s' % (
            time.strftime('%H:%M:%S'), msg), flush=True))
    except (ValueError, RuntimeError) as exc:
        print('error: %s' % exc, file=sys.stderr)
        return 2
    return 0


if __name__ == '__main__':
    sys.exit(main())
