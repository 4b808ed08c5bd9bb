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
"""iosched configured into the cloud by its own DevStack plugin: the
phases ``stack install``, ``stack post-config``, ``stack extra``,
``unstack`` and ``clean`` of ``devstack/plugin.sh`` run as DevStack runs
them (settings sourced first, then plugin.sh per phase, errexit on), with
``devstack_functions.sh`` in place of DevStack's own functions and the
cloud's values for DevStack's globals (local.conf's role: ``LOCALRC``).
No nova.conf line of iosched's is written anywhere else.
"""

import os
import subprocess
import sys

from iosched.cloud import procs

FUNCTIONS = os.path.join(os.path.dirname(__file__), 'devstack_functions.sh')

# What the cloud runs, by DevStack's service names.
ENABLED_SERVICES = ('key,placement-api,g-api,q-svc,n-api,n-cond,n-sch,n-cpu,'
                    'c-api,c-sch,c-vol,rabbit,mysql,iosched-agent')

# The local.conf of this cloud: the plugin's options it sets.
LOCALRC = {
    'IOSCHED_AGENT_POLICIES': 'vslicer,slo',
    'IOSCHED_AGENT_CINDER': 'True',
    'IOSCHED_IO_INVENTORY': 'True',
    'IOSCHED_LSVM_TRAIT': 'True',
    'IOSCHED_CREATE_EXAMPLES': 'True',
    'IOSCHED_REPORT_WAIT': '120',
}


def localrc(capacity_iops=None):
    """LOCALRC with the disk capacity measured for this cloud."""
    out = dict(LOCALRC)
    if capacity_iops:
        out['IOSCHED_DISK_CAPACITY_IOPS'] = '%d' % round(capacity_iops)
    return out


def environment(layout):
    """DevStack's globals the plugin reads, for this cloud."""
    return {
        'DEST': layout.path('dest'),
        'DATA_DIR': layout.path('data'),
        'IOSCHED_DIR': layout.repo_dir,
        'IOSCHED_CONF_DIR': layout.etc('iosched'),
        'STACK_USER': 'root',
        'NOVA_CONF': layout.etc('nova', 'nova.conf'),
        'NOVA_CPU_CONF': layout.etc('nova', 'nova.conf'),
        'KEYSTONE_SERVICE_URI': layout.url('keystone'),
        'SERVICE_PASSWORD': layout.password,
        'SERVICE_DOMAIN_NAME': 'Default',
        'SERVICE_PROJECT_NAME': 'service',
        'REGION_NAME': layout.region,
        'ENABLE_DEBUG_LOG_LEVEL': 'False',
        'LIBVIRT_GROUP': 'libvirt',
        'ENABLED_SERVICES': ENABLED_SERVICES,
        'IOSCHED_RABBIT_VHOST': layout.rabbit_vhost,
        'OS_CLIENT_CONFIG_FILE': layout.clouds_yaml,
        'IOSCHED_CLOUD_PY': sys.executable,
        'IOSCHED_CLOUD_STATE': layout.state_dir,
        'IOSCHED_CLOUD_BIN': os.path.dirname(layout.python),
        'IOSCHED_CLOUD_RABBIT': 'rabbit://%s:%s@%s:%d' % (
            layout.rabbit_user, layout.rabbit_password, layout.rabbit_host,
            layout.rabbit_port),
        'PATH': '%s:%s' % (os.path.dirname(layout.python),
                           os.environ.get('PATH', '/usr/bin:/bin')),
    }


def run_phases(layout, *phases, localrc=None):
    """Run plugin.sh's phases (each "stack install" etc.) in one bash,
    as stack.sh does; output to the cloud's ``devstack-plugin`` log.
    """
    env = dict(os.environ)
    env.update(environment(layout))
    env.update(LOCALRC if localrc is None else localrc)
    plugin = os.path.join(layout.repo_dir, 'devstack')
    script = ['set -o errexit -o pipefail',
              'source %s' % FUNCTIONS,
              'source %s/settings' % plugin]
    script += ['source %s/plugin.sh %s' % (plugin, phase) for phase in phases]
    os.makedirs(env['DATA_DIR'], exist_ok=True)
    with open(layout.log('devstack-plugin'), 'a') as log:
        log.write('=== plugin.sh %s\n' % ' | '.join(phases))
        log.flush()
        res = subprocess.run(['bash', '-c', '\n'.join(script)], env=env,
                             stdout=log, stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL)
    if res.returncode:
        raise procs.ServiceFailed(
            'devstack/plugin.sh %s failed (%d); last lines of %s:\n%s' % (
                ' | '.join(phases), res.returncode,
                layout.log('devstack-plugin'),
                procs.log_tail(layout, 'devstack-plugin', 25)))
