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
"""The temp site of ``ansible/rollout.yml`` on the one-machine cloud
(tests/cloud/test_cloud_ansible.py): the wheel, the agent's venv and
inventory, its control script and metrics endpoint; stopping the DevStack
plugin's agent before the rollout and starting it again after.
"""

import json
import os
import shutil
import subprocess
import sys
import urllib.request

from iosched.cloud import layout as layout_mod
from iosched.cloud import procs
from tests import ansible_run
from tests.cloud import ansible_vars
from tests.cloud import client
from tests.cloud.client import LAYOUT
from tests.cloud import dashboard_series

AGENT = layout_mod.AGENT     # the DevStack plugin's agent
NOVA_CONF = LAYOUT.etc('nova', 'nova.conf')
SITE_DIRS = ("import json, sysconfig; p = sysconfig.get_paths(); "
             "print(json.dumps(sorted({p['purelib'], p['platlib']})))")


def run_procs(action, name):
    """``python -m iosched.cloud.procs STATE action name``."""
    res = subprocess.run([sys.executable, '-m', 'iosched.cloud.procs',
                          LAYOUT.state_dir, action, name],
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, 'procs %s %s: %s%s' % (
        action, name, res.stdout, res.stderr)


def stop_devstack_agent():
    """bench/cloud_common.py CloudAgent.stop: SIGTERM to the agent alone
    (its privsep daemon must outlive its restore), then ``procs stop``.
    """
    if procs.send_signal(LAYOUT, AGENT):
        client.wait(lambda: procs.read_pid(LAYOUT.pidfile(AGENT)) is None,
                    'the DevStack agent exits', 120, 0.2)
    run_procs('stop', AGENT)


class Site(object):
    """The rollout's temp dir: wheel, venv, inventory, its agent."""

    def __init__(self, base, devstack):
        self.base = base
        self.root = str(base / 'opt')
        self.conf = str(base / 'etc' / 'host-agent.conf')
        self.port = ansible_vars.free_port()
        self.wheel = ansible_run.build_wheel(base / 'wheel')
        self.inventory = base / 'inventory.yml'
        self.inventory.write_text(json.dumps(ansible_vars.inventory(
            LAYOUT, devstack, base, self.wheel, self.port, sys.executable),
            indent=1))
        with open(NOVA_CONF) as f:
            self.nova_before = f.read()

    def prepare(self):
        """The install root's venv: the cloud venv's Python, its
        third-party packages linked in, no iosched (the role brings it).
        """
        subprocess.run([LAYOUT.python, '-m', 'venv', '--without-pip',
                        self.root], check=True)
        sites = json.loads(client.run([LAYOUT.python, '-c',
                                       SITE_DIRS]).stdout)
        links = ansible_vars.link_deps(sites, str(self.base / 'deps'))
        own = client.run([self.bin('python'), '-c', 'import sysconfig; '
                          'print(sysconfig.get_paths()["purelib"])'])
        with open(os.path.join(own.stdout.strip(), 'iosched-deps.pth'),
                  'w') as f:
            f.write(ansible_vars.deps_pth(links))

    def bin(self, name):
        return os.path.join(self.root, 'bin', name)

    def play(self, *args):
        return ansible_run.play(self.inventory, self.base, *args)

    def ctl(self, action):
        ctl = self.base / 'run' / 'io-host-agent-ctl'
        if ctl.exists():
            return subprocess.run([str(ctl), action], capture_output=True,
                                  text=True, timeout=120)

    def pid(self):
        path = self.base / 'run' / 'io-host-agent.pid'
        return int(path.read_text()) if path.exists() else None

    def scrape(self):
        url = 'http://127.0.0.1:%d/metrics' % self.port
        return dashboard_series.scrape_series(
            urllib.request.urlopen(url, timeout=10).read().decode(),
            {'instance': '127.0.0.1:%d' % self.port, 'job': 'iosched-agent'})


def teardown(site):
    """The rollout's agent stopped (SIGTERM: it restores its knobs),
    nova.conf as the plugin wrote it, the DevStack agent started again and
    its report awaited, the temp dir removed. A scheduler play that failed
    between its pip uninstall and install leaves the cloud venv without
    iosched: the wheel (the same checkout) goes back in first.
    """
    try:
        stopped = site.ctl('stop')
        print('rollout agent: %s' % (stopped and stopped.stdout.strip()))
    finally:
        try:
            with open(NOVA_CONF, 'w') as f:
                f.write(site.nova_before)
            if client.run([LAYOUT.python, '-c', 'import iosched'],
                          check=False, cwd='/').returncode:
                client.run([LAYOUT.python, '-m', 'pip', 'install', '-q',
                            '--no-deps', site.wheel])
            run_procs('restart', AGENT)
            client.run([LAYOUT.bin('iosched-status'), '--config-file',
                        client.AGENT_CONF, '--host', LAYOUT.hostname,
                        '--wait', '120'])
        finally:
            shutil.rmtree(site.base, ignore_errors=True)
