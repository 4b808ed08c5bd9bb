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
"""tests/cloud/ansible_vars.py: the rollout's inventory for the cloud,
built from the DevStack plugin's host-agent.conf and the cloud's layout,
and the agent venv's linked dependencies.
"""

import os
import socket
import subprocess
import sys

import pytest

from iosched.cloud import layout as layout_mod
from tests.cloud import ansible_vars

LAYOUT = layout_mod.Layout(state_dir='/srv/c', cache_dir='/srv/cache',
                           hostname='node1')
CREDS = {'auth_type': 'password', 'auth_url': 'http://127.0.0.1:5000',
         'username': 'nova', 'password': 'pw', 'project_name': 'service',
         'user_domain_name': 'Default', 'project_domain_name': 'Default',
         'region_name': 'RegionOne'}
URL = 'rabbit://guest:guest@127.0.0.1:5672/iosched-cloud'
# The DevStack plugin's host-agent.conf, as read_ini gives it.
DEVSTACK = {
    'DEFAULT': {'debug': 'False'},
    'host_agent': {'driver': 'libvirt', 'host': 'node1',
                   'policies': 'vslicer,slo', 'disk_capacity_iops': '10779',
                   'journal_path': '/srv/c/data/iosched/journal.jsonl'},
    'host_paths': {'state_dir': '/srv/c/data/iosched'},
    'libvirt': {'uri': 'qemu:///system'},
    'reporter': {'transport_url': URL, 'topic': 'iosched-reports',
                 'resync_topic': 'iosched-agents'},
    'volume_slo': {'from_cinder': 'True'},
    'cinder': dict(CREDS),
    'placement': dict(CREDS),
    'lsvm_trait': {'publish': 'True'},
    'io_inventory': {'publish': 'True', 'max_io_vcpus_per_pcpu': '1.0',
                     'slo_capacity_fraction': '1.0'},
    'metrics': {},
}


def test_read_ini(tmp_path):
    path = tmp_path / 'a.conf'
    path.write_text('[DEFAULT]\ndebug = False\n[reporter]\n# topic = x\n'
                    'topic = t\ntopic = u\nurl = a%b\n')
    assert ansible_vars.read_ini(str(path)) == {
        'DEFAULT': {'debug': 'False'},
        'reporter': {'topic': 'u', 'url': 'a%b'}}
    with pytest.raises(FileNotFoundError):
        ansible_vars.read_ini(str(tmp_path / 'none.conf'))


def test_agent_config_keeps_the_clouds_and_sets_the_rollouts():
    got = ansible_vars.agent_config(DEVSTACK, 'node1', 9490, '/t/state')
    assert got == {
        'host_agent': {'driver': 'libvirt', 'host': 'node1',
                       'policies': ['vslicer', 'slo'],
                       'disk_capacity_iops': '10779'},
        'host_paths': {'state_dir': '/t/state'},
        'libvirt': {'uri': 'qemu:///system'},
        'reporter': DEVSTACK['reporter'],
        'volume_slo': {'from_cinder': True},
        'metrics': {'enabled': True, 'bind_host': '127.0.0.1',
                    'port': 9490},
        'cinder': CREDS, 'placement': CREDS,
        'lsvm_trait': {'publish': 'True'},
        'io_inventory': DEVSTACK['io_inventory']}
    # the journal is the rollout's (the role's default under its state dir)
    assert 'journal_path' not in got['host_agent']


def test_agent_config_leaves_out_what_the_cloud_lacks():
    devstack = {k: v for k, v in DEVSTACK.items()
                if k not in ('libvirt', 'lsvm_trait', 'io_inventory',
                             'placement', 'host_agent')}
    got = ansible_vars.agent_config(devstack, 'node1', 9490, '/t/state')
    assert got['host_agent']['disk_capacity_iops'] is None   # left out
    assert got['libvirt'] == {'uri': None}
    assert got['placement'] == got['lsvm_trait'] == {}


@pytest.mark.parametrize('drop, says', [
    (('reporter', 'transport_url'), 'transport_url'),
    (('reporter', 'resync_topic'), 'resync_topic'),
    (('cinder', None), 'credentials'),
])
def test_agent_config_refuses_a_conf_without_bus_or_cinder(drop, says):
    devstack = {k: dict(v) for k, v in DEVSTACK.items()}
    section, option = drop
    if option is None:
        del devstack[section]
    else:
        del devstack[section][option]
    with pytest.raises(ValueError, match=says):
        ansible_vars.agent_config(devstack, 'node1', 9490, '/t/state')


def test_inventory():
    inv = ansible_vars.inventory(LAYOUT, DEVSTACK, '/t', '/w/i.whl', 9490,
                                 '/venv/bin/python')
    groups = inv['all']['children']
    assert inv['all']['vars']['ansible_connection'] == 'local'
    (compute,) = groups['iosched_compute']['hosts'].items()
    (sched,) = groups['iosched_scheduler']['hosts'].items()
    assert compute[0] == 'node1' and sched[0] == 'controller'
    c = compute[1]
    assert c['iosched_host_agent_transport_url'] == URL
    assert c['iosched_host_agent_host'] == 'node1'
    assert c['iosched_host_agent_wheel'] == '/w/i.whl'
    assert c['iosched_host_agent_service_manager'] == 'background'
    assert c['iosched_host_agent_python'] == '/srv/cache/venv/bin/python'
    assert {k: c['iosched_host_agent_%s' % k] for k in (
        'install_root', 'config_dir', 'unit_dir', 'run_dir',
        'state_dir')} == {'install_root': '/t/opt', 'config_dir': '/t/etc',
                          'unit_dir': '/t/systemd', 'run_dir': '/t/run',
                          'state_dir': '/t/state'}
    assert c['iosched_host_agent_config'] == ansible_vars.agent_config(
        DEVSTACK, 'node1', 9490, '/t/state')
    assert sched[1] == {
        'iosched_scheduler_nova_python': '/srv/cache/venv/bin/python',
        'iosched_scheduler_wheel': '/w/i.whl',
        'iosched_scheduler_dist_dir': '/t/dist',
        'iosched_scheduler_nova_conf': '/srv/c/etc/nova/nova.conf',
        'iosched_scheduler_restart_command': [
            '/venv/bin/python', '-m', 'iosched.cloud.procs', '/srv/c',
            'restart', 'nova-scheduler']}


@pytest.mark.parametrize('name, kept', [
    ('oslo_messaging', True),
    ('oslo.messaging-17.0.0.dist-info', True),
    ('iosched', False),
    ('iosched-0.0.1.dev573.dist-info', False),
    ('iosched-0.0.1.egg-info', False),
    ('__editable__.iosched-0.0.1.dev564.pth', False),
    ('__editable___iosched_0_0_1_dev564_finder.py', False),
    ('__pycache__', False),
    ('distutils-precedence.pth', True),
    ('ioschedx', True),
])
def test_deps_entries(name, kept):
    assert (ansible_vars.deps_entries([name]) == [name]) is kept


def test_link_deps_and_pth(tmp_path):
    first, second = tmp_path / 'a', tmp_path / 'b'
    for site, names in ((first, ('dep', 'iosched', 'iosched-1.dist-info')),
                        (second, ('dep', 'other'))):
        for n in names:
            (site / n).mkdir(parents=True)
    (first / 'dep' / 'mod.py').write_text('WHERE = "a"\n')
    links = ansible_vars.link_deps([str(first), str(second)],
                                   str(tmp_path / 'links'))
    assert sorted(os.listdir(links)) == ['dep', 'other']
    assert os.readlink(os.path.join(links, 'dep')) == str(first / 'dep')
    # the .pth line puts them on the path of an interpreter that reads it
    code = ansible_vars.deps_pth(links) + 'from dep import mod\n' \
        'print(mod.WHERE)\n'
    out = subprocess.run([sys.executable, '-c', code], capture_output=True,
                         text=True, check=True, cwd=str(tmp_path))
    assert out.stdout == 'a\n'


def test_free_port_skips_a_bound_one():
    with socket.socket() as held:
        held.bind(('127.0.0.1', 0))
        busy = held.getsockname()[1]
        got = ansible_vars.free_port(busy, busy + 50)
    assert got != busy and busy < got < busy + 50
    with socket.socket() as s:
        s.bind(('127.0.0.1', got))
