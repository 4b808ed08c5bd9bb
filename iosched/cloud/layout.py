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
"""Where the one-machine cloud keeps everything: state, configs, logs,
pidfiles, its venv, ports, names and the development credentials.

Everything the cloud writes lives under ``state_dir`` (removed by
``iosched-cloud down``) except the venv of the OpenStack packages, a
cache under ``cache_dir`` (removed by ``down --purge``). The cloud listens
on 127.0.0.1 only; its one password is a development password.
"""

import dataclasses
import json
import os
import socket

DEFAULT_STATE_DIR = '/var/lib/iosched-cloud'
DEFAULT_CACHE_DIR = '/var/cache/iosched-cloud'

# DevStack's ports, so that docs and habits carry over.
PORTS = {
    'keystone': 5000,
    'placement': 8778,
    'glance': 9292,
    'neutron': 9696,
    'nova-api': 8774,
    'cinder-api': 8776,
}

# The OpenStack services, in start order; ``down`` stops them in reverse.
SERVICES = ('keystone', 'placement', 'glance', 'neutron', 'nova-api',
            'nova-conductor', 'nova-scheduler', 'nova-compute', 'cinder-api',
            'cinder-scheduler', 'cinder-volume')

# DevStack's service names (what the plugin passes to run_process and
# systemctl) of the cloud's processes.
DEVSTACK_NAMES = {
    'key': 'keystone', 'placement-api': 'placement', 'g-api': 'glance',
    'q-svc': 'neutron',
    'n-api': 'nova-api', 'n-cond': 'nova-conductor',
    'n-sch': 'nova-scheduler', 'n-cpu': 'nova-compute',
    'c-api': 'cinder-api', 'c-sch': 'cinder-scheduler',
    'c-vol': 'cinder-volume',
}

# The io-host-agent the DevStack plugin starts beside the real compute.
AGENT = 'iosched-agent'


# The processes of fake compute ``index`` (1..N, ``up --fake-computes N``:
# iosched/cloud/fakes.py): Nova's fake driver and a simulated agent.
def fake_compute_service(index):
    return 'nova-compute-fake%d' % index


def fake_agent_service(index):
    return 'iosched-agent-fake%d' % index


DATABASES = ('keystone', 'placement', 'glance', 'neutron', 'nova_api',
             'nova_cell0', 'nova', 'cinder')


@dataclasses.dataclass(frozen=True)
class Layout:
    state_dir: str = DEFAULT_STATE_DIR
    cache_dir: str = DEFAULT_CACHE_DIR
    repo_dir: str = ''
    host_ip: str = '127.0.0.1'
    password: str = 'iosched-cloud'
    region: str = 'RegionOne'
    rabbit_host: str = '127.0.0.1'
    rabbit_port: int = 5672
    rabbit_user: str = 'guest'
    rabbit_password: str = 'guest'
    rabbit_vhost: str = 'iosched-cloud'
    db_host: str = '127.0.0.1'
    db_prefix: str = 'ioscloud_'
    db_user: str = 'ioscloud'
    hostname: str = dataclasses.field(default_factory=socket.gethostname)
    # nova-computes with Nova's fake driver beside the real one, each with
    # a simulated agent (iosched/cloud/fakes.py)
    fake_computes: int = 0

    # -- processes -----------------------------------------------------
    def fake_host(self, index):
        """The Nova host (and node, and agent host) of fake compute
        ``index`` (1..fake_computes).
        """
        return '%s-fake%d' % (self.hostname, index)

    @property
    def fake_indexes(self):
        return tuple(range(1, self.fake_computes + 1))

    def processes(self):
        """Every process of the cloud, in start order: the services with
        the fake computes after the real one, then the agents.
        """
        at = SERVICES.index('nova-compute') + 1
        fakes = tuple(fake_compute_service(i) for i in self.fake_indexes)
        return (SERVICES[:at] + fakes + SERVICES[at:] + (AGENT,)
                + tuple(fake_agent_service(i) for i in self.fake_indexes))

    def agents(self):
        """The agents' process names: the real compute's, then the fakes'."""
        return (AGENT,) + tuple(fake_agent_service(i)
                                for i in self.fake_indexes)

    # -- directories ---------------------------------------------------
    def path(self, *parts):
        return os.path.join(self.state_dir, *parts)

    def etc(self, service, *parts):
        return self.path('etc', service, *parts)

    def log(self, name):
        return self.path('logs', '%s.log' % name)

    def pidfile(self, name):
        return self.path('run', '%s.pid' % name)

    @property
    def venv_dir(self):
        return os.path.join(self.cache_dir, 'venv')

    def bin(self, name):
        return os.path.join(self.venv_dir, 'bin', name)

    @property
    def python(self):
        return self.bin('python')

    @property
    def clouds_yaml(self):
        return self.path('clouds.yaml')

    # -- endpoints -----------------------------------------------------
    def url(self, service, suffix=''):
        return 'http://%s:%d%s' % (self.host_ip, PORTS[service], suffix)

    @property
    def keystone_url(self):
        return self.url('keystone', '/v3')

    @property
    def transport_url(self):
        return 'rabbit://%s:%s@%s:%d/%s' % (
            self.rabbit_user, self.rabbit_password, self.rabbit_host,
            self.rabbit_port, self.rabbit_vhost)

    def database(self, name):
        return self.db_prefix + name

    def db_url(self, name):
        return 'mysql+pymysql://%s:%s@%s/%s?charset=utf8' % (
            self.db_user, self.password, self.db_host, self.database(name))


def save(layout):
    """Record the layout in its state dir (``load`` reads it back)."""
    os.makedirs(layout.state_dir, exist_ok=True)
    with open(os.path.join(layout.state_dir, 'layout.json'), 'w') as f:
        json.dump(dataclasses.asdict(layout), f, indent=1)


def load(state_dir=DEFAULT_STATE_DIR):
    """The layout a cloud in ``state_dir`` was brought up with, or the
    default one (with that state dir) when there is none.
    """
    try:
        with open(os.path.join(state_dir, 'layout.json')) as f:
            saved = json.load(f)
    except FileNotFoundError:
        return Layout(state_dir=state_dir)
    # a field this version does not know (a newer checkout's cloud) is
    # left out, so that ``down`` still takes that cloud down
    known = {f.name for f in dataclasses.fields(Layout)}
    return Layout(**{k: v for k, v in saved.items() if k in known})
