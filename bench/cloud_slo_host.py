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
"""The cloud side of ``bench/cloud_slo.py``: what it makes and puts back.

* ``OsdCapacity``: the Ceph OSD's process in a cgroup v1 blkio group with
  a read limit on the disk under its BlueStore file (the device's
  capacity), and the group's serviced bytes; ``close`` moves it back to
  the root group and removes the group.
* ``SloCloud``: the types, volumes (written through with ``rbd bench``),
  servers and attachments, made through the ``openstack`` CLI; the
  guests' clients; the volumes' iotune (cleared, Nova's, read); the
  capacity measured through the guests; the cloud agent stopped for the
  run, ``disk_capacity_iops`` in its config for the agent arms; and
  ``teardown``, which puts all of it back.
"""

import os
import subprocess
import time

from bench import cloud_common as cc
from bench import testbed_common as common
from bench import testbed_slo as tb_slo
from iosched.cloud import ceph as ceph_mod
from iosched.cloud import ceph_daemons
from iosched.cloud import identity
from iosched.cloud import image
from iosched.cloud import layout as layout_mod
from iosched.contract import qos_keys
from iosched.contract import slo as slo_mod

BLKIO = '/sys/fs/cgroup/blkio'
GROUP = 'iosched-bench-osd'
REF = slo_mod.DEFAULT_REF_IO_BYTES
AFFECT_LIVE = 1
IOTUNE_ZERO = tb_slo.IOTUNE_ZERO
progress = common.progress


def _write(path, text):
    with open(path, 'w') as fh:
        fh.write(text)


def whole_disk(devno):
    """The whole disk of a partition's ``major:minor`` (blk-throttle takes
    whole disks only), else ``devno`` itself.
    """
    base = '/sys/dev/block/%s' % devno
    if os.path.exists(os.path.join(base, 'partition')):
        with open(os.path.join(os.path.realpath(base), '..', 'dev')) as fh:
            return fh.read().strip()
    return devno


class OsdCapacity:
    """The OSD's process in blkio group ``GROUP`` with a read limit."""

    def __init__(self, ceph_dir, read_bps):
        paths = ceph_daemons.Paths(ceph_dir)
        name = 'osd.%s' % ceph_daemons.load_state(paths)['osd_id']
        self.pid = ceph_daemons.pidfile_pid(paths, name)
        if self.pid is None:
            raise cc.CloudError('%s does not run' % name)
        st = os.stat(os.path.join(paths.data(name), 'block'))
        self.devno = whole_disk('%d:%d' % (os.major(st.st_dev),
                                           os.minor(st.st_dev)))
        self.name, self.read_bps = GROUP, int(read_bps)
        self.group = os.path.join(BLKIO, GROUP)

    def open(self):
        os.makedirs(self.group, exist_ok=True)
        _write(os.path.join(self.group, 'cgroup.procs'), str(self.pid))
        _write(os.path.join(self.group, 'blkio.throttle.read_bps_device'),
               '%s %d' % (self.devno, self.read_bps))

    def serviced(self):
        """Bytes the group's reads and writes moved on the disk so far."""
        with open(os.path.join(self.group,
                               'blkio.throttle.io_service_bytes')) as fh:
            return sum(int(f[2]) for f in (ln.split() for ln in fh)
                       if len(f) == 3 and f[0] == self.devno
                       and f[1] in ('Read', 'Write'))

    def close(self):
        if not os.path.isdir(self.group):
            return
        _write(os.path.join(self.group, 'blkio.throttle.read_bps_device'),
               '%s 0' % self.devno)
        with open(os.path.join(self.group, 'cgroup.procs')) as fh:
            for pid in fh.read().split():
                try:
                    _write(os.path.join(BLKIO, 'cgroup.procs'), pid)
                except OSError:
                    pass          # exited
        os.rmdir(self.group)


class SloCloud:
    """Types, volumes, servers and guests of the SLO benchmark."""

    def __init__(self, args, slos, opts, prefix, target):
        self.args, self.slos, self.opts = args, slos, opts
        self.prefix, self.target = prefix, target
        self.layout = layout_mod.load(args.state_dir)
        self.cloud = cc.OpenStack(args.state_dir, args.openstack)
        self.agent = cc.CloudAgent(args.state_dir)
        self.agent_conf = self.layout.etc('iosched', 'host-agent.conf')
        self.agent_conf_text = None
        self.agent_was_running = None
        self.servers, self.volumes, self.types = {}, {}, []
        self.guests, self.nova_iotune, self.cap = {}, {}, None
        self.bss = {n: int(o['bs']) for n, o in opts.items()}
        self.osd = OsdCapacity(os.path.join(args.state_dir, 'ceph'),
                               args.capacity_mib * 2**20)
        self.conn = None

    # -- making ---------------------------------------------------------------
    def setup(self):
        import libvirt
        self.agent_was_running = self.agent.running()
        if self.agent_was_running:
            progress('stopping %s for the run (%.1f s)'
                     % (cc.AGENT, self.agent.stop()))
        variants = {m: m for m in image.DEFAULT_VARIANTS}
        variants.update({'slo-%s' % role: 'disk:' + ','.join(
            '%s=%s' % kv for kv in sorted(o.items()))
            for role, o in self.opts.items()})
        image.ensure_images(identity.connect(self.layout), variants=variants,
                            log=progress)
        self.cloud.ensure_flavor(self.args.flavor, 1, 128, 1)
        for role in sorted(self.opts):
            self.volumes[role] = self._volume(role)
        ids = {role: self.cloud.boot(self.prefix + role, self.args.flavor,
                                     '%s-slo-%s' % (image.PREFIX, role))
               for role in sorted(self.opts)}
        self.servers = ids
        self.cloud.wait_active(ids.values())
        self.conn = libvirt.open('qemu:///system')
        for role, sid in sorted(ids.items()):
            self._attach(role, sid)
        self.osd.open()
        self.cap = self.measure_capacity()
        progress('capacity through the guests: %.2f MiB/s = %.0f IOPS of '
                 '16 KiB (OSD read limit %.1f MiB/s on %s)' % (
                     self.cap['mib_s'], self.cap['iops_ref'],
                     self.args.capacity_mib, self.osd.devno))
        self._set_capacity_conf(self.cap['iops_ref'])

    def _volume(self, role):
        kw = []
        if role in self.slos:
            name = self.prefix + role
            self.cloud.run('volume', 'slo', 'type', 'delete', name,
                           admin=True, parse=False, check=False)
            self.cloud.run('volume', 'slo', 'type', 'create', name,
                           self.args.__dict__['%s_slo' % role], admin=True)
            self.types.append(name)
            kw = ['--type', name]
        vol = self.cloud.run('volume', 'create', '--size', '1', *kw,
                             self.prefix + role)
        self._wait_volume(vol['id'], 'available')
        # write it through: reads of never-written RBD objects reach no
        # device (librbd answers zeros)
        t0 = time.monotonic()
        subprocess.run(
            ['rbd', '-c', os.path.join(self.args.state_dir, 'ceph',
                                       'ceph.conf'),
             'bench', '--io-type', 'write', '--io-size', '4M',
             '--io-threads', '4', '--io-total', '1G', '--io-pattern', 'seq',
             '%s/volume-%s' % (ceph_mod.POOL, vol['id'])],
            check=True, capture_output=True, timeout=600)
        progress('volume %s%s (%s): created, written through in %.0f s'
                 % (self.prefix, role, vol['id'], time.monotonic() - t0))
        return vol['id']

    def _wait_volume(self, vid, status, timeout=180.0):
        deadline = time.monotonic() + timeout
        while True:
            got = self.cloud.run('volume', 'show', vid)['status']
            if got == status:
                return
            if got == 'error' or time.monotonic() > deadline:
                raise cc.CloudError('volume %s is %s, want %s'
                                    % (vid, got, status))
            time.sleep(2)

    def _attach(self, role, sid):
        self.cloud.run('server', 'add', 'volume', sid, self.volumes[role],
                       parse=False)
        self._wait_volume(self.volumes[role], 'in-use')
        g = cc.nova_guest(self.conn, sid, role, 'disk')
        g.connect(timeout=180)
        g.wait_hello(timeout=180)
        self.guests[role] = g
        got = g.domain.blockIoTune(self.target, AFFECT_LIVE)
        self.nova_iotune[role] = {k: int(v) for k, v in got.items()
                                  if k in qos_keys.FRONTEND_KEYS}
        progress('%s: %s attached as %s, Nova\'s iotune %s' % (
            role, self.volumes[role], self.target,
            {k: v for k, v in self.nova_iotune[role].items() if v} or
            'none'))

    def _set_capacity_conf(self, iops):
        with open(self.agent_conf) as fh:
            self.agent_conf_text = text = fh.read()
        lines = [ln for ln in text.splitlines()
                 if not ln.startswith('disk_capacity_iops')]
        at = lines.index('[host_agent]') + 1
        lines.insert(at, 'disk_capacity_iops = %.1f' % iops)
        _write(self.agent_conf, '\n'.join(lines) + '\n')

    # -- iotune and capacity -----------------------------------------------
    def iotune_now(self, role):
        got = self.guests[role].domain.blockIoTune(self.target, AFFECT_LIVE)
        return {k: v for k, v in got.items()
                if k in qos_keys.FRONTEND_KEYS and v}

    def _set(self, role, params):
        self.guests[role].domain.setBlockIoTune(self.target, dict(params),
                                                AFFECT_LIVE)

    def clear_all(self):
        for role in self.guests:
            self._set(role, IOTUNE_ZERO)

    def set_nova_iotune(self):
        for role in self.guests:
            self._set(role, dict(IOTUNE_ZERO, **self.nova_iotune[role]))

    def drain(self):
        """Backlogs of the previous arm drain with the neighbour held."""
        self.clear_all()
        self._set('noisy', dict(IOTUNE_ZERO, total_bytes_sec=2**20))
        time.sleep(self.args.drain)
        self.clear_all()

    def measure_capacity(self, seconds=8):
        """Bytes per second the OSD moved with every guest reading, no
        iotune (the neighbour alone keeps the device busy).
        """
        self.clear_all()
        time.sleep(3)
        t0, b0 = time.monotonic(), self.osd.serviced()
        time.sleep(seconds)
        t1, b1 = time.monotonic(), self.osd.serviced()
        bps = (b1 - b0) / (t1 - t0)
        return {'mib_s': round(bps / 2**20, 2),
                'iops_ref': round(bps / REF, 1), 'seconds': seconds}

    # -- putting back -------------------------------------------------------
    def teardown(self):
        for step in (self.osd.close, self._close_guests, self._restore_conf,
                     self._delete, self._agent_back):
            try:
                step()
            except Exception as e:      # the other steps still run
                progress('teardown: %s: %s' % (step.__name__, e))
        if self.conn is not None:
            self.conn.close()

    def _close_guests(self):
        for g in self.guests.values():
            g.close()

    def _restore_conf(self):
        if self.agent_conf_text is not None:
            _write(self.agent_conf, self.agent_conf_text)

    def _delete(self):
        if self.args.keep:
            progress('kept: servers %s, volumes %s, types %s'
                     % (self.servers, self.volumes, self.types))
            return
        self.cloud.delete(list(self.servers.values()))
        for vid in self.volumes.values():
            self._wait_volume(vid, 'available')
            self.cloud.run('volume', 'delete', vid, parse=False)
        for name in self.types:
            deadline = time.monotonic() + 120
            while True:
                try:
                    self.cloud.run('volume', 'slo', 'type', 'delete', name,
                                   admin=True, parse=False)
                    break
                except cc.CloudError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(2)    # its volumes are still being deleted

    def _agent_back(self):
        if self.agent_was_running and not self.agent.running():
            self.agent.start()
            progress('%s started again (as found)' % cc.AGENT)
