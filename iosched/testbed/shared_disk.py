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
"""One shared disk for several testbed guests, with a fixed capacity.

    with SharedDisk(workdir, 'iosched-slo-disk', [64, 64, 64]) as sd:
        sd.set_capacity(read_bps=16 * 2**20)      # the device's capacity
        spec = dataclasses.replace(spec, disk_dev=sd.loop,
                                   disk_offset=sd.regions[i][0])
        ... boot the guests ...
        sd.attach(qemu_pid)                       # each guest's QEMU

* A backing file under ``<workdir>/shared/`` (written, not sparse); each
  guest's disk is one contiguous region of it (``regions``: 1 MiB
  aligned, back to back), given to QEMU as a libvirt storage slice
  (``<slices><slice type='storage' offset= size=/>``) of the one block
  device. This kernel has no partition-table parsers (no
  ``CONFIG_MSDOS_PARTITION``), so no ``/dev/loopNpK``.
* One loop device over it with direct I/O (``losetup --direct-io=on``),
  so every guest's requests go to one block device.
* The device's capacity: the loop device over the host's disk does ~11k
  random 16 KiB reads/s at queue depth 1, far more than TCG guests can
  ask for, so the capacity is a kernel limit instead: a cgroup v1
  ``blkio`` group holding all the guests' QEMU processes, with
  ``blkio.throttle.*_device`` limits on the loop device. All requests of
  the group wait in one FIFO per direction in blk-throttle (one group,
  one queue), as on a device with one queue: a neighbour's backlog delays
  everyone's requests, which is what the SLO loop has to defend against.

``close()`` (and ``__exit__``) moves remaining processes back to the root
group, removes the group, detaches the loop device and deletes the file;
``sweep(path, group)`` does the same for what a killed run left behind.
"""

import dataclasses
import os
import subprocess
import time

BLKIO = '/sys/fs/cgroup/blkio'
ALIGN = 2**20                   # regions start on 1 MiB boundaries


class SharedDiskError(Exception):
    pass


def regions(sizes_mib):
    """(offset, size) in bytes of each guest's region: back to back from
    1 MiB, each 1 MiB aligned.
    """
    out, start = [], ALIGN
    for mib in sizes_mib:
        out.append((start, int(mib) * ALIGN))
        start += int(mib) * ALIGN
    return out


def total_bytes(sizes_mib):
    return ALIGN + sum(int(m) for m in sizes_mib) * ALIGN


def _run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode:
        raise SharedDiskError('%s: %s' % (' '.join(cmd), p.stderr.strip()))
    return p.stdout.strip()


def loops_of(path):
    """Loop devices whose backing file is ``path``."""
    out = _run(['losetup', '-j', path]) if os.path.exists(path) else ''
    return [line.split(':', 1)[0] for line in out.splitlines() if line]


def _write(path, text):
    with open(path, 'w') as fh:
        fh.write(text)


def _pids(group):
    try:
        with open(os.path.join(group, 'cgroup.procs')) as fh:
            return [int(x) for x in fh.read().split()]
    except OSError:
        return []


def remove_group(group):
    """Move the group's processes to the root and remove it."""
    if not os.path.isdir(group):
        return
    for pid in _pids(group):
        try:
            _write(os.path.join(BLKIO, 'cgroup.procs'), str(pid))
        except OSError:
            pass                   # exited meanwhile
    for _ in range(50):
        try:
            os.rmdir(group)
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.1)        # a task still leaving


class SharedDisk:
    """The shared, capacity-limited disk ``name`` with one region per
    entry of ``sizes_mib``; its file is ``<workdir>/shared/<name>.img``,
    its blkio group ``<blkio root>/<name>``.
    """

    def __init__(self, workdir, name, sizes_mib):
        self.name, self.sizes_mib = name, list(sizes_mib)
        self.path = os.path.join(workdir, 'shared', name + '.img')
        self.group = os.path.join(BLKIO, name)
        self.regions = regions(self.sizes_mib)
        self.loop = None
        self.limits = {}

    # -- set up -------------------------------------------------------------
    def create(self):
        """Write the backing file, attach the loop device, make the group."""
        sweep(self.path, self.group)
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        chunk = bytes(range(256)) * 4096          # 1 MiB, not zeros
        try:
            with open(self.path, 'wb') as fh:
                for _ in range(total_bytes(self.sizes_mib) // ALIGN):
                    fh.write(chunk)
                fh.flush()
                os.fsync(fh.fileno())
            self.loop = _run(['losetup', '-f', '--show', '--direct-io=on',
                              self.path])
            os.makedirs(self.group, exist_ok=True)
        except BaseException:
            self.close()
            raise
        return self

    @property
    def devno(self):
        """``major:minor`` of the whole loop device (blk-throttle keys)."""
        st = os.stat(self.loop)
        return '%d:%d' % (os.major(st.st_rdev), os.minor(st.st_rdev))

    def set_capacity(self, read_bps=0, write_bps=0, read_iops=0,
                     write_iops=0):
        """The device's capacity for the group (0 = no limit)."""
        for key, value in (('read_bps', read_bps), ('write_bps', write_bps),
                           ('read_iops', read_iops),
                           ('write_iops', write_iops)):
            _write(os.path.join(self.group, 'blkio.throttle.%s_device'
                                % key), '%s %d' % (self.devno, int(value)))
            self.limits[key] = int(value)

    def place(self, specs):
        """``specs`` (GuestSpecs, one per region) with each guest's disk on
        its region of this device.
        """
        return [dataclasses.replace(s, disk_dev=self.loop,
                                    disk_offset=self.regions[i][0])
                for i, s in enumerate(specs)]

    def attach(self, pid):
        """Put a QEMU process (all its threads) in the group."""
        _write(os.path.join(self.group, 'cgroup.procs'), str(pid))

    def members(self):
        return _pids(self.group)

    def serviced(self):
        """Cumulative (ios, bytes) of the group on the device, reads and
        writes together (blk-throttle's own counters).
        """
        def total(kind):
            out = 0
            with open(os.path.join(self.group,
                                   'blkio.throttle.%s' % kind)) as fh:
                for line in fh:
                    f = line.split()
                    if len(f) == 3 and f[0] == self.devno and f[1] in (
                            'Read', 'Write'):
                        out += int(f[2])
            return out
        return total('io_serviced'), total('io_service_bytes')

    # -- tear down ----------------------------------------------------------
    def close(self):
        sweep(self.path, self.group)
        self.loop = None

    def __enter__(self):
        return self.create()

    def __exit__(self, *exc):
        self.close()


def sweep(path, group):
    """Remove the group, detach ``path``'s loop devices, delete ``path``."""
    remove_group(group)
    for dev in loops_of(path):
        try:
            _run(['losetup', '-d', dev])
        except SharedDiskError:
            pass
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
