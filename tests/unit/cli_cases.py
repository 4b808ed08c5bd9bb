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
"""Hostile command lines for every installed command (test_cli_fuzz).

``COMMANDS`` is the table: per command (or sub-command) a valid base argv
that runs offline in milliseconds (cli_env.Env replaces the bus, libvirt,
Cinder, Nova, privsep and the long simulations with fakes), and its
options, each with the kind of value it takes and an oracle saying which
values are valid. ``cases(cmd, files)`` is a hypothesis strategy of one
fault each: an unknown option, an option without its value, a hostile
value (wrong type, NaN/inf, huge, empty, 10,000 characters, control
characters, unicode, missing or wrong-kind paths, malformed JSON/YAML/INI
files), a sub-command that does not exist.
"""

import dataclasses
import math
import os
import re
import threading

from hypothesis import strategies as st

from tests.unit.cli_env import BAD_FILES
from tests.unit.cli_env import SECRET_URL

LONG = 'x' * 10000
# NUL-free control characters, unicode, shell-ish and option-like text
ODD_TEXT = ['', ' ', LONG, '\u00e9\u2713\U0001d11e', '\x01\x1b[31m\t\r\n\x7f',
            '-', '--', '-x', '../../etc/passwd', '%s%d{}', "'\"", '\u202e']
NUM_TEXT = ['', ' ', '0', '-0', '1', '2', '-1', '-5', '3.5', '1e309',
            '-1e309', 'nan', 'NaN', '-nan', 'inf', '-inf', 'Infinity',
            '1e-320', '99999999999999999999', '0x10', '1_000', ' 7 ', '+3',
            '\u0661\u0662', 'abc', LONG, '1e9', '86400', '5000', '50',
            '16', '8', '0.5', '0.001', '1e7', '2147483648']


# -- oracles -----------------------------------------------------------------

def int_in(lo=None, hi=None, above=False):
    """Valid iff argparse's int() parses it and it is in lo..hi;
    ``above``: what a value above ``hi`` is (None: not known here).
    """
    def oracle(text, files):
        try:
            v = int(text)
        except ValueError:
            return False
        if lo is not None and v < lo:
            return False
        return above if hi is not None and v > hi else True
    return oracle


def float_in(lo=None, hi=None, lo_open=False, above=False, inf=False):
    """Valid iff float() parses it to a number in the range (infinity
    only if ``inf``); ``above`` as for int_in.
    """
    def oracle(text, files):
        try:
            v = float(text)
        except ValueError:
            return False
        if math.isnan(v) or (math.isinf(v) and not (inf and v > 0)):
            return False
        if lo is not None and (v < lo or (lo_open and v == lo)):
            return False
        return above if hi is not None and v > hi else True
    return oracle


def one_of(*accepted):
    return lambda text, files: text in accepted


def anything(text, files):
    return None


def any_text(text, files):
    return True


def files_valid(**tags):
    """Valid iff the path is a file tagged True; False for tags given
    False and for missing paths and directories; else unknown.
    """
    def oracle(text, files):
        for name, ok in tags.items():
            if text == files[name]:
                return ok
        for name in ('missing', 'dir', 'long', 'ctrl'):
            if text == files[name]:
                return False
        return None
    return oracle


def _bad_files(*names, **extra):
    tags = {n: False for n in names}
    tags.update(extra)
    return tags


NOT_INI = _bad_files('binary', 'ini_garbage', 'ini_noheader', 'ini_badvalue',
                     'json_garbage', 'yaml_garbage', 'gzip_garbage')
NOT_JSON = _bad_files('empty', 'binary', 'latin1', 'json_garbage',
                      'json_list', 'json_obj', 'json_null', 'json_str',
                      'json_wrong', 'json_deep', 'ini_garbage',
                      'yaml_garbage', 'gzip_garbage', 'dev_null',
                      'good_agent_conf', 'good_nova_conf', 'yaml_scalar')
NOT_YAML_SCENARIO = _bad_files(
    'empty', 'binary', 'latin1', 'json_garbage', 'json_list', 'json_null',
    'json_str', 'json_wrong', 'yaml_garbage', 'yaml_tab', 'yaml_scalar',
    'yaml_list', 'yaml_alias_bomb', 'gzip_garbage', 'dev_null',
    'ini_garbage', 'ini_noheader')
# (a header and no events is an empty trace: valid)
NOT_TRACE = _bad_files(*[n for n in BAD_FILES if n != 'trace_header_only']
                       + ['dev_null', 'good_agent_conf', 'good_scenario'])
NOT_GUESTS = _bad_files('empty', 'binary', 'latin1', 'json_garbage',
                        'json_list', 'json_null', 'json_str', 'json_wrong',
                        'json_obj', 'yaml_garbage', 'yaml_tab', 'yaml_scalar',
                        'yaml_list', 'yaml_alias_bomb', 'gzip_garbage',
                        'dev_null', 'ini_garbage', 'ini_noheader')


def out_path(text, files):
    """An output file: valid iff its directory exists and it is not a
    directory itself.
    """
    if text in ('', ' ') or text == files['dir']:
        return False if text != ' ' else None
    if text in (files['long'], '/dev/null/x/y', '/dev/null/x'):
        return False
    return None


def out_dir(text, files):
    """An output directory: created if missing; a file or a path under a
    missing parent chain is refused.
    """
    if text in ('', files['long'], '/dev/null/x/y', '/dev/null/x'):
        return False
    return None


# -- the table ---------------------------------------------------------------

@dataclasses.dataclass
class Opt:
    """An option (``flag`` None: a positional) and what it takes.

    kind: 'flag' (no value), 'num', 'text', 'in' (input path), 'out'
    (output path), 'choice'. ``oracle(value, files)``: True valid, False
    invalid, None unknown (only the generic invariants are checked).
    ``name``: what the error message must mention.
    """

    flag: object
    kind: str
    oracle: object = anything
    choices: tuple = ()
    name: str = None
    index: int = None       # positional: where in the base argv

    def said(self):
        return self.name or self.flag


@dataclasses.dataclass
class Command:
    """One command or sub-command of the table."""

    name: str
    runner: str                 # Env method that runs it
    base: object                # files -> valid argv
    opts: list
    subcommand_at: int = None   # index of a sub-command word in base
    writes: bool = False        # Env.written() must stay False on failure
    fail_codes: tuple = (1, 2)  # exit codes for bad input
    # errors may be on stdout: the agent logs there (oslo.log without a
    # log file), osc prints an unknown command's "did you mean" there
    stdout_counts: bool = False


AGENT_IN = dict(NOT_INI, good_agent_conf=True, empty=True, dev_null=True)
NOVA_IN = dict(NOT_INI, good_nova_conf=True, empty=True, dev_null=True)
# iosched-placement and iosched-status want regular files
NOVA_FILE = dict(NOVA_IN, dev_null=False)
CINDER_IN = dict(NOT_INI, good_cinder_conf=True, empty=True, dev_null=True)

OSLO_LOG_OPTS = [
    # oslo.log: an empty --log-file is no log file
    Opt('--log-file', 'out', lambda t, f: None if t == '' else out_path(
        t, f)),
    Opt('--log-dir', 'out', lambda t, f: None if t == '' else out_dir(t, f)),
    Opt('--log-config-append', 'in', files_valid(**_bad_files(
        'empty', 'binary', 'json_garbage', 'ini_garbage', 'ini_noheader',
        'yaml_garbage', 'dev_null'))),
    Opt('--log-date-format', 'text'),
    Opt('--debug', 'flag', any_text),
    Opt('--use-json', 'flag', any_text),
]

SLO_TYPE_OPTS = [
    Opt('--headroom', 'num', float_in(1, 1000, above=None)),
    Opt('--qd', 'num', int_in(1, 1000000, above=None)),
    Opt('--min-latency-ms', 'num', anything),
    Opt('--config-file', 'in', files_valid(**CINDER_IN)),
    Opt('--dry-run', 'flag', any_text),
    Opt('-f', 'choice', one_of('table', 'json', 'yaml', 'value', 'shell'),
        ('table', 'json', 'yaml', 'value', 'shell', 'csv', 'xml')),
    Opt(None, 'text', anything, name='SLO', index=None),
]

IOTRACE_ANALYSIS = [
    Opt('--window', 'num', float_in(0.01, 3600)),
    Opt('--step', 'num', float_in(0.001, 60)),
    Opt('--min-wait', 'num', float_in(0.0, 3600)),
]


def _slo_type(verb, extra, osc=False):
    prefix = ['volume', 'slo', 'type'] if osc else ['type']
    opts = [o for o in SLO_TYPE_OPTS if o.flag is not None]
    if verb == 'create':
        opts = opts + [Opt('--force', 'flag', any_text)]
    opts = opts + [Opt(None, 'text', anything, name='SLO',
                       index=len(prefix) + 2)]
    return Command(
        ('openstack volume slo type %s' if osc else 'iosched-slo type %s')
        % verb, 'osc' if osc else 'slo',
        lambda files: prefix + [verb, 'gold' if verb == 'set' else 'silver',
                                '500iops,10ms,p99'] + extra,
        opts, subcommand_at=len(prefix), writes=True,
        fail_codes=(1, 2, 3, 4), stdout_counts=osc)


def _slo_simple(verb, osc=False):
    prefix = ['volume', 'slo', 'type'] if osc else ['type']
    args = {'list': [], 'show': ['gold'], 'delete': ['gold']}[verb]
    opts = []
    if verb != 'delete':
        opts.append(Opt('-f', 'choice', one_of('table', 'json', 'yaml',
                                               'value', 'csv')
                        if verb == 'list' else
                        one_of('table', 'json', 'yaml', 'value', 'shell'),
                        ('table', 'json', 'yaml', 'value', 'shell', 'csv',
                         'xml')))
    if args:
        opts.append(Opt(None, 'text', anything, name='NAME',
                        index=len(prefix) + 1))
    return Command(
        ('openstack volume slo type %s' if osc else 'iosched-slo type %s')
        % verb, 'osc' if osc else 'slo',
        lambda files: prefix + [verb] + args, opts,
        subcommand_at=len(prefix), writes=True, fail_codes=(1, 2, 3, 4),
        stdout_counts=osc)


COMMANDS = [
    Command('io-host-agent', 'agent',
            lambda files: ['--config-file', files['good_agent_conf']],
            [Opt('--config-file', 'in', files_valid(**AGENT_IN)),
             Opt('--config-dir', 'in', files_valid(dir=True, missing=False,
                                                   long=False))]
            + OSLO_LOG_OPTS, stdout_counts=True),
    Command('iosched-explain', 'explain',
            lambda files: ['--journal', files['good_journal']],
            [Opt('--journal', 'in', files_valid(**dict(
                _bad_files('binary', 'latin1', 'json_garbage', 'json_list',
                           'json_null', 'json_str', 'json_wrong',
                           'ini_garbage', 'yaml_garbage', 'gzip_garbage'),
                good_journal=True, empty=True, dev_null=True))),
             Opt('--config-file', 'in', anything),
             Opt('--instance', 'text', any_text),
             Opt('--kind', 'text', any_text),
             Opt('--json', 'flag', any_text)]),
    Command('iosched-explain --report', 'explain',
            lambda files: ['--report', files['good_report']],
            [Opt('--report', 'in', files_valid(**dict(
                NOT_JSON, good_report=True))),
             Opt('--journal', 'in', lambda t, f: False),
             Opt('--instance', 'text', any_text),
             Opt('--json', 'flag', any_text)]),
    Command('iosched-wakeup-probe', 'wakeup',
            lambda files: ['--config-file', files['good_agent_conf'],
                           '--wakes', '50'],
            [Opt('--wakes', 'num', int_in(50, 5000)),
             Opt('--hogs-per-cpu', 'num', int_in(0, 8)),
             Opt('--cases', 'text', anything),
             # reads [host_agent_policy.vslicer], [libvirt], [host_paths]
             Opt('--config-file', 'in', files_valid(**dict(
                 AGENT_IN, ini_badvalue=None, ini_badchoice=None))),
             Opt('--config-dir', 'in', files_valid(dir=True, missing=False,
                                                   long=False)),
             Opt('--json', 'flag', any_text)]),
    Command('iosched-placement', 'placement',
            lambda files: ['--report', files['good_report'], '--report',
                           files['good_report2'], '--vcpus', '2',
                           '--config-file', files['good_nova_conf']],
            [Opt('--vcpus', 'num', int_in(1)),
             Opt('--slo-iops', 'num', float_in(0)),
             Opt('--wait', 'num', anything),
             Opt('--report', 'in', files_valid(**dict(
                 NOT_JSON, good_report=True))),
             Opt('--config-file', 'in', files_valid(**NOVA_FILE)),
             Opt('--property', 'text', anything),
             Opt('--host', 'text', lambda t, f: t in ('compute-1',
                                                      'compute-2')),
             Opt('--flavor', 'text', lambda t, f: False),
             # read only with --flavor / --check-flavors
             Opt('--os-cloud', 'text', any_text),
             # --check-flavors refuses the placement options of the base;
             # --lsvm-vcpu-share is refused without it
             Opt('--check-flavors', 'flag', lambda t, f: False),
             Opt('--lsvm-vcpu-share', 'num', lambda t, f: False),
             Opt('--json', 'flag', any_text)]),
    Command('iosched-placement (bus)', 'placement',
            lambda files: ['--transport-url', SECRET_URL,
                           '--vcpus', '2', '--wait', '0.5',
                           '--config-file', files['good_nova_conf']],
            # listens until a report interval passed: inf is fine
            [Opt('--wait', 'num', float_in(0, lo_open=True, inf=True)),
             Opt('--transport-url', 'text', anything),
             Opt('--host', 'text', lambda t, f: bool(t.strip())),
             Opt('--vcpus', 'num', int_in(1))]),
    Command('iosched-status', 'status',
            lambda files: ['--transport-url', SECRET_URL,
                           '--host', 'compute-1', '--wait', '0.5',
                           '--config-file', files['good_nova_conf']],
            # threading's longest wait
            [Opt('--wait', 'num', float_in(0, threading.TIMEOUT_MAX,
                                           lo_open=True)),
             Opt('--max-age', 'num', float_in(0, inf=True)),
             # reads transport_url and the topics only
             Opt('--config-file', 'in', files_valid(**dict(
                 NOVA_FILE, ini_badvalue=None, ini_badchoice=None))),
             Opt('--transport-url', 'text', anything),
             Opt('--topic', 'text', anything),
             Opt('--agents-topic', 'text', anything),
             Opt('--host', 'text', anything),
             Opt('--no-resync', 'flag', any_text),
             Opt('--json', 'flag', any_text)]),
    Command('iosched-report-key', 'report_key',
            lambda files: ['--config-file', files['good_nova_conf'],
                           '--host', 'compute-1'],
            [Opt('--host', 'text', lambda t, f: (
                bool(t.strip()) and t == t.strip()) or False),
             Opt('--format', 'choice', one_of('plain', 'ini'),
                 ('plain', 'ini', 'json')),
             # added to the base's nova.conf, which has the master key;
             # only [iosched] report_master_key is read
             Opt('--config-file', 'in', files_valid(**dict(
                 NOVA_IN, ini_badvalue=None, ini_badchoice=None)))]),
    Command('iosched-demo', 'demo',
            lambda files: ['-q', '-o', 'out'],
            [Opt('--scenario', 'in', files_valid(**dict(
                NOT_YAML_SCENARIO, good_scenario=True))),
             Opt('-o', 'out', out_dir),
             Opt('--transport-url', 'text', lambda t, f: (
                 True if t in ('fake:/', SECRET_URL)
                 else False if t in ODD_TEXT else None)),
             Opt('-v', 'flag', any_text)]),
    Command('iosched-slo translate', 'slo',
            lambda files: ['translate', '500iops,10ms,p99'],
            [Opt('--headroom', 'num', float_in(1, 1000, above=None)),
             Opt('--qd', 'num', int_in(1, 1000000, above=None)),
             Opt('--format', 'choice', one_of('table', 'json'),
                 ('table', 'json', 'yaml')),
             Opt('--config-file', 'in', files_valid(**CINDER_IN)),
             Opt(None, 'text', anything, name='SLO', index=1)],
            subcommand_at=0),
    # check prints the problems it finds on stdout and exits 1
    Command('iosched-slo check', 'slo',
            lambda files: ['check', 'total_iops_sec=400'],
            [Opt('--format', 'choice', one_of('table', 'json'),
                 ('table', 'json', 'yaml')),
             Opt(None, 'text', anything, name='KEY=VALUE', index=1)],
            subcommand_at=0, stdout_counts=True),
    _slo_type('create', []),
    _slo_type('set', []),
    _slo_simple('list'),
    _slo_simple('show'),
    _slo_simple('delete'),
    _slo_type('create', [], osc=True),
    _slo_type('set', [], osc=True),
    _slo_simple('show', osc=True),
    _slo_simple('delete', osc=True),
    Command('iosched-testbed up', 'testbed',
            lambda files: ['up', '--guest', 'g1:rr', '--timeout', '5'],
            [Opt('--guest', 'text', anything),
             Opt('--spec', 'in', files_valid(**dict(
                 NOT_GUESTS, good_guests=True))),
             Opt('--pin', 'num', int_in(0, (os.cpu_count() or 1) - 1)),
             Opt('--timeout', 'num', float_in(0, lo_open=True)),
             Opt('--workdir', 'out', anything),
             Opt('--prefix', 'text', anything),
             Opt('--fix-kvm-perms', 'flag', any_text)],
            subcommand_at=0, writes=True),
    Command('iosched-testbed status', 'testbed',
            lambda files: ['status'],
            [Opt('--json', 'flag', any_text)],
            subcommand_at=0, writes=True),
    # (up and down are faked: nothing real starts, cli_env.Env.run_cloud)
    Command('iosched-cloud env', 'cloud',
            lambda files: ['--state-dir', files['dir'], 'env'],
            [Opt(None, 'in', anything, name='state-dir', index=1)],
            subcommand_at=2),
    Command('iosched-cloud status', 'cloud',
            lambda files: ['--state-dir', files['dir'], 'status'],
            [Opt(None, 'in', anything, name='state-dir', index=1),
             Opt('--json', 'flag', any_text)],
            # "no cloud in DIR" on stdout, exit 3
            subcommand_at=2, fail_codes=(1, 2, 3), stdout_counts=True),
    Command('iosched-cloud up', 'cloud',
            lambda files: ['--state-dir', files['dir'], 'up',
                           '--fake-computes', '1'],
            [Opt(None, 'in', anything, name='state-dir', index=1),
             Opt('--fake-computes', 'num', int_in(0, 8))],
            subcommand_at=2, writes=True),
    Command('iosched-cloud down', 'cloud',
            lambda files: ['--cache-dir', files['dir'], 'down'],
            [Opt(None, 'in', anything, name='cache-dir', index=1),
             Opt('--purge', 'flag', any_text)],
            subcommand_at=2, writes=True),
    Command('iosched-iotrace simulate', 'iotrace',
            lambda files: ['simulate', '-o', 'sim.jsonl.gz'],
            [Opt('--scheduler', 'choice', one_of('cfq', 'va-cfq'),
                 ('cfq', 'va-cfq', 'bfq')),
             Opt('--vms', 'num', int_in(2, 16)),
             Opt('--gib', 'num', float_in(0.001, 8)),
             Opt('--seed', 'num', int_in(0, 2 ** 31)),
             Opt('--commit-ms', 'num', float_in(1, 1e7)),
             Opt('-o', 'out', out_path)],
            subcommand_at=0, writes=True),
    Command('iosched-iotrace record', 'iotrace',
            lambda files: ['record', '--device', files['blockdev'],
                           '--duration',
                           '1', '-o', 'rec.jsonl.gz'],
            [Opt('--device', 'text', anything),
             Opt('--duration', 'num', float_in(0.1, 86400)),
             Opt('--buffer-kb', 'num', int_in(64, 1 << 20)),
             Opt('--poll', 'num', float_in(0.01, 5)),
             Opt('--tracefs', 'in', anything),
             Opt('--domain', 'text', anything),
             Opt('-o', 'out', out_path)],
            subcommand_at=0, writes=True),
    Command('iosched-iotrace analyze', 'iotrace',
            lambda files: ['analyze', files['good_trace']],
            IOTRACE_ANALYSIS + [
                Opt('--json', 'flag', any_text),
                Opt(None, 'in', files_valid(**dict(NOT_TRACE,
                                                   good_trace=True)),
                    name='trace', index=1)],
            subcommand_at=0),
    Command('iosched-iotrace render', 'iotrace',
            lambda files: ['render', files['good_trace'], '-o', 'rep'],
            IOTRACE_ANALYSIS + [
                Opt('-o', 'out', out_dir),
                Opt(None, 'in', files_valid(**dict(NOT_TRACE,
                                                   good_trace=True)),
                    name='trace', index=1)],
            subcommand_at=0, writes=True),
]
COMMANDS = {c.name: c for c in COMMANDS}


# -- strategies --------------------------------------------------------------

SAFE_TEXT = st.text(st.characters(blacklist_categories=('Cs',),
                                  blacklist_characters='\x00'),
                    max_size=40)


def values(opt, files):
    """Hostile values for one option."""
    if opt.kind == 'num':
        return st.one_of(
            st.sampled_from(NUM_TEXT),
            st.integers(-2 ** 70, 2 ** 70).map(str),
            st.floats(allow_nan=True, allow_infinity=True).map(repr),
            SAFE_TEXT)
    if opt.kind == 'choice':
        return st.one_of(st.sampled_from(opt.choices),
                         st.sampled_from(ODD_TEXT), SAFE_TEXT)
    if opt.kind == 'in':
        return st.one_of(
            st.sampled_from(sorted(files.paths.values())),
            st.binary(max_size=300).map(files.written),
            st.sampled_from(ODD_TEXT))
    if opt.kind == 'out':
        return st.one_of(
            # (a missing input path must stay missing: never written)
            st.sampled_from(['out2', 'a/b/c', '/dev/null/x/y',
                             files['dir'], files['long'], 'e\u0301\u2713',
                             'a\x01b', '/dev/null/x', './']),
            st.sampled_from(ODD_TEXT))
    return st.one_of(st.sampled_from(ODD_TEXT + NUM_TEXT[:8]), SAFE_TEXT)


@dataclasses.dataclass
class Case:
    """One hostile argv and what must happen."""

    fault: str
    argv: list
    valid: object = None        # True / False / None (unknown)
    names: tuple = ()           # one of these must be in the error text

    def __repr__(self):
        return 'Case(%s, %r)' % (self.fault, [
            a if len(a) < 80 else a[:40] + '...(%d)' % len(a)
            for a in self.argv])


def _said(opt, value=None):
    names = [opt.said()]
    if opt.flag:
        names.append(opt.flag.lstrip('-'))
    if value and value.strip() and len(value) < 80 and value.isprintable():
        names.append(value)
    elif value and opt.kind in ('in', 'out'):
        names.append(value[:60])        # the file may be named instead
    return tuple(names)


NEGATIVE_NUMBER = re.compile(r'^-\d+$|^-\d*\.\d+$')


def option_like(value):
    """argparse takes this value for an option (a usage error): it starts
    with '-', is not '-' or a negative number and has no blank.
    """
    return (value.startswith('-') and value != '-' and ' ' not in value
            and not NEGATIVE_NUMBER.match(value))


def cases(cmd, files):
    """A strategy of Case for ``cmd``."""
    base = cmd.base(files)
    strategies = [
        SAFE_TEXT.map(lambda t: Case(
            'unknown option', base + ['--zz-' + t.replace('=', '')],
            False, ('--zz-',))),
    ]
    with_value = [o for o in cmd.opts if o.flag and o.kind != 'flag']
    if with_value:
        strategies.append(st.sampled_from(with_value).map(lambda o: Case(
            'no value', base + [o.flag], False, _said(o))))

    def bad_value(opt):
        def make(value):
            if opt.flag is None:
                argv = list(base)
                argv[opt.index] = value
            else:
                argv = base + [opt.flag, value]
            valid = opt.oracle(value, files)
            if option_like(value):
                valid = False
            return Case('value of %s' % opt.said(), argv, valid,
                        _said(opt, value))
        return values(opt, files).map(make)

    valued = [o for o in cmd.opts if o.kind != 'flag']
    if valued:
        strategies.append(st.one_of([bad_value(o) for o in valued]))
    flags = [o for o in cmd.opts if o.kind == 'flag']
    if flags:
        strategies.append(st.sampled_from(flags).map(lambda o: Case(
            'flag %s' % o.flag, base + [o.flag], o.oracle('', files))))
    if cmd.subcommand_at is not None:
        def bad_sub(word):
            argv = list(base)
            argv[cmd.subcommand_at] = 'zz' + word
            return Case('unknown sub-command', argv, False,
                        ('zz' + word, 'invalid choice', 'Unknown command'))
        strategies.append(SAFE_TEXT.map(bad_sub))
    return st.one_of(strategies)


def examples(default=None):
    """Cases per command: IOSCHED_CLI_FUZZ_EXAMPLES, else ``default``."""
    return int(os.environ.get('IOSCHED_CLI_FUZZ_EXAMPLES', default))
