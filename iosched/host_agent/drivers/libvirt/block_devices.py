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
"""The host block device under each guest disk, and its I/O scheduler.

``resolve([(uuid, target, source)], sys_root)`` -> tuple of
``model.BlockDevice``: a disk whose source is a block device (``<source
dev=>``, also with libvirt ``<slices>``) is on that device; a file disk is
on the device of the file system holding it (``st_dev``; none for file
systems without one, e.g. tmpfs, overlay). A partition counts as its whole
disk, whose ``queue/scheduler`` governs it. Network disks (RBD through
librbd, ``<source name=>``) never reach the host block layer and are left
out. Stacked devices (dm, md, a loop device over a file) are not followed
down: the device named is the one QEMU opens.
"""

import os
import stat

from iosched.host_agent import model
from iosched.host_agent import paths


def devno_of(source):
    """(major, minor) of the device a disk source is on, or None."""
    if not source or not source.startswith('/'):
        return None
    try:
        st = os.stat(source)
    except OSError:
        return None
    if stat.S_ISBLK(st.st_mode):
        return os.major(st.st_rdev), os.minor(st.st_rdev)
    if stat.S_ISREG(st.st_mode) and os.major(st.st_dev):
        return os.major(st.st_dev), os.minor(st.st_dev)
    return None


def queue_of(sys_root, devno):
    """(name, scheduler in force, schedulers offered) of the whole disk
    holding ``devno``; ('M:m', '', ()) when sysfs does not say.
    """
    key = '%d:%d' % devno
    try:
        real = os.path.realpath(paths.safe_join(sys_root, 'dev', 'block',
                                                key))
    except paths.UnsafePath:
        return key, '', ()
    if os.path.exists(os.path.join(real, 'partition')):
        real = os.path.dirname(real)
    name = os.path.basename(real) if os.path.isdir(real) else key
    try:
        with open(os.path.join(real, 'queue', 'scheduler')) as fh:
            text = fh.read()
    except OSError:
        return name, '', ()
    current, names = '', []
    for word in text.split():
        if word.startswith('[') and word.endswith(']'):
            word = current = word[1:-1]
        names.append(word)
    return name, current, tuple(names)


def resolve(disks, sys_root='/sys'):
    """One ``model.BlockDevice`` per host device under ``disks``
    ((instance uuid, target, source) triples), by name.
    """
    by_dev = {}
    for uuid, target, source in disks:
        devno = devno_of(source)
        if devno is not None:
            by_dev.setdefault(devno, []).append((uuid, target))
    out = []
    for devno, on in by_dev.items():
        name, current, names = queue_of(sys_root, devno)
        out.append(model.BlockDevice(
            name=name, devno='%d:%d' % devno, scheduler=current,
            schedulers=names, disks=tuple(sorted(on))))
    return tuple(sorted(out, key=lambda d: d.name))
