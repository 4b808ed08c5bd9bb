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
"""The guest initramfs: a gzip'd newc cpio written by Python.

Writing the archive here (rather than with ``find | cpio``) makes it
reproducible (fixed mtimes, root ownership) and lets it hold a
``/dev/console`` node without ``mknod`` on the host.

The ``/init`` mounts proc/sys/devtmpfs, insmods the virtio modules in
dependency order, reads ``iosched.mode=``, ``iosched.opts=`` and
``iosched.port=`` from the kernel command line, runs ``/bin/iosched-guest``
and powers off when it exits. ``iosched.port`` (e.g. ``ttyS1``, a serial
port Nova writes; a name under /dev or a path) is passed as ``--port``;
without it the program finds the virtio-serial port ``iosched.0``. So one
initramfs serves every image: a Glance image's ``os_command_line`` picks the
workload.
"""

import gzip
import io
import os
import stat

INIT_SCRIPT = r'''#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
for m in $(cat /etc/modules.order); do
    insmod /lib/modules/$m.ko || echo "iosched-init: insmod $m failed"
done
mode=idle
opts=
port=
for w in $(cat /proc/cmdline); do
    case "$w" in
        iosched.mode=*) mode="${w#iosched.mode=}" ;;
        iosched.opts=*) opts="${w#iosched.opts=}" ;;
        iosched.port=*) port="${w#iosched.port=}" ;;
    esac
done
echo "iosched-init: up $(cut -d' ' -f1 /proc/uptime)s mode=$mode" \
    "opts=$opts${port:+ port=$port}"
if [ -n "$port" ]; then
    /bin/iosched-guest --mode "$mode" --opts "$opts" --port "$port"
else
    /bin/iosched-guest --mode "$mode" --opts "$opts"
fi
echo "iosched-init: iosched-guest exited rc=$?, powering off"
poweroff -f
'''


class Cpio:
    """A minimal newc ("070701") archive writer."""

    def __init__(self):
        self._buf = io.BytesIO()
        self._ino = 1
        self.names = []

    def _entry(self, name, mode, data=b'', rdev=(0, 0), nlink=1):
        name_b = name.encode() + b'\0'
        fields = (self._ino, mode, 0, 0, nlink, 0, len(data), 0, 0,
                  rdev[0], rdev[1], len(name_b), 0)
        self._ino += 1
        hdr = b'070701' + b''.join(b'%08X' % f for f in fields)
        self._buf.write(hdr + name_b)
        self._buf.write(b'\0' * (-(len(hdr) + len(name_b)) % 4))
        self._buf.write(data)
        self._buf.write(b'\0' * (-len(data) % 4))
        if name != 'TRAILER!!!':
            self.names.append(name)

    def dir(self, name):
        self._entry(name, stat.S_IFDIR | 0o755, nlink=2)

    def file(self, name, data, mode=0o644):
        self._entry(name, stat.S_IFREG | mode, data)

    def chardev(self, name, major, minor, mode=0o600):
        self._entry(name, stat.S_IFCHR | mode, rdev=(major, minor))

    def getvalue(self):
        self._entry('TRAILER!!!', 0)
        data = self._buf.getvalue()
        return data + b'\0' * (-len(data) % 512)


def make_initramfs(out_path, busybox, guest_bin, modules):
    """Write the gzip'd initramfs; ``modules`` is [(name, ko_path)] in load
    order. Returns the list of archive member names.
    """
    arc = Cpio()
    for d in ('bin', 'dev', 'etc', 'lib', 'lib/modules', 'proc', 'sys',
              'tmp', 'root'):
        arc.dir(d)
    arc.chardev('dev/console', 5, 1)
    arc.chardev('dev/null', 1, 3, 0o666)
    arc.file('init', INIT_SCRIPT.encode(), 0o755)
    with open(busybox, 'rb') as fh:
        arc.file('bin/busybox', fh.read(), 0o755)
    with open(guest_bin, 'rb') as fh:
        arc.file('bin/iosched-guest', fh.read(), 0o755)
    for name, path in modules:
        with open(path, 'rb') as fh:
            arc.file('lib/modules/%s.ko' % name, fh.read())
    arc.file('etc/modules.order',
             ''.join('%s\n' % name for name, _ in modules).encode())
    tmp = out_path + '.tmp'
    with open(tmp, 'wb') as fh:
        fh.write(gzip.compress(arc.getvalue(), compresslevel=9, mtime=0))
    os.replace(tmp, out_path)
    return arc.names
