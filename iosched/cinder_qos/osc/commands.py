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

"""The SLO type commands, shared by ``iosched-slo type`` and ``openstack
volume slo type``: cliff ShowOne/Lister classes over iosched.cinder_qos.client.

The app gives the client: osc's ``client_manager.volume_slo``, or
``app.make_admin(parsed_args)`` in iosched-slo (openstacksdk auth from
``--os-cloud``/clouds.yaml or OS_* env). Errors are written as one line
to stderr and returned as exit codes (iosched.cinder_qos.client.EXIT_*).
"""

import re

from cliff import columns
from cliff import command
from cliff import lister
from cliff import show
from oslo_config import cfg

from iosched.cinder_qos import client
from iosched.cinder_qos.cmd import clip
from iosched.cinder_qos import conf as conf_mod

# oslo's "Value for option X from LocationInfo(...) is not valid:": the
# file is said once, before
_VALUE_FROM = re.compile(r'^Value for option (\S+) from .*? is not valid:')
COLUMNS = ('name', 'qos_spec', 'consumer', 'slo', 'properties', 'result')


def options(path=None):
    """The [cinder_qos] values: built-in defaults, or read from ``path``.

    Every value is read here (oslo reads them lazily), so a bad one is a
    ``client.InputError`` (exit 2, nothing sent to Cinder) naming the file
    and option, for every sub-command alike.
    """
    conf = cfg.ConfigOpts()
    conf_mod.register_opts(conf)
    try:
        conf(args=[], project='iosched', prog='iosched-slo',
             default_config_files=[path] if path else [])
        group = conf.cinder_qos
        for opt in conf_mod.OPTS:
            getattr(group, opt.dest)
    except cfg.ConfigFileValueError as e:
        raise client.InputError('--config-file %s: [cinder_qos] %s' % (
            path, _VALUE_FROM.sub(lambda m: m.group(1) + ' =', str(e),
                            count=1))) from e
    except cfg.Error as e:
        raise client.InputError('--config-file %s: %s; accepted: an ini '
                                'file with [cinder_qos]' % (path, e)) from e
    except (OSError, ValueError) as e:     # a directory, not UTF-8, ...
        raise client.InputError('--config-file %s: %s; accepted: an ini '
                                'file with [cinder_qos]' % (path, e)) from e
    return group


class SpecsColumn(columns.FormattableColumn):
    """QoS spec keys: one KEY=VALUE a line in tables, a dict in JSON."""

    def human_readable(self):
        return '\n'.join('%s=%s' % kv for kv in self._value.items())

    def machine_readable(self):
        return dict(self._value)


class LinesColumn(columns.FormattableColumn):
    """Actions: one a line in tables, a list in JSON."""

    def human_readable(self):
        return '\n'.join(self._value)

    def machine_readable(self):
        return list(self._value)


def row(r):
    """A Result as ShowOne's (columns, values)."""
    return COLUMNS, (r.type_name, r.qos_name, r.consumer, r.slo_text,
                     SpecsColumn(r.specs), LinesColumn(r.actions))


class _NeedsAuth:
    """What osc's prepare_to_run_command needs to authenticate late."""

    auth_required = True
    cmd_name = 'volume slo'


class _Base:
    """Admin client look-up, --os-cloud outside osc, errors as exit codes."""

    auth_required = True

    def _in_osc(self):
        return hasattr(self.app, 'client_manager')

    def _add_cloud(self, parser):
        if not self._in_osc():
            parser.add_argument(
                '--os-cloud', metavar='CLOUD',
                help='cloud in clouds.yaml (default: env OS_CLOUD, or the '
                     'OS_* auth variables)')

    def admin(self, parsed_args):
        if self._in_osc():
            if not self.auth_required:
                # osc skipped auth for --dry-run's sake; do it now
                self.app.prepare_to_run_command(_NeedsAuth())
            return self.app.client_manager.volume_slo
        return self.app.make_admin(parsed_args)

    def run(self, parsed_args):
        try:
            return super().run(parsed_args)
        except client.AdminError as e:
            self.app.stderr.write(clip('error: %s\n' % e))
            return e.code


def _slo_args(parser, verb):
    parser.add_argument('name', metavar='NAME',
                        help='volume type name (its QoS spec gets the same '
                             'name)')
    parser.add_argument('slo', metavar='SLO',
                        help='e.g. "500iops,10ms,p99" (see iosched-slo '
                             'translate --help)')
    parser.add_argument('--headroom', type=float, metavar='H',
                        help='ceiling factor h >= 1 (default: [cinder_qos] '
                             'headroom, 1.5)')
    parser.add_argument('--qd', type=int, metavar='N',
                        help="expected outstanding requests; overrides the "
                             "SLO's qd= (default 16)")
    parser.add_argument('--min-latency-ms', type=float, metavar='MS',
                        help="the back end's measured latency: an SLO "
                             'latency below it is refused')
    parser.add_argument('--config-file', metavar='PATH',
                        help='read [cinder_qos] defaults from this file')
    parser.add_argument('--dry-run', action='store_true',
                        help='print the QoS spec and type that would be %s; '
                             'no API call' % verb)


def _plan(parsed_args):
    opts = options(parsed_args.config_file)
    headroom = (parsed_args.headroom if parsed_args.headroom is not None
                else opts.headroom)
    return client.plan(
        parsed_args.name, parsed_args.slo, headroom=headroom,
        expected_qd=parsed_args.qd,
        min_latency_ms=parsed_args.min_latency_ms,
        default_expected_qd=opts.default_expected_qd,
        latency_class_threshold=opts.latency_class_threshold,
        default_ref_io_bytes=opts.default_ref_io_bytes)


def _dry(p, verb):
    return row(client.Result(p.type_name, p.qos_name, p.consumer, p.specs,
                             p.slo_text, ['dry run: would %s; nothing sent '
                                          'to Cinder' % verb]))


class CreateSloType(_Base, show.ShowOne):
    """Create a volume type with the QoS spec of an SLO, associated.

    Idempotent: an equal spec, type and association are left unchanged.
    An existing QoS spec with other keys is refused (exit 3) unless
    --force, which updates its keys.
    """

    # osc authenticates before a command runs unless this is False;
    # admin() authenticates instead, so --dry-run needs no credentials.
    auth_required = False

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        _slo_args(parser, 'created')
        parser.add_argument('--force', action='store_true',
                            help='update an existing QoS spec of this name '
                                 'whose keys differ')
        self._add_cloud(parser)
        return parser

    def take_action(self, parsed_args):
        p = _plan(parsed_args)
        if parsed_args.dry_run:
            return _dry(p, 'create QoS spec %s (consumer %s), volume type %s '
                           'and associate them' % (p.qos_name, p.consumer,
                                                   p.type_name))
        return row(self.admin(parsed_args).create(p,
                                                  force=parsed_args.force))


class SetSloType(_Base, show.ShowOne):
    """Change the SLO of a type: update its QoS spec keys in place.

    Volumes already attached keep Nova's ceiling until re-attach; the
    iosched agent reads the new SLO.
    """

    # osc authenticates before a command runs unless this is False;
    # admin() authenticates instead, so --dry-run needs no credentials.
    auth_required = False

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        _slo_args(parser, 'updated')
        self._add_cloud(parser)
        return parser

    def take_action(self, parsed_args):
        p = _plan(parsed_args)
        if parsed_args.dry_run:
            return _dry(p, 'set the keys of QoS spec %s' % p.qos_name)
        return row(self.admin(parsed_args).set(p))


class ShowSloType(_Base, show.ShowOne):
    """Show an SLO type: its QoS spec, keys and SLO."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('name', metavar='NAME', help='volume type name '
                            'or ID')
        self._add_cloud(parser)
        return parser

    def take_action(self, parsed_args):
        return row(self.admin(parsed_args).show(parsed_args.name))


class ListSloType(_Base, lister.Lister):
    """List SLO types: volume types whose QoS spec has iosched:* keys."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        self._add_cloud(parser)
        return parser

    def take_action(self, parsed_args):
        rows = [(r.type_name, r.qos_name, r.slo_text,
                 r.specs.get('total_iops_sec', ''),
                 r.specs.get('iosched:class', ''))
                for r in self.admin(parsed_args).list()]
        return ('Name', 'QoS spec', 'SLO', 'Ceiling (IOPS)', 'Class'), rows


class DeleteSloType(_Base, command.Command):
    """Delete an SLO type and its QoS spec.

    Refused (exit 3) while volumes use the type; the spec is kept if
    other types use it.
    """

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('name', metavar='NAME', help='volume type name '
                            'or ID')
        self._add_cloud(parser)
        return parser

    def take_action(self, parsed_args):
        r = self.admin(parsed_args).delete(parsed_args.name)
        for a in r.actions:
            self.app.stdout.write('%s\n' % a)
        return 0


COMMANDS = {
    'type create': CreateSloType,
    'type list': ListSloType,
    'type show': ShowSloType,
    'type set': SetSloType,
    'type delete': DeleteSloType,
}
