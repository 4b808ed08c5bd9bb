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
that runs offline in milliseconds (``Env`` replaces the bus, libvirt,
Cinder, Nova, privsep and the long simulations with fakes), and its
options, each with the kind of value it takes and an oracle saying which
values are valid. ``cases(cmd)`` is a hypothesis strategy of one fault
each: an unknown option, an option without its value, a hostile value
(wrong type, NaN/inf, huge, empty, 10,000 characters, control characters,
unicode, missing or wrong-kind paths, malformed JSON/YAML/INI files), a
sub-command that does not exist. ``run`` calls the command's ``main``
in-process and returns (exit code, stdout, stderr); any other exception
escapes to the test.
"""

import contextlib
import dataclasses
import functools
import io
import logging
import math
import os
import re
import sys
import threading
import time
import warnings

from hypothesis import strategies as st

LONG = 'x' * 10000
# NUL-free control characters, unicode, shell-ish and option-like text
ODD_TEXT = ['', ' ', LONG, '\u00e9\u2713\U0001d11e', '\x01\x1b[31m\t\r\n\x7f',
            '-', '--', '-x', '../../etc/passwd', '%s%d{}', "'\"", '\u202e']
NUM_TEXT = ['', ' ', '0', '-0', '1', '2', '-1', '-5', '3.5', '1e309',
            '-1e309', 'nan', 'NaN', '-nan', 'inf', '-inf', 'Infinity',
            '1e-320', '99999999999999999999', '0x10', '1_000', ' 7 ', '+3',
            '\u0661\u0662', 'abc', LONG, '1e9', '86400', '5000', '50',
            '16', '8', '0.5', '0.001', '1e7', '2147483648']


class Started(Exception):
    """Raised by a fake where the command would start its real work."""


class Hang(Exception):
    """Raised by a fake clock when a command would loop for ever."""


# -- files -------------------------------------------------------------------

GOOD_AGENT_CONF = '[host_agent]\ndriver = simulated\n'
GOOD_NOVA_CONF = ('[iosched]\nreport_master_key = %s\n' % ('ab' * 32))
GOOD_CINDER_CONF = '[cinder_qos]\nheadroom = 2.0\n'
GOOD_SCENARIO = None        # the embedded default's text, read in Files
BAD_FILES = {
    'empty': b'',
    'binary': bytes(range(256)) * 4,
    'latin1': 'caf\u00e9 [x\n'.encode('latin-1'),
    'json_garbage': b'{"a": [1, 2,,}',
    'json_list': b'[]',
    'json_obj': b'{}',
    'json_null': b'null',
    'json_str': b'"x"',
    'json_wrong': b'{"host": 1, "ts": "soon", "version": "9.9"}',
    'json_deep': b'[' * 5000 + b']' * 5000,
    'ini_garbage': b'[host_agent\nfoo',
    'ini_noheader': b'just = text\n',
    'ini_badvalue': (b'[host_agent]\ntick_interval = abc\n'
                     b'[iosched]\nreport_ttl_intervals = abc\n'
                     b'[cinder_qos]\nheadroom = abc\n'),
    'ini_badchoice': (b'[host_agent]\ndriver = nosuch\n'
                      b'[iosched]\nmissing_report_policy = perhaps\n'),
    'yaml_garbage': b'a: [1, 2\n  b: {',
    'yaml_tab': b'a:\n\t- 1\n',
    'yaml_scalar': b'just a string\n',
    'yaml_list': b'- 1\n- two\n- {x: 3}\n',
    'yaml_alias_bomb': (b'a: &a ["x","x","x","x","x","x","x","x","x"]\n'
                        b'b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n'
                        b'c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n'),
    'gzip_garbage': b'\x1f\x8b\x08\x00garbage',
    'trace_header_only': b'{"format": "iosched-iotrace", "version": 1}\n',
}


class Files(object):
    """Input files of every kind under ``root`` (one per session)."""

    def __init__(self, root, tiny_trace):
        self.root = root
        os.makedirs(root, exist_ok=True)
        self.paths = {}
        for name, data in BAD_FILES.items():
            self.paths[name] = self._write(name, data)
        self.paths['dir'] = self.dir = os.path.join(root, 'adir')
        os.makedirs(self.dir, exist_ok=True)
        self.paths['missing'] = os.path.join(root, 'no', 'such', 'file')
        self.paths['long'] = os.path.join(root, 'l' * 5000)
        self.paths['ctrl'] = os.path.join(root, 'a\x01b\nc')
        self.paths['dev_null'] = '/dev/null'
        # a regular file the fake hostmap.devno takes for a block device
        self.paths['blockdev'] = self._write('blockdev', b'')
        from iosched_demo import scenario
        with open(scenario.DEFAULT_SCENARIO, 'rb') as fh:
            self.paths['good_scenario'] = self._write('scenario.yaml',
                                                      fh.read())
        self.paths['good_agent_conf'] = self._write(
            'agent.conf', GOOD_AGENT_CONF.encode())
        self.paths['good_nova_conf'] = self._write(
            'nova.conf', GOOD_NOVA_CONF.encode())
        self.paths['good_cinder_conf'] = self._write(
            'cinder.conf', GOOD_CINDER_CONF.encode())
        self.paths['good_trace'] = tiny_trace
        self.paths['good_guests'] = self._write(
            'guests.yaml', b'- {name: g2, mode: rr}\n')

    def _write(self, name, data):
        path = os.path.join(self.root, name)
        with open(path, 'wb') as fh:
            fh.write(data)
        return path

    def __getitem__(self, name):
        return self.paths[name]

    def written(self, data):
        """A fresh file holding ``data`` (generated content)."""
        self._n = getattr(self, '_n', 0) + 1
        return self._write('gen-%d' % self._n, data)


# -- oracles -----------------------------------------------------------------

def int_in(lo=None, hi=None, above=False):
    """Valid iff argparse's int() parses it and it is in lo..hi;
    ``above``: what a value above ``hi`` is (None: not known here)."""
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
    only if ``inf``); ``above`` as for int_in."""
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
    False and for missing paths and directories; else unknown."""
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
    directory itself."""
    if text in ('', ' ') or text == files['dir']:
        return False if text != ' ' else None
    if text in (files['long'], '/dev/null/x/y', '/dev/null/x'):
        return False
    return None


def out_dir(text, files):
    """An output directory: created if missing; a file or a path under a
    missing parent chain is refused."""
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


def F(name):
    return lambda files: files[name]


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
             Opt('--json', 'flag', any_text)]),
    Command('iosched-placement (bus)', 'placement',
            lambda files: ['--transport-url', 'rabbit://u:p@127.0.0.1:9/',
                           '--vcpus', '2', '--wait', '0.5',
                           '--config-file', files['good_nova_conf']],
            # listens until a report interval passed: inf is fine
            [Opt('--wait', 'num', float_in(0, lo_open=True, inf=True)),
             Opt('--transport-url', 'text', anything),
             Opt('--host', 'text', lambda t, f: bool(t.strip())),
             Opt('--vcpus', 'num', int_in(1))]),
    Command('iosched-status', 'status',
            lambda files: ['--transport-url', 'rabbit://u:p@127.0.0.1:9/',
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
                 True if t in ('fake:/', 'rabbit://u:p@127.0.0.1:9/')
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
    with '-', is not '-' or a negative number and has no blank."""
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


# -- the environment: fakes for everything slow or outside ------------------

@contextlib.contextmanager
def saved_process_state():
    """Logging handlers/levels, sys.excepthook and warnings filters are
    put back after a command set them up (oslo.log, cliff, the demo)."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    loggers = {name: (lg.level, list(lg.handlers), lg.propagate)
               for name, lg in logging.Logger.manager.loggerDict.items()
               if isinstance(lg, logging.Logger)}
    hook = sys.excepthook
    filters = list(warnings.filters)
    disabled = logging.root.manager.disable
    try:
        yield
    finally:
        for h in root.handlers:
            if h not in handlers:
                with contextlib.suppress(Exception):
                    h.close()
        root.handlers[:] = handlers
        if root.level != level:
            root.setLevel(level)
        for name, lg in logging.Logger.manager.loggerDict.items():
            if isinstance(lg, logging.Logger):
                lv, hs, prop = loggers.get(name, (logging.NOTSET, [], True))
                if lg.level != lv:     # (setLevel clears every cache)
                    lg.setLevel(lv)
                if lg.handlers != hs:
                    lg.handlers[:] = hs
                lg.propagate = prop
        logging.disable(disabled)
        sys.excepthook = hook
        warnings.filters[:] = filters
        logging.captureWarnings(False)


def tiny_trace(path):
    """A real (small) simulator trace at ``path``; returns the Trace."""
    from iosched_iotrace import fmt
    from iosched_iotrace import simconv
    t = simconv.simulate(simconv.scenario('cfq', 2, 0.001, 1, None))
    fmt.write(t, path)
    return t


class FakeTestbed(object):
    calls = []

    def __init__(self, workdir, prefix, log=None):
        self.prefix = prefix

    def build(self, force=False):
        FakeTestbed.calls.append('build')

    def up(self, specs, pin=None, timeout=180.0):
        FakeTestbed.calls.append('up')
        return []

    def down(self):
        FakeTestbed.calls.append('down')
        return True

    def status(self):
        return []

    def close(self):
        pass


class FakeServer(object):
    transport = None

    def stop(self):
        pass

    def wait(self):
        pass


class Env(object):
    """Fakes installed for a whole module (a pytest MonkeyPatch)."""

    def __init__(self, mp, root):
        self.mp, self.root = mp, root
        trace_path = os.path.join(root, 'tiny.jsonl.gz')
        self.trace = tiny_trace(trace_path)
        self.files = Files(os.path.join(root, 'in'), trace_path)
        self._report_files()
        self._journal()
        self.case_dir = None
        self.api = None
        self._install()

    # input files that need the project's writers
    def _report_files(self):
        import json
        from tests.unit.nova_plugin import reports
        for key, host in (('good_report', 'compute-1'),
                          ('good_report2', 'compute-2')):
            self.files.paths[key] = self.files._write(
                '%s.json' % host, json.dumps(
                    reports.report(host=host).to_dict()).encode())

    def _journal(self):
        from host_agent.actuators import journal as journal_mod
        from host_agent import model
        path = os.path.join(self.files.root, 'journal.jsonl')
        j = journal_mod.Journal(path, clock=lambda: 1.7e9)
        j.record(model.Change(kind='vcpu_slice', instance_uuid='u1',
                              target='0', before=3000, after=1000,
                              rule='vslicer.lsvm_microslice', ts=5.0,
                              reason='L=2ms'))
        j.close()
        self.files.paths['good_journal'] = path

    def _install(self):
        mp = self.mp
        from oslo_config import cfg
        mp.setattr(cfg, 'find_config_files', lambda *a, **k: [])
        mp.setattr(cfg, 'find_config_dirs', lambda *a, **k: [])
        absent = os.path.join(self.root, 'absent.conf')
        from host_agent.cmd import explain
        from nova_plugin.cmd import placement
        from nova_plugin.cmd import placement_sources as sources
        from nova_plugin.cmd import status
        mp.setattr(explain, 'DEFAULT_CONFIG', absent)
        mp.setattr(placement, 'DEFAULT_CONFIG', absent)
        mp.setattr(status, 'DEFAULT_CONFIGS', (absent,))
        # io-host-agent: the driver is where the real start begins
        from host_agent import plugins

        real_load = plugins.load_class

        class FakeDriver(object):
            writes_itself = True

            @classmethod
            def from_conf(cls, conf):
                raise Started()

        def load_class(namespace, name):
            real_load(namespace, name)      # unknown names still refused
            return FakeDriver
        mp.setattr(plugins, 'load_class', load_class)
        # the bus: a broker that answers, agents that report at once
        from tests.unit.nova_plugin import reports

        def listen(conf, transport_url=None, store=None, host=None):
            for h in sorted(getattr(store, 'watch', ()) or ['compute-1']):
                store.admit(reports.report(host=h, ts=time.time(), seq=1))
            return FakeServer()

        clock = FakeClock()
        mp.setattr(sources, 'reports_from_bus', functools.partial(
            sources.reports_from_bus, probe=lambda url: None,
            listen=listen,
            resync=lambda *a: None, clock=clock, sleep=clock.sleep))

        def no_cloud(cloud=None):
            raise RuntimeError('no cloud configured (test fake)')
        real_flavor = sources.flavor_from_nova
        mp.setattr(sources, 'flavor_from_nova', lambda name, cloud=None:
                   real_flavor(name, cloud, connect=no_cloud))
        mp.setattr(status, 'collect', functools.partial(
            status.collect, listen=listen, request_resync=lambda *a: None,
            probe=lambda url: None))
        # iosched-demo: the two simulated runs
        from iosched_demo import cloud as demo_cloud
        mp.setattr(demo_cloud, 'set_defaults', lambda: None)

        def run_variant(*a, **k):
            raise Started()
        mp.setattr(demo_cloud, 'run_variant', run_variant)
        # iosched-testbed: libvirt
        from iosched_testbed import daemons
        from iosched_testbed import testbed
        mp.setattr(testbed, 'Testbed', FakeTestbed)
        mp.setattr(daemons, 'ensure_libvirtd', lambda: False)
        mp.setattr(daemons, 'kvm_caps_thrash', lambda: False)
        mp.setattr(daemons, 'set_kvm_perms', lambda: None)
        # iosched-iotrace: the simulation, libvirt, tracefs, matplotlib
        from iosched_iotrace import hostmap
        from iosched_iotrace import record
        from iosched_iotrace import render
        from iosched_iotrace import simconv
        trace = self.trace
        mp.setattr(simconv, 'simulate', lambda scn: trace)

        def discover(hm):
            hm.vms = {'vm1': {'pid': 1, 'ranges': []}}
        mp.setattr(hostmap.HostMap, 'discover', discover)
        real_devno = hostmap.devno
        blockdev = self.files['blockdev']
        mp.setattr(hostmap, 'devno', lambda path: (
            (7, 0) if path == blockdev else real_devno(path)))

        class FakeRecorder(object):
            def __init__(self, *a, **k):
                pass

            def run(self, duration, progress):
                return trace
        mp.setattr(record, 'Recorder', FakeRecorder)

        def fake_render(t, outdir, *a):
            os.makedirs(outdir, exist_ok=True)
            path = os.path.join(outdir, 'report.html')
            with open(path, 'w') as fh:
                fh.write('<html></html>')
            return [path]
        mp.setattr(render, 'render', fake_render)
        # Cinder for iosched-slo type and openstack volume slo type
        from cinder_qos import client
        from openstackclient.common import clientmanager
        env = self
        # (not mp.setattr: its getattr would run osc's ClientCache)
        cls = clientmanager.ClientManager
        self._osc_saved = cls.__dict__.get('volume_slo')
        cls.volume_slo = property(lambda cm: client.SloAdmin(env.api))

    def close(self):
        from openstackclient.common import clientmanager
        if self._osc_saved is None:
            del clientmanager.ClientManager.volume_slo
        else:
            clientmanager.ClientManager.volume_slo = self._osc_saved

    # -- per case --------------------------------------------------------
    def start_case(self, case_dir):
        from tests.unit.cinder_qos.test_client import FakeApi
        from cinder_qos import client
        self.case_dir = case_dir
        os.makedirs(case_dir)
        self.api = FakeApi()
        client.SloAdmin(self.api).create(client.plan('gold', '100iops,20ms'))
        self.before = self._cinder_state()
        FakeTestbed.calls = []

    def _cinder_state(self):
        import copy
        return copy.deepcopy((self.api._specs, self.api._types,
                              self.api.assoc))

    def written(self):
        """What a failed command must not have done."""
        done = []
        if self._cinder_state() != self.before:
            done.append('changed Cinder')
        if FakeTestbed.calls:
            done.append('testbed %s' % FakeTestbed.calls)
        if os.listdir(self.case_dir):
            done.append('wrote %s' % os.listdir(self.case_dir))
        return done

    # -- runners: each returns (code, stdout, stderr) -------------------
    def run(self, cmd, argv):
        out, err = io.StringIO(), io.StringIO()
        cwd = os.getcwd()
        os.chdir(self.case_dir)
        try:
            with contextlib.redirect_stdout(out), \
                    contextlib.redirect_stderr(err), saved_process_state():
                try:
                    code = getattr(self, 'run_' + cmd.runner)(list(argv))
                except SystemExit as e:
                    code = e.code
                    if isinstance(code, str):
                        err.write(code)
                        code = 1
                    code = code or 0
                except Started:
                    code = 0
        finally:
            os.chdir(cwd)
        return code, out.getvalue(), err.getvalue()

    def run_agent(self, argv):
        from host_agent.cmd import agent
        agent.CONF.clear()      # a fresh process parses once
        return agent.main(argv)

    def run_explain(self, argv):
        from host_agent.cmd import explain
        return explain.main(argv)

    def run_wakeup(self, argv):
        from host_agent.cmd import wakeup_probe
        from host_agent import model

        def probe(conf, cases, cpus, wakes, hogs_per_cpu, lsvm_weight):
            return tuple(model.WakeupProbe(c, True, 15.0, 40.0, wakes)
                         for c in cases)
        wakeup_probe.CONF.clear()
        return wakeup_probe.main(argv, probe=probe)

    def run_placement(self, argv):
        from nova_plugin.cmd import placement
        return placement.main(argv)

    def run_status(self, argv):
        from nova_plugin.cmd import status
        return status.main(argv)

    def run_report_key(self, argv):
        from nova_plugin.cmd import report_key
        return report_key.main(argv)

    def run_demo(self, argv):
        from iosched_demo import cmd
        return cmd.main(argv)

    def run_slo(self, argv):
        from cinder_qos import client
        from cinder_qos.cmd import slo
        api = self.api
        return slo.main(argv, admin_factory=lambda a: client.SloAdmin(api))

    def run_osc(self, argv):
        from openstackclient import shell
        return shell.main(['--os-auth-type', 'admin_token', '--os-endpoint',
                           'http://127.0.0.1:9/v3', '--os-token', 'x']
                          + argv)

    def run_testbed(self, argv):
        from iosched_testbed import cli
        return cli.main(argv)

    def run_iotrace(self, argv):
        from iosched_iotrace import cli
        return cli.main(argv)


class FakeClock(object):
    """time for reports_from_bus: 50 ms a sleep; a listen of more than
    a simulated day is a hang."""

    def __init__(self):
        self.t = 0.0
        self.sleeps = 0

    def __call__(self):
        return self.t

    def sleep(self, s):
        self.t += s
        self.sleeps += 1
        if self.sleeps > 100000:
            raise Hang('listened for more than a simulated day')


def examples(default=None):
    """Cases per command: IOSCHED_CLI_FUZZ_EXAMPLES, else ``default``."""
    return int(os.environ.get('IOSCHED_CLI_FUZZ_EXAMPLES', default))

