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
"""Placement, Glance, Nova and Cinder of the one-machine cloud: their
configuration files, database migrations and processes.

APIs run as WSGI applications under gunicorn (``<module>:application``,
as the projects ship them; ``wsgi_serve.py``) except cinder-api, which
runs as its console script. The other
services are their console scripts with ``--config-file``.
"""

import os
import shutil

from iosched.cloud import configs
from iosched.cloud import procs


SERVE = os.path.join(os.path.dirname(__file__), 'wsgi_serve.py')
# nova-manage cell_v2 discover_hosts's exit status when another discovery
# mapped the same host at the same time (nova/cmd/manage.py)
DISCOVER_RACED = 2


def gunicorn(layout, name, port, app, env):
    """Start a WSGI API (``wsgi_serve.py``)."""
    procs.start(layout, name, [layout.python, SERVE, '%s:%d' % (
        layout.host_ip, port), app], env=env)


def _copy_paste_ini(layout, service, name):
    shutil.copy(os.path.join(layout.venv_dir, 'etc', service, name),
                layout.etc(service, name))


# -- Placement ---------------------------------------------------------------

def setup_placement(layout):
    conf = configs.write(layout.etc('placement', 'placement.conf'),
                         configs.placement(layout))
    procs.run([layout.bin('placement-manage'), '--config-file', conf,
               'db', 'sync'], layout, log_name='placement-setup')


def start_placement(layout):
    gunicorn(layout, 'placement', 8778, 'placement.wsgi.api:application',
              {'OS_PLACEMENT_CONFIG_DIR': layout.etc('placement')})
    procs.wait_http(layout, 'placement', layout.url('placement'))


# -- Glance ------------------------------------------------------------------

def setup_glance(layout):
    for d in ('images', 'staging', 'tasks', 'locks'):
        os.makedirs(layout.path('glance', d), exist_ok=True)
    conf = configs.write(layout.etc('glance', 'glance-api.conf'),
                         configs.glance(layout))
    _copy_paste_ini(layout, 'glance', 'glance-api-paste.ini')
    procs.run([layout.bin('glance-manage'), '--config-file', conf,
               'db_sync'], layout, log_name='glance-setup')


def start_glance(layout):
    gunicorn(layout, 'glance', 9292, 'glance.wsgi.api:application',
              {'OS_GLANCE_CONFIG_DIR': layout.etc('glance')})
    procs.wait_http(layout, 'glance', layout.url('glance'))


# -- Neutron (API only) -------------------------------------------------------

def setup_neutron(layout):
    os.makedirs(layout.path('neutron', 'locks'), exist_ok=True)
    conf = configs.write(layout.etc('neutron', 'neutron.conf'),
                         configs.neutron(layout))
    ml2 = configs.write(layout.etc('neutron', 'ml2_conf.ini'),
                        configs.ml2(layout))
    procs.run([layout.bin('neutron-db-manage'), '--config-file', conf,
               '--config-file', ml2, 'upgrade', 'heads'],
              layout, log_name='neutron-setup')


def start_neutron(layout):
    gunicorn(layout, 'neutron', 9696, 'neutron.wsgi.api:application',
             {'OS_NEUTRON_CONFIG_DIR': layout.etc('neutron'),
              'OS_NEUTRON_CONFIG_FILES': 'neutron.conf;ml2_conf.ini'})
    procs.wait_http(layout, 'neutron', layout.url('neutron'))


def warm_neutron(conn):
    """One network listing: neutron-server configures its SQLAlchemy
    mappers on its first query of networks, and until then a port listing
    (what Nova's GET /servers/{id} does) fails with ``'Port' has no
    attribute 'port_forwardings'`` (seen with neutron 29.0.0, API-only,
    no RPC workers to query first).
    """
    list(conn.network.networks())


# -- Nova --------------------------------------------------------------------

def nova_conf(layout):
    return layout.etc('nova', 'nova.conf')


def setup_nova(layout, ceph=None):
    """nova.conf and the cells: api db, cell0, cell1, db sync."""
    os.makedirs(layout.path('nova', 'instances'), exist_ok=True)
    os.makedirs(layout.path('nova', 'locks'), exist_ok=True)
    # libvirt's qemu user opens the instance files: the path must be
    # traversable (DevStack's /opt/stack/data/nova is)
    for d in (layout.state_dir, layout.path('nova'),
              layout.path('nova', 'instances')):
        os.chmod(d, 0o755)
    conf = configs.write(nova_conf(layout), configs.nova(layout, ceph))
    _copy_paste_ini(layout, 'nova', 'api-paste.ini')
    manage = [layout.bin('nova-manage'), '--config-file', conf]
    procs.run(manage + ['api_db', 'sync'], layout, log_name='nova-setup')
    cells = procs.run(manage + ['cell_v2', 'list_cells'], layout).stdout
    if ' cell0 ' not in cells:
        procs.run(manage + ['cell_v2', 'map_cell0', '--database_connection',
                            layout.db_url('nova_cell0')],
                  layout, log_name='nova-setup')
    if ' cell1 ' not in cells:
        procs.run(manage + ['cell_v2', 'create_cell', '--name', 'cell1',
                            '--database_connection', layout.db_url('nova'),
                            '--transport-url', layout.transport_url],
                  layout, log_name='nova-setup')
    procs.run(manage + ['db', 'sync'], layout, log_name='nova-setup')
    return conf


def start_nova_api(layout):
    gunicorn(layout, 'nova-api', 8774,
              'nova.wsgi.osapi_compute:application',
              {'OS_NOVA_CONFIG_DIR': layout.etc('nova')})
    procs.wait_http(layout, 'nova-api', layout.url('nova-api'))


def foreign_domains(layout):
    """libvirt domains this cloud's Nova did not create: a new
    nova-compute refuses to start beside any (``_sanity_check_new_host``),
    so ``up`` names them instead of leaving Nova's message in a log.
    """
    import libvirt
    conn = libvirt.open('qemu:///system')
    try:
        return sorted(d.name() for d in conn.listAllDomains()
                      if layout.state_dir not in d.XMLDesc(0))
    finally:
        conn.close()


def start_nova_service(layout, name):
    """nova-conductor, nova-scheduler or nova-compute.
    """
    if name == 'nova-compute' and not procs.read_pid(layout.pidfile(name)):
        others = foreign_domains(layout)
        if others and not os.path.exists(layout.path('nova', 'compute_id')):
            raise procs.ServiceFailed(
                'libvirt (qemu:///system) has domains this cloud did not '
                'create: %s; a new nova-compute refuses to start beside '
                'them. Remove them (iosched-testbed down, virsh undefine) '
                'and run iosched-cloud up again.' % ', '.join(others))
    procs.start(layout, name, [layout.bin(name), '--config-file',
                               nova_conf(layout)])


def discover_compute(layout, conn, timeout=180.0, host=None,
                     name='nova-compute'):
    """Wait for a nova-compute's service and its node, then map the host.

    ``host``: that compute's (its node has the same name, as with the
    fake computes); None: any compute (the real one, whose node is named
    by libvirt). ``name``: its process, whose death or fatal line ends
    the wait.
    """
    def up():
        return any(s.binary == 'nova-compute' and s.state == 'up'
                   and host in (None, s.host)
                   for s in conn.compute.services())
    procs.wait_until(layout, name, up, 'report its service up', timeout,
                     fatal='ERROR nova nova.exception')
    manage = [layout.bin('nova-manage'), '--config-file', nova_conf(layout)]

    def mapped():
        # exit 2: a duplicate host mapping, nova-scheduler's periodic
        # discovery ([scheduler] discover_hosts_in_cells_interval) mapped
        # the same host at the same time: look again
        res = procs.run(manage + ['cell_v2', 'discover_hosts'], layout,
                        check=False, log_name='nova-setup')
        if res.returncode not in (0, DISCOVER_RACED):
            raise procs.ServiceFailed('nova-manage cell_v2 discover_hosts '
                                      'exited %d:\n%s' % (
                                          res.returncode,
                                          (res.stderr or res.stdout)[-3000:]))
        return any(host in (None, h.name)
                   for h in conn.compute.hypervisors())
    procs.wait_until(layout, name, mapped, 'appear as a hypervisor',
                     timeout, interval=3.0)


# -- Cinder ------------------------------------------------------------------

def cinder_conf(layout):
    return layout.etc('cinder', 'cinder.conf')


def setup_cinder(layout, ceph=None):
    os.makedirs(layout.path('cinder', 'locks'), exist_ok=True)
    conf = configs.write(cinder_conf(layout), configs.cinder(layout, ceph))
    procs.run([layout.bin('cinder-manage'), '--config-file', conf,
               'db', 'sync'], layout, log_name='cinder-setup')
    return conf


def start_cinder(layout):
    """cinder-api, -scheduler and -volume."""
    conf = cinder_conf(layout)
    procs.start(layout, 'cinder-api',
                [layout.bin('cinder-api'), '--config-file', conf])
    procs.wait_http(layout, 'cinder-api', layout.url('cinder-api'))
    for name in ('cinder-scheduler', 'cinder-volume'):
        procs.start(layout, name, [layout.bin(name), '--config-file', conf])


def wait_cinder_volume(layout, conn, timeout=120.0):
    def up():
        return any(s.binary == 'cinder-volume' and s.state == 'up'
                   for s in conn.block_storage.services())
    procs.wait_until(layout, 'cinder-volume', up, 'report its service up',
                     timeout, interval=2.0)


def wait_iosched_provider(layout, conn, timeout=120.0, host=None,
                          name='iosched-agent'):
    """The agent's child provider ``<host>:iosched`` with its inventory,
    and the LSVM trait on the compute node: the example flavors claim and
    require them, so a boot before they exist would be NoValidHost.
    ``host``: the agent's (default: the real compute's), ``name`` its
    process.
    """
    from keystoneauth1 import exceptions as ks_exc
    host = host or layout.hostname

    def ready():
        try:
            return _provider_ready(conn, host)
        except ks_exc.ConnectFailure:
            # a reset while Placement's workers are busy (seen with two
            # fake computes and their agents starting): asked again
            return False
    procs.wait_until(layout, name, ready,
                     'publish its Placement provider and trait', timeout,
                     interval=2.0)


def _provider_ready(conn, host):
    got = conn.placement.get(
        '/resource_providers?name=%s:iosched' % host,
        microversion='1.14').json()['resource_providers']
    if not got:
        return False
    inv = conn.placement.get('/resource_providers/%s/inventories'
                             % got[0]['uuid']).json()['inventories']
    node = conn.placement.get('/resource_providers/%s/traits'
                              % got[0]['parent_provider_uuid'],
                              microversion='1.6').json()['traits']
    return ('CUSTOM_IOSCHED_LSVM_BW' in inv
            and 'CUSTOM_IOSCHED_LSVM' in node)


def ensure_default_type(conn, name='ceph'):
    """The default volume type on the ceph backend, as DevStack makes it
    (cinder.conf's default_volume_type names it).
    """
    bs = conn.block_storage
    if bs.find_type(name, ignore_missing=True) is None:
        bs.create_type(name=name,
                       extra_specs={'volume_backend_name': name})
