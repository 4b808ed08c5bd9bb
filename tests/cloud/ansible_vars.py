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
"""The inventory of ``ansible/rollout.yml`` for the one-machine cloud
(tests/cloud/test_cloud_ansible.py).

What an operator takes from the cloud, as from any: the compute host
name (nova-compute's ``host``), the bus nova-scheduler listens on and the
service credentials, copied from the configuration DevStack's plugin
wrote for its agent (the plugin copied them from nova.conf); nova-scheduler's
Python, nova.conf and restart command. What only a test needs: the
agent's install root, configuration, unit and run directories under a
temp dir (the cloud's own agent keeps /var/lib/iosched-cloud), the
``background`` service manager (no systemd as PID 1), and a venv whose
third-party packages are the cloud venv's, linked (CI's stand-in for pip
resolving them from an index; iosched itself is left out, so the role
installs it from the wheel as on a fresh node).
"""

import configparser
import os
import re
import socket

# The DevStack agent's configuration sections copied as they are: the
# service users' credentials and what the agent keeps in Placement.
COPIED = ('cinder', 'placement', 'lsvm_trait', 'io_inventory')
REPORTER = ('transport_url', 'topic', 'resync_topic')
# The same machine's nova-scheduler, under a name of its own so that the
# PLAY RECAP counts the scheduler play apart from the compute play.
SCHEDULER_HOST = 'controller'
# iosched's own entries of a site-packages directory.
_IOSCHED = re.compile(r'^(__editable__[._-]+)?iosched([-_.].*)?$')


def read_ini(path):
    """{section: {option: value}} of an oslo.config file (DEFAULT as a
    section of its own, no interpolation).
    """
    parser = configparser.ConfigParser(interpolation=None, strict=False,
                                       default_section='\0')
    if not parser.read(path):
        raise FileNotFoundError(path)
    return {s: dict(parser[s]) for s in parser.sections()}


def agent_config(devstack, host, metrics_port, state_dir):
    """``iosched_host_agent_config`` of the rollout's agent.

    ``devstack`` is the DevStack plugin's host-agent.conf (``read_ini``):
    its bus (``[reporter]``), Cinder and Placement credentials, disk
    capacity, libvirt URI and Placement publishing are kept; the driver
    (libvirt), host, policies (vslicer, slo), SLOs from Cinder, state
    directory and metrics endpoint are this rollout's. A value of None
    leaves the option out (the role's rule).
    """
    def section(name):
        return dict(devstack.get(name, {}))
    reporter = section('reporter')
    missing = [k for k in REPORTER if not reporter.get(k)]
    if missing or not section('cinder'):
        raise ValueError(
            'the DevStack agent configuration lacks [reporter] %s or '
            '[cinder] credentials' % ', '.join(missing or ['-']))
    config = {
        'host_agent': {'driver': 'libvirt', 'host': host,
                       'policies': ['vslicer', 'slo'],
                       'disk_capacity_iops': section('host_agent').get(
                           'disk_capacity_iops')},
        'host_paths': {'state_dir': state_dir},
        'libvirt': {'uri': section('libvirt').get('uri')},
        'reporter': {k: reporter[k] for k in REPORTER},
        'volume_slo': {'from_cinder': True},
        'metrics': {'enabled': True, 'bind_host': '127.0.0.1',
                    'port': metrics_port},
    }
    config.update({name: section(name) for name in COPIED})
    return config


def restart_command(python, layout, service):
    """argv restarting one process of the cloud (DevStack's ``systemctl
    restart``: iosched.cloud.procs).
    """
    return [python, '-m', 'iosched.cloud.procs', layout.state_dir,
            'restart', service]


def inventory(layout, devstack, base, wheel, metrics_port, python):
    """The inventory (a dict; JSON is YAML) of the rollout on the cloud
    ``layout``: its compute host in ``iosched_compute``, its
    nova-scheduler as ``SCHEDULER_HOST`` in ``iosched_scheduler``, both on
    this machine (``connection: local``). ``base``: the agent's temp dir;
    ``python``: the one that restarts nova-scheduler.
    """
    base = str(base)
    compute = {
        'iosched_host_agent_transport_url':
            devstack.get('reporter', {}).get('transport_url'),
        'iosched_host_agent_host': layout.hostname,
        'iosched_host_agent_wheel': wheel,
        # the venv's dependencies are there already (prepared by the test)
        'iosched_host_agent_pip_args': ['--no-deps'],
        'iosched_host_agent_python': layout.python,
        'iosched_host_agent_install_root': os.path.join(base, 'opt'),
        'iosched_host_agent_config_dir': os.path.join(base, 'etc'),
        'iosched_host_agent_unit_dir': os.path.join(base, 'systemd'),
        'iosched_host_agent_run_dir': os.path.join(base, 'run'),
        'iosched_host_agent_state_dir': os.path.join(base, 'state'),
        'iosched_host_agent_service_manager': 'background',
        'iosched_host_agent_health_timeout': 120,
        'iosched_host_agent_stop_timeout': 60,
        'iosched_host_agent_config': agent_config(
            devstack, layout.hostname, metrics_port,
            os.path.join(base, 'state')),
    }
    scheduler = {
        'iosched_scheduler_nova_python': layout.python,
        'iosched_scheduler_wheel': wheel,
        'iosched_scheduler_dist_dir': os.path.join(base, 'dist'),
        'iosched_scheduler_nova_conf': layout.etc('nova', 'nova.conf'),
        'iosched_scheduler_restart_command': restart_command(
            python, layout, 'nova-scheduler'),
    }
    local = {'ansible_connection': 'local',
             'ansible_python_interpreter': '{{ ansible_playbook_python }}'}
    return {'all': {
        'vars': local,
        'children': {
            'iosched_compute': {'hosts': {layout.hostname: compute}},
            'iosched_scheduler': {'hosts': {SCHEDULER_HOST: scheduler}}}}}


def deps_entries(names):
    """The entries of a site-packages directory the rollout's venv sees:
    all but iosched's (its package, dist-info, editable finders) and byte
    code caches.
    """
    return sorted(n for n in names
                  if n != '__pycache__' and not _IOSCHED.match(n))


def link_deps(site_dirs, dest):
    """``dest`` holding a link to every ``deps_entries`` entry of
    ``site_dirs`` (the first directory wins a name); ``dest``.
    """
    os.makedirs(dest, exist_ok=True)
    for site in site_dirs:
        for name in deps_entries(os.listdir(site)):
            link = os.path.join(dest, name)
            if not os.path.lexists(link):
                os.symlink(os.path.join(site, name), link)
    return dest


def deps_pth(links):
    """A .pth line adding ``links`` as a site directory (its own .pth
    files, namespace packages among them, are processed too).
    """
    return 'import site; site.addsitedir(%r)\n' % str(links)


def free_port(start=9490, stop=9590, host='127.0.0.1'):
    """The first port from ``start`` nothing listens on at ``host``
    (above the cloud agent's 9487 and the scheduler workers' 9488+).
    """
    for port in range(start, stop):
        with socket.socket() as s:
            try:
                s.bind((host, port))
            except OSError:
                continue
            return port
    raise RuntimeError('no free port in %d-%d' % (start, stop - 1))
