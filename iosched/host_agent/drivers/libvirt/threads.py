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
"""vCPU and I/O-path threads of a QEMU process, from procfs (read only).

QEMU names its vCPU threads ``CPU <n>/KVM`` (``CPU <n>/TCG`` under TCG),
its I/O threads ``IO <id>`` and vhost workers ``vhost-<pid>``;
``<proc_root>/<pid>/task/<tid>/comm`` holds the name. ``qemu_threads``
reads them in one pass over ``task/``; ``vcpu_tids`` and ``io_threads``
are its two halves. The QEMU pid comes from libvirt's pidfile
``<libvirt_run_dir>/<domain name>.pid``; the domain name is checked before
it becomes part of a path.
"""

import collections
import os
import re

from iosched.host_agent.linux import sched
from iosched.host_agent import paths

_VCPU_COMM = re.compile(r'^CPU (\d+)/(KVM|TCG|HVF|WHPX)$')
# QEMU names its I/O threads 'IO <id>' (``-object iothread,id=iothread1``
# gives 'IO iothread1'); vhost workers are 'vhost-<pid>'. Not 'IO
# mon_iothread': QEMU starts it for out-of-band QMP monitor commands (the
# channel libvirt talks over); it serves QMP only, never a guest's I/O,
# so it gets no I/O-path reservation nor counts in one.
_IO_COMM = re.compile(r'^(IO (?!mon_iothread$)\S+|vhost-\d+)$')

# One pass over /proc/<pid>/task: vcpus {vCPU index: tid}, emulator the
# QEMU main loop (the pid), io {thread name: tid} of the I/O threads.
QemuThreads = collections.namedtuple('QemuThreads', 'vcpus emulator io')


class ThreadError(Exception):
    pass


def _read(path):
    with open(path, encoding='utf-8', errors='replace') as fh:
        return fh.read()


def qemu_pid(run_dir, domain_name):
    """The QEMU pid from libvirt's pidfile; ThreadError when unreadable."""
    try:
        paths.check_name('domain', domain_name)
        path = paths.safe_join(run_dir, domain_name + '.pid')
    except ValueError as e:
        raise ThreadError('refusing domain name %r: %s' % (domain_name, e))
    try:
        text = _read(path).strip()
        pid = int(text)
    except (OSError, ValueError) as e:
        raise ThreadError('no pid for domain %s in %s: %s'
                          % (domain_name, path, e))
    if pid <= 1:
        raise ThreadError('pidfile %s holds %r' % (path, text))
    return pid


def qemu_threads(proc_root, pid):
    """``QemuThreads`` of a QEMU process, from thread names."""
    task_dir = paths.safe_join(proc_root, str(int(pid)), 'task')
    try:
        tids = os.listdir(task_dir)
    except OSError as e:
        raise ThreadError('cannot list threads of pid %d: %s' % (pid, e))
    vcpus, io = {}, {}
    for tid in tids:
        if not tid.isdigit():
            continue
        try:
            comm = _read(paths.safe_join(task_dir, tid, 'comm')).strip()
        except OSError:
            continue              # the thread just exited
        m = _VCPU_COMM.match(comm)
        if m:
            vcpus[int(m.group(1))] = int(tid)
        elif _IO_COMM.match(comm) and int(tid) != int(pid):
            io[comm] = int(tid)
    return QemuThreads(vcpus=vcpus, emulator=int(pid), io=io)


def io_path_threads(found):
    """How many threads the I/O-path deadline knob reserves
    (``linux_knobs`` ``io_thread_deadline``): the emulator and each I/O
    thread of a ``QemuThreads``.
    """
    return 1 + len(set(found.io.values()))


def io_threads(proc_root, pid):
    """{'emulator': pid, 'io': {name: tid}}: the QEMU main loop (the
    emulator thread) and its I/O threads, from thread names.
    """
    found = qemu_threads(proc_root, pid)
    return {'emulator': found.emulator, 'io': found.io}


def vcpu_tids(proc_root, pid):
    """{vcpu index: tid} of a QEMU process, from thread names."""
    return qemu_threads(proc_root, pid).vcpus


# /proc/<pid>/task/<tid>/stat: "tid (comm) state ppid ..."; comm may hold
# spaces and parentheses, so fields are counted after the last ')'. Field
# 39 (1-based, proc(5)) is "processor", the CPU it last ran on.
def parse_stat_processor(text):
    rest = text[text.rindex(')') + 2:].split()
    return int(rest[39 - 3])


def thread_counters(proc_root, pid, tid):
    """(run_ns, wait_ns, wakeups, last_cpu) of one thread.

    wakeups: voluntary context switches (each block is followed by a
    wake-up), the estimate's input when no tracepoint is available.
    """
    base = paths.safe_join(proc_root, str(int(pid)), 'task', str(int(tid)))
    try:
        run, wait, _ = sched.read_schedstat(proc_root, pid, tid)
        vol, _ = sched.read_status_ctxt(proc_root, pid, tid)
        cpu = parse_stat_processor(_read(os.path.join(base, 'stat')))
    except (OSError, ValueError, IndexError) as e:
        raise ThreadError('cannot read counters of thread %s/%s: %s'
                          % (pid, tid, e))
    return run, wait, vol, cpu
