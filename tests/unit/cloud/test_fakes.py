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
"""The mixed cloud's fake computes: their nova.conf and their simulated
agents' host-agent.conf (pure dicts), their process names in status and
teardown, and ``up --fake-computes N``.
"""

import configparser
import os

import pytest

from iosched.cloud import cli
from iosched.cloud import configs
from iosched.cloud import devstack_ini
from iosched.cloud import fakes
from iosched.cloud import layout as layout_mod
from iosched.cloud import procs
from iosched.cloud import teardown
from iosched.simdriver import profiles

LAYOUT = layout_mod.Layout(state_dir='/srv/c', cache_dir='/srv/cache',
                           hostname='node1', fake_computes=2)

# (section, option, expected; None: absent) of fake compute 2's nova.conf
COMPUTE = [
    ('DEFAULT', 'host', 'node1-fake2'),
    ('DEFAULT', 'compute_driver', 'fake.FakeDriverWithoutFakeNodes'),
    ('DEFAULT', 'state_path', '/srv/c/nova-fake2'),
    ('DEFAULT', 'instances_path', '/srv/c/nova-fake2/instances'),
    ('DEFAULT', 'transport_url',
     'rabbit://guest:guest@127.0.0.1:5672/iosched-cloud'),
    ('DEFAULT', 'osapi_compute_workers', None),
    ('placement', 'username', 'nova'),
    ('placement', 'auth_url', 'http://127.0.0.1:5000/v3'),
    ('glance', 'region_name', 'RegionOne'),
    ('neutron', 'username', 'neutron'),
    ('serial_console', 'enabled', 'False'),
    ('oslo_concurrency', 'lock_path', '/srv/c/nova-fake2/locks'),
    ('libvirt', 'virt_type', None),
    ('database', 'connection', None),
    ('api_database', 'connection', None),
    ('nova_sys_admin', 'helper_command', None),
]


@pytest.mark.parametrize('section,option,expected', COMPUTE,
                         ids=['%s.%s' % c[:2] for c in COMPUTE])
def test_fake_compute_conf(section, option, expected):
    conf = fakes.compute_conf(LAYOUT, 2)
    assert conf.get(section, {}).get(option) == expected


def test_fake_computes_share_the_real_ones_bus_and_credentials():
    real, fake = configs.nova(LAYOUT), fakes.compute_conf(LAYOUT, 1)
    for section in ('service_user', 'placement', 'cinder', 'neutron',
                    'keystone_authtoken'):
        assert fake[section] == real[section], section
    assert fake['DEFAULT']['host'] != real['DEFAULT']['host']
    assert fake['DEFAULT']['state_path'] != real['DEFAULT']['state_path']
    # nova reads compute_id next to its config files too: not the real's
    assert (os.path.dirname(fakes.compute_conf_path(LAYOUT, 1))
            != LAYOUT.etc('nova'))


def test_fake_compute_conf_renders_as_ini():
    parser = configparser.ConfigParser(interpolation=None)
    parser.read_string(configs.render(fakes.compute_conf(LAYOUT, 1)))
    assert parser.get('DEFAULT', 'host') == 'node1-fake1'


# The real agent's file as devstack/lib/iosched's configure_iosched_agent
# writes it in the cloud (devstack_ini.parse: every value a list).
REAL_AGENT = {
    'DEFAULT': {'debug': ['False']},
    'host_agent': {'driver': ['libvirt'], 'host': ['node1'],
                   'policies': ['vslicer,slo'],
                   'journal_path': ['/srv/c/data/iosched/journal.jsonl'],
                   'disk_capacity_iops': ['1200']},
    'host_paths': {'state_dir': ['/srv/c/data/iosched']},
    'libvirt': {'uri': ['qemu:///system']},
    'reporter': {'transport_url': ['rabbit://g:g@127.0.0.1:5672/x'],
                 'topic': ['iosched-reports'],
                 'resync_topic': ['iosched-agents']},
    'volume_slo': {'from_cinder': ['True']},
    'cinder': {'auth_type': ['password'], 'username': ['nova']},
    'lsvm_trait': {'publish': ['True']},
    'io_inventory': {'publish': ['True'], 'max_io_vcpus_per_pcpu': ['1.0'],
                     'slo_capacity_fraction': ['1.0']},
    'placement': {'auth_type': ['password'], 'username': ['nova']},
}

# (section, option, expected; None: absent) of fake agent 2's file
AGENT = [
    ('host_agent', 'driver', 'simulated'),
    ('host_agent', 'host', 'node1-fake2'),
    ('host_agent', 'simulated_profile', 'loaded'),
    ('host_agent', 'policies', 'vslicer,slo'),
    ('host_agent', 'journal_path',
     '/srv/c/data/iosched-fake2/journal.jsonl'),
    ('host_agent', 'disk_capacity_iops', None),
    ('host_paths', 'state_dir', '/srv/c/data/iosched-fake2'),
    ('reporter', 'transport_url', 'rabbit://g:g@127.0.0.1:5672/x'),
    ('reporter', 'topic', 'iosched-reports'),
    ('lsvm_trait', 'publish', 'True'),
    ('io_inventory', 'publish', 'True'),
    ('placement', 'username', 'nova'),
    ('volume_slo', 'from_cinder', 'False'),
    ('metrics', 'enabled', 'False'),
    ('libvirt', 'uri', None),
    ('cinder', 'username', None),
    ('DEFAULT', 'debug', 'False'),
]


@pytest.mark.parametrize('section,option,expected', AGENT,
                         ids=['%s.%s' % c[:2] for c in AGENT])
def test_fake_agent_conf(section, option, expected):
    conf = fakes.agent_conf(REAL_AGENT, LAYOUT, 2)
    assert conf.get(section, {}).get(option) == expected


def test_fake_agent_conf_keeps_the_last_value(tmp_path):
    path = str(tmp_path / 'host-agent.conf')
    with open(path, 'w') as f:
        f.write('[reporter]\n#topic = commented\ntopic = a\ntopic = b\n'
                '[host_agent]\nhost = node1\n')
    conf = fakes.agent_conf(devstack_ini.parse(path), LAYOUT, 1)
    assert conf['reporter']['topic'] == 'b'
    assert conf['host_agent']['host'] == 'node1-fake1'


def test_fake_agent_reads_what_the_agent_registers(tmp_path):
    """The written file loads with the agent's own options."""
    from oslo_config import cfg

    from iosched.host_agent.conf import opts
    path = str(tmp_path / 'host-agent.conf')
    configs.write(path, fakes.agent_conf(REAL_AGENT, LAYOUT, 1))
    conf = cfg.ConfigOpts()
    opts.register_all(conf)
    conf([], default_config_files=[path])
    assert conf.host_agent.driver == 'simulated'
    assert conf.host_agent.simulated_profile == 'light'
    assert conf.metrics.enabled is False


@pytest.mark.parametrize('index,expected', [
    (1, 'light'), (2, 'loaded'), (3, 'busy'), (4, 'light'), (7, 'light')])
def test_profiles_cycle(index, expected):
    assert fakes.profile(index) == expected


def test_every_profile_is_the_simulators():
    assert set(fakes.PROFILES) <= set(profiles.PROFILES)


@pytest.mark.parametrize('requested,previous,expected', [
    (None, 0, 0), (None, 2, 2), (2, 0, 2), (3, 2, 3), (2, 2, 2),
    (1, 2, 'fewer is not supported'), (0, 3, 'fewer is not supported')])
def test_count(requested, previous, expected):
    if isinstance(expected, str):
        with pytest.raises(procs.ServiceFailed, match=expected):
            fakes.count(requested, previous)
    else:
        assert fakes.count(requested, previous) == expected


def test_processes_list_the_fakes_after_the_real_compute():
    names = LAYOUT.processes()
    assert names.index('nova-compute') + 1 == names.index(
        'nova-compute-fake1')
    assert names.index('nova-compute-fake2') < names.index('cinder-api')
    assert names[-3:] == ('iosched-agent', 'iosched-agent-fake1',
                          'iosched-agent-fake2')
    assert LAYOUT.agents() == names[-3:]
    plain = layout_mod.Layout(state_dir='/srv/c', hostname='node1')
    assert plain.processes() == layout_mod.SERVICES + ('iosched-agent',)


def test_the_layout_records_the_fakes(tmp_path):
    layout = layout_mod.Layout(state_dir=str(tmp_path), fake_computes=3)
    layout_mod.save(layout)
    assert layout_mod.load(str(tmp_path)).fake_computes == 3
    assert layout_mod.load(str(tmp_path / 'none')).fake_computes == 0


def test_a_layout_with_fields_of_another_version_loads(tmp_path):
    import json
    with open(str(tmp_path / 'layout.json'), 'w') as f:
        json.dump({'state_dir': str(tmp_path), 'hostname': 'n',
                   'from_a_newer_checkout': 1}, f)
    layout = layout_mod.load(str(tmp_path))
    assert (layout.hostname, layout.fake_computes) == ('n', 0)


@pytest.mark.parametrize('argv,expected', [
    (['up'], None),
    (['up', '--fake-computes', '2'], 2),
    (['up', '--fake-computes', '0'], 0),
    (['up', '--fake-computes', '8'], 8),
])
def test_cli_fake_computes(argv, expected):
    assert cli.build_parser().parse_args(argv).fake_computes == expected


@pytest.mark.parametrize('value', ['-1', 'two', '1.5', '9', ''])
def test_cli_refuses_a_bad_count(value, capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.build_parser().parse_args(['up', '--fake-computes', value])
    assert exit_.value.code == 2
    assert 'accepted: an integer from 0 to 8' in capsys.readouterr().err


def test_status_lists_the_fakes(tmp_path, capsys):
    layout = layout_mod.Layout(state_dir=str(tmp_path), hostname='n',
                               fake_computes=1)
    rows = cli._print_status(layout)
    names = [r['service'] for r in rows]
    assert 'nova-compute-fake1' in names and 'iosched-agent-fake1' in names
    assert 'iosched-agent-fake1' in capsys.readouterr().out


def test_down_stops_the_agents_first_then_the_rest(monkeypatch):
    running = {n: 100 + i for i, n in enumerate(LAYOUT.processes())}
    calls = []
    monkeypatch.setattr(procs, 'running', lambda layout: dict(running))
    monkeypatch.setattr(procs, 'stop',
                        lambda layout, name: calls.append(('stop', name)))
    monkeypatch.setattr(procs, 'send_signal',
                        lambda layout, name: calls.append(('term', name)))
    teardown.stop_services(LAYOUT)
    agents = [('stop', n) for n in LAYOUT.agents()]
    assert calls[:3] == agents
    terms = [n for what, n in calls if what == 'term']
    assert set(terms) == set(running)
    assert terms.index('nova-compute-fake2') < terms.index('nova-conductor')
    assert terms.index('cinder-volume') < terms.index('nova-compute-fake1')


class _Nova(object):
    """The compute API's services and hypervisors, as openstacksdk lists
    them; a host becomes a hypervisor once ``discover_hosts`` ran.
    """

    def __init__(self, hosts):
        self.hosts = hosts
        self.mapped = False
        self.compute = self

    def services(self):
        return [type('S', (), dict(binary='nova-compute', state='up',
                                   host=h)) for h in self.hosts]

    def hypervisors(self):
        return [type('H', (), dict(name=h)) for h in self.hosts
                if self.mapped]


@pytest.mark.parametrize('codes,expected', [
    ((0,), None),
    ((2, 0), None),             # raced with the scheduler's discovery
    ((1,), 'discover_hosts exited 1'),
])
def test_discover_a_fake_compute(monkeypatch, codes, expected):
    from iosched.cloud import services
    nova = _Nova(['node1', 'node1-fake1'])
    left = list(codes)

    def run(argv, layout=None, check=True, log_name=None, **kw):
        assert argv[-2:] == ['cell_v2', 'discover_hosts'] and not check
        code = left.pop(0)
        nova.mapped = code == 0
        return type('R', (), dict(returncode=code, stdout='', stderr='x'))
    monkeypatch.setattr(procs, 'run', run)
    monkeypatch.setattr(procs, 'read_pid', lambda path: 1)
    monkeypatch.setattr(procs.time, 'sleep', lambda s: None)
    call = lambda: services.discover_compute(   # noqa: E731
        LAYOUT, nova, host='node1-fake1', name='nova-compute-fake1')
    if expected:
        with pytest.raises(procs.ServiceFailed, match=expected):
            call()
    else:
        call()
        assert not left
