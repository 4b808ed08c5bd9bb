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
"""The cloud's one-node Ceph, with real daemons (iosched.cloud.ceph).

A cluster in a temporary state directory: ``up`` twice (the second starts
nothing), an RBD image made with the python bindings from a fresh venv of
this interpreter's Python (``link_python_bindings``), opened with
qemu-img/qemu-io through QEMU's RBD client as ``client.cinder``, and read
by a transient libvirt domain through the libvirt secret (as Nova attaches
Cinder's RBD volumes); then ``down`` leaves no process, secret, loop device
or file. Root, the Debian packages and libvirtd are needed: skipped
locally without them, a failure under CI=true.
"""

import os
import shutil
import subprocess
import sys
import tempfile
import time

from iosched.cloud import ceph
from iosched.cloud import ceph_daemons
from tests import fixtures

PY_PROBE = r'''
import sys, rados, rbd
conf, pool, user, name = sys.argv[1:5]
with rados.Rados(conffile=conf, rados_id=user) as cluster:
    with cluster.open_ioctx(pool) as ioctx:
        rbd.RBD().create(ioctx, name, 32 << 20)
        with rbd.Image(ioctx, name) as image:
            image.write(b'\xab' * 65536, 1 << 20)
            assert image.read(1 << 20, 65536) == b'\xab' * 65536
        print(' '.join(rbd.RBD().list(ioctx)))
'''


def _require():
    why = []
    if os.geteuid() != 0:
        why.append('root')
    missing = ceph.missing_packages()
    if missing:
        why.append('Debian packages %s (python -m iosched.cloud.ceph '
                   'install)' % ' '.join(missing))
    for tool in ('libvirtd', 'qemu-system-x86_64'):
        if not shutil.which(tool) and not os.path.exists('/usr/sbin/' + tool):
            why.append('%s (libvirt-daemon-system, qemu-system-x86)' % tool)
    fixtures.require('Ceph', not why, 'missing: ' + ', '.join(why))


def _run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, check=True,
                          timeout=120, **kw).stdout


def _leftovers(state_dir, secret_uuid):
    paths = ceph_daemons.Paths(state_dir)
    left = []
    if ceph_daemons.our_processes(paths):
        left.append('processes %s' % ceph_daemons.our_processes(paths))
    if os.path.exists(state_dir):
        left.append('state dir %s' % state_dir)
    if state_dir in _run(['losetup', '-a']):
        left.append('loop device')
    if secret_uuid in _run(['virsh', '-c', ceph.LIBVIRT_URI,
                            'secret-list']):
        left.append('libvirt secret %s' % secret_uuid)
    return left


def _domain_reads(cluster, image, timeout=60):
    """A transient TCG domain with the image as its disk, given as Nova's
    libvirt driver gives Cinder's RBD volumes (network disk, the monitor's
    host/port, auth by the libvirt secret): its firmware reads the disk.
    """
    host, port = cluster.mon_host.split(':')
    name = 'iosched-ceph-test-%d' % os.getpid()
    xml = ("<domain type='qemu'><name>%s</name>"
           "<memory unit='MiB'>64</memory><vcpu>1</vcpu>"
           "<os><type arch='x86_64' machine='pc'>hvm</type>"
           "<boot dev='hd'/></os><devices>"
           "<disk type='network' device='disk'>"
           "<driver name='qemu' type='raw' cache='writeback'/>"
           "<auth username='%s'><secret type='ceph' uuid='%s'/></auth>"
           "<source protocol='rbd' name='%s/%s'>"
           "<host name='%s' port='%s'/></source>"
           "<target dev='vda' bus='virtio'/></disk>"
           "<memballoon model='none'/></devices></domain>"
           % (name, cluster.user, cluster.secret_uuid, cluster.pool, image,
              host, port))
    virsh = ['virsh', '-c', ceph.LIBVIRT_URI]
    with tempfile.NamedTemporaryFile('w', suffix='.xml') as fh:
        fh.write(xml)
        fh.flush()
        _run(virsh + ['create', fh.name])
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            stats = _run(virsh + ['domblkstat', name, 'vda'])
            reqs = int(stats.split('rd_req')[1].split()[0])
            if reqs > 0:
                return reqs
            time.sleep(0.5)
        return 0
    finally:
        subprocess.run(virsh + ['destroy', name], capture_output=True)


def test_conf_keeps_everything_under_the_state_dir():
    paths = ceph_daemons.Paths('/srv/x/ceph')
    state = {'fsid': 'f', 'mon_port_v2': 16789, 'mon_port_v1': 16790,
             'size_gb': 4, 'osd_memory_mb': 1024}
    text = ceph_daemons.conf_text(paths, state)
    for word in ('/etc/ceph', '/var/lib/ceph', '/var/log/ceph',
                 '/var/run/ceph', '/run/ceph'):
        assert word not in text
    paths_set = [line.split('=', 1)[1].strip() for line in text.splitlines()
                 if '= /' in line]
    assert paths_set and all(p.startswith('/srv/x/ceph/') for p in paths_set)
    assert 'mon_host = [v2:127.0.0.1:16789,v1:127.0.0.1:16790]' in text
    assert 'osd_pool_default_size = 1' in text


def test_ceph_up_rbd_qemu_libvirt_down():
    _require()
    from iosched.testbed import daemons
    try:
        started_libvirtd = daemons.ensure_libvirtd()
    except RuntimeError as e:
        fixtures.require('libvirt', False, str(e))
    tmp = tempfile.mkdtemp(prefix='iosched-ceph-test-')
    state_dir = os.path.join(tmp, 'ceph')
    secret_uuid = None
    try:
        t0 = time.monotonic()
        cluster = ceph.up(state_dir, size_gb=4, install=False, timeout=120)
        t_up = time.monotonic() - t0
        secret_uuid = cluster.secret_uuid
        assert (cluster.user, cluster.pool) == ('cinder', 'volumes')
        assert set(cluster.pids) == {'mon.a', 'mgr.x', 'osd.0'}
        assert all(cluster.pids.values()), cluster.pids
        assert all(p.startswith(state_dir) for p in
                   [cluster.conf, cluster.keyring] +
                   list(cluster.logs.values()))
        assert cluster.cinder_options()['rbd_secret_uuid'] == secret_uuid

        again = ceph.up(state_dir, install=False)
        assert again.started == [] and again.pids == cluster.pids
        st = ceph.status(state_dir)
        assert st['health'] == 'HEALTH_OK', st
        assert st['pool']['name'] == 'volumes'

        # Python bindings in a fresh venv of this interpreter's Python.
        venv = os.path.join(tmp, 'venv')
        _run([sys.executable, '-m', 'venv', '--without-pip', venv])
        ceph.link_python_bindings(venv)
        out = _run([os.path.join(venv, 'bin', 'python'), '-c', PY_PROBE,
                    cluster.conf, cluster.pool, cluster.user, 'pyimg'])
        assert 'pyimg' in out.split()

        # QEMU's RBD client, as the cinder user.
        uri = cluster.rbd_uri('pyimg')
        assert 'virtual size: 32 MiB' in _run(['qemu-img', 'info', uri])
        out = _run(['qemu-io', '-f', 'raw', '-c', 'read -P 0xab 1M 64k',
                    '-c', 'write -P 0x5a 0 4k', '-c', 'read -P 0x5a 0 4k',
                    uri])
        assert 'Pattern verification failed' not in out, out
        _run(['qemu-img', 'create', '-f', 'raw',
              cluster.rbd_uri('qimg'), '8M'])

        # Through libvirt with the secret, as Nova attaches it.
        assert _domain_reads(cluster, 'qimg') > 0
    finally:
        t0 = time.monotonic()
        try:
            done = ceph.down(state_dir)
            t_down = time.monotonic() - t0
            left = _leftovers(state_dir, secret_uuid or 'none')
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
            if started_libvirtd:
                daemons.stop_libvirtd()
    assert done['killed'] == [], done
    assert done['secret_undefined'], done
    assert left == []
    print('ceph up %.1f s, down %.1f s' % (t_up, t_down))
