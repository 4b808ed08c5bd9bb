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
"""The ``lsvm_group`` knob on the real kernel through the real privsep
daemons: a process running as ``nobody`` with a "vCPU", an "iothread"
and its main ("emulator") thread, each in a libvirt-like group below the
real ``machine`` group, moves to a group of its own at the top of the
cgroup v1 cpu hierarchy and back.

The parent is created by the second context (CAP_DAC_OVERRIDE only: a v1
root directory is mode 0555), everything else by the first (CAP_SYS_NICE
only). Needs root and a cgroup v1 ``cpu`` hierarchy at /sys/fs/cgroup/cpu.
"""

import os
import subprocess
import sys
import time
import uuid

import pytest

from iosched.contract import knob_kinds
from iosched.host_agent.actuators import lsvm_group_knobs
from iosched.host_agent import conf as agent_conf
from iosched.host_agent.drivers import base as driver_base
from iosched.host_agent.linux import cgroups
from iosched.host_agent.linux import lsvm_group
from iosched.host_agent import privsep
from tests import fixtures
from tests.functional import test_linux_knobs as base

CONF = agent_conf.CONF
CPU_ROOT = base.CPU_ROOT
VSLICER = 'host_agent_policy.vslicer'
VM = str(uuid.UUID(int=0x1500))
# Three busy threads, named as QEMU names its own, as nobody.
CHILD = '''
import os, sys, threading
os.setgroups([]); os.setgid(65534); os.setuid(65534)
def spin():
    while True:
        pass
for name in ('CPU 0/TCG', 'IO iothread1'):
    threading.Thread(target=spin, name=name, daemon=True).start()
sys.stdout.write('ready\\n'); sys.stdout.flush()
spin()
'''


class Resolver(object):
    def __init__(self, pid, vcpu_tid, io_tid, dom):
        self.pid, self.vcpu, self.io, self.dom = pid, vcpu_tid, io_tid, dom

    def vcpu_tids(self, uuid):
        return {0: self.vcpu}

    def io_threads(self, uuid):
        return {'emulator': self.pid, 'io': {'IO iothread1': self.io}}

    def domain_cgroups(self, uuid):
        return self.dom


def _threads(pid):
    tids = sorted(int(t) for t in os.listdir('/proc/%d/task' % pid))
    return [t for t in tids if t != pid]


def _group_of(tid):
    with open('/proc/%d/cgroup' % tid) as fh:
        return cgroups.cpu_cgroup(fh.read(), cgroups.Hierarchy(
            'v1', '/sys/fs/cgroup', 'cpu'))


def _move(tid, cg):
    with open(os.path.join(CPU_ROOT, cg, 'tasks'), 'w') as fh:
        fh.write(str(tid))


def _rmdir(path):
    for _ in range(50):
        try:
            os.rmdir(path)
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.05)


@pytest.fixture
def guest(tmp_path):
    ok, why = base._requirements()
    fixtures.require('root + cgroup v1 cpu', ok, why)
    tag = uuid.uuid4().hex[:8]
    parent = 'iosched-test-%s' % tag
    dom_cg = 'machine/iosched-test-%s.libvirt-qemu' % tag
    dom = cgroups.DomainCgroups('v1', dom_cg, dom_cg)
    made = []
    for cg in ('machine', dom_cg, dom_cg + '/vcpu0', dom_cg + '/emulator',
               dom_cg + '/iothread1'):
        path = os.path.join(CPU_ROOT, cg)
        if not os.path.isdir(path):
            os.mkdir(path)
            made.append(path)
    conf = tmp_path / 'agent.conf'
    conf.write_text('[DEFAULT]\ndebug = true\n[%s]\nweight_group = %s\n'
                    % (VSLICER, parent))
    CONF.set_override('weight_group', parent, VSLICER)
    for section, ctx in ((privsep.CFG_SECTION, privsep.sys_admin_pctxt),
                         (privsep.CGROUP_CFG_SECTION,
                          privsep.cgroup_admin_pctxt)):
        ctx.stop()
        CONF.set_override('helper_command', '%s --config-file %s'
                          % (base.HELPER, conf), section)
    child = subprocess.Popen([sys.executable, '-c', CHILD],
                             stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == 'ready'
        vcpu, io = _threads(child.pid)
        for tid, cg in ((child.pid, dom.emulator()), (vcpu, dom.vcpu(0)),
                        (io, dom_cg + '/iothread1')):
            _move(tid, cg)
        yield (Resolver(child.pid, vcpu, io, dom), parent, str(conf))
    finally:
        child.kill()
        child.wait()
        for section, ctx in ((privsep.CFG_SECTION, privsep.sys_admin_pctxt),
                             (privsep.CGROUP_CFG_SECTION,
                              privsep.cgroup_admin_pctxt)):
            ctx.stop()
            CONF.clear_override('helper_command', section)
        CONF.clear_override('weight_group', VSLICER)
        _rmdir(os.path.join(CPU_ROOT, parent, 'vm-' + VM))
        _rmdir(os.path.join(CPU_ROOT, parent))
        for path in reversed(made):
            if not path.endswith('/machine'):
                _rmdir(path)


def test_lsvm_group_moves_a_guest_and_back(guest):
    resolver, parent, marker = guest
    knobs = lsvm_group_knobs.LsvmGroupKnobs(CONF, resolver)
    kind = knob_kinds.LSVM_GROUP
    assert knobs.knobs() == (kind,)
    pid, vcpu, io = resolver.pid, resolver.vcpu, resolver.io
    homes = {t: _group_of(t) for t in (pid, vcpu, io)}
    assert knobs.read_knob(kind, VM, '') is None

    # The parent, by the second daemon: CAP_DAC_OVERRIDE and nothing else.
    assert knobs.ensure_parent() == parent
    assert os.path.isdir(os.path.join(CPU_ROOT, parent))
    assert base._daemon_caps(marker, b'cgroup_admin_pctxt') == 1 << 1

    # In: every thread in the VM's group, its weight and cap set.
    value = {'weight': 10000, 'cap': 0.25}
    knobs.write_knob(kind, VM, '', value)
    group = lsvm_group.vm_group(parent, VM)
    assert {t: _group_of(t) for t in homes} == {t: group for t in homes}
    assert knobs.read_knob(kind, VM, '') == value
    with open(os.path.join(CPU_ROOT, group, 'cpu.shares')) as fh:
        assert fh.read().strip() == '102400'
    time.sleep(0.2)
    share = _process_share(pid, 2.0)
    sys.stderr.write('three busy threads in the LSVM group capped at 0.25: '
                     '%.3f of a CPU\n' % share)
    assert 0.15 <= share <= 0.40, share
    knobs.write_knob(kind, VM, '', value)          # idempotent
    assert knobs.read_knob(kind, VM, '') == value

    # A thread outside (a write cut short, a new vhost worker) reads as the
    # target, never a third value; the next write brings it in.
    _move(io, homes[io])
    assert knobs.read_knob(kind, VM, '') == value
    knobs.write_knob(kind, VM, '', value)
    assert _group_of(io) == group

    # Out: every thread back where libvirt put it, the group gone.
    knobs.write_knob(kind, VM, '', None)
    assert {t: _group_of(t) for t in homes} == homes
    assert not os.path.exists(os.path.join(CPU_ROOT, group))
    assert knobs.read_knob(kind, VM, '') is None


def test_the_daemon_moves_no_thread_outside_guest_groups(guest):
    resolver, parent, _ = guest
    import iosched.host_agent.linux.privileged_group as pg
    knobs = lsvm_group_knobs.LsvmGroupKnobs(CONF, resolver)
    knobs.ensure_parent()
    # An empty group a destroyed guest left is removed at the next start.
    gone = os.path.join(CPU_ROOT, lsvm_group.vm_group(parent, 'dead-beef'))
    os.mkdir(gone)
    assert knobs.ensure_parent() == parent
    assert not os.path.exists(gone)
    with pytest.raises(Exception) as exc:
        lsvm_group_knobs._call('move_thread', pg.move_thread,
                               CONF.host_paths.cgroup_root, os.getpid(),
                               lsvm_group.vm_group(parent, VM))
    assert 'neither an LSVM group' in str(exc.value), str(exc.value)
    with pytest.raises(driver_base.DriverError, match='lsvm_group weight'):
        knobs.write_knob(knob_kinds.LSVM_GROUP, VM, '', {'weight': 0})


def _process_share(pid, seconds):
    def run_ns():
        with open('/proc/%d/stat' % pid) as fh:
            fields = fh.read().rsplit(')', 1)[1].split()
        tck = os.sysconf('SC_CLK_TCK')
        return (int(fields[11]) + int(fields[12])) * 1e9 / tck
    start_ns, start = run_ns(), time.monotonic()
    time.sleep(seconds)
    return (run_ns() - start_ns) / ((time.monotonic() - start) * 1e9)
