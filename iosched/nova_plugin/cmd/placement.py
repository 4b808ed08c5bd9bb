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
"""``iosched-placement``: where would this flavor go, and why not host X.

Gathers every compute host's latest HostReport (listening on the report
topic like a scheduler worker, or from saved JSON files), then evaluates
the iosched filters and weigher for one flavor with the thresholds of
``[iosched]`` in nova.conf: per host, pass/fail of each rule with its
numbers, the weigher's raw value, its normalised and weighted value and
the rank. ``--host X`` explains one host; ``--json`` for machines.
``--check-flavors`` audits every Nova flavor's ``resources:CUSTOM_IOSCHED_*``
extra specs instead (``flavor_audit``). Bad input exits 2 with one line on
stderr, never a traceback. No nova import.
"""

import argparse
import json
import logging
import math
import os
import sys
import time

from oslo_config import cfg

from iosched.contract import flavor as flavor_contract
from iosched.nova_plugin.cmd import clip
from iosched.nova_plugin.cmd import flavor_audit
from iosched.nova_plugin.cmd import placement_format as fmt
from iosched.nova_plugin.cmd import placement_rules as rules_mod
from iosched.nova_plugin.cmd import placement_sources as sources
from iosched.nova_plugin import conf as iosched_conf
from iosched.nova_plugin import placement_resources
from iosched.nova_plugin import scoring

PROG = 'iosched-placement'
EXIT_BAD_INPUT = 2
# Read when no --config-file is given and it exists: the thresholds are
# those of nova-scheduler.
DEFAULT_CONFIG = '/etc/nova/nova.conf'
DEFAULT_WAIT = 10.0

BadInput = sources.BadInput

DESCRIPTION = """\
Say where the iosched Nova plugin would place a flavor, and why (not) a
given host.

For every compute host with a report, evaluate the iosched host filters
and the weigher as nova-scheduler does, with the [iosched] thresholds of
nova.conf: each filter's pass/fail with its numbers, the weigher's raw
value (larger is better), its value normalised over the hosts that pass
(0..1, as Nova does) times io_strength_weight_multiplier, and the rank.
The rules and the options they read (every filter also applies
[iosched] missing_report_policy to a host without a fresh report):

%s

Reports: by default the command listens on [iosched] report_topic over
[DEFAULT] transport_url (or --transport-url) like a scheduler worker, asks
every agent to re-send its report at once ([iosched] agents_topic), and
stops when no new host has appeared for 2 s, after one report interval,
or after --wait seconds; progress goes to stderr. With --report FILE
(repeatable) it reads saved reports instead (HostReport JSON, as the
agents send them).

The flavor: --vcpus N and --property KEY=VALUE (repeatable, the flavor's
extra specs), or --flavor NAME read from Nova with openstacksdk
(clouds.yaml, --os-cloud/OS_CLOUD, or OS_* variables). --slo-iops adds
the throughput floors of the SLO volumes the server will attach.

Flavors' Placement resources: --check-flavors lists every flavor of Nova
(openstacksdk, as --flavor) with iosched:* specs or CUSTOM_IOSCHED_*
resources, what is missing, wrong, unexpected, invalid or in a numbered
request group among its resources:CUSTOM_IOSCHED_* extra specs, and the
openstack flavor set/unset commands that fix it. --lsvm-vcpu-share is the
agents' [io_inventory] lsvm_vcpu_share. It reads no reports.

Configuration: --config-file (repeatable; nova-scheduler's nova.conf),
else %s if it exists, else the options' defaults. When it sets
[filter_scheduler] enabled_filters, only the iosched filters listed there
are evaluated.""" % (
    '\n'.join('  %-13s %s: %s' % (r.name, r.plugin, ', '.join(
        '[iosched] ' + o for o in r.options)
        or "the agent's vSlicer parameters in its report")
               for r in rules_mod.RULES)
    + '\n  %-13s %s: [iosched] io_strength_weight_multiplier,\n'
      '  %-13s %s  missing_report_weight' % ('weigher', rules_mod.WEIGHER,
                                             '', ' ' * len(rules_mod.WEIGHER)),
    DEFAULT_CONFIG)

EPILOG = """\
examples:
  # where would a 2-vCPU I/O-bound flavor go (listen to the agents)
  iosched-placement --config-file /etc/nova/nova.conf \\
      --vcpus 2 --property iosched:io_profile=io
  # why not compute-3 for the flavor io.medium
  iosched-placement --flavor io.medium --host compute-3
  # offline, from saved reports, as JSON
  iosched-placement --report c1.json --report c2.json --vcpus 4 \\
      --property iosched:io_profile=mixed --json
  # which flavors lack their resources:CUSTOM_IOSCHED_* keys, and the fix
  iosched-placement --check-flavors --os-cloud admin

rank: 1 is the host the iosched weigher prefers among the hosts that pass
the iosched filters ("=": tied). Only the iosched rules are evaluated:
Nova's own filters and weighers also decide, and each scheduler worker
adds the placements it made since a host's last report (in-flight), which
this command cannot see.

exit status: 0 answered (also when no host passes), 2 bad input (no or bad
report, bad flavor or property, no cloud for --flavor, bad configuration,
unknown --host), 3 no report received from the bus within --wait.
With --check-flavors: 0 every flavor is right, 1 some need a fix, 2 bad
input or Nova unreachable."""

EXIT_NO_REPORTS = 3
EXIT_NEEDS_FIX = 1


def parser():
    p = argparse.ArgumentParser(
        prog=PROG, description=DESCRIPTION, epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('--config-file', action='append', default=[],
                   metavar='PATH',
                   help="nova-scheduler's nova.conf (repeatable): gives "
                        '[iosched] thresholds, report_topic and [DEFAULT] '
                        'transport_url')
    source = p.add_argument_group('reports (default: listen on the bus)')
    source.add_argument('--report', action='append', default=[],
                        metavar='FILE',
                        help='read a saved HostReport JSON file instead of '
                             'listening (repeatable, one per host)')
    source.add_argument('--transport-url', metavar='URL',
                        help='listen on this broker instead of [DEFAULT] '
                             'transport_url, e.g. '
                             'rabbit://user:pass@controller:5672/')
    source.add_argument('--wait', type=float, default=DEFAULT_WAIT,
                        metavar='SECONDS',
                        help='listen at most this long (default %(default)s;'
                             ' stops earlier once one report interval has '
                             'passed)')
    flavor = p.add_argument_group('the flavor (one of --vcpus, --flavor)')
    flavor.add_argument('--vcpus', type=int, metavar='N',
                        help="the flavor's vCPUs")
    flavor.add_argument('--property', action='append', default=[],
                        metavar='KEY=VALUE',
                        help='a flavor extra spec (repeatable), e.g. '
                             'iosched:io_profile=io')
    flavor.add_argument('--slo-iops', type=float, default=0.0,
                        metavar='IOPS',
                        help='the throughput floors B (iosched:min_iops) of '
                             'the SLO volumes the server attaches, summed '
                             '(default 0: none); checked by '
                             'SloCapacityFilter')
    flavor.add_argument('--flavor', metavar='NAME',
                        help='read vCPUs and extra specs of this flavor '
                             'from Nova (openstacksdk)')
    flavor.add_argument('--os-cloud', metavar='CLOUD',
                        help='the clouds.yaml entry for --flavor and '
                             '--check-flavors (default: OS_CLOUD or the '
                             'OS_* variables)')
    audit = p.add_argument_group("audit the flavors' Placement resources "
                                 '(instead of placing one)')
    audit.add_argument('--check-flavors', action='store_true',
                       help="check every Nova flavor's resources:"
                            'CUSTOM_IOSCHED_* extra specs against its '
                            'iosched:* specs; print the fix (exit 1 when '
                            'some flavor needs one)')
    audit.add_argument('--lsvm-vcpu-share', type=float, metavar='SHARE',
                       help='the share of a pCPU an LSVM vCPU reserves, as '
                            "the agents' [io_inventory] lsvm_vcpu_share "
                            '(default %g)'
                            % placement_resources.DEFAULT_LSVM_VCPU_SHARE)
    p.add_argument('--host', metavar='HOST',
                   help='explain this host: every rule with its numbers')
    p.add_argument('--json', action='store_true',
                   help='print one JSON object instead of text')
    return p


def load_conf(paths):
    """A private ConfigOpts with [iosched] and [DEFAULT] transport_url."""
    conf = cfg.ConfigOpts()
    iosched_conf.register_opts(conf)
    conf.register_opt(cfg.StrOpt('transport_url', secret=True))
    # None unless set: then every iosched filter is evaluated
    conf.register_opt(cfg.ListOpt('enabled_filters'),
                      group='filter_scheduler')
    if not paths and os.path.exists(DEFAULT_CONFIG):
        paths = [DEFAULT_CONFIG]
    for path in paths:
        if not os.path.isfile(path):
            raise BadInput('no configuration file at %s (--config-file: '
                           "accepted: a readable nova.conf)" % path)
    try:
        conf([], project='nova', default_config_files=list(paths))
        rules_mod.Thresholds.from_conf(conf)
        conf.iosched.report_topic
        conf.iosched.report_ttl_intervals
        conf.filter_scheduler.enabled_filters
    except (cfg.Error, OSError, ValueError) as e:
        raise BadInput('cannot read the configuration %s: %s' % (
            ', '.join(paths) or '(defaults)', e))
    return conf, list(paths)


def read_request(args):
    """(scoring.Request, source text, extra specs) from the arguments."""
    if args.host is not None and not args.host.strip():
        raise BadInput('--host %r: accepted: a compute host name (as its '
                       'agent reports it)' % args.host)
    if args.flavor is not None and not args.flavor.strip():
        raise BadInput('--flavor %r: accepted: the name or ID of a Nova '
                       'flavor' % args.flavor)
    if args.flavor and (args.vcpus is not None or args.property):
        raise BadInput('give either --flavor NAME or --vcpus N with '
                       '--property KEY=VALUE, not both')
    if args.flavor:
        vcpus, specs, source = sources.flavor_from_nova(args.flavor,
                                                        args.os_cloud)
    else:
        if args.vcpus is None:
            raise BadInput('no flavor: give --vcpus N (and --property '
                           'KEY=VALUE for its extra specs) or --flavor NAME')
        if args.vcpus < 1:
            raise BadInput('--vcpus %d: accepted: an integer >= 1'
                           % args.vcpus)
        vcpus = args.vcpus
        specs = sources.parse_properties(args.property)
        source = '--vcpus %d' % vcpus
    try:
        flavor_contract.check_specs(specs)
    except flavor_contract.InvalidExtraSpec as e:
        raise BadInput('%s (the scheduler would read it as unset)' % e)
    if not args.slo_iops >= 0 or args.slo_iops == float('inf'):
        raise BadInput('--slo-iops %s: accepted: a finite number of IOPS '
                       '>= 0' % args.slo_iops)
    query = rules_mod.Query(scoring.Request.from_extra_specs(vcpus, specs),
                            slo_iops=args.slo_iops)
    return query, source, specs


def gather(args, conf, err):
    """({host: HostReport}, meta dict, heading text)."""
    if args.report:
        reports = sources.reports_from_files(args.report)
        meta = {'source': 'files', 'paths': list(args.report)}
        heading = 'reports: %d host(s) from %d file(s)' % (
            len(reports), len(args.report))
        return reports, meta, heading
    if not args.wait > 0:       # also NaN, which would never stop
        raise BadInput('--wait %s: accepted: seconds > 0' % args.wait)
    url = args.transport_url or conf.transport_url

    def progress(text):
        print('%s: %s' % (PROG, text), file=err, flush=True)

    # amqp warns about a frame that arrives while the listener's channel
    # closes: harmless, and not the operator's business
    amqp_log = logging.getLogger('amqp')
    level = amqp_log.level
    amqp_log.setLevel(logging.ERROR)
    try:
        reports, listened, stopped = sources.reports_from_bus(
            conf, url, args.wait, progress)
    finally:
        amqp_log.setLevel(level)
    meta = {'source': 'bus', 'topic': conf.iosched.report_topic,
            'listened_seconds': round(listened, 3), 'stopped': stopped}
    heading = 'reports: %d host(s) heard on topic %s in %.1f s' % (
        len(reports), conf.iosched.report_topic, listened)
    return reports, meta, heading


# options that choose or evaluate one placement: not with --check-flavors
_PLACEMENT_ONLY = (('--config-file', 'config_file'), ('--report', 'report'),
                   ('--transport-url', 'transport_url'), ('--vcpus', 'vcpus'),
                   ('--property', 'property'), ('--flavor', 'flavor'),
                   ('--host', 'host'))


def check_flavors(args, out, connect=None):
    """--check-flavors: exit 0 all right, 1 some need a fix."""
    given = [flag for flag, dest in _PLACEMENT_ONLY
             if getattr(args, dest) not in (None, [])]
    given += ['--slo-iops'] if args.slo_iops != 0.0 else []
    given += ['--wait'] if args.wait != DEFAULT_WAIT else []
    if given:
        raise BadInput('--check-flavors reads only Nova: drop %s (accepted '
                       'with it: --os-cloud, --lsvm-vcpu-share, --json)'
                       % ', '.join(given))
    share = args.lsvm_vcpu_share
    if share is None:
        share = placement_resources.DEFAULT_LSVM_VCPU_SHARE
    # below 0.0005 an LSVM vCPU would ask 0 milli-CPUs
    if math.isnan(share) or not 0 < share <= 1 or round(1000 * share) < 1:
        raise BadInput('--lsvm-vcpu-share %s: accepted: a number in (0, 1] '
                       'of at least 0.0005 (one milli-CPU), the agents\' '
                       '[io_inventory] lsvm_vcpu_share' % share)
    if args.os_cloud is not None and not args.os_cloud.strip():
        raise BadInput('--os-cloud %r: accepted: the name of a cloud in '
                       'clouds.yaml' % args.os_cloud)
    listed = sources.flavors_from_nova(args.os_cloud, connect=connect)
    rows = flavor_audit.audit(
        [flavor_audit.Flavor(name, vcpus, specs, id=fid)
         for fid, name, vcpus, specs in listed], share)
    if args.json:
        json.dump(flavor_audit.as_dict(rows, len(listed), share), out,
                  indent=2, sort_keys=True)
        out.write('\n')
    else:
        out.write('\n'.join(flavor_audit.text(rows, len(listed), share))
                  + '\n')
    return EXIT_NEEDS_FIX if any(not r.ok for r in rows) else 0


def main(argv=None, out=None, err=None, connect=None):
    """The command; ``connect`` replaces openstack.connect (tests)."""
    out = out or sys.stdout
    err = err or sys.stderr
    args = parser().parse_args(sys.argv[1:] if argv is None else argv)
    if args.check_flavors:
        try:
            return check_flavors(args, out, connect)
        except BadInput as e:
            print(clip('%s: error: %s' % (PROG, e)), file=err)
            return EXIT_BAD_INPUT
    if args.lsvm_vcpu_share is not None:
        print('%s: error: --lsvm-vcpu-share is read with --check-flavors '
              'only' % PROG, file=err)
        return EXIT_BAD_INPUT
    try:
        conf, paths = load_conf(args.config_file)
        thresholds = rules_mod.Thresholds.from_conf(conf)
        query, source, specs = read_request(args)
        reports, meta, heading = gather(args, conf, err)
    except BadInput as e:
        print(clip('%s: error: %s' % (PROG, e)), file=err)
        return EXIT_BAD_INPUT
    if not reports:
        print('%s: error: no host report received on topic %s within %s s: '
              'are the agents running and reporting to this broker (their '
              '[reporter] topic and transport_url)?' % (
                  PROG, conf.iosched.report_topic, '%g' % args.wait),
              file=err)
        return EXIT_NO_REPORTS
    missing = ()
    if args.host and args.host not in reports:
        if meta['source'] == 'files':
            print(clip('%s: error: --host %s: no report for it in the files '
                       '(hosts: %s)' % (PROG, args.host,
                                        ', '.join(sorted(reports)))),
                  file=err)
            return EXIT_BAD_INPUT
        # heard from others but not from it: the scheduler treats it as
        # a host without a fresh report
        missing = (args.host,)
    rules = rules_mod.enabled(conf.filter_scheduler.enabled_filters)
    results = rules_mod.evaluate(reports, query, thresholds, rules=rules,
                                 missing=missing)
    meta = dict(meta, config_files=paths, generated=time.time())
    if args.json:
        doc = fmt.as_dict(results, query, source, specs, thresholds, rules,
                          meta)
        if args.host:
            doc['explained_host'] = args.host
        json.dump(doc, out, indent=2, sort_keys=True)
        out.write('\n')
        return 0
    count = sum(1 for r in results if r.candidate)
    lines = fmt.header(query, source, thresholds, rules, heading)
    lines.append('')
    if args.host:
        result = next(r for r in results if r.host == args.host)
        lines += fmt.explain_host(result, count)
    else:
        lines += fmt.table(results)
        if not count:
            lines += ['', 'no host passes the iosched filters: Nova would '
                          'answer NoValidHost']
    lines += ['', 'note: ' + fmt.NOTE]
    out.write('\n'.join(lines) + '\n')
    return 0


if __name__ == '__main__':
    sys.exit(main())
