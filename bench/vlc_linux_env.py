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
"""The host pieces of bench/vlc_linux.py and its functional test: a
shared loop device (direct I/O over a file filled with data), one cgroup
v1 ``blkio`` group per "VM", the device's elevator and its tunables, the
blk-throttle cap, fio jobs started inside a group, and what cgroup v2
answers when asked for its ``io`` controller.

Every ``with`` block undoes what it did, also on error: the loop device
is detached and its file removed, the groups removed (their tasks moved
back to the root group first), the elevator and every tunable written
restored to what was read before.
"""

import contextlib
import errno
import gzip
import json
import os
import re
import shutil
import subprocess
import time

BLKIO = '/sys/fs/cgroup/blkio'
UNIFIED = '/sys/fs/cgroup/unified'
MIB = 1 << 20


def _read(path):
    with open(path) as fh:
        return fh.read().strip()


def _write(path, value):
    with open(path, 'w') as fh:
        fh.write(str(value))


def missing():
    """Why this machine cannot run the VLC measurements ('' if it can)."""
    if os.geteuid() != 0:
        return 'not root'
    if not shutil.which('fio'):
        return 'no fio (apt-get install fio)'
    if not shutil.which('losetup'):
        return 'no losetup'
    if not os.path.isfile(os.path.join(BLKIO, 'blkio.throttle.'
                                       'read_iops_device')):
        return 'no cgroup v1 blkio hierarchy at %s' % BLKIO
    return ''


# -- the shared device --------------------------------------------------------
@contextlib.contextmanager
def loop_device(directory, size_mib):
    """A loop device with direct I/O over a file of ``size_mib`` MiB of
    random data (written, so reads reach the disk rather than an unwritten
    extent); yields '/dev/loopN'.
    """
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, 'img')
    dev = None
    try:
        with open(path, 'wb') as fh:
            chunk = os.urandom(4 * MIB)
            for i in range(size_mib // 4):
                fh.write(chunk[i % 4:] + chunk[:i % 4])
            fh.flush()
            os.fsync(fh.fileno())
        dev = subprocess.run(
            ['losetup', '--direct-io=on', '-f', '--show', path],
            check=True, capture_output=True, text=True).stdout.strip()
        yield dev
    finally:
        if dev:
            subprocess.run(['losetup', '-d', dev], capture_output=True)
        with contextlib.suppress(OSError):
            os.unlink(path)
        with contextlib.suppress(OSError):
            os.rmdir(directory)


def queue_dir(dev):
    return '/sys/block/%s/queue' % os.path.basename(dev)


def majmin(dev):
    st = os.stat(dev)
    return '%d:%d' % (os.major(st.st_rdev), os.minor(st.st_rdev))


def current_scheduler(dev):
    text = _read(os.path.join(queue_dir(dev), 'scheduler'))
    return text[text.index('[') + 1:text.index(']')]


def available_schedulers(dev):
    return _read(os.path.join(queue_dir(dev), 'scheduler')).replace(
        '[', '').replace(']', '').split()


@contextlib.contextmanager
def elevator(dev, name, tunables=None):
    """``name`` on ``dev`` with ``tunables`` ({file: value} under
    queue/iosched) written; afterwards the old values and the old
    elevator come back.
    """
    q = queue_dir(dev)
    old = current_scheduler(dev)
    restore = []
    try:
        _write(os.path.join(q, 'scheduler'), name)
        for key, value in (tunables or {}).items():
            path = os.path.join(q, 'iosched', key)
            restore.append((path, _read(path)))
            _write(path, value)
        yield
    finally:
        for path, value in reversed(restore):
            with contextlib.suppress(OSError):
                _write(path, value)
        _write(os.path.join(q, 'scheduler'), old)


def read_tunable(dev, key):
    return _read(os.path.join(queue_dir(dev), 'iosched', key))


# -- cgroup v1 blkio groups ---------------------------------------------------
@contextlib.contextmanager
def blkio_groups(names, tag):
    """One blkio group per name under the v1 root; yields {name: dir}.
    On exit the groups' tasks go back to the root group and the groups
    are removed.
    """
    made = {}
    try:
        for name in names:
            d = os.path.join(BLKIO, '%s-%s' % (tag, name))
            os.mkdir(d)
            made[name] = d
        yield dict(made)
    finally:
        for d in made.values():
            remove_group(d)


def remove_group(d):
    for _ in range(50):
        try:
            for pid in _read(os.path.join(d, 'cgroup.procs')).split():
                with contextlib.suppress(OSError):
                    _write(os.path.join(BLKIO, 'cgroup.procs'), pid)
            os.rmdir(d)
            return
        except FileNotFoundError:
            return
        except OSError as e:
            if e.errno != errno.EBUSY:
                raise
            time.sleep(0.1)


def _dead_owner(name, tag):
    """True if ``name`` is '<tag>-<pid>...' and that pid is gone."""
    m = re.match(r'%s-(\d+)(?:-|$)' % re.escape(tag), name)
    return bool(m) and not os.path.exists('/proc/%s' % m.group(1))


def sweep(tag, directory_root='/var/tmp'):
    """Undo what a killed earlier run named '<tag>-<pid>' left behind:
    its blkio groups, loop devices over files under
    <directory_root>/<tag>-<pid>/ and those files. Runs of live pids
    (another bench or test running now) are left alone.
    """
    for name in os.listdir(BLKIO):
        d = os.path.join(BLKIO, name)
        if os.path.isdir(d) and _dead_owner(name, tag):
            remove_group(d)
    for blk in os.listdir('/sys/block'):
        path = os.path.join('/sys/block', blk, 'loop', 'backing_file')
        try:
            backing = _read(path)
        except OSError:
            continue
        rel = os.path.relpath(backing, directory_root)
        if not rel.startswith('..') and _dead_owner(rel.split('/')[0],
                                                     tag):
            subprocess.run(['losetup', '-d', '/dev/%s' % blk],
                           capture_output=True)
    for name in os.listdir(directory_root):
        d = os.path.join(directory_root, name)
        if os.path.isdir(d) and _dead_owner(name, tag):
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(d, 'img'))
            with contextlib.suppress(OSError):
                os.rmdir(d)


def set_bfq_weight(group, weight):
    _write(os.path.join(group, 'blkio.bfq.weight'), weight)
    return int(_read(os.path.join(group, 'blkio.bfq.weight')))


def set_throttle(group, dev, kind, value):
    """blk-throttle on ``dev`` for ``group``: kind is one of read_iops,
    write_iops, read_bps, write_bps; value 0 removes the rule.
    """
    path = os.path.join(group, 'blkio.throttle.%s_device' % kind)
    _write(path, '%s %d' % (majmin(dev), int(value)))
    return _read(path)


def clear_throttles(group, dev):
    for kind in ('read_iops', 'write_iops', 'read_bps', 'write_bps'):
        with contextlib.suppress(OSError):
            set_throttle(group, dev, kind, 0)


# -- fio ----------------------------------------------------------------------
def fio_args(dev, job):
    """fio's command line for one job: {rw, bs, qd, offset_mib, size_mib,
    runtime, ramp, rate_iops?, ionice?
    (an I/O class for ionice -c)}.
    """
    args = ['fio', '--name=%s' % job.get('name', 'job'),
            '--filename=%s' % dev, '--direct=1', '--ioengine=libaio',
            '--rw=%s' % job['rw'], '--bs=%s' % job['bs'],
            '--iodepth=%d' % job['qd'],
            '--offset=%dM' % job['offset_mib'],
            '--size=%dM' % job['size_mib'], '--time_based',
            '--runtime=%s' % job['runtime'],
            '--ramp_time=%s' % job.get('ramp', 0),
            '--randrepeat=0', '--norandommap', '--group_reporting',
            '--output-format=json']
    if job.get('rate_iops'):
        args += ['--rate_iops=%d' % job['rate_iops'],
                 '--rate_process=poisson']
    if job.get('ionice'):
        args = ['ionice', '-c%d' % job['ionice']] + args
    return args


def start_in_group(args, group):
    """Start ``args`` with its pid in ``group`` (a blkio group dir, or
    None for the root) before it execs, so all its I/O is charged there.
    """
    procs = os.path.join(group or BLKIO, 'cgroup.procs')
    return subprocess.Popen(
        ['sh', '-c', 'echo $$ > "$0" && exec "$@"', procs] + list(args),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def cpu_times():
    """(busy, total) jiffies of all CPUs from /proc/stat."""
    with open('/proc/stat') as fh:
        v = [int(x) for x in fh.readline().split()[1:]]
    idle = v[3] + (v[4] if len(v) > 4 else 0)
    return sum(v) - idle, sum(v)


def run_jobs(dev, jobs):
    """Run fio jobs at once, each in its group; {name: summary}, plus
    'cpu_busy': the share of all CPUs busy (anyone's work) meanwhile.
    ``jobs``: [(name, group, job)].
    """
    procs = []
    busy0, total0 = cpu_times()
    try:
        for name, group, job in jobs:
            procs.append((name, start_in_group(fio_args(dev, job), group)))
        out = {}
        for name, p in procs:
            stdout, stderr = p.communicate(timeout=120)
            if p.returncode:
                raise RuntimeError('fio %s failed (%s): %s' % (
                    name, p.returncode, stderr.strip()[-400:]))
            out[name] = summarize(json.loads(stdout[stdout.index('{'):]))
        busy1, total1 = cpu_times()
        out['cpu_busy'] = (busy1 - busy0) / max(1, total1 - total0)
        return out
    finally:
        for _, p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()


def summarize(doc):
    """One fio job's figures: IOPS and MB/s per direction and summed,
    completion latency mean/p50/p99 (µs) per direction.
    """
    job = doc['jobs'][0]
    out = {'iops': 0.0, 'mbps': 0.0}
    for d in ('read', 'write'):
        s = job[d]
        if not s['total_ios']:
            continue
        clat = s['clat_ns']
        pct = clat.get('percentile', {})
        out[d] = {'iops': s['iops'], 'mbps': s['bw_bytes'] / 1e6,
                  'mean_us': clat['mean'] / 1e3,
                  'p50_us': pct.get('50.000000', 0) / 1e3,
                  'p99_us': pct.get('99.000000', 0) / 1e3}
        out['iops'] += s['iops']
        out['mbps'] += s['bw_bytes'] / 1e6
    return out


# -- what the kernel offers ---------------------------------------------------
def kernel_config(keys):
    """{CONFIG_X: 'y'/'m'/'not set'/'absent'} from /proc/config.gz."""
    found = dict.fromkeys(keys, 'absent')
    try:
        with gzip.open('/proc/config.gz', 'rt') as fh:
            for line in fh:
                for k in keys:
                    if line.startswith(k + '='):
                        found[k] = line.strip().split('=', 1)[1]
                    elif line.strip() == '# %s is not set' % k:
                        found[k] = 'not set'
    except OSError as e:
        return {k: 'unreadable: %s' % e.strerror for k in keys}
    return found


def probe_cgroup2_io():
    """Ask the cgroup2 mount for its io controller; undo if it took.
    Returns what happened, for the record.
    """
    out = {'mount': UNIFIED}
    ctl = os.path.join(UNIFIED, 'cgroup.controllers')
    if not os.path.exists(ctl):
        out['result'] = 'no cgroup2 mount at %s' % UNIFIED
        return out
    out['controllers'] = _read(ctl)
    out['subtree_control'] = _read(os.path.join(UNIFIED,
                                                'cgroup.subtree_control'))
    out['root_io_files'] = sorted(f for f in os.listdir(UNIFIED)
                                  if f.startswith('io.'))
    with open('/proc/cgroups') as fh:
        for line in fh:
            parts = line.split()
            if parts and parts[0] == 'blkio':
                out['blkio_v1_hierarchy_id'] = int(parts[1])
                out['blkio_v1_groups'] = int(parts[2])
    if 'io' in out['subtree_control'].split():
        out['result'] = 'io already enabled in the v2 root'
        return out
    try:
        _write(os.path.join(UNIFIED, 'cgroup.subtree_control'), '+io')
    except OSError as e:
        out['result'] = 'writing +io to cgroup.subtree_control: %s (%s)' % (
            errno.errorcode.get(e.errno, e.errno), e.strerror)
        return out
    out['result'] = 'io enabled in the v2 root (then disabled again)'
    out['root_io_files'] = sorted(f for f in os.listdir(UNIFIED)
                                  if f.startswith('io.'))
    with contextlib.suppress(OSError):
        _write(os.path.join(UNIFIED, 'cgroup.subtree_control'), '-io')
    return out
