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
"""``iosched-demo``: the main job on the embedded default.

Runs a scenario (hosts, flavors, SLO volume types, server requests) twice
on a simulated cloud: once stock (Nova's default filters and weighers, no
agent) and once with iosched (the host agent on every host, reports over
oslo.messaging, the Nova plugin's filter and weigher), then prints where
each VM went and why, I/O-intensive vCPUs per host, LSVM latency, CPU
share per VM and SLO attainment side by side, and writes report.json and
report.png.
"""

import argparse
import logging as py_logging
import os
import sys
import time
import warnings

from iosched.host_agent.cmd import clip

# Seconds a broker of --transport-url has to accept a connection (per
# broker of the URL) before the demo gives up, before either run.
BROKER_TIMEOUT = 5.0
EXIT_NO_BROKER = 1

EPILOG = """examples:
  iosched-demo                                # embedded default
  iosched-demo --scenario my.yaml -o out/my   # your own scenario
  iosched-demo --transport-url rabbit://guest:guest@127.0.0.1:5672/
"""


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog='iosched-demo', description=__doc__.split('\n\n')[1],
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('--scenario', help='scenario YAML (default: the embedded '
                   'default, iosched/demo/scenarios/default.yaml)')
    p.add_argument('-o', '--output-dir', default='out/demo',
                   help='where report.json and report.png go '
                   '(default: %(default)s)')
    p.add_argument('--transport-url', default='fake:/',
                   help='oslo.messaging URL for agent reports: fake:/ keeps '
                   'them in the process (default), rabbit://... uses a '
                   'broker')
    p.add_argument('-q', '--quiet', action='store_true',
                   help='no progress lines')
    p.add_argument('-v', '--verbose', action='store_true',
                   help='log the agents and the plugin at DEBUG')
    return p.parse_args(argv)


def output_dir_problem(path):
    """Why report.json and report.png could not be written under
    ``path`` (created if missing), or None; creates nothing.
    """
    if not path.strip():
        return 'is empty'
    full = os.path.abspath(path)
    if os.path.exists(full) and not os.path.isdir(full):
        return 'exists and is not a directory'
    missing = []
    parent = full
    while not os.path.exists(parent):
        parent, name = os.path.split(parent)
        missing.append(name)
    name_max = os.pathconf(parent, 'PC_NAME_MAX') if os.path.isdir(
        parent) else 255
    if any(len(os.fsencode(n)) > name_max for n in missing):
        return 'has a name longer than %d bytes' % name_max
    if not os.path.isdir(parent):
        return '%s is not a directory' % parent
    if not os.access(parent, os.W_OK | os.X_OK):
        return '%s is not writable' % parent
    return None


def transport_url_problem(url):
    """Why oslo.messaging would refuse ``url``, or None."""
    from importlib import metadata

    from oslo_config import cfg
    import oslo_messaging
    schemes = sorted(e.name for e in metadata.entry_points(
        group='oslo.messaging.drivers'))
    try:
        parsed = oslo_messaging.TransportURL.parse(cfg.ConfigOpts(), url)
    except (oslo_messaging.InvalidTransportURL, ValueError) as e:
        return '%s; accepted: fake:/ or rabbit://USER:PASS@HOST:PORT/' % e
    if not url.strip() or parsed.transport not in schemes:
        return 'unknown scheme; accepted: %s' % ', '.join(
            '%s://' % s if s != 'fake' else 'fake:/' for s in schemes)
    return None


def mask_url(url):
    """``url`` with every password replaced by ``***``, as oslo logs a
    transport URL (``rabbit://guest:***@host:port/``).
    """
    if '://' not in url or '@' not in url:
        return url
    scheme, rest = url.split('://', 1)
    slash = rest.find('/', rest.rfind('@'))
    netloc, path = (rest, '') if slash < 0 else (rest[:slash], rest[slash:])
    entries = netloc.split(',')
    if not all('@' in e for e in entries):
        # a ',' in a password: mask everything before the last '@'
        creds, host = netloc.rsplit('@', 1)
        entries = ['%s:***@%s' % (creds.split(':', 1)[0], host)]
    else:
        entries = ['%s%s@%s' % (e.rsplit('@', 1)[0].split(':', 1)[0],
                                ':***' if ':' in e.rsplit('@', 1)[0] else '',
                                e.rsplit('@', 1)[1]) for e in entries]
    return '%s://%s%s' % (scheme, ','.join(entries), path)


def broker_problem(url, timeout=BROKER_TIMEOUT):
    """Why no broker of ``url`` accepts a connection within ``timeout`` s
    per broker, or None (also for fake:/, which needs none).
    """
    from iosched.nova_plugin import listener
    return listener.probe_broker(url, timeout=timeout)


def _load_scenario(path):
    """The scenario at ``path``, or None after one line on stderr."""
    from iosched.demo import scenario as scenario_mod
    try:
        return scenario_mod.load(path)
    except scenario_mod.ScenarioError as e:
        print(clip('iosched-demo: %s' % e), file=sys.stderr)
    except (UnicodeDecodeError, RecursionError) as e:
        print(clip('iosched-demo: --scenario %s: not a YAML scenario (%s); '
                   'accepted: UTF-8 YAML like '
                   'iosched/demo/scenarios/default.yaml' % (
                       path, e if isinstance(e, UnicodeDecodeError)
                       else 'nested too deeply')), file=sys.stderr)
    return None


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    # Checked before the two runs (several seconds), and before anything
    # is written.
    for flag, value, why in (
            ('--output-dir', args.output_dir,
             output_dir_problem(args.output_dir)),
            ('--transport-url', args.transport_url,
             transport_url_problem(args.transport_url))):
        if why:
            print(clip('iosched-demo: %s %r: %s' % (
                flag, mask_url(value) if flag == '--transport-url' else value,
                mask_url(why))), file=sys.stderr)
            return 2
    warnings.filterwarnings('ignore', category=DeprecationWarning)
    warnings.filterwarnings('ignore', message=r'\s*Eventlet is deprecated')
    py_logging.basicConfig(
        level=py_logging.DEBUG if args.verbose else py_logging.ERROR,
        format='%(levelname)s %(name)s: %(message)s')

    def progress(msg):
        if not args.quiet:
            print(msg, file=sys.stderr, flush=True)

    scenario = _load_scenario(args.scenario)
    if scenario is None:
        return 2
    # A broker that does not answer would be retried for ever (and the
    # stock run done for nothing): give up now, nothing written.
    down = broker_problem(args.transport_url)
    if down:
        print(clip('iosched-demo: --transport-url %s: no message broker '
                   'answers within %g s (%s); accepted: a reachable broker, '
                   'or fake:/' % (mask_url(args.transport_url),
                                  BROKER_TIMEOUT, down)), file=sys.stderr)
        return EXIT_NO_BROKER
    progress('iosched-demo: scenario %s: %d hosts, %d servers, %.0f s '
             'measured' % (scenario.name, len(scenario.hosts),
                           len(scenario.servers), scenario.measure_s))
    progress('loading Nova, the agent and the simulator ...')
    from iosched.demo import cloud as cloud_mod
    from iosched.demo import metrics
    from iosched.demo import report
    cloud_mod.set_defaults()
    start = time.monotonic()
    results = {}
    for label, with_iosched in (('stock', False), ('iosched', True)):
        progress('== %s: %s' % (label, 'Nova default weighers, no agent'
                                if not with_iosched else
                                'agents + Nova plugin over %s'
                                % mask_url(args.transport_url)))
        cloud, t0, t1 = cloud_mod.run_variant(
            scenario, with_iosched, args.transport_url, progress)
        try:
            results[label] = metrics.summarize(cloud, t0, t1)
        finally:
            cloud.close()
    elapsed = time.monotonic() - start
    stock, iosched = results['stock'], results['iosched']
    print('\nWhere each VM went (and why, with iosched):')
    print(report.placement_table(stock, iosched))
    print('\nI/O balance across hosts:')
    print(report.hosts_table(stock, iosched))
    print('\nHeadline (measured window %.0f s of simulated time):'
          % scenario.measure_s)
    print(report.headline_table(stock, iosched))
    _, json_path, png_path = report.write_all(
        args.output_dir, scenario, stock, iosched, elapsed)
    print('\nwrote %s and %s (%.1f s)' % (os.path.relpath(json_path),
                                         os.path.relpath(png_path), elapsed))
    return 0


if __name__ == '__main__':
    sys.exit(main())
