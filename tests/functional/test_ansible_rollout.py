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
"""``ansible/rollout.yml`` run for real on this machine (connection: local).

Compute "nodes" are inventory names on localhost, each with its own install
root, configuration, unit and run directories under a temp dir, and an
agent on the ``simulated`` driver (``[host_agent] driver = simulated``)
started by the role's ``background`` service manager (no systemd as PID 1
here); the role's health check sees each agent's report over the real
RabbitMQ through ``iosched-status``. The role pip-installs a wheel built
from this checkout (``--no-deps``) into venvs the test prepares with the
project's dependencies (a ``.pth`` to this interpreter's site-packages), so
no index is needed. The scheduler "host" edits a nova.conf copy and
"restarts" by appending to a file.

Runs: ``--check`` on fresh nodes (nothing created), the rollout (files,
agents reporting, nova.conf), a second run (changed=0, no restart), then a
rollout with a configuration change on the first node (restarted) and a
broken second node: its batch fails and the third node and the scheduler
play are never touched.
"""

import configparser
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import uuid

import pytest

from tests import ansible_run
from tests import fixtures

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
UNIT = os.path.join(ROOT, 'etc', 'systemd', 'io-host-agent.service')
BIN = ansible_run.BIN
NOVA_CONF = """\
[DEFAULT]
debug = true

[filter_scheduler]
# the operator's own choice, kept
enabled_filters = ComputeFilter,AggregateInstanceExtraSpecsFilter
"""


def _site_packages():
    import sysconfig
    return sysconfig.get_paths()['purelib']


@pytest.fixture(scope='module')
def wheel(tmp_path_factory):
    """A wheel of this checkout's working tree (what a controller ships)."""
    fixtures.require('ansible-core', os.path.exists(ansible_run.PLAYBOOK),
                     'no %s' % ansible_run.PLAYBOOK)
    base = tmp_path_factory.mktemp('iosched-ans-wheel')
    return ansible_run.build_wheel(base)


class Site(object):
    """Temp dirs of the "nodes", the inventory, and ansible-playbook."""

    def __init__(self, base, wheel, url):
        self.base = base
        self.wheel = wheel
        self.url = url
        tag = uuid.uuid4().hex[:8]
        self.topic = 'iosched-ans-reports-%s' % tag
        self.agents_topic = 'iosched-ans-agents-%s' % tag
        self.nova_conf = base / 'nova.conf'
        self.nova_conf.write_text(NOVA_CONF)
        self.restarts = base / 'restarts'
        self.nodes = set()

    def node(self, name):
        return self.base / name

    def prepare(self, name):
        """The node's venv with the project's dependencies (CI's stand-in
        for ``python3 -m venv`` + pip resolving them from an index).
        """
        venv = self.node(name) / 'opt'
        subprocess.run([sys.executable, '-m', 'venv', '--without-pip',
                        str(venv)], check=True)
        pth = (venv / 'lib' / ('python%d.%d' % sys.version_info[:2]) /
               'site-packages' / 'iosched-ci-deps.pth')
        pth.write_text(_site_packages() + '\n')
        self.nodes.add(name)

    def inventory(self, compute, host_vars=None):
        node = str(self.base) + '/{{ inventory_hostname }}'
        common = {
            'ansible_connection': 'local',
            'ansible_python_interpreter': '{{ ansible_playbook_python }}',
            'iosched_host_agent_transport_url': self.url,
            'iosched_host_agent_wheel': self.wheel,
            'iosched_host_agent_pip_args': ['--no-deps'],
            'iosched_host_agent_service_manager': 'background',
            'iosched_host_agent_mount_tracefs': False,
            'iosched_host_agent_health_timeout': 60,
            'iosched_host_agent_stop_timeout': 30,
            'iosched_host_agent_install_root': node + '/opt',
            'iosched_host_agent_config_dir': node + '/etc',
            'iosched_host_agent_unit_dir': node + '/systemd',
            'iosched_host_agent_run_dir': node + '/run',
            'iosched_host_agent_state_dir': node + '/state',
            'iosched_host_agent_host': 'ans-{{ inventory_hostname }}',
            'iosched_host_agent_config': {
                'host_agent': {'driver': 'simulated', 'tick_interval': 0.5,
                               'report_every_ticks': 2},
                'reporter': {'topic': self.topic,
                             'resync_topic': self.agents_topic},
                # several agents on one machine: no fixed metrics port
                'metrics': {'enabled': False}},
            # "Nova's Python": a venv that sees this interpreter's Nova
            'iosched_scheduler_nova_python': node + '/opt/bin/python',
            'iosched_scheduler_wheel': self.wheel,
            'iosched_scheduler_dist_dir': node + '/dist',
            'iosched_scheduler_nova_conf': str(self.nova_conf),
            'iosched_scheduler_restart_command': [
                'sh', '-c', 'echo restarted >> %s' % self.restarts],
        }
        inv = {'all': {'vars': common, 'children': {
            'iosched_compute': {'hosts': {
                h: (host_vars or {}).get(h, {}) for h in compute}},
            'iosched_scheduler': {'hosts': {'s1': {}}}}}}
        path = self.base / 'inventory.yml'
        path.write_text(json.dumps(inv, indent=1))  # JSON is YAML
        return str(path)

    def play(self, inventory, *args):
        return ansible_run.play(inventory, self.base, *args)

    def ctl(self, name, action):
        ctl = self.node(name) / 'run' / 'io-host-agent-ctl'
        if not ctl.exists():
            return None
        return subprocess.run([str(ctl), action], capture_output=True,
                              text=True, timeout=120)

    def pid(self, name):
        path = self.node(name) / 'run' / 'io-host-agent.pid'
        return int(path.read_text()) if path.exists() else None

    def stop_all(self):
        for name in sorted(self.nodes):
            self.ctl(name, 'stop')
            pid = self.pid(name)
            if pid:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass

    def status(self, *hosts):
        proc = subprocess.run(
            [sys.executable, '-m', 'iosched.nova_plugin.cmd.status',
             '--transport-url', self.url, '--topic', self.topic,
             '--agents-topic', self.agents_topic, '--wait', '30', '--json']
            + [a for h in hosts for a in ('--host', h)],
            capture_output=True, text=True, timeout=90)
        return proc


@pytest.fixture
def site(tmp_path, wheel):
    site = Site(tmp_path, wheel, fixtures.rabbit_url())
    try:
        yield site
    finally:
        site.stop_all()


def _ini(path):
    # DEFAULT as a section of its own, not folded into the others
    parser = configparser.ConfigParser(interpolation=None, strict=False,
                                       default_section='\0')
    parser.read(path)
    return {s: dict(parser[s]) for s in parser.sections()}


def _directives(text):
    """Unit directives in order, without comments or blank lines."""
    return [line for line in text.splitlines()
            if line.strip() and not line.lstrip().startswith('#')]


def test_rollout_converges_is_idempotent_and_stops_at_a_broken_batch(site):
    for name in ('c1', 'c2', 'c3', 'bad', 's1'):
        site.prepare(name)
    inv = site.inventory(['c1', 'c2'])

    # --check on fresh nodes: no failure, nothing written
    check = site.play(inv, '--check', '--limit', 'c1,s1')
    assert check.returncode == 0, check.stdout[-3000:]
    assert check.recap['c1']['failed'] == 0
    assert not (site.node('c1') / 'etc').exists()
    assert not (site.node('c1') / 'systemd').exists()
    assert site.nova_conf.read_text() == NOVA_CONF

    # one batch of two (the broken rollout below goes one by one)
    first = site.play(inv, '-e', 'iosched_rollout_serial=2')
    assert first.returncode == 0, first.stdout[-4000:]
    assert first.recap['c1']['changed'] > 0
    assert first.recap['s1']['changed'] > 0
    for name in ('c1', 'c2'):
        node = site.node(name)
        conf = _ini(node / 'etc' / 'host-agent.conf')
        assert conf['host_agent'] == {
            'driver': 'simulated', 'host': 'ans-%s' % name,
            'journal_path': str(node / 'state' / 'journal.jsonl'),
            'policies': 'vslicer', 'report_every_ticks': '2',
            'tick_interval': '0.5'}
        assert conf['reporter'] == {'topic': site.topic,
                                    'resync_topic': site.agents_topic}
        assert conf['DEFAULT'] == {'transport_url': site.url}
        # the unit is the shipped one with this node's paths
        unit = (node / 'systemd' / 'io-host-agent.service').read_text()
        want = open(UNIT).read().replace(
            '/opt/iosched/bin/io-host-agent --config-file '
            '/etc/iosched/host-agent.conf',
            '%s/opt/bin/io-host-agent --config-file %s/etc/host-agent.conf'
            % (node, node)).replace('TimeoutStopSec=90s',
                                    'TimeoutStopSec=30s').replace(
            'StateDirectory=iosched\nStateDirectoryMode=0700\n',
            'ReadWritePaths=%s/state\n' % node)
        assert _directives(unit) == _directives(want)
        # data_files: the samples and the unit came with the package
        share = node / 'opt' / 'share' / 'iosched'
        assert (share / 'etc' / 'host-agent.conf.sample').exists()
        assert (share / 'systemd' / 'io-host-agent.service').read_text() == (
            open(UNIT).read())
        assert site.ctl(name, 'status').returncode == 0
        analyze = shutil.which('systemd-analyze')
        if analyze:     # test_service_unit requires it; here a bonus
            verify = subprocess.run(
                [analyze, 'verify', str(node / 'systemd' /
                                        'io-host-agent.service')],
                capture_output=True, text=True)
            assert verify.returncode == 0 and not verify.stderr.strip(), (
                verify.stderr)
    # both agents report (the role's health check saw it too)
    status = site.status('ans-c1', 'ans-c2')
    assert status.returncode == 0, status.stderr
    hosts = {h['host']: h for h in json.loads(status.stdout)['hosts']}
    assert set(hosts) == {'ans-c1', 'ans-c2'}
    assert all(h['status'] == 'ok' and 'vslicer' in h['policies']
               for h in hosts.values())
    # nova.conf: the operator's filters kept, ours added once
    nova = _ini(site.nova_conf)
    assert nova['filter_scheduler']['enabled_filters'] == (
        'ComputeFilter,AggregateInstanceExtraSpecsFilter,IoDensityFilter,'
        'LsvmFilter,SloCapacityFilter')
    assert nova['filter_scheduler']['weight_classes'] == (
        'nova.scheduler.weights.all_weighers,'
        'iosched.nova_plugin.weighers.all_weighers')
    assert re.findall(r'^available_filters = (.*)$',
                      site.nova_conf.read_text(), re.M) == [
        'nova.scheduler.filters.all_filters',
        'iosched.nova_plugin.filters.all_filters']
    assert nova['iosched'] == {'listen_for_reports': 'true',
                               'resync_on_start': 'true'}
    assert nova['DEFAULT'] == {'debug': 'true'}
    assert site.restarts.read_text() == 'restarted\n'
    # the plugin went into "Nova's Python" from the wheel
    assert list((site.node('s1') / 'opt' / 'lib').glob(
        'python3*/site-packages/iosched/nova_plugin/filters/__init__.py'))
    pids = {n: site.pid(n) for n in ('c1', 'c2')}

    # second run: nothing changes, nothing restarts
    again = site.play(inv, '--skip-tags', 'iosched_precheck', '-e',
                      'iosched_rollout_serial=2')
    assert again.returncode == 0, again.stdout[-3000:]
    assert {h: r['changed'] for h, r in again.recap.items()} == {
        'c1': 0, 'c2': 0, 's1': 0}, again.stdout[-3000:]
    assert {n: site.pid(n) for n in ('c1', 'c2')} == pids
    assert site.restarts.read_text() == 'restarted\n'

    # a configuration change on c1 (restart), then a broken node: the
    # rollout stops after its batch; c3 and the schedulers are untouched
    site.nova_conf.write_text(NOVA_CONF)
    inv = site.inventory(['c1', 'bad', 'c3'], host_vars={
        'c1': {'iosched_host_agent_config': {
            'host_agent': {'driver': 'simulated', 'tick_interval': 0.5,
                           'report_every_ticks': 3},
            'reporter': {'topic': site.topic,
                         'resync_topic': site.agents_topic},
            'metrics': {'enabled': False}}},
        'bad': {'iosched_host_agent_health_timeout': 8,
                'iosched_host_agent_config': {
                    'host_agent': {'driver': 'nosuchdriver'},
                    'reporter': {'topic': site.topic,
                                 'resync_topic': site.agents_topic},
                    'metrics': {'enabled': False}}}})
    broken = site.play(inv, '--skip-tags', 'iosched_precheck')
    assert broken.returncode != 0
    assert broken.recap['c1']['changed'] > 0 and broken.recap['c1'][
        'failed'] == 0
    assert site.pid('c1') != pids['c1']         # restarted
    assert _ini(site.node('c1') / 'etc' / 'host-agent.conf')[
        'host_agent']['report_every_ticks'] == '3'
    assert broken.recap['bad']['failed'] == 1
    assert 'sent no report within 8 s' in broken.stdout
    assert "no hypervisor driver" in broken.stdout or (
        'nosuchdriver' in broken.stdout)        # the log tail is shown
    # batches of one: c1, then bad (failed), and no more
    assert re.findall(r'PLAY \[Roll out io-host-agent', broken.stdout) == [
        'PLAY [Roll out io-host-agent'] * 2
    assert 'c3' not in broken.recap
    assert not (site.node('c3') / 'etc').exists()
    assert 'PLAY [Enable the iosched filters' not in broken.stdout
    assert site.nova_conf.read_text() == NOVA_CONF


def test_ansible_lint_is_clean(tmp_path):
    """ansible-lint (offline, its default production profile) on all of
    ansible/: roles, playbooks, the modules' YAML.
    """
    lint = os.path.join(BIN, 'ansible-lint')
    fixtures.require('ansible-lint', os.path.exists(lint), 'no %s' % lint)
    collections = os.path.join(sys.prefix, 'share')
    fixtures.require(
        'openstack.cloud collection', os.path.isdir(os.path.join(
            collections, 'ansible_collections', 'openstack', 'cloud')),
        'cloud_objects.yml needs it; tools/bootstrap.sh unpacks it into %s'
        % collections)
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collections,
               ANSIBLE_HOME=str(tmp_path / 'home'), NO_COLOR='1',
               ANSIBLE_LOCAL_TEMP=str(tmp_path / 'tmp'),
               PATH=BIN + os.pathsep + os.environ.get('PATH', ''))
    out = subprocess.run([lint, '--offline', '--nocolor'],
                         cwd=ansible_run.ANSIBLE, env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert re.search(r'Passed: 0 failure\(s\), 0 warning\(s\)',
                     out.stdout + out.stderr), out.stdout + out.stderr
