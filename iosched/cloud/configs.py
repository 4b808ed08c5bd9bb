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
"""The OpenStack services' configuration files of the one-machine cloud,
as pure functions of the layout: ``{section: {option: value}}``.

Only what a one-machine cloud without Neutron needs, the way DevStack
writes it (keystone_authtoken with the service user, catalog lookups,
fernet tokens, oslo.concurrency lock paths). iosched's own options are not
here: the DevStack plugin's functions write them (``devstack.py``).
"""

import os


def _authtoken(layout, user):
    return {
        'www_authenticate_uri': layout.keystone_url,
        'auth_url': layout.keystone_url,
        'auth_type': 'password',
        'username': user,
        'password': layout.password,
        'user_domain_name': 'Default',
        'project_name': 'service',
        'project_domain_name': 'Default',
        'region_name': layout.region,
        'service_token_roles_required': 'True',
    }


def _client(layout, user='nova'):
    """A keystoneauth section: the service user, as DevStack sets it."""
    return {
        'auth_type': 'password',
        'auth_url': layout.keystone_url,
        'username': user,
        'password': layout.password,
        'user_domain_name': 'Default',
        'project_name': 'service',
        'project_domain_name': 'Default',
        'region_name': layout.region,
    }


def _privsep(layout, conf):
    """As root, privsep's daemon starts from the venv without sudo (whose
    secure_path does not hold the venv).
    """
    return {'helper_command': '%s --config-file %s' % (
        layout.bin('privsep-helper'), conf)}


def keystone(layout):
    return {
        'DEFAULT': {'debug': 'False'},
        'database': {'connection': layout.db_url('keystone')},
        'token': {'provider': 'fernet'},
        # DevStack's KEYSTONE_PASSWORD_HASH_ROUNDS: a password login cost
        # 0.27 s of CPU at bcrypt's default (12), in every measured phase
        # where an agent (re)started and logged in to Placement and Cinder
        'identity': {'password_hash_rounds': '4'},
        'fernet_tokens': {
            'key_repository': layout.path('keystone', 'fernet-keys')},
        'credential': {
            'key_repository': layout.path('keystone', 'credential-keys')},
    }


def placement(layout):
    return {
        'DEFAULT': {'debug': 'False'},
        'api': {'auth_strategy': 'keystone'},
        'placement_database': {'connection': layout.db_url('placement')},
        'keystone_authtoken': _authtoken(layout, 'placement'),
        'oslo_policy': {'enforce_new_defaults': 'True',
                        'enforce_scope': 'True'},
    }


def glance(layout):
    return {
        'DEFAULT': {'debug': 'False', 'bind_host': layout.host_ip,
                    'bind_port': '9292', 'workers': '1',
                    'enabled_backends': 'file:file'},
        'database': {'connection': layout.db_url('glance')},
        'keystone_authtoken': _authtoken(layout, 'glance'),
        'paste_deploy': {'flavor': 'keystone'},
        'glance_store': {'default_backend': 'file'},
        'file': {'filesystem_store_datadir': layout.path('glance', 'images')},
        'os_glance_staging_store': {
            'filesystem_store_datadir': layout.path('glance', 'staging')},
        'os_glance_tasks_store': {
            'filesystem_store_datadir': layout.path('glance', 'tasks')},
        'oslo_concurrency': {'lock_path': layout.path('glance', 'locks')},
    }


def neutron(layout):
    """neutron.conf: the API only, for Nova's port and security-group
    lookups (``GET /servers/{id}`` asks Neutron for the server's ports even
    with ``--nic none``). ML2 with no mechanism drivers: no agents run, no
    network exists, servers boot with ``--nic none``.
    """
    return {
        'DEFAULT': {
            'debug': 'False',
            'core_plugin': 'ml2',
            # the L3 plugin (no agent) loads the models a port listing joins
            'service_plugins': 'router',
            'auth_strategy': 'keystone',
            'transport_url': layout.transport_url,
            'state_path': layout.path('neutron'),
            'api_workers': '1',
            'rpc_workers': '0',
            'notify_nova_on_port_status_changes': 'False',
            'notify_nova_on_port_data_changes': 'False',
            'api_paste_config': os.path.join(
                layout.venv_dir, 'etc', 'neutron', 'api-paste.ini'),
        },
        'database': {'connection': layout.db_url('neutron')},
        'keystone_authtoken': _authtoken(layout, 'neutron'),
        'oslo_concurrency': {'lock_path': layout.path('neutron', 'locks')},
        'oslo_messaging_notifications': {'driver': 'noop'},
    }


def ml2(layout):
    return {
        'ml2': {'type_drivers': 'flat', 'tenant_network_types': '',
                'mechanism_drivers': '', 'extension_drivers': ''},
        'securitygroup': {'enable_security_group': 'True'},
    }


def nova(layout, ceph=None):
    """nova.conf of every Nova service (one machine: one file).
    """
    conf = layout.etc('nova', 'nova.conf')
    out = {
        'DEFAULT': {
            'debug': 'False',
            'transport_url': layout.transport_url,
            'state_path': layout.path('nova'),
            'instances_path': layout.path('nova', 'instances'),
            'compute_driver': 'libvirt.LibvirtDriver',
            'my_ip': layout.host_ip,
            'host': layout.hostname,
            'osapi_compute_workers': '1',
            'metadata_workers': '1',
            # 2 pCPUs here: TCG guests are slow, leave the host room
            'reserved_host_memory_mb': '2048',
            'shutdown_timeout': '5',
            # oslo.service's wait for a stopping service (default 60 s)
            'graceful_shutdown_timeout': '5',
            'allow_resize_to_same_host': 'True',
        },
        'api': {'auth_strategy': 'keystone'},
        'wsgi': {'api_paste_config': os.path.join(
            layout.venv_dir, 'etc', 'nova', 'api-paste.ini')},
        'api_database': {'connection': layout.db_url('nova_api')},
        'database': {'connection': layout.db_url('nova')},
        'keystone_authtoken': _authtoken(layout, 'nova'),
        'service_user': dict(_client(layout), send_service_user_token='True'),
        'placement': _client(layout),
        'cinder': dict(_client(layout), os_region_name=layout.region),
        'glance': {'region_name': layout.region},
        'neutron': _client(layout, 'neutron'),
        'scheduler': {'discover_hosts_in_cells_interval': '10',
                      'workers': '1'},
        'conductor': {'workers': '1'},
        'libvirt': {'virt_type': 'qemu', 'cpu_mode': 'none',
                    'connection_uri': 'qemu:///system'},
        # The workload reaches the guests over the serial ports Nova
        # creates (hw:serial_port_count); no websocket proxy is run.
        'serial_console': {'enabled': 'True',
                           'proxyclient_address': layout.host_ip,
                           'port_range': '10000:10999'},
        'vnc': {'enabled': 'False'},
        'spice': {'enabled': 'False'},
        'oslo_concurrency': {'lock_path': layout.path('nova', 'locks')},
        'oslo_messaging_notifications': {'driver': 'noop'},
        'nova_sys_admin': _privsep(layout, conf),
        'privsep_osbrick': _privsep(layout, conf),
        'vif_plug_linux_bridge_privileged': _privsep(layout, conf),
        'vif_plug_ovs_privileged': _privsep(layout, conf),
    }
    if ceph is not None:
        out['libvirt'].update(rbd_user=ceph.user,
                              rbd_secret_uuid=ceph.secret_uuid)
    return out


def cinder(layout, ceph=None):
    conf = layout.etc('cinder', 'cinder.conf')
    out = {
        'DEFAULT': {
            'debug': 'False',
            'transport_url': layout.transport_url,
            'state_path': layout.path('cinder'),
            'my_ip': layout.host_ip,
            'host': layout.hostname,
            'auth_strategy': 'keystone',
            'graceful_shutdown_timeout': '5',
            'osapi_volume_listen': layout.host_ip,
            'osapi_volume_workers': '1',
            'glance_api_servers': layout.url('glance'),
            'api_paste_config': os.path.join(
                layout.venv_dir, 'etc', 'cinder', 'api-paste.ini'),
            'rootwrap_config': os.path.join(
                layout.venv_dir, 'etc', 'cinder', 'rootwrap.conf'),
            # the filters GET /volumes?name= accepts (the wheel puts the
            # file in <venv>/etc, not /etc/cinder)
            'resource_query_filters_file': os.path.join(
                layout.venv_dir, 'etc', 'cinder', 'resource_filters.json'),
        },
        'database': {'connection': layout.db_url('cinder')},
        'keystone_authtoken': _authtoken(layout, 'cinder'),
        'service_user': dict(_client(layout, 'cinder'),
                             send_service_user_token='True'),
        'nova': _client(layout, 'nova'),
        'oslo_concurrency': {'lock_path': layout.path('cinder', 'locks')},
        'oslo_messaging_notifications': {'driver': 'noop'},
        'privsep_osbrick': _privsep(layout, conf),
        'cinder_sys_admin': _privsep(layout, conf),
    }
    if ceph is not None:
        out['DEFAULT'].update(enabled_backends='ceph',
                              default_volume_type='ceph')
        out['ceph'] = {
            'volume_driver': 'cinder.volume.drivers.rbd.RBDDriver',
            'volume_backend_name': 'ceph',
            'rbd_pool': ceph.pool,
            'rbd_ceph_conf': ceph.conf,
            'rbd_user': ceph.user,
            'rbd_keyring_conf': ceph.keyring,
            'rbd_secret_uuid': ceph.secret_uuid,
            'rbd_flatten_volume_from_snapshot': 'False',
            'report_discard_supported': 'True',
        }
    return out


def render(sections):
    """oslo.config's ini text of ``{section: {option: value}}``."""
    lines = []
    for section, options in sections.items():
        lines.append('[%s]' % section)
        lines.extend('%s = %s' % kv for kv in options.items())
        lines.append('')
    return '\n'.join(lines)


def write(path, sections):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as f:
        f.write(render(sections))
    os.chmod(path, 0o640)
    return path
