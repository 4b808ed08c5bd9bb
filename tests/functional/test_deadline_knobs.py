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
"""The LSVM mechanisms' knobs on the real kernel through the real privsep
daemon: SCHED_DEADLINE (vcpu_deadline) and the VM-level weight and cap.

A child running as ``nobody`` (QEMU runs as another user) in a fresh
cgroup v1 ``cpu`` group, busy or asleep, gets a reservation of 1 ms every
4 ms: read back, held near 25 % of a CPU, able to start a thread (the
reset-on-fork flag), seen by the admission figures
(``iosched.host_agent.linux.deadline``), refused when pinned to one CPU, and
ended by None without leaving bandwidth behind in the kernel (the 6.18
leak ``sched_deadline.set_fair`` works around). The group gets the VM-level
weight and a 25 % cap.

Needs root, a cgroup v1 ``cpu`` hierarchy at /sys/fs/cgroup/cpu and two
CPUs (a thread pinned to one of them must be narrower than its root
domain). The leak check reads ``/sys/kernel/debug/sched/debug``; without
debugfs it is skipped (CI=true: fails).
"""

import errno
import os
import subprocess
import sys
import time
import uuid as uuid_mod

import pytest

from iosched.contract import knob_kinds
from iosched.host_agent.actuators import linux_knobs
from iosched.host_agent import conf as agent_conf
from iosched.host_agent.drivers import base as driver_base
from iosched.host_agent.linux import deadline
from iosched.host_agent.linux import sched
from iosched.host_agent.linux import sched_deadline
from tests import fixtures
from tests.functional import test_linux_knobs as tlk

CONF = agent_conf.CONF
UUID = tlk.UUID
VCPU_DL = knob_kinds.VCPU_DEADLINE
QUARTER = {'runtime_us': 1000, 'deadline_us': 2000, 'period_us': 4000}
DEBUG = '/sys/kernel/debug/sched/debug'
# Busy (or asleep, argv[1] == 'sleep') as nobody; SIGUSR1 starts a thread
# and says on stdout whether it could.
CHILD = r'''
import os, signal, sys, threading, time
os.setgroups([]); os.setgid(65534); os.setuid(65534)
def spawn(*_):
    try:
        t = threading.Thread(target=lambda: None)
        t.start(); t.join()
        os.write(1, b'thread ok\n')
    except Exception as e:
        os.write(1, ('thread failed: %s\n' % e).encode())
signal.signal(signal.SIGUSR1, spawn)
os.write(1, b'ready\n')
if sys.argv[1] == 'sleep':
    while True:
        time.sleep(3600)
while True:
    pass
'''


def _requirements():
    ok, why = tlk._requirements()
    if ok and len(os.sched_getaffinity(0)) < 2:
        return False, 'one CPU: no affinity narrower than the root domain'
    return ok, why


class Resolver(tlk.Resolver):
    def io_threads(self, uuid):
        return {'emulator': self.tid, 'io': {}}


def _start(kind, cgroup_path):
    child = subprocess.Popen([sys.executable, '-c', CHILD, kind],
                             stdout=subprocess.PIPE)
    assert child.stdout.readline() == b'ready\n'
    with open(os.path.join(cgroup_path, 'cgroup.procs'), 'w') as fh:
        fh.write(str(child.pid))
    return child


@pytest.fixture
def child_group(tmp_path):
    """A fresh v1 cpu group; yields (start(kind) -> Popen, group name)."""
    fixtures.require('root + cgroup v1 cpu + 2 CPUs', *_requirements())
    name = 'iosched-dl-test-%s' % uuid_mod.uuid4().hex[:8]
    path = os.path.join(tlk.CPU_ROOT, name)
    os.mkdir(path)
    children = []
    tlk._start_daemon(tmp_path, 'agent.conf')
    try:
        yield (lambda kind: children.append(_start(kind, path)) or
               children[-1]), name
    finally:
        for child in children:
            try:       # no reservation outlives the test, nor leaks
                if sched_deadline.get_deadline_us(child.pid) is not None:
                    sched_deadline.set_fair(child.pid)
            except Exception:
                pass
            child.kill()
            child.wait()
        tlk.stop_daemon_and_remove(path)


def _signal_thread(child):
    os.kill(child.pid, 10)                          # SIGUSR1
    return child.stdout.readline().decode().strip()


def _unaccounted():
    """What the root domain holds beyond every deadline thread's
    reservation: the fair servers, plus anything leaked. Read until two
    readings agree (other jobs may start a reservation meanwhile).
    """
    last = None
    for _ in range(10):
        with open(DEBUG) as fh:
            total = deadline.parse_debug_dl_bw(fh.read(), 0)[1]
        threads = deadline.scan('/proc', everything=True).foreign
        value = round(total - threads, 4)
        if value == last:
            return value
        last = value
        time.sleep(0.1)
    return last


def _debugfs_ok():
    try:
        with open(DEBUG) as fh:
            deadline.parse_debug_dl_bw(fh.read(), 0)
        return True, ''
    except (OSError, ValueError) as e:
        return False, 'no dl_bw in %s: %s' % (DEBUG, e)


def test_deadline_on_a_busy_thread(child_group):
    start, cgroup = child_group
    child = start('busy')
    pid = child.pid
    knobs = linux_knobs.LinuxKnobs(CONF, Resolver(pid, cgroup))
    assert VCPU_DL in knobs.knobs()
    before = deadline.measure('/proc', '/sys', [pid], '/sys/fs/cgroup')
    assert before.state.reserved == 0.0
    assert knobs.read_knob(VCPU_DL, UUID, '0') is None

    knobs.write_knob(VCPU_DL, UUID, '0', QUARTER)
    assert knobs.read_knob(VCPU_DL, UUID, '0') == QUARTER
    attr = sched.sched_getattr(pid)
    assert attr.policy == sched.SCHED_DEADLINE
    assert attr.flags & sched.SCHED_FLAG_RESET_ON_FORK
    # The reservation is what it gets: 1 ms every 4 ms of a busy loop.
    share = tlk._cpu_share(pid, 2.0)
    # It can start a thread (QEMU's main loop does): reset-on-fork.
    assert _signal_thread(child) == 'thread ok'
    # The admission figures see it as the VM's, or as foreign.
    after = deadline.measure('/proc', '/sys', [pid], '/sys/fs/cgroup')
    assert after.state.reserved == 0.25
    assert after.state.cpus == tuple(sorted(os.sched_getaffinity(1)))
    with open('/proc/sys/kernel/sched_rt_runtime_us') as fh:
        per_cpu = int(fh.read()) / 1e6
    assert after.state.limit == pytest.approx(per_cpu * len(after.state.cpus))
    other = deadline.measure('/proc', '/sys', [], '/sys/fs/cgroup')
    assert other.state.reserved == 0.0
    assert other.state.foreign >= 0.25
    # The kernel narrows no deadline thread's affinity (pin first).
    with pytest.raises(OSError) as exc:
        os.sched_setaffinity(pid, {0})
    assert exc.value.errno == errno.EBUSY

    knobs.write_knob(VCPU_DL, UUID, '0', None)
    assert knobs.read_knob(VCPU_DL, UUID, '0') is None
    assert sched.sched_getattr(pid).policy == sched.SCHED_OTHER
    fair = tlk._cpu_share(pid, 1.0)
    sys.stderr.write('busy child: %.1f %% of a CPU with 1 ms / 4 ms '
                     'SCHED_DEADLINE, %.1f %% back in SCHED_OTHER\n'
                     % (share * 100, fair * 100))
    assert 0.15 <= share <= 0.35, share
    assert fair > 0.0
    assert _signal_thread(child) == 'thread ok'


def test_deadline_needs_the_whole_root_domain(child_group):
    start, cgroup = child_group
    child = start('busy')
    knobs = linux_knobs.LinuxKnobs(CONF, Resolver(child.pid, cgroup))
    os.sched_setaffinity(child.pid, {0})
    with pytest.raises(driver_base.DriverError) as exc:
        knobs.write_knob(VCPU_DL, UUID, '0', QUARTER)
    text = str(exc.value)
    assert 'Operation not permitted' in text and 'root domain' in text, text
    assert knobs.read_knob(VCPU_DL, UUID, '0') is None
    # Widened to every CPU, as the policy pins LSVM threads, it is taken.
    os.sched_setaffinity(child.pid, os.sched_getaffinity(1))
    knobs.write_knob(VCPU_DL, UUID, '0', QUARTER)
    assert knobs.read_knob(VCPU_DL, UUID, '0') == QUARTER
    knobs.write_knob(VCPU_DL, UUID, '0', None)


def test_ending_a_sleeping_reservation_leaves_no_bandwidth(child_group):
    fixtures.require('debugfs sched/debug', *_debugfs_ok())
    start, cgroup = child_group
    child = start('sleep')
    knobs = linux_knobs.LinuxKnobs(CONF, Resolver(child.pid, cgroup))
    floor = _unaccounted()
    knobs.write_knob(VCPU_DL, UUID, '0', QUARTER)
    assert _signal_thread(child) == 'thread ok'     # ran as SCHED_DEADLINE
    time.sleep(0.1)                                 # asleep past 0-lag
    knobs.write_knob(VCPU_DL, UUID, '0', None)
    left = _unaccounted()
    sys.stderr.write('deadline bandwidth beyond threads\' reservations: '
                     '%.4f before, %.4f after ending a sleeping one\n'
                     % (floor, left))
    assert left == floor, ('the kernel kept %.4f CPU of an ended '
                           'reservation' % (left - floor))


def test_vm_weight_and_cap_on_a_real_group(child_group):
    start, cgroup = child_group
    child = start('busy')
    knobs = linux_knobs.LinuxKnobs(CONF, Resolver(child.pid, cgroup))
    group = os.path.join(tlk.CPU_ROOT, cgroup)
    assert knobs.read_knob(knob_kinds.VM_WEIGHT, UUID, '') == 100
    knobs.write_knob(knob_kinds.VM_WEIGHT, UUID, '', 10000)
    with open(os.path.join(group, 'cpu.shares')) as fh:
        assert fh.read().strip() == '102400'
    assert knobs.read_knob(knob_kinds.VM_WEIGHT, UUID, '') == 10000
    knobs.write_knob(knob_kinds.VM_CAP, UUID, '', 0.25)
    with open(os.path.join(group, 'cpu.cfs_quota_us')) as fh:
        assert fh.read().strip() == '25000'
    assert knobs.read_knob(knob_kinds.VM_CAP, UUID, '') == 0.25
    time.sleep(0.2)
    capped = tlk._cpu_share(child.pid, 1.5)
    sys.stderr.write('busy child at VM weight 10000 and a 25 %% VM cap: '
                     '%.1f %%\n' % (capped * 100))
    assert 0.15 <= capped <= 0.40, capped
    knobs.write_knob(knob_kinds.VM_CAP, UUID, '', None)
    knobs.write_knob(knob_kinds.VM_WEIGHT, UUID, '', 100)
    with open(os.path.join(group, 'cpu.cfs_quota_us')) as fh:
        assert fh.read().strip() == '-1'
    with open(os.path.join(group, 'cpu.shares')) as fh:
        assert fh.read().strip() == '1024'
