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
"""Which VM an I/O or a thread belongs to, on a libvirt host (read only).

* domains: libvirt's running domains (``libvirt`` Python binding), or
  the ones named;
* threads: the QEMU pid from libvirt's pidfile, its threads from procfs
  (``iosched.host_agent.drivers.libvirt.threads``): vCPU threads by name, the
  main loop (tid = pid) and I/O threads as completion threads;
* sectors: a domain disk whose source is the traced block device covers
  the device's sectors given by its storage ``<slice>`` (offset, size),
  or the whole device without one.
"""

import os
import xml.etree.ElementTree as ET

from iosched.host_agent.drivers.libvirt import threads


class HostMapError(Exception):
    pass


def devno(device):
    """(major, minor) of a block device path; HostMapError otherwise."""
    try:
        st = os.stat(device)
    except OSError as e:
        raise HostMapError('cannot stat device %s: %s' % (device, e))
    import stat
    if not stat.S_ISBLK(st.st_mode):
        raise HostMapError('%s is not a block device (want e.g. /dev/loop0,'
                           ' /dev/sdb)' % device)
    return os.major(st.st_rdev), os.minor(st.st_rdev)


def disk_ranges(xml_text, device):
    """[(first sector, end sector)] of the domain's disks on ``device``
    (end None: to the end of the device).
    """
    want = devno(device)
    out = []
    root = ET.fromstring(xml_text)
    for disk in root.iterfind('devices/disk'):
        src = disk.find('source')
        if src is None or not src.get('dev'):
            continue
        try:
            same = devno(src.get('dev')) == want
        except HostMapError:
            same = False
        if not same:
            continue
        sl = src.find("slices/slice[@type='storage']")
        if sl is not None:
            off, size = int(sl.get('offset')), int(sl.get('size'))
            out.append((off // 512, (off + size) // 512))
        else:
            out.append((0, None))
    return out


class HostMap:
    """VMs (libvirt domain names) on this host and their threads."""

    def __init__(self, device, domains=None, uri='qemu:///system',
                 run_dir='/run/libvirt/qemu', proc_root='/proc'):
        self.device = device
        self.uri, self.run_dir, self.proc_root = uri, run_dir, proc_root
        self.major, self.minor = devno(device)
        self.want = list(domains or [])
        self.vms = {}             # name -> {'pid', 'ranges'}
        self.tid_vm, self.vcpu_tid, self.resp_tid = {}, {}, {}

    def discover(self):
        try:
            import libvirt
        except ImportError:
            raise HostMapError('the libvirt Python binding is missing '
                               '(pip install libvirt-python)')
        try:
            conn = libvirt.open(self.uri)
        except libvirt.libvirtError as e:
            raise HostMapError('cannot connect to libvirt at %s: %s'
                               % (self.uri, e))
        try:
            doms = {d.name(): d for d in conn.listAllDomains()
                    if d.isActive()}
            names = self.want or sorted(doms)
            missing = [n for n in names if n not in doms]
            if missing:
                raise HostMapError('no running domain named %s (running: %s)'
                                   % (', '.join(missing),
                                      ', '.join(sorted(doms)) or 'none'))
            for name in names:
                ranges = disk_ranges(doms[name].XMLDesc(0), self.device)
                if not ranges and not self.want:
                    continue      # not on this device
                try:
                    pid = threads.qemu_pid(self.run_dir, name)
                except threads.ThreadError as e:
                    raise HostMapError(str(e))
                self.vms[name] = {'pid': pid, 'ranges': ranges}
        finally:
            conn.close()
        if not self.vms:
            raise HostMapError('no running domain has a disk on %s; name '
                               'the domains with --domain' % self.device)
        self.refresh()
        return self

    def refresh(self):
        """Re-read the thread lists (thread-pool workers come and go);
        threads seen once stay mapped.
        """
        for name, vm in self.vms.items():
            pid = vm['pid']
            task = os.path.join(self.proc_root, str(pid), 'task')
            try:
                tids = [int(t) for t in os.listdir(task) if t.isdigit()]
            except OSError:
                continue          # the VM stopped
            for t in tids:
                self.tid_vm[t] = name
            try:
                for idx, tid in threads.vcpu_tids(self.proc_root,
                                                  pid).items():
                    self.vcpu_tid[tid] = (name, idx)
                io = threads.io_threads(self.proc_root, pid)
            except threads.ThreadError:
                continue
            self.resp_tid[pid] = name
            for comm, tid in io['io'].items():
                if comm.startswith('IO '):
                    self.resp_tid[tid] = name

    def sector_vm(self, sector):
        for name, vm in self.vms.items():
            for a, b in vm['ranges']:
                if sector >= a and (b is None or sector < b):
                    return name
        return None
