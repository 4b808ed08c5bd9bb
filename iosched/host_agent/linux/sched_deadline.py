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
"""SCHED_DEADLINE reservations of threads (the LSVM mechanism ``deadline``).

``set_deadline_us`` reserves ``runtime`` every ``period`` with a relative
``deadline``; ``set_fair`` ends a reservation and ``get_deadline_us``
reads it. What the kernel requires, measured on 6.18:

* ``sched_runtime`` >= 1024 ns (so runtime >= 2 us here), runtime <=
  deadline <= period, period within ``/proc/sys/kernel/
  sched_deadline_period_{min,max}_us`` (100..4194304 us by default);
* the thread's affinity must cover its root domain, else EPERM (a vCPU
  pinned to one CPU of two); narrowing a deadline thread's affinity later
  fails with EBUSY, so widen pins *before* and re-pin *after*;
* the root domain's admission (sum of runtime/period within
  ``sched_rt_runtime_us / sched_rt_period_us`` x its CPUs, minus the
  fair-class deadline servers, 50 ms/1 s per CPU since 6.12) refuses
  more with EBUSY;
* a deadline thread cannot fork or clone (EAGAIN) unless
  SCHED_FLAG_RESET_ON_FORK is set; QEMU's main loop spawns workers, so it
  is always set here (children start as SCHED_OTHER nice 0, reserving
  nothing);
* switching a *sleeping* deadline thread straight to SCHED_OTHER leaks its
  bandwidth: the root domain keeps counting it until the next
  root-domain rebuild (cpuset change, CPU hotplug); measured on 6.18 with
  ``/sys/kernel/debug/sched/debug`` ``dl_bw->total_bw``. ``set_fair``
  first shrinks the reservation to zero bandwidth (which the kernel
  releases at once), then switches the class.

Like the slice (``sched``), a write to another user's thread needs
CAP_SYS_NICE: the privsep daemon makes them
(``iosched.host_agent.linux.privileged``); reading needs no privilege.
"""

import errno as errno_mod

from iosched.host_agent import linux
from iosched.host_agent.linux import sched

# SCHED_DEADLINE parameters, us (kernel/sched/syscalls.c __checkparam_dl):
# sched_runtime >= 1 << DL_SCALE = 1024 ns, so 1 us (1000 ns) is refused;
# the period bounds are the defaults of sysctl_sched_dl_period_{min,max}.
DL_RUNTIME_MIN_US = 2
DL_PERIOD_MIN_US = 100
DL_PERIOD_MAX_US = 4194304
# The zero-bandwidth reservation ``set_fair`` passes through: the kernel's
# bandwidth is runtime << 20 / period (to_ratio), 1024 << 20 / 4.19 s = 0.
_DL_ZERO_RUNTIME_NS = 1024


def _dl_int(name, value):
    if isinstance(value, bool) or not isinstance(value, int):
        raise linux.LinuxKnobError(
            'SCHED_DEADLINE %s %r is not an int (us)' % (name, value),
            errno_mod.EINVAL)
    return value


def check_deadline(runtime_us, deadline_us, period_us):
    """(runtime_us, deadline_us, period_us) when the kernel would accept
    them, else LinuxKnobError naming the rule that fails.
    """
    r = _dl_int('runtime_us', runtime_us)
    d = _dl_int('deadline_us', deadline_us)
    p = _dl_int('period_us', period_us)
    if r < DL_RUNTIME_MIN_US:
        problem = ('runtime %d us is below %d us (the kernel needs '
                   'sched_runtime >= 1024 ns)' % (r, DL_RUNTIME_MIN_US))
    elif not r <= d <= p:
        problem = ('runtime %d us <= deadline %d us <= period %d us does '
                   'not hold' % (r, d, p))
    elif not DL_PERIOD_MIN_US <= p <= DL_PERIOD_MAX_US:
        problem = ('period %d us is outside %d..%d us (sysctl '
                   'sched_deadline_period_min_us..max_us defaults)'
                   % (p, DL_PERIOD_MIN_US, DL_PERIOD_MAX_US))
    else:
        return r, d, p
    raise linux.LinuxKnobError('invalid SCHED_DEADLINE reservation: %s'
                               % problem, errno_mod.EINVAL)


def _attr_or_error(tid, doing):
    try:
        return sched.sched_getattr(tid)
    except linux.LinuxKnobError as e:
        raise linux.LinuxKnobError('cannot %s: %s' % (doing, e), e.errno)


def _refuse_rt(cur, tid, doing):
    if (cur.policy not in sched.FAIR_POLICIES
            and cur.policy != sched.SCHED_DEADLINE):
        raise linux.LinuxKnobError(
            'cannot %s: tid %d has real-time policy %d (not ours to change)'
            % (doing, tid, cur.policy), errno_mod.EINVAL)


def set_deadline_us(tid, runtime_us, deadline_us, period_us):
    """Give a fair-class or deadline thread a SCHED_DEADLINE reservation.

    Always with SCHED_FLAG_RESET_ON_FORK (a deadline thread cannot fork
    without it). Refuses real-time (FIFO/RR) threads. Errors carry the
    errno and a hint (EPERM: affinity narrower than the root domain or no
    CAP_SYS_NICE; EBUSY: the host's deadline admission refused).
    """
    sched._tid(tid)
    r, d, p = check_deadline(runtime_us, deadline_us, period_us)
    doing = ('reserve %d/%d/%d us (runtime/deadline/period) for tid %d'
             % (r, d, p, tid))
    _refuse_rt(_attr_or_error(tid, doing), tid, doing)
    attr = sched.make_attr(policy=sched.SCHED_DEADLINE,
                           flags=sched.SCHED_FLAG_RESET_ON_FORK,
                           runtime=r * 1000, deadline=d * 1000,
                           period=p * 1000)
    try:
        sched.sched_setattr(tid, attr)
    except linux.LinuxKnobError as e:
        raise linux.LinuxKnobError('cannot %s: %s' % (doing, e), e.errno)


def set_fair(tid):
    """SCHED_OTHER, nice 0, the default slice; the reset-on-fork flag
    stays as the thread has it (so set after ``set_deadline_us``: harmless
    at nice 0, a child starts as SCHED_OTHER nice 0 either way, but it
    drops a custom slice). Refuses real-time (FIFO/RR) threads.

    A deadline thread first passes through a zero-bandwidth reservation
    (see the module docstring: a sleeping deadline thread switched
    straight to SCHED_OTHER leaks its bandwidth on 6.18).
    """
    sched._tid(tid)
    doing = 'return tid %d to SCHED_OTHER' % tid
    cur = _attr_or_error(tid, doing)
    _refuse_rt(cur, tid, doing)
    flags = cur.flags & sched.SCHED_FLAG_RESET_ON_FORK
    if cur.policy == sched.SCHED_DEADLINE:
        _release_bandwidth(tid, cur)
    try:
        sched.sched_setattr(tid, sched.make_attr(policy=sched.SCHED_OTHER,
                                                 flags=flags))
    except linux.LinuxKnobError as e:
        raise linux.LinuxKnobError('cannot %s: %s' % (doing, e), e.errno)


def _release_bandwidth(tid, cur):
    """Shrink a deadline thread's reservation to zero bandwidth: a change
    of reservation is accounted at once, a change of class is not when
    the thread sleeps. Best effort: on failure ``set_fair`` switches the
    class anyway (the thread must not stay reserved).
    """
    for period_ns in (DL_PERIOD_MAX_US * 1000, cur.period or cur.deadline):
        try:
            sched.sched_setattr(tid, sched.make_attr(
                policy=sched.SCHED_DEADLINE,
                flags=sched.SCHED_FLAG_RESET_ON_FORK,
                runtime=_DL_ZERO_RUNTIME_NS, deadline=period_ns,
                period=period_ns))
            return True
        except linux.LinuxKnobError as e:
            if e.errno != errno_mod.EINVAL:
                return False
            # EINVAL: the period max was lowered; the thread's own period
            # leaves at most 1024 ns per period unreleased.
    return False


def get_deadline_us(tid):
    """{'runtime_us', 'deadline_us', 'period_us'} of a deadline thread,
    None for a fair-class one, LinuxKnobError for a real-time one.
    """
    attr = sched.sched_getattr(sched._tid(tid))
    if attr.policy == sched.SCHED_DEADLINE:
        return {'runtime_us': round(attr.runtime / 1000),
                'deadline_us': round(attr.deadline / 1000),
                'period_us': round((attr.period or attr.deadline) / 1000)}
    if attr.policy in sched.FAIR_POLICIES:
        return None
    raise linux.LinuxKnobError('tid %d has real-time policy %d: not a '
                               'reservation of ours' % (tid, attr.policy),
                               errno_mod.EINVAL)
