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
"""An LSVM's own cpu cgroup at the top of the hierarchy: names, where each
thread belongs, and the moves between libvirt's groups and the LSVM's.

Why (issue 28, measured on this kernel, cgroup v1, one pCPU with three
busy "guests" in a machine-like group and a busy loop outside it, a
sleeper waking every 2 ms): the sleeper in its own group *inside* the
machine group at weight 10000 waited p99 6.2-8.0 ms; in a group at the
top of the hierarchy (under a parent at the same weight) 0.12-0.20 ms;
stock 20 ms. The weight boost acts only between siblings: inside
``machine`` the LSVM wins against the other guests, but ``machine`` as a
whole still queues behind whatever runs outside it (host services, other
jobs) for up to a tick. At the top the LSVM's group is a sibling of
``machine`` and of that load, and its CFS quota (its fair share) keeps
the weight from buying CPU.

Layout (cgroup v1 only: v2 keeps every thread of a process in the
process's threaded subtree, so a thread cannot leave its domain)::

    <cpu hierarchy>/<parent>/vm-<instance uuid>   weight, quota
    <cpu hierarchy>/<parent>                      weight (made at start)

The parent (``[host_agent_policy.vslicer] weight_group``) is created at
agent start by the only privileged call that needs CAP_DAC_OVERRIDE (a v1
hierarchy's root directory is mode 0555). A thread's *home* is the group
libvirt put it in: ``vcpuN`` for vCPU N, ``iothreadN`` for QEMU's
``IO iothreadN``, ``emulator`` for the main loop and every other I/O
thread (vhost workers join the cgroups of the thread that opened the
device, the main loop). The moves here are planned purely; the writes go
through ``iosched.host_agent.linux.privileged_group``.
"""

import re

from iosched.host_agent import linux
from iosched.host_agent.linux import cgroups
from iosched.host_agent import paths

VM_PREFIX = 'vm-'
# A parent name the privileged side accepts: one path component.
PARENT_RE = re.compile(r'iosched[a-z0-9_.-]{0,40}')
_UUID_RE = re.compile(r'[0-9a-fA-F-]{1,64}')
_IOTHREAD_RE = re.compile(r'IO (iothread[0-9]{1,4})')


def check_parent(name):
    """``name`` if it is an acceptable parent group name, else
    LinuxKnobError saying what is accepted.
    """
    if not isinstance(name, str) or not PARENT_RE.fullmatch(name):
        raise linux.LinuxKnobError(
            'LSVM parent group %r: expected one cgroup name starting with '
            '"iosched" (letters, digits, "_.-", at most 47 characters)'
            % (name,))
    return name


def vm_group(parent, uuid):
    """``<parent>/vm-<uuid>``: the LSVM's group, relative to the cpu
    hierarchy.
    """
    check_parent(parent)
    if not isinstance(uuid, str) or not _UUID_RE.fullmatch(uuid):
        raise linux.LinuxKnobError('instance uuid %r is not a uuid'
                                   % (uuid,))
    return '%s/%s%s' % (parent, VM_PREFIX, uuid)


def is_vm_group(parent, cg):
    """True when ``cg`` is an LSVM group under ``parent``."""
    head, _, name = (cg or '').strip('/').partition('/')
    return (head == parent and name.startswith(VM_PREFIX)
            and '/' not in name and bool(_UUID_RE.fullmatch(
                name[len(VM_PREFIX):])))


def uuid_of(cg):
    """The instance uuid of an LSVM group path."""
    return cg.strip('/').rsplit('/', 1)[-1][len(VM_PREFIX):]


def home(dom, role):
    """The libvirt group (``cgroups.DomainCgroups`` ``dom``) of a thread:
    ``role`` is ('vcpu', N) or ('io', thread name).
    """
    kind, what = role
    if kind == 'vcpu':
        return dom.vcpu(int(what))
    m = _IOTHREAD_RE.fullmatch(what or '')
    if m:
        return '%s/%s' % (dom.threads, m.group(1))
    return dom.emulator()


def thread_group(proc_root, tid, hierarchy):
    """The cpu-hierarchy cgroup of one thread (``/proc/<tid>/cgroup``)."""
    path = paths.safe_join(proc_root, str(int(tid)), 'cgroup')
    try:
        with open(path) as fh:
            text = fh.read()
    except OSError as e:
        raise linux.LinuxKnobError('cannot read %s: %s' % (path, e.strerror),
                                   e.errno)
    return cgroups.cpu_cgroup(text, hierarchy)


# The knob's value from where the threads are (read_value):
#   no thread in the VM's group            -> None (libvirt's groups)
#   any thread in it                       -> {'weight', 'cap'} of the group
# A write killed half-way (some threads moved) so reads as its target,
# never as a third value: the journal's restore writes None whatever it
# reads and moves every thread home, and reconciliation (desired None)
# sees the difference. A thread born after the write (a hot-plugged vCPU,
# a new vhost worker) stays in libvirt's groups until the knob is written
# again, as for io_thread_deadline.
def read_value(where, group, settings):
    """``where``: {tid: current group}; ``group``: the VM's LSVM group;
    ``settings``: () -> {'weight', 'cap'} read from it (called only when
    some thread is in it).
    """
    if not any(cg.strip('/') == group for cg in where.values()):
        return None
    return dict(settings())


def plan_moves(threads, group, value):
    """[(tid, destination group)] for the threads not where ``value``
    wants them. ``threads``: [(tid, current group, home group)];
    ``value``: None (home) or a dict (the LSVM group).
    """
    out = []
    for tid, current, home_cg in threads:
        dest = home_cg if value is None else group
        if current.strip('/') != dest.strip('/'):
            out.append((tid, dest))
    return out


def check_value(value):
    """The knob value, checked: None or {'weight': int 1..10000, 'cap':
    float > 0 or None}; LinuxKnobError saying what is accepted.
    """
    if value is None:
        return None
    if not isinstance(value, dict) or set(value) - {'weight', 'cap'} or (
            'weight' not in value):
        raise linux.LinuxKnobError(
            'lsvm_group value %r: expected None or {"weight": 1..10000, '
            '"cap": fraction of one CPU or null}' % (value,))
    weight = value['weight']
    if isinstance(weight, bool) or not isinstance(weight, int) or not (
            cgroups.WEIGHT_MIN <= weight <= cgroups.WEIGHT_MAX):
        raise linux.LinuxKnobError('lsvm_group weight %r is not an int in '
                                   '%d..%d' % (weight, cgroups.WEIGHT_MIN,
                                               cgroups.WEIGHT_MAX))
    cap = value.get('cap')
    cgroups.cap_quota(cap, 100000)          # range check (None: no cap)
    return {'weight': weight, 'cap': cap}
