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
"""The testbed's guest as Glance images that Nova boots (direct kernel boot).

``ensure_images(conn)`` builds (or reuses) the testbed's kernel and
initramfs (``iosched.testbed.build``, same cache), writes a small raw root
disk, and uploads to Glance with openstacksdk:

* ``<prefix>-kernel``: the kernel, ``disk_format=container_format='aki'``;
* ``<prefix>-ramdisk``: the initramfs, ``'ari'``;
* ``<prefix>-<variant>``: one bootable raw image per workload variant
  (default: one per mode, ``rr burn hybrid disk dd idle``) whose properties
  make Nova boot that kernel and ramdisk with the variant's command line:
  ``kernel_id``, ``ramdisk_id``, ``os_command_line`` (it replaces Nova's
  whole ``root=... console=...`` line), ``hw_serial_port_count=2``,
  ``hw_machine_type=pc``, ``hw_disk_bus=virtio``, ``hw_architecture``.

The guest's /init reads ``iosched.mode``, ``iosched.opts`` and
``iosched.port`` from the command line, so one ramdisk serves every image.
The workload talks over the guest's second serial port (``ttyS1``): with
``[serial_console] enabled = True`` in the compute's nova.conf Nova's libvirt
driver writes one ``<serial type='tcp'><source mode='bind'
host=proxyclient_address service=<port from port_range>/>`` per port (the
first one with the console ``<log>``); ``iosched.testbed.guest.
serial_tcp_ports`` finds them in the domain XML, and ``guest.Guest`` connects
to ``(host, port)`` of the second. Without ``[serial_console] enabled`` Nova
writes a single pty console and the workload has no channel.

Nova 34 inspects every image it downloads (``nova.virt.images.
do_image_deep_inspection``, oslo.utils' format inspector): an x86 bzImage
carries the MBR signature 0xAA55 at offset 510 (its ``boot_flag``), is taken
for a GPT/MBR disk and fails the MBR safety check ("MBR PTE 0 has invalid
boot flag"), so Nova refuses the kernel (Glance 33 waives that check for
aki/ari, Nova does not). ``nova_kernel()`` uploads a copy with ``boot_flag``
cleared (QEMU's loader and the kernel do not read it); the alternative is
``[workarounds] disable_deep_image_inspection = True`` on the compute.

Idempotent by image name: an image whose ``iosched_stamp`` property (file
sha256, formats and properties) matches is kept; a stale one (or a
duplicate) is deleted and uploaded again, and a new kernel or ramdisk id
changes every bootable image's stamp, so they follow.
"""

import hashlib
import json
import os

from iosched.testbed import build as build_mod
from iosched.testbed import spec as spec_mod
from iosched.testbed import testbed as testbed_mod

DEFAULT_WORKDIR = testbed_mod.DEFAULT_WORKDIR     # the testbed's build cache
PREFIX = 'iosched-guest'
DEFAULT_VARIANTS = spec_mod.MODES          # rr burn hybrid disk idle dd
SERIAL_PORTS = 2                           # ttyS0: console + log; ttyS1: us
PORT = 'ttyS1'
CONSOLE = 'ttyS0'
ROOT_MIB = 64                              # the testbed's disk_mib
STAMP_KEY = 'iosched_stamp'
BOOT_FLAG = slice(510, 512)                # bzImage setup header boot_flag


class ImageError(Exception):
    pass


def command_line(mode, opts=None, port=PORT, console=CONSOLE):
    """The kernel command line of a bootable image (its ``os_command_line``
    property): the testbed's line plus ``iosched.port``. ``opts``: a dict of
    guest program options (checked as ``iosched.testbed.spec`` checks them).
    """
    spec = spec_mod.GuestSpec(name='image', mode=mode, opts=dict(opts or {}))
    if not port or any(c.isspace() for c in port):
        raise spec_mod.SpecError('bad serial port %r' % port)
    words = spec.kernel_args(console)
    words.append('iosched.port=%s' % port)
    return ' '.join(words)


def parse_variant(text):
    """``mode`` or ``mode:k=v,k=v`` -> (mode, opts dict)."""
    spec = spec_mod.parse_guest('image:' + text)
    return spec.mode, dict(spec.opts)


def boot_properties(kernel_id, ramdisk_id, cmdline,
                    serial_ports=SERIAL_PORTS):
    """Glance properties of a bootable image (all names are Nova 34
    ``ImageMetaProps`` fields).
    """
    return {
        'kernel_id': kernel_id,
        'ramdisk_id': ramdisk_id,
        'os_command_line': cmdline,
        'hw_serial_port_count': int(serial_ports),
        'hw_machine_type': 'pc',
        'hw_disk_bus': 'virtio',
        'hw_architecture': 'x86_64',
        'os_type': 'linux',
    }


def stamp(sha256, disk_format, container_format, properties):
    """What makes an uploaded image current: its data and its metadata."""
    return hashlib.sha256(json.dumps(
        [sha256, disk_format, container_format,
         {k: str(v) for k, v in properties.items()}],
        sort_keys=True).encode()).hexdigest()[:32]


def file_sha256(path):
    h = hashlib.sha256()
    with open(path, 'rb') as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b''):
            h.update(chunk)
    return h.hexdigest()


def nova_kernel(src, dst):
    """Copy the bzImage ``src`` to ``dst`` with its ``boot_flag`` (0xAA55 at
    offset 510) cleared, so Nova's image inspection sees raw data (see the
    module docstring). Returns ``dst``.
    """
    with open(src, 'rb') as fh:
        data = bytearray(fh.read())
    if data[0x202:0x206] != b'HdrS':
        raise ImageError('%s: not a bzImage (no HdrS setup header)' % src)
    if data[BOOT_FLAG] not in (b'\x55\xaa', b'\x00\x00'):
        raise ImageError('%s: unexpected boot_flag %s' % (
            src, data[BOOT_FLAG].hex()))
    data[BOOT_FLAG] = b'\x00\x00'
    _write(dst, bytes(data))
    return dst


def root_disk(path, mib=ROOT_MIB):
    """A zeroed raw disk of ``mib`` MiB (sparse); the guest's /dev/vda."""
    if not os.path.exists(path) or os.path.getsize(path) != mib * 2**20:
        with open(path + '.tmp', 'wb') as fh:
            fh.truncate(mib * 2**20)
        os.replace(path + '.tmp', path)
    return path


def _write(path, data):
    with open(path + '.tmp', 'wb') as fh:
        fh.write(data)
    os.replace(path + '.tmp', path)


def build_files(workdir=DEFAULT_WORKDIR, root_mib=ROOT_MIB, log=print):
    """Build or reuse the testbed's kernel and initramfs in ``workdir`` and
    derive the files to upload under ``<workdir>/cloud``: {'kernel',
    'ramdisk', 'root', 'manifest'}.
    """
    manifest = build_mod.build(workdir, log=log)
    out = os.path.join(workdir, 'cloud')
    os.makedirs(out, exist_ok=True)
    return {
        'kernel': nova_kernel(os.path.join(workdir, 'vmlinuz'),
                              os.path.join(out, 'vmlinuz.aki')),
        'ramdisk': os.path.join(workdir, 'initrd.gz'),
        'root': root_disk(os.path.join(out, 'root.raw'), root_mib),
        'manifest': manifest,
    }


def _props(image):
    return dict(getattr(image, 'properties', None) or {})


def ensure_image(conn, name, path, disk_format, container_format,
                 properties=None, visibility=None, log=print):
    """The Glance image ``name`` holding ``path`` with these formats and
    properties: the existing one when its stamp matches, else uploaded
    (stale or duplicate images of that name are deleted first). Returns
    the openstacksdk ``Image``.
    """
    properties = dict(properties or {})
    sha = file_sha256(path)
    want = stamp(sha, disk_format, container_format, properties)
    keep = None
    for img in list(conn.image.images(name=name)):
        if (keep is None and img.status == 'active' and
                _props(img).get(STAMP_KEY) == want):
            keep = img
            continue
        log('image: deleting %s %s (%s)' % (
            name, img.id, 'stale' if keep is None else 'duplicate'))
        conn.image.delete_image(img, ignore_missing=True)
    if keep is not None:
        log('image: %s is current (%s)' % (name, keep.id))
        return keep
    extra = dict(properties)
    extra[STAMP_KEY] = want
    if visibility:
        extra['visibility'] = visibility
    size = os.path.getsize(path)
    with open(path, 'rb') as fh:
        img = conn.image.create_image(
            name, data=fh, size=size, disk_format=disk_format,
            container_format=container_format, sha256=sha,
            allow_duplicates=True, wait=True, **extra)
    img = conn.image.get_image(img.id)
    if img.status != 'active':
        raise ImageError('image %s (%s) is %s after upload' % (
            name, img.id, img.status))
    log('image: uploaded %s (%s, %s, %.1f MiB)' % (
        name, img.id, disk_format, size / 2**20))
    return img


def ensure_images(conn, workdir=DEFAULT_WORKDIR, variants=None,
                  prefix=PREFIX, visibility='public', root_mib=ROOT_MIB,
                  log=print):
    """Build and upload the kernel, the ramdisk and one bootable image per
    variant. ``variants``: {image suffix: 'mode' or 'mode:k=v,...'}
    (default: one per mode, suffix = mode). Returns {'kernel': Image,
    'ramdisk': Image, 'images': {suffix: Image}}.
    """
    if variants is None:
        variants = {m: m for m in DEFAULT_VARIANTS}
    parsed = {k: parse_variant(v) for k, v in variants.items()}
    files = build_files(workdir, root_mib=root_mib, log=log)
    kernel = ensure_image(conn, prefix + '-kernel', files['kernel'], 'aki',
                          'aki', visibility=visibility, log=log)
    ramdisk = ensure_image(conn, prefix + '-ramdisk', files['ramdisk'],
                           'ari', 'ari', visibility=visibility, log=log)
    images = {}
    for suffix, (mode, opts) in sorted(parsed.items()):
        props = boot_properties(kernel.id, ramdisk.id,
                                command_line(mode, opts))
        images[suffix] = ensure_image(
            conn, '%s-%s' % (prefix, suffix), files['root'], 'raw', 'bare',
            props, visibility=visibility, log=log)
    return {'kernel': kernel, 'ramdisk': ramdisk, 'images': images}
