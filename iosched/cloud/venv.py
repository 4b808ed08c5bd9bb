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
"""The venv the cloud's OpenStack services run from: the releases the
issue names, from PyPI, plus the WSGI server and clients. Built once and
reused (a cache under ``cache_dir``); a marker file records what it holds,
so a changed package list rebuilds it.

iosched is not installed here: the DevStack plugin's ``install_iosched``
installs it (``devstack.py``), from an sdist of the repository as an
operator's package install would.
"""

import hashlib
import os
import subprocess
import sys

from iosched.cloud import procs

PACKAGES = (
    'keystone>=30.0.0,<31',
    'glance>=33.0.0,<34',
    'openstack-placement>=16.0.0,<17',
    'nova>=34.0.0,<35',
    'cinder>=29.0.0,<30',
    'neutron>=29.0.0,<30',     # its API only: Nova's port lookups
    'gunicorn',
    'PyMySQL',
    'python-openstackclient',
    'osc-placement',
    'libvirt-python',          # nova-compute's libvirt driver
    'build',
)


def _marker(layout):
    return os.path.join(layout.venv_dir, '.iosched-cloud-packages')


def _digest():
    return hashlib.sha256('\n'.join(PACKAGES).encode()).hexdigest()[:16]


def ready(layout):
    try:
        with open(_marker(layout)) as f:
            return f.read().strip() == _digest()
    except OSError:
        return False


def ensure(layout, log=print):
    """Create or update the venv; returns True when it installed anything."""
    if ready(layout) and os.path.exists(layout.python):
        return False
    if not os.path.exists(layout.python):
        log('creating venv %s' % layout.venv_dir)
        base = getattr(sys, '_base_executable', sys.executable)
        procs.run([base, '-m', 'venv', layout.venv_dir])
        procs.run([layout.python, '-m', 'pip', 'install', '-q', '-U', 'pip'])
    log('pip install %s (a few minutes on a cold cache)' % ' '.join(
        p.split('>')[0] for p in PACKAGES))
    res = subprocess.run([layout.python, '-m', 'pip', 'install', '-q']
                         + list(PACKAGES), capture_output=True, text=True)
    if res.returncode:
        raise procs.ServiceFailed('pip install into %s failed:\n%s' % (
            layout.venv_dir, res.stderr[-3000:]))
    with open(_marker(layout), 'w') as f:
        f.write(_digest() + '\n')
    return True
