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
"""Scheduler attributes of threads: EEVDF custom slices, and counters.

Since Linux 6.12 a fair-class thread (SCHED_OTHER/BATCH/IDLE) may request
its own slice: ``sched_setattr`` with ``sched_runtime`` = slice in ns. The
kernel clamps it to 0.1..100 ms (``__setparam_fair``); a shorter slice
means a sooner deadline, so the thread waits less after a wake-up. This is
vSlicer's "microslice" on KVM. ``sched_runtime = 0`` returns to the default
(``sched_base_slice_ns``, 0.7 ms x (1 + log2(ncpus)), 1.4 ms on 2 CPUs).

Setting another user's thread (a QEMU vCPU runs as libvirt-qemu) needs
CAP_SYS_NICE, so ``set_slice_us`` runs in the privsep daemon
(``iosched.host_agent.linux.privileged.set_slice``). Reading needs no
privilege.

SCHED_DEADLINE reservations (the LSVM mechanism ``deadline``) are in
``sched_deadline``, over ``sched_getattr`` / ``sched_setattr`` here.

Also here: read-only parsers of ``/proc/<pid>/task/<tid>/schedstat`` and
``status`` for the collectors.
"""

import collections
import ctypes
import errno as errno_mod
import os
import platform
import struct

from iosched.host_agent import linux
from iosched.host_agent import paths

SCHED_OTHER = 0
SCHED_FIFO = 1
SCHED_RR = 2
SCHED_BATCH = 3
SCHED_IDLE = 5
SCHED_DEADLINE = 6
FAIR_POLICIES = (SCHED_OTHER, SCHED_BATCH, SCHED_IDLE)
SCHED_FLAG_RESET_ON_FORK = 0x01

SLICE_MIN_US = 100        # the kernel's clamp: NSEC_PER_MSEC / 10
SLICE_MAX_US = 100000     # NSEC_PER_MSEC * 100

# include/uapi/linux/sched/types.h, SCHED_ATTR_SIZE_VER1 = 56 bytes:
#   u32 size; u32 sched_policy; u64 sched_flags;
#   s32 sched_nice; u32 sched_priority;
#   u64 sched_runtime; u64 sched_deadline; u64 sched_period;
#   u32 sched_util_min; u32 sched_util_max;
_ATTR = struct.Struct('=IIQiIQQQII')
SCHED_ATTR_SIZE = _ATTR.size

SchedAttr = collections.namedtuple('SchedAttr', (
    'size', 'policy', 'flags', 'nice', 'priority', 'runtime', 'deadline',
    'period', 'util_min', 'util_max'))

# (sched_setattr, sched_getattr) syscall numbers. x86_64 measured on the
# project's machine; the others are asm-generic/unistd.h.
_SYSCALLS = {'x86_64': (314, 315), 'aarch64': (274, 275),
             'riscv64': (274, 275)}


def make_attr(policy=SCHED_OTHER, flags=0, nice=0, priority=0, runtime=0,
              deadline=0, period=0, util_min=0, util_max=0):
    return SchedAttr(SCHED_ATTR_SIZE, policy, flags, nice, priority,
                     runtime, deadline, period, util_min, util_max)


def pack_attr(attr):
    """SchedAttr -> the 56 bytes of ``struct sched_attr``."""
    return _ATTR.pack(*attr)


def unpack_attr(data):
    """The first 56 bytes of a ``struct sched_attr`` -> SchedAttr."""
    if len(data) < SCHED_ATTR_SIZE:
        raise ValueError('struct sched_attr needs %d bytes, got %d'
                         % (SCHED_ATTR_SIZE, len(data)))
    return SchedAttr(*_ATTR.unpack(bytes(data[:SCHED_ATTR_SIZE])))


_libc = None


def _syscall(index, *args):
    global _libc
    numbers = _SYSCALLS.get(platform.machine())
    if numbers is None:
        raise linux.LinuxKnobError(
            'sched_setattr/sched_getattr: unknown syscall numbers on %s'
            % platform.machine(), errno_mod.ENOSYS)
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    ret = _libc.syscall(ctypes.c_long(numbers[index]),
                        *[a if isinstance(a, ctypes.Array) else
                          ctypes.c_long(a) for a in args])
    return ret, (ctypes.get_errno() if ret != 0 else 0)


def _tid(tid):
    if isinstance(tid, bool) or not isinstance(tid, int) or tid <= 0:
        raise linux.LinuxKnobError('thread id %r is not a positive int'
                                   % (tid,), errno_mod.EINVAL)
    return tid


def sched_getattr(tid):
    """The thread's scheduling attributes (no privilege needed)."""
    buf = ctypes.create_string_buffer(SCHED_ATTR_SIZE)
    ret, err = _syscall(1, _tid(tid), buf, SCHED_ATTR_SIZE, 0)
    if ret != 0:
        raise linux.LinuxKnobError('sched_getattr(tid %d) failed: %s'
                                   % (tid, os.strerror(err)), err)
    return unpack_attr(buf.raw)


def sched_setattr(tid, attr):
    """Set the thread's scheduling attributes (``flags`` argument 0)."""
    buf = ctypes.create_string_buffer(pack_attr(attr), SCHED_ATTR_SIZE)
    ret, err = _syscall(0, _tid(tid), buf, 0)
    if ret != 0:
        if attr.policy == SCHED_DEADLINE:
            what = ('SCHED_DEADLINE, runtime %d / deadline %d / period %d ns'
                    % (attr.runtime, attr.deadline, attr.period))
        else:
            what = 'policy %d, nice %d, runtime %d ns' % (
                attr.policy, attr.nice, attr.runtime)
        raise linux.LinuxKnobError('sched_setattr(tid %d, %s) failed: %s%s'
                                   % (tid, what, os.strerror(err),
                                      _setattr_hint(attr.policy, err)), err)


def _setattr_hint(policy, err):
    if policy == SCHED_DEADLINE:
        return {
            errno_mod.EPERM: (' (SCHED_DEADLINE needs the thread\'s CPU '
                              'affinity to cover its whole root domain, '
                              'and CAP_SYS_NICE for another user\'s '
                              'thread)'),
            errno_mod.EBUSY: (' (the host\'s SCHED_DEADLINE admission '
                              'refused the bandwidth: the root domain\'s '
                              'reservations would exceed sched_rt_runtime_us'
                              ' / sched_rt_period_us of its CPUs)'),
            errno_mod.EINVAL: (' (the kernel wants runtime >= 1024 ns, '
                               'runtime <= deadline <= period and the period'
                               ' within /proc/sys/kernel/sched_deadline_'
                               'period_min_us..max_us)'),
        }.get(err, '')
    if err == errno_mod.EPERM:
        return ' (another user\'s thread needs CAP_SYS_NICE)'
    return ''


def check_slice_us(slice_us):
    if (isinstance(slice_us, bool) or not isinstance(slice_us, int)
            or not SLICE_MIN_US <= slice_us <= SLICE_MAX_US):
        raise linux.LinuxKnobError(
            'slice %r us is not an int in %d..%d' % (
                slice_us, SLICE_MIN_US, SLICE_MAX_US), errno_mod.EINVAL)
    return slice_us


def set_slice_us(tid, slice_us):
    """Request an EEVDF slice of ``slice_us`` for a fair-class thread.

    Keeps the thread's policy, nice and reset-on-fork flag; refuses RT and
    deadline threads (their slice is not ours to change).
    """
    _tid(tid)
    check_slice_us(slice_us)
    try:
        cur = sched_getattr(tid)
    except linux.LinuxKnobError as e:
        raise linux.LinuxKnobError('cannot set the slice of tid %s to %s us:'
                                   ' %s' % (tid, slice_us, e), e.errno)
    if cur.policy not in FAIR_POLICIES:
        raise linux.LinuxKnobError(
            'cannot set the slice of tid %d to %d us: policy %d is not a '
            'fair policy' % (tid, slice_us, cur.policy), errno_mod.EINVAL)
    attr = make_attr(policy=cur.policy,
                     flags=cur.flags & SCHED_FLAG_RESET_ON_FORK,
                     nice=cur.nice, runtime=slice_us * 1000)
    try:
        sched_setattr(tid, attr)
    except linux.LinuxKnobError as e:
        raise linux.LinuxKnobError('cannot set the slice of tid %d to %d us:'
                                   ' %s' % (tid, slice_us, e), e.errno)


def get_slice_us(tid, proc_root='/proc'):
    """The thread's current slice in us (custom or default).

    From ``sched_getattr``; when the syscall is unavailable (seccomp,
    unknown architecture) from ``<proc_root>/<tid>/sched``.
    """
    try:
        attr = sched_getattr(tid)
    except linux.LinuxKnobError as e:
        try:
            return round(read_sched_slice_ns(proc_root, tid) / 1000)
        except (OSError, ValueError, paths.UnsafePath) as e2:
            raise linux.LinuxKnobError(
                'cannot read the slice of tid %s: %s; %s' % (tid, e, e2),
                e.errno)
    if attr.policy not in FAIR_POLICIES:
        raise linux.LinuxKnobError('tid %d has policy %d: no fair slice'
                                   % (tid, attr.policy), errno_mod.EINVAL)
    return round(attr.runtime / 1000)


# /proc/<pid>/sched (kernel/sched/debug.c proc_sched_show_task), 6.18:
#   cat (20541, #threads: 1)
#   -------------------------------------------------------------------
#   se.exec_start                                :       2328367.094262
#   ...
#   policy                                       :                    0
#   prio                                         :                  120
#   se.slice                                     :              1400000
# se.slice is printed in ns (P()); "ms.ns" values (PN()) are accepted too.
def parse_sched_slice_ns(text):
    for line in text.splitlines():
        key, sep, value = line.partition(':')
        if sep and key.strip() == 'se.slice':
            value = value.strip()
            if '.' in value:
                ms, frac = value.split('.', 1)
                return int(ms) * 1000000 + int(frac.ljust(6, '0')[:6])
            return int(value)
    raise ValueError('no se.slice line')


def read_sched_slice_ns(proc_root, tid):
    with open(paths.safe_join(proc_root, _tid(tid), 'sched')) as fh:
        return parse_sched_slice_ns(fh.read())


# /proc/<pid>/task/<tid>/schedstat (Documentation/scheduler/sched-stats):
#   "<run_ns> <wait_ns> <timeslices>\n", e.g. "2016454183 4915349 311\n":
#   time on a CPU, time runnable on a runqueue, timeslices run.
def parse_schedstat(text):
    fields = text.split()
    if len(fields) < 3:
        raise ValueError('schedstat %r has fewer than 3 fields' % text)
    return int(fields[0]), int(fields[1]), int(fields[2])


def read_schedstat(proc_root, pid, tid):
    """(run_ns, wait_ns, timeslices) of one thread."""
    path = paths.safe_join(proc_root, _tid(pid), 'task', _tid(tid),
                           'schedstat')
    with open(path) as fh:
        return parse_schedstat(fh.read())


# /proc/<pid>/task/<tid>/status (fs/proc/array.c), among other lines:
#   voluntary_ctxt_switches:\t1520
#   nonvoluntary_ctxt_switches:\t37
def parse_status_ctxt(text):
    found = {}
    for line in text.splitlines():
        key, sep, value = line.partition(':')
        if sep and key in ('voluntary_ctxt_switches',
                           'nonvoluntary_ctxt_switches'):
            found[key] = int(value.strip())
    try:
        return (found['voluntary_ctxt_switches'],
                found['nonvoluntary_ctxt_switches'])
    except KeyError as e:
        raise ValueError('status has no %s line' % e)


def read_status_ctxt(proc_root, pid, tid):
    """(voluntary, nonvoluntary) context switches of one thread."""
    path = paths.safe_join(proc_root, _tid(pid), 'task', _tid(tid),
                           'status')
    with open(path) as fh:
        return parse_status_ctxt(fh.read())
