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
"""Keystone of the one-machine cloud: database, fernet keys, bootstrap
(admin, RegionOne, the identity endpoint), then the rest of the catalog and
the users DevStack makes (service users in ``service``, a ``demo`` tenant),
and a clouds.yaml with DevStack's cloud names (``devstack`` for the tenant,
``devstack-admin``) so the plugin's defaults and the docs' commands work.
"""

import os

import yaml

from iosched.cloud import configs
from iosched.cloud import procs
from iosched.cloud import services

SERVICE_USERS = ('nova', 'placement', 'glance', 'neutron', 'cinder')

# (name, type, path) of each catalog entry; cinder under both types
# Nova (volumev3) and the SDK (block-storage) look up.
CATALOG = (
    ('placement', 'placement', 'placement', ''),
    ('glance', 'image', 'glance', ''),
    ('neutron', 'network', 'neutron', ''),
    ('nova', 'compute', 'nova-api', '/v2.1'),
    ('cinderv3', 'volumev3', 'cinder-api', '/v3/$(project_id)s'),
    ('cinder', 'block-storage', 'cinder-api', '/v3/$(project_id)s'),
)


def setup(layout):
    """keystone.conf, db_sync, keys and bootstrap (idempotent)."""
    conf = configs.write(layout.etc('keystone', 'keystone.conf'),
                         configs.keystone(layout))
    manage = [layout.bin('keystone-manage'), '--config-file', conf]
    procs.run(manage + ['db_sync'], layout, log_name='keystone-setup')
    for repo, cmd in (('fernet-keys', 'fernet_setup'),
                      ('credential-keys', 'credential_setup')):
        if not os.path.isdir(layout.path('keystone', repo)):
            os.makedirs(layout.path('keystone', repo), mode=0o700)
            procs.run(manage + [cmd, '--keystone-user', 'root',
                                '--keystone-group', 'root'],
                      layout, log_name='keystone-setup')
    url = layout.keystone_url
    procs.run(manage + ['bootstrap', '--bootstrap-password', layout.password,
                        '--bootstrap-admin-url', url,
                        '--bootstrap-internal-url', url,
                        '--bootstrap-public-url', url,
                        '--bootstrap-region-id', layout.region],
              layout, log_name='keystone-setup')
    return conf


def start(layout):
    services.gunicorn(layout, 'keystone', 5000,
                      'keystone.wsgi.api:application',
                      {'OS_KEYSTONE_CONFIG_FILES':
                       layout.etc('keystone', 'keystone.conf')})
    procs.wait_http(layout, 'keystone', layout.keystone_url)


def clouds(layout):
    """clouds.yaml's content: DevStack's cloud names."""
    def cloud(user, project):
        return {'auth': {'auth_url': layout.keystone_url, 'username': user,
                         'password': layout.password,
                         'project_name': project,
                         'user_domain_id': 'default',
                         'project_domain_id': 'default'},
                'region_name': layout.region,
                'identity_api_version': 3}
    return {'clouds': {'devstack-admin': cloud('admin', 'admin'),
                       'devstack': cloud('demo', 'demo')}}


def write_clouds(layout):
    with open(layout.clouds_yaml, 'w') as f:
        yaml.safe_dump(clouds(layout), f, default_flow_style=False)
    os.chmod(layout.clouds_yaml, 0o600)
    return layout.clouds_yaml


def connect(layout, cloud='devstack-admin'):
    import openstack.config
    import openstack.connection
    region = openstack.config.OpenStackConfig(
        config_files=[layout.clouds_yaml]).get_one(cloud=cloud)
    return openstack.connection.Connection(config=region)


def _ensure(find, create, name, **attrs):
    return find(name, ignore_missing=True) or create(name=name, **attrs)


def catalog(layout):
    """Projects, users, roles, services and endpoints (idempotent)."""
    conn = connect(layout)
    idn = conn.identity
    default = 'default'
    service = _ensure(idn.find_project, idn.create_project, 'service',
                      domain_id=default)
    demo = _ensure(idn.find_project, idn.create_project, 'demo',
                   domain_id=default)
    roles = {r: _ensure(idn.find_role, idn.create_role, r)
             for r in ('admin', 'member', 'reader', 'service')}
    for user in SERVICE_USERS:
        u = _ensure(idn.find_user, idn.create_user, user, domain_id=default,
                    password=layout.password)
        for role in ('admin', 'service'):
            idn.assign_project_role_to_user(service, u, roles[role])
    u = _ensure(idn.find_user, idn.create_user, 'demo', domain_id=default,
                password=layout.password)
    idn.assign_project_role_to_user(demo, u, roles['member'])
    for name, stype, port_of, path in CATALOG:
        svc = next((s for s in idn.services() if s.type == stype), None)
        if svc is None:
            svc = idn.create_service(name=name, type=stype)
        have = {e.interface for e in idn.endpoints(service_id=svc.id)}
        for interface in ('public', 'internal', 'admin'):
            if interface not in have:
                idn.create_endpoint(service_id=svc.id, interface=interface,
                                    region_id=layout.region,
                                    url=layout.url(port_of, path))
    return conn
