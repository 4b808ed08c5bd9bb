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
"""Where a trial's time went: QEMU CPU, host CPU and device busy time.

``Sampler(pids, devices)``; ``start()`` before a trial, ``stop()`` after
it returns, over the wall time between: each QEMU's CPU (utime + stime
of ``/proc/<pid>/stat``, in CPUs: 1.0 = one pCPU all the time) and their
sum, the host's busy CPUs (``/proc/stat``, all but idle and iowait) and
each block device's busy fraction (``io_ticks``, field 10 of
``/sys/block/<dev>/stat``: the share of the time with a request in
flight). Tells a CPU-bound trial (QEMU near the host's CPUs, device
partly idle) from a device-bound one. Reads only.
"""

import os
import time

PROC = '/proc'
SYS_BLOCK = '/sys/block'
HZ = os.sysconf('SC_CLK_TCK')


def _proc_cpu_s(pid, proc=PROC):
    try:
        with open(os.path.join(proc, str(pid), 'stat')) as f:
            fields = f.read().rsplit(')', 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / float(HZ)


def _host_busy_s(proc=PROC):
    with open(os.path.join(proc, 'stat')) as f:
        v = [int(x) for x in f.readline().split()[1:]]
    idle = v[3] + (v[4] if len(v) > 4 else 0)
    return (sum(v[:8]) - idle) / float(HZ)


def _name(dev):
    """'loop0' of '/dev/loop0' or 'loop0'."""
    return os.path.basename(dev)


def _io_ticks_s(dev, sys_block=SYS_BLOCK):
    dev = _name(dev)
    try:
        with open(os.path.join(sys_block, dev, 'stat')) as f:
            return int(f.read().split()[9]) / 1000.0
    except (OSError, IndexError, ValueError):
        return 0.0


def backing_device(loop, sys_block=SYS_BLOCK):
    """The whole disk under a loop device's backing file, or None."""
    try:
        with open(os.path.join(sys_block, _name(loop), 'loop',
                               'backing_file')) as f:
            st = os.stat(f.read().strip())
    except OSError:
        return None
    node = os.path.realpath('/sys/dev/block/%d:%d' % (
        os.major(st.st_dev), os.minor(st.st_dev)))
    if os.path.exists(os.path.join(node, 'partition')):
        node = os.path.dirname(node)
    name = os.path.basename(node)
    return name if os.path.isdir(os.path.join(sys_block, name)) else None


class Sampler:
    def __init__(self, pids, devices):
        self.pids = dict(pids)
        self.devices = [_name(d) for d in devices if d]

    def _read(self):
        return (time.monotonic(),
                {n: _proc_cpu_s(p) for n, p in self.pids.items()},
                _host_busy_s(),
                {d: _io_ticks_s(d) for d in self.devices})

    def start(self):
        self._t0 = self._read()

    def stop(self):
        t0, q0, h0, d0 = self._t0
        t1, q1, h1, d1 = self._read()
        wall = max(t1 - t0, 1e-9)
        qemu = {n: round((q1[n] - q0[n]) / wall, 3) for n in q1}
        return {'wall_s': round(wall, 3), 'qemu_cpus': qemu,
                'qemu_cpus_total': round(sum(qemu.values()), 3),
                'host_busy_cpus': round((h1 - h0) / wall, 3),
                'host_cpus': os.cpu_count(),
                'device_busy': {d: round((d1[d] - d0[d]) / wall, 3)
                                for d in d1}}
