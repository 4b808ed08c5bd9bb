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

"""``iosched-slo``: show the QoS spec of an SLO, or check a QoS spec.

Offline: it talks to no service. Exit codes: 0 fine, 1 ``check`` found
problems, 2 bad input (the message says what was wrong and what is
accepted).
"""

import argparse
import json
import shlex
import sys

from oslo_config import cfg

from cinder_qos import conf as conf_mod
from cinder_qos import keys
from cinder_qos import slo as slo_mod
from cinder_qos import translate
from cinder_qos import units

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

examples:
  iosched-slo translate "500iops,10ms,p99"
  iosched-slo translate "40MB/s,20ms" --headroom 2 --format json
  iosched-slo translate "throughput=120iops latency=60ms qd=8"
  iosched-slo check total_iops_sec=400 total_iops_sec_max=300
"""

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
    return p


def _options(path):
    """The [cinder_qos] values: built-in defaults, or read from ``path``."""
    conf = cfg.ConfigOpts()
    conf_mod.register_opts(conf)
    conf(args=[], project='iosched', prog='iosched-slo',
         default_config_files=[path] if path else [])
    return conf.cinder_qos


def explain(d):
    """One line per key of ``translate.specs_of(d)``: where it comes from."""
    s, f = d.slo, units.fmt
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
        keys.MIN_IOPS: 'B: throughput floor in ops of S bytes',
        keys.MIN_BYTES_SEC: 'B as given, bytes/s (= B x S)',
        keys.LATENCY_MS: 'L: latency target, ms',
        keys.LATENCY_STAT: 'the statistic of request latency L bounds',
        keys.REF_IO_BYTES: 'S: bytes per operation',
        keys.CLASS: ('set by class=' if d.class_source == 'slo' else
                     'B x L = %s requests in flight %s threshold %s' % (
                         f(round(float(d.implied_qd), 3)),
                         '<' if d.slo_class == keys.LATENCY_CLASS else '>=',
                         f(d.threshold))),
        keys.EXPECTED_QD: 'N from %s' % QD_SOURCES[d.qd_source],
        keys.WINDOW_S: 'agent measurement window, s',
        keys.TOLERANCE: 'share of windows allowed to miss',
    }
    return {k: why[k] for k in translate.specs_of(d)}


def _translate(args, out):
    opts = _options(args.config_file)
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


def main(argv=None, out=None, err=None):
    """Entry point of ``iosched-slo``; returns the exit code."""
    out = out or sys.stdout
    err = err or sys.stderr
    try:
        args = _parser().parse_args(argv)
    except SystemExit as e:        # --help (0) or a usage error (2)
        return e.code
    try:
        if args.command == 'translate':
            return _translate(args, out)
        return _check(args, out)
    except (slo_mod.SLOError, cfg.Error) as e:
        err.write('iosched-slo: error: %s\n' % e)
        return 2


if __name__ == '__main__':
    sys.exit(main())
