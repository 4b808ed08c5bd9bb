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
"""``iosched-cloud down``: the steps that leave nothing behind, and the
check that nothing was left.

Order: the plugin's ``unstack`` and ``clean`` (the agent restores every
knob it changed, nova.conf loses iosched's lines), Nova's guests (domains
whose disks live in the cloud's state dir), the services in reverse start
order, Ceph, the databases and the vhost, then the state dir itself.
"""

import os
import shutil

from iosched.cloud import backing
from iosched.cloud import devstack
from iosched.cloud import procs


def _domains(layout):
    """Names of the libvirt domains of this cloud's Nova."""
    import libvirt
    conn = libvirt.open('qemu:///system')
    try:
        return [d.name() for d in conn.listAllDomains()
                if 'openstack.org/xmlns/libvirt/nova' in d.XMLDesc(0)
                and layout.state_dir in d.XMLDesc(0)]
    finally:
        conn.close()


def remove_domains(layout):
    import libvirt
    conn = libvirt.open('qemu:///system')
    try:
        for name in _domains(layout):
            dom = conn.lookupByName(name)
            if dom.isActive():
                dom.destroy()
            dom.undefineFlags(libvirt.VIR_DOMAIN_UNDEFINE_NVRAM
                              | libvirt.VIR_DOMAIN_UNDEFINE_MANAGED_SAVE)
    finally:
        conn.close()


def stop_services(layout):
    """The agents first (each restores its knobs), then SIGTERM to all
    the rest at once, then wait for each (SIGKILL after 15 s).
    """
    running = procs.running(layout)
    agents = layout.agents()
    order = agents + tuple(reversed([n for n in layout.processes()
                                     if n not in agents]))
    names = [n for n in order + tuple(sorted(set(running) - set(order)))
             if n in running]
    for name in agents:
        if name in names:
            procs.stop(layout, name)
    for name in names:
        procs.send_signal(layout, name)
    for name in names:
        procs.stop(layout, name)


def _ceph_down(layout):
    from iosched.cloud import ceph
    ceph.down(layout.path('ceph'))


def steps(layout, purge=False, cache_dir=None):
    out = []
    if os.path.isdir(layout.state_dir) and layout.repo_dir:
        out.append(('iosched: plugin.sh unstack, clean',
                    lambda: devstack.run_phases(layout, 'unstack', 'clean')))
    out += [
        ("nova's guests", lambda: remove_domains(layout)),
        ('services', lambda: stop_services(layout)),
        ('ceph', lambda: _ceph_down(layout)),
        ('databases %s*, user %s' % (layout.db_prefix, layout.db_user),
         lambda: backing.drop_databases(layout)),
        ('rabbit vhost %s' % layout.rabbit_vhost,
         lambda: backing.delete_vhost(layout)),
        ('state dir %s' % layout.state_dir,
         lambda: shutil.rmtree(layout.state_dir, ignore_errors=True)),
    ]
    if purge:
        cache = cache_dir or layout.cache_dir
        out.append(('cache %s' % cache,
                    lambda: shutil.rmtree(cache, ignore_errors=True)))
    return out


def leftovers(layout):
    """What of the cloud still exists (empty: nothing)."""
    left = []
    running = procs.running(layout)
    if running:
        left.append('processes %s' % running)
    # the pidfiles go with the state dir: also look for any process whose
    # command line names a file in it (a config, a pidfile)
    strays = procs.strays(layout.state_dir)
    if strays:
        left.append('processes using %s: %s' % (layout.state_dir, strays))
    try:
        doms = _domains(layout)
    except Exception as exc:
        doms = ['(libvirt: %s)' % exc]
    if doms:
        left.append('domains %s' % doms)
    if os.path.exists(layout.state_dir):
        left.append('state dir %s' % layout.state_dir)
    dbs = backing.list_databases(layout)
    if dbs:
        left.append('databases %s' % dbs)
    if backing.vhost_exists(layout):
        left.append('rabbit vhost %s' % layout.rabbit_vhost)
    return left
