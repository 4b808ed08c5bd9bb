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
"""What the one-node Ceph needs from the host, for iosched.cloud.ceph.

Debian's packages (installed only when missing), the libvirt secret that
holds client.cinder's key for QEMU (Nova's ``[libvirt] rbd_secret_uuid``),
Debian's ``rados``/``rbd`` extension modules linked into a venv of
another 3.11 interpreter, and the sweep of loop devices over files in a
state directory.
"""

import glob
import os
import tempfile

from oslo_log import log as logging

from iosched.cloud import ceph_daemons as daemons

LOG = logging.getLogger(__name__)

# ceph-mgr: health, PG states and ``df`` (Cinder's capacity report).
# qemu-block-extra: QEMU's userspace RBD client (block-rbd.so);
# qemu-utils: qemu-img/qemu-io; libvirt-clients: virsh for the secret.
PACKAGES = ('ceph-mon', 'ceph-osd', 'ceph-mgr', 'python3-rados',
            'python3-rbd', 'qemu-block-extra', 'qemu-utils',
            'libvirt-clients')
# Debian's bindings, built for /usr/bin/python3 (the 3.11 ABI).
DIST_PACKAGES = '/usr/lib/python3/dist-packages'
BINDINGS = ('rados', 'rbd')
LIBVIRT_SECRETS = '/etc/libvirt/secrets'


class CephBindingsError(daemons.CephError):
    """The rados/rbd modules cannot be made importable in a venv."""


def missing_packages(packages=PACKAGES):
    """The Debian packages of ``packages`` that are not installed."""
    missing = []
    for pkg in packages:
        proc = daemons.run(['dpkg-query', '-W', '-f=${Status}', pkg],
                           check=False)
        if proc.returncode != 0 or 'install ok installed' not in proc.stdout:
            missing.append(pkg)
    return missing


def ensure_packages(packages=PACKAGES, timeout=900):
    """apt-get install (no recommends) those of ``packages`` that are
    missing, and only those; returns them (empty when none was).
    """
    missing = missing_packages(packages)
    if not missing:
        return []
    env = dict(os.environ, DEBIAN_FRONTEND='noninteractive')
    apt = ['apt-get', '-q', '-o', 'DPkg::Lock::Timeout=300']
    install = apt + ['install', '-y', '--no-install-recommends'] + missing
    LOG.info('apt-get install %s', ' '.join(missing))
    if daemons.run(install, timeout=timeout, check=False,
                   env=env).returncode != 0:
        # Stale or absent package lists: update once, try again.
        daemons.run(apt + ['update'], timeout=timeout, env=env)
        daemons.run(install, timeout=timeout, env=env)
    return missing


def _virsh(uri, *args, check=True):
    return daemons.run(['virsh', '-c', uri] + list(args), timeout=30,
                       check=check)


def require_libvirtd(uri):
    """CephError unless libvirtd answers on ``uri`` (the secret needs it)."""
    proc = _virsh(uri, 'list', check=False)
    if proc.returncode != 0:
        raise daemons.CephError(
            'libvirtd does not answer on %s (start it, e.g. iosched.testbed.'
            'daemons.ensure_libvirtd()): %s' % (uri, proc.stderr.strip()))


def secret_usage(user, fsid):
    """The secret's usage name: one per cluster, since libvirt refuses a
    second secret of the same usage (a test's cluster beside the cloud's).
    """
    return 'client.%s secret %s' % (user, fsid)


def ensure_secret(uri, secret_uuid, usage, key, tmp_dir):
    """Define the (persistent, non-private) ceph secret ``secret_uuid``
    if it is not there and set its value to ``key`` (base64, as in the
    keyring) unless it holds it; returns True when something changed.
    """
    have = _virsh(uri, 'secret-get-value', secret_uuid, check=False)
    if have.returncode == 0 and have.stdout.strip() == key:
        return False
    if _virsh(uri, 'secret-dumpxml', secret_uuid,
              check=False).returncode != 0:
        xml = ("<secret ephemeral='no' private='no'><uuid>%s</uuid>"
               "<usage type='ceph'><name>%s</name></usage></secret>"
               % (secret_uuid, usage))
        with tempfile.NamedTemporaryFile('w', dir=tmp_dir,
                                         suffix='.xml') as fh:
            fh.write(xml)
            fh.flush()
            _virsh(uri, 'secret-define', '--file', fh.name)
    # From a 0600 file, not the command line (ps would show it).
    fd, keyfile = tempfile.mkstemp(dir=tmp_dir)
    try:
        with os.fdopen(fd, 'w') as fh:
            fh.write(key)
        _virsh(uri, 'secret-set-value', '--secret', secret_uuid,
               '--file', keyfile)
    finally:
        os.unlink(keyfile)
    return True


def undefine_secret(uri, secret_uuid):
    """Undefine the secret; True when it was there. With libvirtd down,
    its persistent files are removed instead.
    """
    if _virsh(uri, 'secret-undefine', secret_uuid,
              check=False).returncode == 0:
        return True
    if _virsh(uri, 'list', check=False).returncode == 0:
        return False            # libvirtd answers: no such secret
    removed = False
    for path in glob.glob(os.path.join(LIBVIRT_SECRETS, secret_uuid + '.*')):
        os.unlink(path)
        removed = True
    return removed


def detach_loops_under(state_dir):
    """Detach every loop device whose backing file is under state_dir."""
    out = daemons.run(['losetup', '--list', '--noheadings', '--raw',
                       '--output', 'NAME,BACK-FILE'], check=False).stdout
    detached = []
    for line in out.splitlines():
        parts = line.split(None, 1)
        if len(parts) == 2 and parts[1].startswith(state_dir + os.sep):
            daemons.run(['losetup', '-d', parts[0]])
            detached.append(parts[0])
    return detached


def link_python_bindings(venv_dir, source_dir=DIST_PACKAGES):
    """Make ``import rados, rbd`` work in the venv at ``venv_dir``.

    Symlinks Debian's two extension modules (built for /usr/bin/python3,
    3.11) into the venv's site-packages, and nothing else of
    dist-packages; then imports them with the venv's python (CephError if
    that fails). Returns the links.
    """
    python = os.path.join(venv_dir, 'bin', 'python')
    site, suffix = daemons.run([
        python, '-c', 'import sysconfig; print(sysconfig.get_paths()'
        '["platlib"]); print(sysconfig.get_config_var("EXT_SUFFIX"))'
    ]).stdout.split()
    links = []
    for mod in BINDINGS:
        src = os.path.join(source_dir, mod + suffix)
        if not os.path.exists(src):
            raise CephBindingsError(
                '%s not in %s (python3-%s installed? built for %s?): %s'
                % (mod + suffix, source_dir, mod, suffix,
                   glob.glob(os.path.join(source_dir, mod + '.*so'))))
        dst = os.path.join(site, os.path.basename(src))
        if not (os.path.islink(dst) and os.readlink(dst) == src):
            if os.path.lexists(dst):
                os.unlink(dst)
            os.symlink(src, dst)
        links.append(dst)
    check = daemons.run([python, '-c', 'import rados, rbd'], check=False)
    if check.returncode != 0:
        raise CephBindingsError('import rados, rbd fails in %s: %s'
                                % (venv_dir, check.stderr.strip()[-1000:]))
    return links
