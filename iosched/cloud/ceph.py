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
"""A one-node Ceph (Pacific, Debian's packages): the cloud's Cinder backend.

Everything (configuration, keyrings, the daemons' data, logs, pidfiles,
sockets) lives under one state directory, default
``/var/lib/iosched-cloud/ceph``; the monitor has loopback ports of its
own, so a test's cluster can run beside the cloud's. No systemd.

The cluster: one monitor (``mon.a``), one manager (``mgr.x``: health, PG
states and ``df``, which Cinder's capacity report asks for, are the
manager's), one BlueStore OSD on a sparse file in its data directory (no
LVM: this kernel has no device-mapper, so no ceph-volume; a loop device
over the file measured no better, see docs/cloud_ceph.md), ``osd pool
default size = 1``, the pool ``volumes`` initialised for RBD, the cephx
user ``client.cinder`` (``profile rbd`` on ``volumes``) and its keyring,
and a libvirt secret (``qemu:///system``, usage type ``ceph``) holding
that user's key, whose UUID Nova needs as ``[libvirt] rbd_secret_uuid``.

API::

    cluster = up(state_dir)        # CephCluster; idempotent
    status(state_dir)              # dict: daemons, health, pool usage
    down(state_dir)                # stops, undefines, removes everything
    ensure_packages()              # apt-get only for what is missing
    link_python_bindings(venv_dir) # ``import rados, rbd`` in a venv

CLI: ``python -m iosched.cloud.ceph {up,down,status,install,link}``
(``--state-dir D``; ``--venv V`` for link).
"""

import argparse
import dataclasses
import json
import os
import shutil
import sys
import time
import uuid as uuid_mod

from oslo_log import log as logging

from iosched.cloud import ceph_daemons as daemons
from iosched.cloud import ceph_host as host

LOG = logging.getLogger(__name__)

DEFAULT_STATE_DIR = '/var/lib/iosched-cloud/ceph'
LIBVIRT_URI = 'qemu:///system'
POOL = 'volumes'
USER = 'cinder'
# OpenStack's caps for Cinder's user (Ceph's "Block Devices and
# OpenStack"), here on the one pool.
USER_CAPS = ('mon', 'profile rbd', 'osd', 'profile rbd pool=%s' % POOL,
             'mgr', 'profile rbd pool=%s' % POOL)

CephError = daemons.CephError
PACKAGES = host.PACKAGES
missing_packages = host.missing_packages
ensure_packages = host.ensure_packages
link_python_bindings = host.link_python_bindings


@dataclasses.dataclass
class CephCluster:
    """What a client of the one-node cluster needs (see cinder_options and
    nova_options), and where its daemons and logs are.
    """

    state_dir: str
    conf: str                   # ceph.conf for every client (and daemon)
    keyring: str                # client.cinder's keyring (0600)
    admin_keyring: str          # client.admin's keyring (0600)
    user: str                   # 'cinder' (the cephx id, no 'client.')
    pool: str                   # 'volumes'
    secret_uuid: str            # libvirt secret holding client.cinder's key
    fsid: str
    mon_host: str               # '127.0.0.1:<port>': the msgr1 address
    pids: dict                  # {'mon.a': pid, 'mgr.x': pid, 'osd.0': pid}
    logs: dict                  # {'mon.a': path, ...}
    osd_block: str              # the OSD's BlueStore block file
    started: list = dataclasses.field(default_factory=list)  # by this up
    timings: dict = dataclasses.field(default_factory=dict)  # s from start

    def rbd_uri(self, image):
        """QEMU's ``rbd:`` filename of an image in the pool, opened as the
        ``cinder`` user (its key found through the configuration).
        """
        return 'rbd:%s/%s:id=%s:conf=%s' % (self.pool, image, self.user,
                                            self.conf)

    def cinder_options(self):
        """The options of a Cinder backend section for this cluster."""
        return {'volume_driver': 'cinder.volume.drivers.rbd.RBDDriver',
                'rbd_pool': self.pool,
                'rbd_ceph_conf': self.conf,
                'rbd_user': self.user,
                'rbd_secret_uuid': self.secret_uuid,
                'rbd_cluster_name': 'ceph'}

    def nova_options(self):
        """Nova's ``[libvirt]`` options to attach this cluster's volumes."""
        return {'rbd_user': self.user, 'rbd_secret_uuid': self.secret_uuid}


def _make_mon(paths, state):
    run = daemons.run
    mon_keyring = os.path.join(paths.run, 'mon.keyring')
    run(['ceph-authtool', '--create-keyring', mon_keyring, '--gen-key',
         '-n', 'mon.', '--cap', 'mon', 'allow *'])
    run(['ceph-authtool', '--create-keyring', paths.admin_keyring,
         '--gen-key', '-n', 'client.admin', '--cap', 'mon', 'allow *',
         '--cap', 'osd', 'allow *', '--cap', 'mgr', 'allow *',
         '--cap', 'mds', 'allow *'])
    run(['ceph-authtool', mon_keyring, '--import-keyring',
         paths.admin_keyring])
    monmap = os.path.join(paths.run, 'monmap')
    run(['monmaptool', '--create', '--fsid', state['fsid'], '--addv',
         daemons.MON_ID, daemons.mon_addrs(state), monmap])
    run(['ceph-mon', '-c', paths.conf, '--mkfs', '-i', daemons.MON_ID,
         '--monmap', monmap, '--keyring', mon_keyring], timeout=120)
    os.unlink(monmap)
    os.unlink(mon_keyring)


def _make_osd(paths, state):
    """Register an OSD with a key of ours and mkfs its BlueStore."""
    osd_uuid = str(uuid_mod.uuid4())
    key = daemons.run(['ceph-authtool', '--gen-print-key']).stdout.strip()
    secret_json = os.path.join(paths.run, 'osd-secret.json')
    with open(secret_json, 'w') as fh:
        json.dump({'cephx_secret': key}, fh)
    try:
        osd_id = daemons.ceph(paths, 'osd', 'new', osd_uuid,
                              input_file=secret_json).stdout.strip()
    finally:
        os.unlink(secret_json)
    state.update(osd_id=int(osd_id), osd_uuid=osd_uuid)
    data = paths.data('osd.%s' % osd_id)
    os.makedirs(data, exist_ok=True)
    daemons.run(['ceph-authtool', '--create-keyring',
                 os.path.join(data, 'keyring'), '--name', 'osd.%s' % osd_id,
                 '--add-key', key])
    daemons.run(['ceph-osd', '-c', paths.conf, '-i', osd_id, '--mkfs',
                 '--osd-uuid', osd_uuid], timeout=300)


def _create(paths, state, timeout, lap):
    """A new cluster: keys, monitor, manager, OSD, pool, user."""
    for d in (paths.run, paths.log, paths.crash, paths.mon_root,
              paths.mgr_root, paths.osd_root):
        os.makedirs(d, exist_ok=True)
    os.chmod(paths.state_dir, 0o750)
    with open(paths.conf, 'w') as fh:
        fh.write(daemons.conf_text(paths, state))
    _make_mon(paths, state)
    mon, mgr = 'mon.%s' % daemons.MON_ID, 'mgr.%s' % daemons.MGR_ID
    daemons.start_daemon(paths, mon)
    daemons.wait('the monitor', lambda: (daemons.ceph(
        paths, 'mon', 'stat', timeout=5).returncode == 0, None),
        timeout, paths, [mon])
    lap('mon_up')
    os.makedirs(paths.data(mgr), exist_ok=True)
    daemons.ceph(paths, 'auth', 'get-or-create', mgr, 'mon',
                 'allow profile mgr', 'osd', 'allow *', 'mds', 'allow *',
                 '-o', os.path.join(paths.data(mgr), 'keyring'))
    daemons.start_daemon(paths, mgr)
    _make_osd(paths, state)
    daemons.save_state(paths, state)
    lap('osd_mkfs')
    names = daemons.daemon_names(state)
    daemons.start_daemon(paths, names[-1])
    daemons.wait('%s up' % names[-1], lambda: (daemons.ceph(
        paths, 'osd', 'stat', fmt='json', timeout=5).get(
        'num_up_osds', 0) >= 1, 'not up'), timeout, paths, names)
    lap('osd_up')
    daemons.ceph(paths, 'osd', 'pool', 'create', POOL)
    daemons.run(['rbd', '-c', paths.conf, 'pool', 'init', POOL],
                timeout=timeout)
    keyring = paths.keyring(USER)
    daemons.ceph(paths, 'auth', 'get-or-create', 'client.%s' % USER,
                 *USER_CAPS, '-o', keyring)
    os.chmod(keyring, 0o600)
    lap('pool_user')


def _user_key(paths):
    with open(paths.keyring(USER)) as fh:
        for line in fh:
            if line.strip().startswith('key'):
                return line.split('=', 1)[1].strip()
    raise CephError('no key in %s' % paths.keyring(USER))


def _ready(paths, wait_health_ok):
    """(ok, detail): HEALTH_OK (or all PGs active) and the pool serves."""
    st, checks = daemons.health(paths)
    if wait_health_ok and st != 'HEALTH_OK':
        return False, (st, checks)
    if not wait_health_ok:
        pg = daemons.ceph(paths, 'pg', 'stat', fmt='json', timeout=10)
        active = sum(s['num'] for s in pg.get('num_pg_by_state', [])
                     if 'active' in s['name'])
        if not pg.get('num_pgs') or active != pg['num_pgs']:
            return False, (st, checks, pg)
    return daemons.probe_pool(paths, POOL), (st, checks)


def _prepare(paths, libvirt_uri):
    """The state of an initialised cluster under ``paths``, or None after
    clearing a half-made one; refuses a non-empty directory not ours.
    """
    state = daemons.load_state(paths)
    if state and state.get('initialised'):
        return state
    if state or daemons.our_processes(paths):
        LOG.warning('%s holds a half-made cluster: removing it',
                    paths.state_dir)
        down(paths.state_dir, libvirt_uri=libvirt_uri)
    elif os.path.isdir(paths.state_dir) and os.listdir(paths.state_dir):
        raise CephError('%s is not empty and holds no %s: not touching it'
                        % (paths.state_dir, daemons.STATE_FILE))
    return None


def up(state_dir=DEFAULT_STATE_DIR, size_gb=20, timeout=180, install=True,
       libvirt_uri=LIBVIRT_URI, secret_uuid=None, osd_memory_mb=1024,
       wait_health_ok=True):
    """Create, or reuse, the one-node cluster under ``state_dir``.

    Reuse (an initialised cluster there): daemons not running are
    started, the libvirt secret is defined again if it is gone, nothing
    else changes. Waits for HEALTH_OK (``wait_health_ok=False``: all PGs
    active) and a write to the pool; CephError naming the daemon's log
    when that does not come within ``timeout`` s.
    """
    t0 = time.monotonic()
    timings = {}

    def lap(name):
        timings[name] = round(time.monotonic() - t0, 2)

    if install:
        host.ensure_packages()
        lap('packages')
    host.require_libvirtd(libvirt_uri)
    paths = daemons.Paths(state_dir)
    state = _prepare(paths, libvirt_uri)
    reused = state is not None
    if reused:
        started = [n for n in daemons.daemon_names(state)    # not running
                   if daemons.start_daemon(paths, n)[1]]
    else:
        os.makedirs(paths.run, exist_ok=True)
        v2, v1 = daemons.choose_ports()
        state = {'fsid': str(uuid_mod.uuid4()),
                 'secret_uuid': secret_uuid or str(uuid_mod.uuid4()),
                 'mon_port_v2': v2, 'mon_port_v1': v1, 'size_gb': size_gb,
                 'osd_memory_mb': osd_memory_mb, 'osd_id': None,
                 'initialised': False}
        daemons.save_state(paths, state)
        try:
            _create(paths, state, timeout, lap)
        except CephError as exc:
            raise CephError('%s\n%s' % (exc, daemons.log_tails(
                paths, daemons.daemon_names(state))))
        started = daemons.daemon_names(state)
    names = daemons.daemon_names(state)
    daemons.wait('HEALTH_OK' if wait_health_ok else 'active PGs',
                 lambda: _ready(paths, wait_health_ok), timeout, paths,
                 names, restart=reused)
    lap('healthy')
    if host.ensure_secret(libvirt_uri, state['secret_uuid'],
                          host.secret_usage(USER, state['fsid']),
                          _user_key(paths), paths.run):
        started.append('secret %s' % state['secret_uuid'])
    state['initialised'] = True
    daemons.save_state(paths, state)
    lap('total')
    cluster = _cluster(paths, state, started, timings)
    LOG.info('ceph up in %.1f s under %s; started: %s', timings['total'],
             paths.state_dir, ', '.join(started) or 'nothing')
    return cluster


def _cluster(paths, state, started=(), timings=None):
    names = daemons.daemon_names(state)
    return CephCluster(
        state_dir=paths.state_dir, conf=paths.conf,
        keyring=paths.keyring(USER), admin_keyring=paths.admin_keyring,
        user=USER, pool=POOL, secret_uuid=state['secret_uuid'],
        fsid=state['fsid'], mon_host='127.0.0.1:%d' % state['mon_port_v1'],
        pids={n: daemons.pidfile_pid(paths, n) for n in names},
        logs={n: paths.logfile(n) for n in names},
        osd_block=os.path.join(paths.data(names[-1]), 'block'),
        started=list(started), timings=dict(timings or {}))


def down(state_dir=DEFAULT_STATE_DIR, timeout=30, libvirt_uri=LIBVIRT_URI):
    """Stop the daemons (SIGTERM by pid, ``timeout`` s, then SIGKILL),
    undefine the libvirt secret, detach loop devices over files in the
    state directory and remove it. Returns what it did; harmless when
    nothing is there.
    """
    t0 = time.monotonic()
    paths = daemons.Paths(state_dir)
    state = daemons.load_state(paths) or {}
    stopped, killed = daemons.stop_all(paths, state, timeout)
    done = {'stopped': stopped, 'killed': killed, 'secret_undefined': None}
    if state.get('secret_uuid'):
        done['secret_undefined'] = host.undefine_secret(
            libvirt_uri, state['secret_uuid'])
    done['loops_detached'] = host.detach_loops_under(paths.state_dir)
    if os.path.isdir(paths.state_dir):
        shutil.rmtree(paths.state_dir)
    left = daemons.our_processes(paths)
    if left:
        raise CephError('still running after down: %s' % left)
    done['seconds'] = round(time.monotonic() - t0, 2)
    LOG.info('ceph down in %.1f s (%s)', done['seconds'], paths.state_dir)
    return done


def _usage(paths, timeout):
    df = daemons.ceph(paths, 'df', fmt='json', timeout=timeout)
    pools = [p['stats'] for p in df.get('pools', []) if p['name'] == POOL]
    keys = ('stored', 'objects', 'max_avail')
    return {'cluster': {k: df['stats'].get(k) for k in (
        'total_bytes', 'total_avail_bytes', 'total_used_raw_bytes')},
        'pool': dict(name=POOL, **{k: pools[0][k] for k in keys})
        if pools else None}


def status(state_dir=DEFAULT_STATE_DIR, timeout=10):
    """Daemons (pid, RSS, log), health and the pool's usage;
    ``initialised`` is False when no cluster is under ``state_dir``.
    """
    paths = daemons.Paths(state_dir)
    state = daemons.load_state(paths)
    out = {'state_dir': paths.state_dir, 'initialised': False,
           'daemons': {}, 'health': None, 'pool': None}
    if not state:
        return out
    for name in daemons.daemon_names(state):
        pid = daemons.pidfile_pid(paths, name)
        out['daemons'][name] = {'pid': pid, 'running': bool(pid),
                                'rss_kb': pid and daemons.rss_kb(pid),
                                'log': paths.logfile(name)}
    out.update(initialised=bool(state.get('initialised')),
               fsid=state['fsid'], conf=paths.conf,
               secret_uuid=state['secret_uuid'])
    if not out['daemons']['mon.%s' % daemons.MON_ID]['running']:
        return out
    try:
        out['health'], out['health_checks'] = daemons.health(paths, timeout)
        out.update(_usage(paths, timeout))
    except CephError as exc:
        out['error'] = str(exc)
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog='python -m iosched.cloud.ceph',
        description="A one-node Ceph for the cloud's Cinder backend.")
    parser.add_argument('action',
                        choices=('up', 'down', 'status', 'install', 'link'))
    parser.add_argument('--state-dir', default=DEFAULT_STATE_DIR)
    parser.add_argument('--size-gb', type=int, default=20)
    parser.add_argument('--venv', default=sys.prefix,
                        help='link: the venv (default: this one)')
    args = parser.parse_args(argv)
    if args.action == 'up':
        out = dataclasses.asdict(up(args.state_dir, size_gb=args.size_gb))
    elif args.action == 'down':
        out = down(args.state_dir)
    elif args.action == 'install':
        out = {'installed': ensure_packages()}
    elif args.action == 'link':
        out = {'links': link_python_bindings(args.venv)}
    else:
        out = status(args.state_dir)
    print(json.dumps(out, indent=1, sort_keys=True))
    return 0


if __name__ == '__main__':
    sys.exit(main())
