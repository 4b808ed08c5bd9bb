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
"""The only functions that change the host: run in the privsep daemon.

Five entrypoints, each re-checking everything it is given, because the
daemon must not trust its caller:

* ``set_slice(tid, slice_us)``: an EEVDF slice of 100..100000 us on a
  fair-class thread (never an RT or deadline one). The worst a rogue
  caller can do is change some thread's slice inside the kernel's range.
* ``set_deadline(tid, runtime_us, deadline_us, period_us)``: a
  SCHED_DEADLINE reservation (``sched_deadline.check_deadline``: ints, runtime
  >= 2 us, runtime <= deadline <= period, period 100..4194304 us) on a
  fair-class or deadline thread, never a real-time one, always with
  SCHED_FLAG_RESET_ON_FORK. The worst a rogue caller can do is reserve
  some thread a share the kernel's admission accepts (at most
  ``sched_rt_runtime_us / sched_rt_period_us`` of the root domain in all).
* ``set_fair(tid)``: a *deadline* thread back to SCHED_OTHER, nice 0,
  default slice (any other thread is refused: it ends reservations, it
  does not renice). The worst: ending some thread's reservation.
* ``set_affinity(tid, cpus)``: a thread's CPU affinity, a non-empty set
  of online CPUs (the emulator pin knob moves a VM's I/O threads with
  its main loop; SCHED_DEADLINE needs their affinity over the root
  domain). The worst: moving some thread to other online CPUs.
* ``write_cgroup_file(cgroup_root, relpath, value)``: one write of a CPU
  weight or bandwidth file (``WRITABLE``), with a value in that file's
  range, below the ``[host_paths] cgroup_root`` the *daemon* was
  configured with. No other file (``cgroup.procs``, ``release_agent``,
  ``notify_on_release``...) can be written, nothing is created, and
  symbolic links may not lead out of the root.

Callers: ``iosched.host_agent.actuators.linux_knobs`` only.
"""

import errno
import os
import re

from iosched.host_agent import conf as agent_conf
from iosched.host_agent import linux
from iosched.host_agent.linux import cgroups
from iosched.host_agent.linux import cpus as cpulist
from iosched.host_agent.linux import sched
from iosched.host_agent.linux import sched_deadline
from iosched.host_agent import paths
from iosched.host_agent import privsep

CONF = agent_conf.CONF


def _uint(lo, hi):
    return lambda v: (re.fullmatch(r'[0-9]{1,9}', v) is not None
                      and lo <= int(v) <= hi)


def _quota(v):
    return v == '-1' or (re.fullmatch(r'[0-9]{1,12}', v) is not None
                         and int(v) >= cgroups.QUOTA_MIN_US)


def _cpu_max(v):
    fields = v.split(' ')
    return (len(fields) == 2
            and (fields[0] == 'max' or (fields[0] != '-1'
                                        and _quota(fields[0])))
            and _uint(cgroups.PERIOD_MIN_US, cgroups.PERIOD_MAX_US)(
                fields[1]))


# File name -> accepted value (as written, a string).
WRITABLE = {
    'cpu.weight': _uint(cgroups.WEIGHT_MIN, cgroups.WEIGHT_MAX),
    'cpu.shares': _uint(cgroups.SHARES_MIN, cgroups.SHARES_MAX),
    'cpu.max': _cpu_max,
    'cpu.cfs_quota_us': _quota,
    'cpu.cfs_period_us': _uint(cgroups.PERIOD_MIN_US, cgroups.PERIOD_MAX_US),
}


def check_write(cgroup_root, relpath, value):
    """The absolute file a write may go to, or LinuxKnobError saying why
    not. Pure but for ``realpath``; ``cgroup_root`` must be the
    configured one.
    """
    configured = CONF.host_paths.cgroup_root
    if not isinstance(cgroup_root, str) or (
            os.path.realpath(cgroup_root) != os.path.realpath(configured)):
        raise linux.LinuxKnobError(
            'cgroup root %r is not the configured %s' % (cgroup_root,
                                                         configured))
    if not isinstance(relpath, str) or not isinstance(value, str):
        raise linux.LinuxKnobError('cgroup write %r = %r: path and value '
                                   'must be strings' % (relpath, value))
    try:
        target = paths.safe_join(configured, relpath)
    except paths.UnsafePath as e:
        raise linux.LinuxKnobError('refused cgroup path: %s' % e)
    name = relpath.rsplit('/', 1)[-1]
    check = WRITABLE.get(name)
    if check is None:
        raise linux.LinuxKnobError('cgroup file %r is not one the agent '
                                   'writes (%s)' % (relpath,
                                                    ', '.join(WRITABLE)))
    if not check(value):
        raise linux.LinuxKnobError('value %r is not valid for %s'
                                   % (value, relpath))
    real_dir = os.path.realpath(os.path.dirname(target))
    if not paths.is_below(os.path.realpath(configured), real_dir):
        raise linux.LinuxKnobError('cgroup path %r resolves to %s, outside '
                                   '%s' % (relpath, real_dir, configured))
    return os.path.join(real_dir, name)


@privsep.sys_admin_pctxt.entrypoint
def set_slice(tid, slice_us):
    """EEVDF slice of a fair-class thread, in us (100..100000)."""
    sched.set_slice_us(tid, slice_us)


@privsep.sys_admin_pctxt.entrypoint
def set_deadline(tid, runtime_us, deadline_us, period_us):
    """SCHED_DEADLINE reservation of a fair-class or deadline thread."""
    sched_deadline.set_deadline_us(tid, runtime_us, deadline_us, period_us)


def check_fair(tid):
    """LinuxKnobError unless ``tid`` is a SCHED_DEADLINE thread."""
    try:
        attr = sched.sched_getattr(tid)
    except linux.LinuxKnobError as e:
        raise linux.LinuxKnobError('cannot return tid %s to SCHED_OTHER: %s'
                                   % (tid, e), e.errno)
    if attr.policy != sched.SCHED_DEADLINE:
        raise linux.LinuxKnobError(
            'refusing to return tid %d to SCHED_OTHER: it has policy %d, '
            'not SCHED_DEADLINE (set_fair only ends reservations)'
            % (tid, attr.policy), errno.EINVAL)


@privsep.sys_admin_pctxt.entrypoint
def set_fair(tid):
    """A SCHED_DEADLINE thread back to SCHED_OTHER (nice 0, default
    slice); refuses any other thread.
    """
    check_fair(tid)
    sched_deadline.set_fair(tid)


@privsep.sys_admin_pctxt.entrypoint
def set_affinity(tid, cpus):
    """CPU affinity of a thread: a non-empty list of online CPUs."""
    if isinstance(tid, bool) or not isinstance(tid, int) or tid <= 0:
        raise linux.LinuxKnobError('thread id %r is not a positive int'
                                   % (tid,), errno.EINVAL)
    cpulist.set_affinity(tid, list(cpus) if isinstance(cpus, (list, tuple))
                         else cpus, CONF.host_paths.sys_root)


@privsep.sys_admin_pctxt.entrypoint
def write_cgroup_file(cgroup_root, relpath, value):
    """Write ``value`` to ``<cgroup_root>/<relpath>`` after ``check_write``.

    Opened O_WRONLY|O_TRUNC|O_NOFOLLOW without O_CREAT (as ``echo >``
    does): the file must exist and must not be a symbolic link.
    """
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    target = check_write(cgroup_root, relpath, value)
    try:
        fd = os.open(target, os.O_WRONLY | os.O_TRUNC | os.O_NOFOLLOW |
                     os.O_CLOEXEC)
        try:
            os.write(fd, value.encode('ascii'))
        finally:
            os.close(fd)
    except OSError as e:
        raise linux.LinuxKnobError('cannot write %r to %s: %s'
                                   % (value, target, e.strerror), e.errno)
