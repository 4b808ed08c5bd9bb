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
"""The one-node Ceph's files and processes, for iosched.cloud.ceph.

``Paths`` says where everything lives under a state directory;
``conf_text`` writes a ceph.conf that keeps every daemon's data, keyring,
log, pidfile and admin socket there (nothing under /etc/ceph,
/var/lib/ceph, /var/log/ceph or /run/ceph) and puts the monitor on
loopback ports of its own. Daemons are started directly (no systemd: they
daemonize and write their pidfile) and stopped by pid; a process is
"ours" when its command line names our ceph.conf.
"""

import glob
import json
import os
import signal
import socket
import subprocess
import time

from oslo_log import log as logging

LOG = logging.getLogger(__name__)

MON_ID = 'a'
MGR_ID = 'x'
STATE_FILE = 'cluster.json'
# Monitor ports (msgr2, msgr1), not Ceph's 3300/6789: no other Ceph clashes
PORT_BASE = 16789
PORT_TRIES = 50
# Stop order: the OSD first (it tells the monitor it goes; with no
# monitor it waits osd_mon_shutdown_timeout), the manager, the monitor.
STOP_RANK = {'ceph-osd': 0, 'ceph-mgr': 1, 'ceph-mon': 2}


class CephError(Exception):
    """Ceph could not be brought up, queried or taken down."""


def run(cmd, timeout=60, check=True, env=None):
    """subprocess.run with text output; CephError on failure/timeout."""
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True,
                              timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        raise CephError('%s: no answer in %s s' % (' '.join(cmd), timeout))
    except OSError as exc:
        raise CephError('%s: %s' % (cmd[0], exc))
    if check and proc.returncode != 0:
        raise CephError('%s exited %d: %s' % (
            ' '.join(cmd), proc.returncode,
            (proc.stderr or proc.stdout).strip()[-2000:]))
    return proc


class Paths(object):
    """Where everything lives under a state directory."""

    def __init__(self, state_dir):
        self.state_dir = os.path.abspath(state_dir)
        j = lambda *p: os.path.join(self.state_dir, *p)
        self.conf = j('ceph.conf')
        self.state = j(STATE_FILE)
        self.run = j('run')
        self.log = j('log')
        self.crash = j('crash')
        self.admin_keyring = j('ceph.client.admin.keyring')
        self.mon_root = j('mon')
        self.mgr_root = j('mgr')
        self.osd_root = j('osd')

    def keyring(self, user):
        return os.path.join(self.state_dir, 'ceph.client.%s.keyring' % user)

    def data(self, name):
        kind, ident = name.split('.', 1)
        return os.path.join(self.state_dir, kind, 'ceph-%s' % ident)

    def pidfile(self, name):
        return os.path.join(self.run, '%s.pid' % name)

    def logfile(self, name):
        return os.path.join(self.log, 'ceph-%s.log' % name)


def ceph(paths, *args, timeout=30, check=True, fmt=None, input_file=None):
    """The ``ceph`` CLI as client.admin; parsed JSON with ``fmt='json'``."""
    cmd = ['ceph', '-c', paths.conf, '--connect-timeout', str(timeout)]
    cmd += list(args)
    if fmt:
        cmd += ['--format', fmt]
    if input_file:
        cmd += ['-i', input_file]
    proc = run(cmd, timeout=timeout + 10, check=check)
    if fmt == 'json' and proc.returncode == 0:
        return json.loads(proc.stdout or 'null')
    return proc


def load_state(paths):
    try:
        with open(paths.state) as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return None


def save_state(paths, state):
    tmp = paths.state + '.tmp'
    with open(tmp, 'w') as fh:
        json.dump(state, fh, indent=1, sort_keys=True)
    os.replace(tmp, paths.state)


def _port_free(port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    # As Ceph's messenger binds: a port in TIME_WAIT is free for it.
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        s.bind(('127.0.0.1', port))
        return True
    except OSError:
        return False
    finally:
        s.close()


def choose_ports():
    """(msgr2, msgr1) ports for a new monitor on 127.0.0.1."""
    for i in range(PORT_TRIES):
        v2 = PORT_BASE + 2 * i
        if _port_free(v2) and _port_free(v2 + 1):
            return v2, v2 + 1
    raise CephError('no free port pair from %d to %d on 127.0.0.1'
                    % (PORT_BASE, PORT_BASE + 2 * PORT_TRIES))


def mon_addrs(state):
    return '[v2:127.0.0.1:%d,v1:127.0.0.1:%d]' % (state['mon_port_v2'],
                                                  state['mon_port_v1'])


def conf_text(paths, state):
    """ceph.conf for the daemons and every client of this cluster."""
    daemon = ['log_file = %s/$cluster-$name.log' % paths.log,
              'pid_file = %s/$name.pid' % paths.run,
              'admin_socket = %s/$cluster-$name.asok' % paths.run]
    lines = [
        '# Written by iosched.cloud.ceph: a one-node cluster.',
        '[global]',
        'fsid = %s' % state['fsid'],
        'mon_host = %s' % mon_addrs(state),
        'public_addr = 127.0.0.1',
        'cluster_addr = 127.0.0.1',
        'auth_cluster_required = cephx',
        'auth_service_required = cephx',
        'auth_client_required = cephx',
        'auth_allow_insecure_global_id_reclaim = false',
        'keyring = %s/$cluster.$name.keyring' % paths.state_dir,
        'run_dir = %s' % paths.run,
        'crash_dir = %s' % paths.crash,
        'osd_pool_default_size = 1',
        'osd_pool_default_min_size = 1',
        'osd_pool_default_pg_num = 8',
        'osd_pool_default_pgp_num = 8',
        'osd_pool_default_pg_autoscale_mode = off',
        'osd_crush_chooseleaf_type = 0',
        'mon_allow_pool_size_one = true',
        'mon_allow_pool_delete = true',
        'mon_warn_on_pool_no_redundancy = false',
        # The host's disk is shared with everything else: warn late.
        'mon_data_avail_warn = 10',
        '', '[mon]',
        'mon_data = %s/$cluster-$id' % paths.mon_root,
        'keyring = $mon_data/keyring',
        'mon_cluster_log_file = %s/ceph.log' % paths.log,
    ] + daemon + [
        '', '[mgr]',
        'mgr_data = %s/$cluster-$id' % paths.mgr_root,
        'keyring = $mgr_data/keyring',
        'mgr_initial_modules = iostat',
    ] + daemon + [
        '', '[osd]',
        'osd_data = %s/$cluster-$id' % paths.osd_root,
        'keyring = $osd_data/keyring',
        'osd_objectstore = bluestore',
        # BlueStore on a sparse file, $osd_data/block, made by --mkfs.
        'bluestore_block_create = true',
        'bluestore_block_size = %d' % (state['size_gb'] << 30),
        # The OSD shares 2 cores and 24 GiB with a whole cloud.
        'osd_memory_target = %d' % (state['osd_memory_mb'] << 20),
        # reads reach the device, not a cache (bench/cloud_slo.py caps it)
        'bluestore_default_buffered_read = false',
    ] + daemon + ['']
    return '\n'.join(lines)


def exists(pid):
    """True while ``pid`` runs (a zombie does not count)."""
    try:
        with open('/proc/%d/stat' % pid) as fh:
            return fh.read().rsplit(')', 1)[1].split()[0] != 'Z'
    except (OSError, IndexError):
        return False


def _argv(pid):
    try:
        with open('/proc/%d/cmdline' % pid, 'rb') as fh:
            return [a.decode(errors='replace')
                    for a in fh.read().split(b'\0') if a]
    except OSError:
        return []


def pidfile_pid(paths, name):
    """The live pid in ``name``'s pidfile if it runs with our conf."""
    try:
        with open(paths.pidfile(name)) as fh:
            pid = int(fh.read().strip())
    except (OSError, ValueError):
        return None
    if exists(pid) and paths.conf in _argv(pid):
        return pid
    return None


def our_processes(paths):
    """{pid: argv} of every ceph program started with our ceph.conf."""
    found = {}
    for d in glob.glob('/proc/[0-9]*'):
        pid = int(os.path.basename(d))
        argv = _argv(pid)
        if (pid != os.getpid() and paths.conf in argv and
                os.path.basename(argv[0]).startswith('ceph') and
                exists(pid)):
            found[pid] = argv
    return found


def daemon_names(state):
    names = ['mon.%s' % MON_ID, 'mgr.%s' % MGR_ID]
    if state.get('osd_id') is not None:
        names.append('osd.%s' % state['osd_id'])
    return names


def tail(path, lines=20):
    try:
        with open(path, errors='replace') as fh:
            return ''.join(fh.readlines()[-lines:])
    except OSError:
        return '(no log at %s)\n' % path


def log_tails(paths, names, lines=12):
    """The last lines of each daemon's log, under its name and path."""
    return ''.join('--- %s (%s):\n%s' % (n, paths.logfile(n),
                                          tail(paths.logfile(n), lines))
                   for n in names)


def start_daemon(paths, name):
    """Start ``ceph-<kind> -c conf -i <id>`` unless it runs; returns
    ``(pid, started)``.
    """
    kind, ident = name.split('.', 1)
    pid = pidfile_pid(paths, name)
    if pid:
        return pid, False
    if os.path.exists(paths.pidfile(name)):
        os.unlink(paths.pidfile(name))
    run(['ceph-%s' % kind, '-c', paths.conf, '-i', ident], timeout=60)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        pid = pidfile_pid(paths, name)
        if pid:
            return pid, True
        time.sleep(0.1)
    raise CephError('%s did not start (no live pid in %s); %s:\n%s' % (
        name, paths.pidfile(name), paths.logfile(name),
        tail(paths.logfile(name))))


def wait(what, predicate, timeout, paths, names, restart=False):
    """Poll ``predicate() -> (ok, detail)`` until ok. A daemon of ``names``
    that exits meanwhile fails the wait (naming its log), or with
    ``restart`` (a reused cluster, whose daemon may have been stopping
    when ``up`` found it) is started again, at most twice.
    """
    deadline = time.monotonic() + timeout
    last, restarts = None, {}
    while True:
        try:
            ok, last = predicate()
        except CephError as exc:
            ok, last = False, str(exc)
        if ok:
            return
        dead = [n for n in names if not pidfile_pid(paths, n)]
        if dead and restart and all(restarts.get(n, 0) < 2 for n in dead):
            for n in dead:
                LOG.warning('%s exited: starting it again', n)
                restarts[n] = restarts.get(n, 0) + 1
                start_daemon(paths, n)
            continue
        if dead or time.monotonic() > deadline:
            why = ('%s exited' % ', '.join(dead)) if dead else (
                'timed out after %.0f s' % timeout)
            raise CephError('waiting for %s: %s; last: %s\n%s' % (
                what, why, last, log_tails(paths, dead or names)))
        time.sleep(0.5)


def health(paths, timeout=10):
    """('HEALTH_OK'|..., [check names])."""
    out = ceph(paths, 'health', fmt='json', timeout=timeout)
    return out.get('status'), sorted((out.get('checks') or {}).keys())


def probe_pool(paths, pool, timeout=10):
    """Write and remove one object: the OSD really serves the pool (one
    OSD has no peer to report it dead, so the map can say ``up`` for a
    gone OSD for mon_osd_report_timeout, 15 min).
    """
    obj = 'iosched-probe-%d' % os.getpid()
    base = ['rados', '-c', paths.conf, '-p', pool,
            '--rados_osd_op_timeout=%d' % timeout,
            '--rados_mon_op_timeout=%d' % timeout,
            '--client_mount_timeout=%d' % timeout]
    run(base + ['put', obj, paths.conf], timeout=timeout + 10)
    run(base + ['rm', obj], timeout=timeout + 10)
    return True


def _stop_group(pids, timeout):
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except OSError:
            pass
    deadline = time.monotonic() + timeout
    alive = set(pids)
    while alive and time.monotonic() < deadline:
        alive = {p for p in alive if exists(p)}
        if alive:
            time.sleep(0.1)
    killed = sorted(alive)
    for pid in killed:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    deadline = time.monotonic() + 10
    while alive and time.monotonic() < deadline:
        alive = {p for p in alive if exists(p)}
        time.sleep(0.05)
    return killed


def stop_all(paths, state, timeout):
    """SIGTERM our daemons (OSD, manager, monitor, then any other ceph
    program on our conf), each group waited for ``timeout`` s then
    SIGKILLed. Returns ``({pid: program}, [pids killed])``.
    """
    procs = our_processes(paths)
    for name in daemon_names(state or {}):
        pid = pidfile_pid(paths, name)
        if pid and pid not in procs:
            procs[pid] = ['ceph-' + name.split('.')[0]]
    groups = {}
    for pid, argv in procs.items():
        rank = STOP_RANK.get(os.path.basename(argv[0]), 3)
        groups.setdefault(rank, []).append(pid)
    killed = []
    for rank in sorted(groups):
        killed += _stop_group(groups[rank], timeout)
    return {p: os.path.basename(a[0]) for p, a in sorted(procs.items())}, \
        killed


def rss_kb(pid):
    try:
        with open('/proc/%d/status' % pid) as fh:
            for line in fh:
                if line.startswith('VmRSS:'):
                    return int(line.split()[1])
    except OSError:
        pass
    return None
