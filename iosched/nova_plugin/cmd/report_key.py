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
"""``iosched-report-key``: a compute host's report key, from nova.conf.

Run on a scheduler node: reads ``[iosched] report_master_key`` from the
scheduler's configuration and prints the key each named host signs its
reports with (``iosched.contract.signature``). Give each agent only its
own key, in ``[reporter] report_key``; the master key never leaves the
scheduler nodes. No nova import.
"""

import argparse
import sys

from oslo_config import cfg

from iosched.contract import signature
from iosched.nova_plugin.cmd import clip
from iosched.nova_plugin import conf as iosched_conf

PROG = 'iosched-report-key'
EXIT_OK = 0
EXIT_BAD_INPUT = 2

EPILOG = """\
examples:
  # the key of compute-1, for its host-agent.conf
  iosched-report-key --config-file /etc/nova/nova.conf --host compute-1
  # an ini snippet per host (Ansible templates, by-hand installs)
  iosched-report-key --host compute-1 --host compute-2 --format ini

The host name must be the agent's [DEFAULT] host (what its reports name,
Nova's compute host name). Keys are printed to stdout only; keep them
out of logs and shell history.
"""


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog=PROG, description=__doc__.split('\n\n')[0].split(': ', 1)[1],
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('--config-file', action='append', default=None,
                   metavar='PATH',
                   help='scheduler configuration holding [iosched] '
                        'report_master_key (repeatable; default '
                        '/etc/nova/nova.conf)')
    p.add_argument('--host', action='append', required=True,
                   metavar='NAME', help='compute host name (repeatable)')
    p.add_argument('--format', choices=('plain', 'ini'), default='plain',
                   help='plain: the key (one host) or "HOST KEY" lines; '
                        'ini: a [reporter] snippet per host')
    return p.parse_args(argv)


def master_key_from(config_files):
    conf = cfg.ConfigOpts()
    iosched_conf.register_opts(conf)
    conf([], project='nova', default_config_files=config_files,
         default_config_dirs=[])
    return conf.iosched.report_master_key


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    files = args.config_file or ['/etc/nova/nova.conf']
    try:
        master = master_key_from(files)
    except (cfg.Error, OSError, ValueError) as e:
        print(clip('%s: cannot read %s: %s' % (PROG, ', '.join(files), e)),
              file=sys.stderr)
        return EXIT_BAD_INPUT
    lines = []
    for host in args.host:
        if not host.strip() or host != host.strip():
            print(clip('%s: --host %r: give the compute host name exactly as '
                       'the agent\'s [DEFAULT] host, without blanks'
                       % (PROG, host)), file=sys.stderr)
            return EXIT_BAD_INPUT
        try:
            key = signature.derive_host_key(master, host)
        except signature.BadKey as e:
            print('%s: [iosched] report_master_key in %s: %s' % (
                PROG, ', '.join(files), e), file=sys.stderr)
            return EXIT_BAD_INPUT
        if args.format == 'ini':
            lines.append('# %s\n[reporter]\nreport_key = %s\n' % (host, key))
        elif len(args.host) == 1:
            lines.append(key)
        else:
            lines.append('%s %s' % (host, key))
    print('\n'.join(lines))
    return EXIT_OK


if __name__ == '__main__':
    sys.exit(main())
