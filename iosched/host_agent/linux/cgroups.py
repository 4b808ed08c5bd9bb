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
"""CPU weight and CPU cap of libvirt domains and vCPUs, cgroup v1 and v2.

Read side and *write plans* only: this module reads cgroup files and
returns the ``(relpath, value)`` writes a change needs; the privsep daemon
performs them (``iosched.host_agent.linux.privileged.write_cgroup_file``),
after checking them again.

Paths: a *cgroup* (``cg``) is a path inside the cpu hierarchy as
``/proc/<pid>/cgroup`` shows it, without the leading '/'; ``Hierarchy``
says where that hierarchy is mounted below ``[host_paths] cgroup_root``.

=========  ===============================  ================================
knob       v2 (unified)                     v1 (cpu controller)
=========  ===============================  ================================
weight     ``cpu.weight`` 1..10000 (100)    ``cpu.shares`` 2..262144 (1024)
cap        ``cpu.max`` "quota period"       ``cpu.cfs_quota_us`` (-1: none)
           or "max period"                  + ``cpu.cfs_period_us``
=========  ===============================  ================================

Weights are always exchanged on the v2 scale and converted the way the
kernel does (``sched_weight_from_cgroup``/``sched_weight_to_cgroup``):
shares = weight * 1024 / 100, rounded, so the defaults map onto each other
and a round trip preserves every weight.
"""

import collections
import os
import re

from iosched.host_agent import linux
from iosched.host_agent import paths

V1 = 'v1'
V2 = 'v2'

WEIGHT_MIN, WEIGHT_DFL, WEIGHT_MAX = 1, 100, 10000
SHARES_MIN, SHARES_DFL, SHARES_MAX = 2, 1024, 262144
QUOTA_MIN_US = 1000                       # min_cfs_quota_period: 1 ms
PERIOD_MIN_US, PERIOD_MAX_US = 1000, 1000000

Hierarchy = collections.namedtuple('Hierarchy', 'version root cpu_dir')
Hierarchy.__doc__ = """Where the cpu controller is: ``cpu_dir`` is relative
to ``root`` ('' for v2 mounted at the root, 'cpu' for v1)."""


def _read(path):
    try:
        with open(path) as fh:
            return fh.read()
    except OSError as e:
        raise linux.LinuxKnobError('cannot read %s: %s' % (path, e.strerror),
                                   e.errno)


def probe(cgroup_root):
    """Find the cpu controller below ``cgroup_root``; LinuxKnobError if
    there is none (v2 first: a controller is on one hierarchy only).
    """
    for sub in ('', 'unified'):
        ctl = os.path.join(cgroup_root, sub, 'cgroup.controllers')
        if os.path.isfile(ctl) and 'cpu' in _read(ctl).split():
            return Hierarchy(V2, cgroup_root, sub)
    try:
        entries = sorted(os.listdir(cgroup_root))
    except OSError as e:
        raise linux.LinuxKnobError('cannot list %s: %s' % (
            cgroup_root, e.strerror), e.errno)
    candidates = ['cpu'] + [e for e in entries if 'cpu' in e.split(',')]
    for name in candidates:
        if os.path.isfile(os.path.join(cgroup_root, name, 'cpu.shares')):
            return Hierarchy(V1, cgroup_root, name)
    raise linux.LinuxKnobError(
        'no cpu controller below %s: neither cgroup.controllers listing '
        'cpu (v2) nor a v1 cpu hierarchy with cpu.shares' % cgroup_root)


# /proc/<pid>/cgroup (cgroups(7)), one line per hierarchy:
#   hierarchy-ID:controller-list:cgroup-path
#   4:cpu,cpuacct:/machine/qemu-1-instance-00000001.libvirt-qemu/emulator
#   1:name=systemd:/machine/qemu-1-instance-00000001.libvirt-qemu
#   0::/machine.slice/machine-qemu\x2d1\x2dvm.scope/libvirt/emulator
# v2 is the line with ID 0 and an empty controller list.
def parse_proc_cgroup(text):
    """-> list of (hierarchy id, tuple of controllers, path)."""
    out = []
    for line in text.splitlines():
        if not line:
            continue
        try:
            hid, ctrls, path = line.split(':', 2)
            hid = int(hid)
        except ValueError:
            raise linux.LinuxKnobError('/proc/<pid>/cgroup line %r is not '
                                       '"id:controllers:path"' % (line,))
        out.append((hid, tuple(c for c in ctrls.split(',') if c), path))
    return out


def cpu_cgroup(text, hierarchy):
    """The cpu-hierarchy cgroup of a process from its /proc/<pid>/cgroup."""
    for hid, ctrls, path in parse_proc_cgroup(text):
        if (hierarchy.version == V1 and 'cpu' in ctrls) or (
                hierarchy.version == V2 and hid == 0 and not ctrls):
            return path.lstrip('/')
    raise linux.LinuxKnobError('no %s cpu line in /proc/<pid>/cgroup'
                               % hierarchy.version)


_THREAD_DIR = re.compile(r'(vcpu|iothread)[0-9]{1,4}|emulator')


class DomainCgroups(collections.namedtuple('DomainCgroups',
                                           'version vm threads')):
    """A libvirt domain's cgroups: ``vm`` is where VM-level weight and cap
    go (v1 ``machine/<m>.libvirt-qemu``, v2 the ``machine-<m>.scope``, a
    sibling of the other VMs); ``threads`` holds ``vcpuN`` and
    ``emulator`` (v2: the scope's ``libvirt`` child).
    """

    def vcpu(self, n):
        return '%s/vcpu%d' % (self.threads, int(n))

    def emulator(self):
        return self.threads + '/emulator'


def domain_cgroups_from_path(cg, version):
    """DomainCgroups from the cgroup of a QEMU process or thread."""
    comps = [paths.check_name('cgroup_component', c)
             for c in cg.split('/') if c]
    if comps and _THREAD_DIR.fullmatch(comps[-1]):
        comps.pop()
    vm = threads = comps
    if version == V2 and comps and comps[-1] == 'libvirt':
        vm = comps[:-1]
    if not vm:
        raise linux.LinuxKnobError('cgroup %r is not a libvirt domain '
                                   'cgroup' % (cg,))
    return DomainCgroups(version, '/'.join(vm), '/'.join(threads))


def domain_cgroups(proc_root, pid, hierarchy, moved_top=None):
    """DomainCgroups of the domain whose QEMU process is ``pid``.

    ``moved_top``: the top group threads may have been moved to (the LSVM
    groups, ``lsvm_group``); when the process's main thread is there, the
    first thread still in libvirt's groups (QEMU's ``call_rcu`` always
    is) says where the domain's groups are.
    """
    text = _read(paths.safe_join(proc_root, int(pid), 'cgroup'))
    cg = cpu_cgroup(text, hierarchy)
    if moved_top and cg.split('/', 1)[0] == moved_top:
        task_dir = paths.safe_join(proc_root, int(pid), 'task')
        try:
            tids = sorted(os.listdir(task_dir))
        except OSError as e:
            raise linux.LinuxKnobError('cannot list %s: %s'
                                       % (task_dir, e.strerror), e.errno)
        for tid in tids:
            try:
                other = cpu_cgroup(_read(os.path.join(task_dir, tid,
                                                      'cgroup')), hierarchy)
            except linux.LinuxKnobError:
                continue               # a thread that just ended
            if other.split('/', 1)[0] != moved_top:
                return domain_cgroups_from_path(other, hierarchy.version)
        raise linux.LinuxKnobError(
            'every thread of QEMU process %d is in %s: libvirt\'s groups '
            'of the domain are unknown' % (int(pid), moved_top))
    return domain_cgroups_from_path(cg, hierarchy.version)


def file_relpath(hierarchy, cg, name):
    """Path of a cgroup file relative to the cgroup root."""
    rel = '/'.join(p for p in (hierarchy.cpu_dir, cg.strip('/'), name) if p)
    paths.safe_join(hierarchy.root, rel)      # refuse early, same rules
    return rel


def _read_file(hierarchy, cg, name):
    return _read(paths.safe_join(hierarchy.root,
                                 file_relpath(hierarchy, cg, name)))


def _int(text, what):
    try:
        return int(text.strip())
    except ValueError:
        raise linux.LinuxKnobError('%s holds %r, not an integer'
                                   % (what, text))


# -- weight ---------------------------------------------------------------
def shares_to_weight(shares):
    """v1 cpu.shares -> v2 cpu.weight (kernel: DIV_ROUND_CLOSEST, clamp)."""
    return min(max((int(shares) * WEIGHT_DFL + 512) // 1024, WEIGHT_MIN),
               WEIGHT_MAX)


def weight_to_shares(weight):
    """v2 cpu.weight 1..10000 -> v1 cpu.shares 10..102400."""
    if not WEIGHT_MIN <= int(weight) <= WEIGHT_MAX:
        raise linux.LinuxKnobError('weight %r is outside %d..%d'
                                   % (weight, WEIGHT_MIN, WEIGHT_MAX))
    return (int(weight) * 1024 + WEIGHT_DFL // 2) // WEIGHT_DFL


def oci_linear_shares_to_weight(shares):
    """runc < 1.3.2 / crun < 1.23: 1 + ((shares - 2) * 9999) / 262142.

    Not used (1024 shares -> 39, not 100); kept to read weights that older
    OCI runtimes wrote.
    """
    return 1 + ((int(shares) - 2) * 9999) // 262142


def oci_linear_weight_to_shares(weight):
    """Inverse of ``oci_linear_shares_to_weight`` (rounded up, so the round
    trip returns the same weight).
    """
    return 2 + -(-(int(weight) - 1) * 262142 // 9999)


def read_weight(hierarchy, cg):
    """CPU weight of a cgroup on the v2 scale."""
    if hierarchy.version == V2:
        return _int(_read_file(hierarchy, cg, 'cpu.weight'), 'cpu.weight')
    return shares_to_weight(_int(_read_file(hierarchy, cg, 'cpu.shares'),
                                 'cpu.shares'))


def plan_weight(hierarchy, cg, weight):
    if hierarchy.version == V2:
        weight_to_shares(weight)               # range check
        return [(file_relpath(hierarchy, cg, 'cpu.weight'), str(weight))]
    return [(file_relpath(hierarchy, cg, 'cpu.shares'),
             str(weight_to_shares(weight)))]


# -- cap ------------------------------------------------------------------
# cpu.max (v2): "$MAX $PERIOD\n", e.g. "max 100000\n" or "25000 100000\n".
def parse_cpu_max(text):
    """-> (quota_us or None for 'max', period_us)."""
    fields = text.split()
    if len(fields) != 2:
        raise linux.LinuxKnobError('cpu.max holds %r, not "quota period"'
                                   % (text,))
    quota = None if fields[0] == 'max' else _int(fields[0], 'cpu.max')
    return quota, _int(fields[1], 'cpu.max')


def read_cap(hierarchy, cg):
    """(quota_us or None when unlimited, period_us) of a cgroup."""
    if hierarchy.version == V2:
        return parse_cpu_max(_read_file(hierarchy, cg, 'cpu.max'))
    # v1: cpu.cfs_quota_us "-1\n" (unlimited) or "25000\n";
    #     cpu.cfs_period_us "100000\n".
    quota = _int(_read_file(hierarchy, cg, 'cpu.cfs_quota_us'),
                 'cpu.cfs_quota_us')
    period = _int(_read_file(hierarchy, cg, 'cpu.cfs_period_us'),
                  'cpu.cfs_period_us')
    return (None if quota < 0 else quota), period


def cap_fraction(quota_us, period_us):
    """Quota/period as a fraction of one CPU (None: unlimited)."""
    if quota_us is None:
        return None
    return round(quota_us / period_us, 6)


def cap_quota(fraction, period_us):
    """Fraction of one CPU -> quota in us for ``period_us`` (None: none)."""
    if fraction is None:
        return None
    try:
        if isinstance(fraction, bool):
            raise TypeError(fraction)
        value = float(fraction)
        quota = round(value * period_us)
    except (TypeError, ValueError, OverflowError):
        raise linux.LinuxKnobError('cap %r is not a number' % (fraction,))
    if not (value > 0 and quota >= QUOTA_MIN_US):
        raise linux.LinuxKnobError(
            'cap %r of a %d us period gives a quota below the kernel '
            'minimum of %d us' % (fraction, period_us, QUOTA_MIN_US))
    return quota


def plan_cap(hierarchy, cg, fraction, period_us):
    """Writes that cap ``cg`` at ``fraction`` of a CPU in its own period."""
    quota = cap_quota(fraction, period_us)
    if hierarchy.version == V2:
        value = '%s %d' % ('max' if quota is None else quota, period_us)
        return [(file_relpath(hierarchy, cg, 'cpu.max'), value)]
    return [(file_relpath(hierarchy, cg, 'cpu.cfs_quota_us'),
             str(-1 if quota is None else quota))]


# cpu.stat (v1 and v2), one "key value" per line, e.g. on v1:
#   nr_periods 1200
#   nr_throttled 37
#   throttled_time 812345678        (ns; v2: throttled_usec, usage_usec...)
def parse_cpu_stat(text):
    stats = {}
    for line in text.splitlines():
        key, _, value = line.partition(' ')
        if key and value.strip().lstrip('-').isdigit():
            stats[key] = int(value)
    return stats


def read_cpu_stat(hierarchy, cg):
    """The cgroup's cpu.stat as a dict (throttling of a capped vCPU)."""
    return parse_cpu_stat(_read_file(hierarchy, cg, 'cpu.stat'))
