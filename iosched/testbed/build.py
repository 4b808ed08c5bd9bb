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
"""Build the guest kernel and initramfs (idempotent, cached in a work dir).

Steps: find the kernel package ``linux-image-amd64`` depends on
(``apt-cache depends``), ``apt-get download`` it into ``<workdir>/cache``,
extract it to a scratch dir, ``depmod`` it, resolve the virtio modules with
``modprobe --show-depends`` (virtio is =m in Debian), compile the static
guest program with ``gcc -static -O2``, and pack the initramfs with
busybox-static. Outputs: ``<workdir>/vmlinuz``, ``<workdir>/initrd.gz``,
``<workdir>/iosched-guest`` and ``<workdir>/build.json`` (the manifest).
A rebuild happens only when an input changed (kernel version, guest source,
/init, busybox, module list) or ``force`` is set.
"""

import contextlib
import fcntl
import hashlib
import json
import lzma
import os
import re
import shutil
import subprocess
import time

from iosched.testbed import initramfs

MODULES = ('virtio_ring', 'virtio', 'virtio_pci_modern_dev',
           'virtio_pci_legacy_dev', 'virtio_pci', 'virtio_blk',
           'virtio_console')
KERNEL_META = 'linux-image-amd64'
BUSYBOX = '/bin/busybox'
GUEST_SRC = os.path.join(os.path.dirname(__file__), 'guest',
                         'iosched_guest.c')
BUILDER_VERSION = 1


class BuildError(Exception):
    pass


def _run(cmd, cwd=None):
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise BuildError('%s failed (rc=%d): %s' % (
            ' '.join(cmd), proc.returncode, proc.stderr.strip()[-2000:]))
    return proc.stdout


def _sha(path_or_bytes):
    h = hashlib.sha256()
    if isinstance(path_or_bytes, bytes):
        h.update(path_or_bytes)
    else:
        with open(path_or_bytes, 'rb') as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b''):
                h.update(chunk)
    return h.hexdigest()


def kernel_package():
    """The versioned kernel package ``linux-image-amd64`` depends on."""
    out = _run(['apt-cache', 'depends', KERNEL_META])
    m = re.search(r'Depends:\s*(linux-image-(\S+)-amd64)\b', out)
    if not m:
        raise BuildError('no linux-image-*-amd64 dependency in:\n' + out)
    return m.group(1), m.group(2) + '-amd64'


def _download(pkg, cache):
    os.makedirs(cache, exist_ok=True)
    debs = [f for f in os.listdir(cache)
            if f.startswith(pkg + '_') and f.endswith('.deb')]
    if not debs:
        _run(['apt-get', 'download', pkg], cwd=cache)
        debs = [f for f in os.listdir(cache)
                if f.startswith(pkg + '_') and f.endswith('.deb')]
    if not debs:
        raise BuildError('apt-get download %s produced no .deb' % pkg)
    return os.path.join(cache, sorted(debs)[-1])


def _module_order(root, kver, modules):
    """[(name, path)] in load order, from ``modprobe --show-depends``."""
    order = []
    for mod in modules:
        out = _run(['modprobe', '-d', root, '-S', kver, '--show-depends',
                    mod])
        for line in out.splitlines():
            parts = line.split()
            if len(parts) >= 2 and parts[0] == 'insmod':
                path = parts[1]
                name = re.sub(r'\.ko(\.\w+)?$', '', os.path.basename(path))
                if name not in [n for n, _ in order]:
                    order.append((name, path))
    return order


def _copy_module(src, dst_dir):
    """Copy a module, decompressing .ko.xz (busybox insmod wants .ko)."""
    name = re.sub(r'\.ko(\.\w+)?$', '', os.path.basename(src))
    dst = os.path.join(dst_dir, name + '.ko')
    if src.endswith('.ko.xz'):
        with lzma.open(src) as fin, open(dst, 'wb') as fout:
            shutil.copyfileobj(fin, fout)
    elif src.endswith('.ko'):
        shutil.copyfile(src, dst)
    else:
        raise BuildError('unsupported module compression: %s' % src)
    return name, dst


def _compile_guest(out):
    _run(['gcc', '-static', '-O2', '-Wall', '-o', out + '.tmp', GUEST_SRC])
    _run(['strip', out + '.tmp'])
    os.replace(out + '.tmp', out)


@contextlib.contextmanager
def _locked(workdir):
    """One build at a time per work dir (processes share its scratch dir
    and temporary names); outputs are replaced atomically, so guests that
    boot meanwhile read a whole old or a whole new file.
    """
    os.makedirs(workdir, exist_ok=True)
    with open(os.path.join(workdir, 'build.lock'), 'a') as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def build(workdir, force=False, log=print):
    """Build (or reuse) the kernel and initramfs; returns the manifest.
    Serialised per work dir by a lock file (``<workdir>/build.lock``).
    """
    with _locked(workdir):
        return _build(workdir, force, log)


def _build(workdir, force, log):
    t0 = time.monotonic()
    manifest_path = os.path.join(workdir, 'build.json')
    pkg, kver = kernel_package()
    key = _sha(json.dumps([
        BUILDER_VERSION, kver, MODULES, _sha(GUEST_SRC),
        _sha(initramfs.INIT_SCRIPT.encode()), _sha(BUSYBOX)]).encode())
    outputs = {n: os.path.join(workdir, n)
               for n in ('vmlinuz', 'initrd.gz', 'iosched-guest')}
    if not force and os.path.exists(manifest_path) and all(
            os.path.exists(p) for p in outputs.values()):
        with open(manifest_path) as fh:
            manifest = json.load(fh)
        if manifest.get('key') == key:
            manifest['cached'] = True
            log('build: cached (%s, kernel %s, initrd %d KiB)' % (
                workdir, kver, manifest['sizes']['initrd.gz'] // 1024))
            return manifest
    if not os.access(BUSYBOX, os.X_OK):
        raise BuildError('%s missing: install busybox-static' % BUSYBOX)
    deb = _download(pkg, os.path.join(workdir, 'cache'))
    t_dl = time.monotonic()
    scratch = os.path.join(workdir, 'scratch')
    shutil.rmtree(scratch, ignore_errors=True)
    try:
        root = os.path.join(scratch, 'root')
        os.makedirs(root)
        _run(['dpkg-deb', '-x', deb, root])
        _run(['depmod', '-b', root, kver])
        mods_dir = os.path.join(scratch, 'mods')
        os.makedirs(mods_dir)
        modules = [_copy_module(path, mods_dir)
                   for _, path in _module_order(root, kver, MODULES)]
        shutil.copyfile(os.path.join(root, 'boot', 'vmlinuz-' + kver),
                        outputs['vmlinuz'] + '.tmp')
        os.replace(outputs['vmlinuz'] + '.tmp', outputs['vmlinuz'])
        _compile_guest(outputs['iosched-guest'])
        initramfs.make_initramfs(outputs['initrd.gz'], BUSYBOX,
                                 outputs['iosched-guest'], modules)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    for path in outputs.values():
        os.chmod(path, 0o644 if not path.endswith('guest') else 0o755)
    manifest = {
        'key': key, 'kernel_package': pkg, 'kernel_version': kver,
        'deb': os.path.basename(deb), 'modules': [n for n, _ in modules],
        'sizes': {n: os.path.getsize(p) for n, p in outputs.items()},
        'seconds': {'fetch': round(t_dl - t0, 2),
                    'total': round(time.monotonic() - t0, 2)},
        'built_at': time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime()),
    }
    with open(manifest_path + '.tmp', 'w') as fh:
        json.dump(manifest, fh, indent=1, sort_keys=True)
    os.replace(manifest_path + '.tmp', manifest_path)
    manifest['cached'] = False
    sizes = manifest['sizes']
    log('build: kernel %s, modules %s' % (kver, ' '.join(manifest['modules'])))
    log('build: vmlinuz %.1f MiB, initrd.gz %.2f MiB, iosched-guest %d KiB '
        'in %.1f s (apt fetch %.1f s)' % (
            sizes['vmlinuz'] / 2**20, sizes['initrd.gz'] / 2**20,
            sizes['iosched-guest'] // 1024, manifest['seconds']['total'],
            manifest['seconds']['fetch']))
    return manifest
