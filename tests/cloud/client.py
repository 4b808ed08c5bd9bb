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
"""The one-machine cloud's clients for tests/cloud: the ``openstack`` CLI
of the cloud's venv as tenant or admin, iosched's own commands on the
node (``iosched-explain``, ``iosched-status``), waiting, and the domain
XML of a server.
"""

import json
import os
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

from iosched.cloud import layout as layout_mod
from tests import fixtures

LAYOUT = layout_mod.Layout()
ENV = dict(os.environ, OS_CLIENT_CONFIG_FILE=LAYOUT.clouds_yaml,
           OS_CLOUD='devstack',
           PATH='%s:%s' % (os.path.dirname(LAYOUT.python),
                           os.environ.get('PATH', '')))
CLI = [sys.executable, '-m', 'iosched.cloud.cli']
AGENT_CONF = LAYOUT.etc('iosched', 'host-agent.conf')


def require_components():
    """Fail under CI=true, skip locally, when the cloud cannot run here."""
    fixtures.require('root', os.geteuid() == 0, 'the cloud runs as root')
    for what, argv in (('libvirtd', ['virsh', '-c', 'qemu:///system',
                                     'list']),
                       ('MariaDB', ['mysql', '-uroot', '-e', 'select 1'])):
        try:
            ok = subprocess.run(argv, capture_output=True,
                                timeout=30).returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            ok = False
        fixtures.require(what, ok, 'tools/services.sh starts it')
    fixtures.rabbit_url()


def run(argv, timeout=600, check=True, **kw):
    res = subprocess.run(argv, capture_output=True, text=True, env=ENV,
                         timeout=timeout, **kw)
    if check and res.returncode:
        raise AssertionError('%s exited %d:\n%s\n%s' % (
            ' '.join(argv), res.returncode, res.stdout[-3000:],
            res.stderr[-3000:]))
    return res


def openstack(*args, admin=False, parse=True, check=True):
    argv = ['openstack'] + (['--os-cloud', 'devstack-admin']
                            if admin else []) + list(args)
    if parse:
        argv += ['-f', 'json']
    res = run(argv, check=check)
    return json.loads(res.stdout) if parse and res.returncode == 0 else res


def wait(probe, what, timeout=180.0, interval=2.0):
    deadline = time.monotonic() + timeout
    while True:
        got = probe()
        if got:
            return got
        assert time.monotonic() < deadline, 'timed out: %s' % what
        time.sleep(interval)


def server(name, flavor, image='iosched-guest-rr', wait=True):
    args = ['server', 'create', '--flavor', flavor, '--image', image,
            '--nic', 'none', name]
    res = openstack(*args + (['--wait'] if wait else []), check=False)
    if isinstance(res, dict):
        return res
    # a boot that ended in ERROR: the server as Nova shows it (its fault
    # says why) and LSVM_BW as Placement held it, for the failure message
    shown = openstack('server', 'show', name, check=False)
    return {'create': res.stderr.strip(),
            'server': shown if isinstance(shown, dict) else shown.stderr,
            'placement': lsvm_placement(),
            'scheduler': scheduler_says(),
            'agent lsvm': _agent_lsvm()}


def _w_within(lat_ms):
    """The agent's reported W once it is within ``lat_ms``, else None."""
    w = report()['lsvm']['wakeup_latency_us']
    return {'w_us': w} if w <= lat_ms * 1000.0 else None


def admits_lsvms(flavor):
    """Wait until LsvmFilter would admit one more 1-vCPU LSVM at
    ``flavor``'s bound: with one LSVM per pCPU its worst case is the W the
    agent reports, which a guest's boot (or other load on the one-machine
    cloud's host) may have raised for a while.
    """
    lat = float(openstack('flavor', 'show', flavor, admin=True)[
        'properties']['iosched:latency_ms'])
    wait(lambda: _w_within(lat), "the agent's W within %s's %g ms (one "
         'more LSVM admitted)' % (flavor, lat), timeout=240)


def scheduler_says():
    """nova-scheduler's last words on filtering and Placement."""
    try:
        with open(LAYOUT.log('nova-scheduler')) as f:
            lines = [ln.strip() for ln in f
                     if 'Filter results' in ln or 'Filtering removed' in ln
                     or 'allocation candidates' in ln or 'iosched' in ln]
    except OSError as exc:
        return str(exc)
    return '\n'.join(lines[-6:])


def _agent_lsvm():
    """The lsvm section of the agent's last report (its W and bounds)."""
    try:
        return report().get('lsvm')
    except (AssertionError, OSError, ValueError, KeyError) as exc:
        return str(exc)


def text(obj):
    """``obj`` in full for an assertion message (pytest cuts a repr)."""
    if not isinstance(obj, dict):
        return str(obj)
    return '\n'.join('%s: %s' % (k, v if isinstance(v, str) else json.dumps(
        v, indent=1, default=str)) for k, v in obj.items())


def lsvm_placement():
    """The iosched child provider's inventories and usages, as text."""
    out = []
    for rp in openstack('resource', 'provider', 'list', admin=True,
                        check=False) or []:
        if not isinstance(rp, dict) or not rp['name'].endswith(':iosched'):
            continue
        for what in ('inventory list', 'usage show'):
            res = openstack('resource', 'provider', *what.split(),
                            rp['uuid'], admin=True, parse=False, check=False)
            out.append('%s %s:\n%s' % (rp['name'], what, res.stdout))
    return '\n'.join(out)


def explain(uuid):
    res = run([LAYOUT.bin('iosched-explain'), '--config-file', AGENT_CONF,
               '--instance', uuid, '--json'])
    return json.loads(res.stdout)['knobs']


def report():
    out = LAYOUT.path('test-report')
    run([LAYOUT.bin('iosched-status'), '--config-file', AGENT_CONF,
         '--host', LAYOUT.hostname, '--wait', '60', '--save', out])
    with open(os.path.join(out, '%s.json' % LAYOUT.hostname)) as f:
        return json.load(f)


def domain_xml(uuid):
    import libvirt
    conn = libvirt.open('qemu:///system')
    try:
        return conn.lookupByUUIDString(uuid).XMLDesc(0)
    finally:
        conn.close()


def volume_disk(xml, volume_id):
    """The <disk> element of a volume (its <serial> is the volume id)."""
    return next((d for d in ET.fromstring(xml).iterfind('devices/disk')
                 if d.findtext('serial') == volume_id), None)


def volume(name, vtype=None, size=1):
    """A volume made by Cinder, once it is available."""
    vol = openstack('volume', 'create', '--size', str(size), *(
        ['--type', vtype] if vtype else []), name)
    wait_volume(vol['id'], 'available')
    return vol


def wait_volume(vid, status, timeout=180):
    return wait(lambda: openstack('volume', 'show', vid)['status']
                == status, 'volume %s %s' % (vid, status), timeout)


def attach(server_id, vid):
    openstack('server', 'add', 'volume', server_id, vid, parse=False)
    wait_volume(vid, 'in-use')


def detach(server_id, vid):
    openstack('server', 'remove', 'volume', server_id, vid, parse=False)
    wait_volume(vid, 'available')


def wait_built(server_id, what, timeout=180):
    """The server once its boot ended (ACTIVE or ERROR)."""
    return wait(lambda: (lambda s: s if s['status'] in ('ERROR', 'ACTIVE')
                         else None)(openstack('server', 'show', server_id)),
                what, timeout)
