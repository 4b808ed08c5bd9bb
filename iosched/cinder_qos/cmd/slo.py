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

"""``iosched-slo``: SLO volume types in Cinder; translate and check specs.

``translate`` and ``check`` are offline. ``type create|list|show|set|delete``
talk to Cinder (iosched.cinder_qos.client) through a cliff app whose commands
are the osc plugin's (iosched.cinder_qos.osc.commands). Exit codes: 0 fine, 1
``check`` found problems or Cinder refused/unreachable, 2 bad input (the
message says what was wrong and what is accepted), 3 conflict (an existing QoS
spec differs, a type is associated elsewhere or in use by volumes), 4 not
found.
"""

import argparse
import json
import shlex
import sys

from cliff import app as cliff_app
from cliff import commandmanager
from oslo_config import cfg

from iosched.cinder_qos import client
from iosched.cinder_qos.cmd import clip
from iosched.cinder_qos.osc import commands
from iosched.cinder_qos import rest
from iosched.cinder_qos import translate
from iosched.contract import qos_keys
from iosched.contract import slo as slo_mod
from iosched.contract import slo_units

EPILOG = """\
SLO syntax (fields separated by commas or spaces; see docs/slo.md):
  throughput   <n>iops, or <n>B/s|KB/s|MB/s|GB/s|KiB/s|MiB/s|GiB/s
  latency      <n>ms|us|s
  stat=        mean|p50|p90|p95|p99|p999|max       (default mean)
  ref_io=      <n>B|KB|KiB|MB|MiB request size S   (default 16KiB)
  qd=          expected outstanding requests N     (default 16)
  window=      <n>s|ms measurement window          (default 1s)
  tolerance=   share of windows allowed to miss    (default 0.05)
  class=       latency|throughput                  (default derived)

SLO volume types (Cinder admin credentials: --os-cloud or OS_* env):
  iosched-slo type create NAME SLO [--min-latency-ms MS] [--dry-run] [--force]
                                    QoS spec + volume type + association
  iosched-slo type list             types whose QoS spec has iosched:* keys
  iosched-slo type show NAME        one type: spec keys and SLO
  iosched-slo type set NAME SLO     update the spec keys in place
  iosched-slo type delete NAME      type and spec; refused while in use
  output: -f table|json|yaml|value|shell; per-verb help: iosched-slo type
  create --help
  exit codes: 0 done or unchanged, 1 Cinder refused or unreachable, 2 bad
  input, 3 conflict (spec differs, type in use by volumes), 4 not found

examples:
  iosched-slo type create gold "500iops,10ms,p99" --dry-run
  iosched-slo type create gold "500iops,10ms,p99" --min-latency-ms 2
  iosched-slo type list -f json
  iosched-slo translate "500iops,10ms,p99"
  iosched-slo translate "40MB/s,20ms" --headroom 2 --format json
  iosched-slo translate "throughput=120iops latency=60ms qd=8"
  iosched-slo check total_iops_sec=400 total_iops_sec_max=300
"""

TYPE_HELP = """\
usage: iosched-slo type {create,list,show,set,delete} ... [-f FORMAT]

SLO volume types in Cinder: a QoS spec (consumer front-end, the SLO's
iosched:* keys and its QEMU ceiling) and a volume type of the same name,
associated. Needs Cinder admin credentials: --os-cloud CLOUD (clouds.yaml)
or the OS_* environment, as for `openstack`.

%s

exit codes: 0 done or unchanged, 1 Cinder refused or unreachable, 2 bad
input, 3 conflict (spec differs, type associated elsewhere or in use by
volumes), 4 not found. Per verb: iosched-slo type VERB --help.
""" % '\n'.join('  %-13s %s' % (name, cls.__doc__.splitlines()[0])
                for name, cls in commands.COMMANDS.items())

QD_SOURCES = {'argument': '--qd', 'slo': "the SLO's qd",
              'default': 'default_expected_qd'}


def _parser():
    p = argparse.ArgumentParser(
        prog='iosched-slo', epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description='Translate <throughput, latency> SLOs into Cinder QoS '
                    'specs (consumer front-end) and check QoS specs the way '
                    'QEMU and Nova would.')
    sub = p.add_subparsers(dest='command', required=True, metavar='COMMAND')
    t = sub.add_parser(
        'translate', epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        help='print the QoS spec keys of an SLO and why each has its value')
    t.add_argument('slo', metavar='SLO', help='e.g. "500iops,10ms,p99"')
    t.add_argument('--headroom', type=float, metavar='H',
                   help='ceiling factor h >= 1 (default: [cinder_qos] '
                        'headroom, 1.5)')
    t.add_argument('--qd', type=int, metavar='N',
                   help="expected outstanding requests; overrides the SLO's"
                        ' qd= (default: [cinder_qos] default_expected_qd, 16)')
    t.add_argument('--format', choices=('table', 'json'), default='table')
    t.add_argument('--config-file', metavar='PATH',
                   help='read [cinder_qos] defaults from this file')
    c = sub.add_parser(
        'check', help='list what QEMU, libvirt or Nova would reject in a '
                      'QoS spec, and SLO keys that contradict the ceiling')
    c.add_argument('specs', nargs='+', metavar='KEY=VALUE')
    c.add_argument('--format', choices=('table', 'json'), default='table')
    sub.add_parser('type', add_help=False,
                   help='create|list|show|set|delete SLO volume types in '
                        'Cinder (QoS spec + type + association)')
    return p


class SloApp(cliff_app.App):
    """The cliff app behind ``iosched-slo type ...``."""

    def __init__(self, stdout=None, stderr=None, admin_factory=None):
        mgr = commandmanager.CommandManager('iosched.slo.none')
        for name, cls in commands.COMMANDS.items():
            mgr.add_command(name, cls)
        super().__init__(
            description='SLO volume types in Cinder: a QoS spec (consumer '
                        'front-end, iosched:* keys) and a volume type of the '
                        'same name, associated.',
            version='0.1.0', command_manager=mgr, stdout=stdout,
            stderr=stderr, deferred_help=True)
        self.NAME = 'iosched-slo'
        self._admin_factory = admin_factory

    def build_option_parser(self, description, version, argparse_kwargs=None):
        parser = super().build_option_parser(description, version,
                                             argparse_kwargs)
        parser.prog = 'iosched-slo'
        return parser

    def make_admin(self, parsed_args):
        """An SloAdmin for the cloud of --os-cloud / OS_* env."""
        if self._admin_factory is not None:
            return self._admin_factory(parsed_args)
        import openstack
        from openstack import exceptions
        try:
            conn = openstack.connect(cloud=parsed_args.os_cloud)
            return client.SloAdmin(rest.RestApi(conn.block_storage))
        except exceptions.SDKException as e:
            raise client.AdminError('cannot reach Cinder: %s' % e) from e


_options = commands.options


def explain(d):
    """One line per key of ``translate.specs_of(d)``: where it comes from."""
    s, f = d.slo, slo_units.fmt
    little = '%d/%ss = %s' % (d.expected_qd, f(s.latency_ms / 1000),
                              f(round(float(d.little_iops), 1)))
    why = {
        'total_iops_sec': 'ceil(h x max(B, N/L)) = ceil(%s x max(%s, %s)); '
                          'N = %d from %s' % (
                              f(d.headroom), f(s.min_iops), little,
                              d.expected_qd, QD_SOURCES[d.qd_source]),
        'size_iops_sec': 'S: a request of x > S bytes counts as x/S ops',
        'total_iops_sec_max': 'burst = ceiling: 1 s bucket (class '
                              'throughput)',
        qos_keys.MIN_IOPS: 'B: throughput floor in ops of S bytes',
        qos_keys.MIN_BYTES_SEC: 'B as given, bytes/s (= B x S)',
        qos_keys.LATENCY_MS: 'L: latency target, ms',
        qos_keys.LATENCY_STAT: 'the statistic of request latency L bounds',
        qos_keys.REF_IO_BYTES: 'S: bytes per operation',
        qos_keys.CLASS: ('set by class=' if d.class_source == 'slo' else
                     'B x L = %s requests in flight %s threshold %s' % (
                         f(round(float(d.implied_qd), 3)),
                         ('<' if d.slo_class == qos_keys.LATENCY_CLASS
                          else '>='),
                         f(d.threshold))),
        qos_keys.EXPECTED_QD: 'N from %s' % QD_SOURCES[d.qd_source],
        qos_keys.WINDOW_S: 'agent measurement window, s',
        qos_keys.TOLERANCE: 'share of windows allowed to miss',
    }
    return {k: why[k] for k in translate.specs_of(d)}


def _translate(args, out):
    try:
        opts = _options(args.config_file)
    except client.InputError as e:      # the same words as type create/set
        raise slo_mod.SLOError(str(e)) from e
    s = slo_mod.parse(args.slo, default_ref_io_bytes=opts.default_ref_io_bytes)
    d = translate.derive(
        s, headroom=(args.headroom if args.headroom is not None
                     else opts.headroom),
        expected_qd=args.qd,
        default_expected_qd=opts.default_expected_qd,
        latency_class_threshold=opts.latency_class_threshold)
    specs, why = translate.specs_of(d), explain(d)
    if args.format == 'json':
        json.dump({'slo': s.to_text(), 'consumer': translate.consumer(),
                   'specs': specs, 'explain': why}, out, indent=2,
                  sort_keys=True)
        out.write('\n')
        return 0
    width = max(len(k) for k in specs)
    vwidth = max(len(v) for v in specs.values())
    out.write('SLO:      %s\nconsumer: %s\n\n' % (s.to_text(),
                                                 translate.consumer()))
    for key, value in specs.items():
        out.write('%-*s  %-*s  %s\n' % (width, key, vwidth, value, why[key]))
    props = ' '.join('--property %s' % shlex.quote('%s=%s' % kv)
                     for kv in specs.items())
    out.write('\ncreate with:\n  openstack volume qos create --consumer %s '
              '%s SLO-NAME\n' % (translate.consumer(), props))
    return 0


def _check(args, out):
    specs = {}
    for arg in args.specs:
        key, sep, value = arg.partition('=')
        if not sep or not key:
            raise slo_mod.SLOError("spec '%s': not KEY=VALUE; accepted: e.g. "
                                   "total_iops_sec=400" % arg)
        if key in specs:
            raise slo_mod.SLOError("spec '%s': duplicate key %s" % (arg, key))
        specs[key] = value
    problems = translate.check(specs)
    if args.format == 'json':
        json.dump({'specs': specs, 'problems': problems}, out, indent=2,
                  sort_keys=True)
        out.write('\n')
    elif problems:
        out.write(''.join('problem: %s\n' % p for p in problems))
    else:
        out.write('OK: QEMU, libvirt and Nova accept this spec\n')
    return 1 if problems else 0


def main(argv=None, out=None, err=None, admin_factory=None):
    """Entry point of ``iosched-slo``; returns the exit code."""
    out = out or sys.stdout
    err = err or sys.stderr
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ['type']:
        if argv[1:] in ([], ['--help'], ['-h']):
            out.write(TYPE_HELP)
            return 0
        verbs = [name.split()[1] for name in commands.COMMANDS]
        if not argv[1].startswith('-') and argv[1] not in verbs:
            # (cliff would say it on stdout)
            err.write("iosched-slo: error: 'type %s' is not a command; "
                      'accepted: type %s\n' % (argv[1][:80], '|'.join(verbs)))
            return 2
        app = SloApp(stdout=out, stderr=err, admin_factory=admin_factory)
        try:
            return app.run(argv)
        except SystemExit as e:     # a usage error in a command (2)
            return e.code
    try:
        args = _parser().parse_args(argv)
    except SystemExit as e:        # --help (0) or a usage error (2)
        return e.code
    try:
        if args.command == 'translate':
            return _translate(args, out)
        return _check(args, out)
    except (slo_mod.SLOError, cfg.Error) as e:
        err.write(clip('iosched-slo: error: %s\n' % e))
        return 2


if __name__ == '__main__':
    sys.exit(main())
