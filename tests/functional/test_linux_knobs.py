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
"""LinuxKnobs on the real kernel through the real privsep daemon.

A busy child (running as ``nobody``, like a QEMU vCPU runs as another
user) gets a 300 us EEVDF slice, then sits in a fresh cgroup v1 ``cpu``
group whose weight and cap are set; a 25 % cap must hold it near 25 % of
a CPU. The daemon is started as production starts it: oslo.privsep runs
``helper_command`` = the venv's ``privsep-helper --config-file ...``, and
the helper keeps only the capabilities of ``iosched.host_agent.privsep``.

Needs root and a cgroup v1 ``cpu`` hierarchy at /sys/fs/cgroup/cpu.
"""

import os
import subprocess
import sys
import time
import uuid

import pytest

from iosched.contract import knob_kinds
from iosched.host_agent.actuators import linux_knobs
from iosched.host_agent import conf as agent_conf
from iosched.host_agent.drivers import base as driver_base
from iosched.host_agent.linux import sched
from iosched.host_agent import privsep
from tests import fixtures

CONF = agent_conf.CONF
CPU_ROOT = '/sys/fs/cgroup/cpu'
HELPER = os.path.join(os.path.dirname(sys.executable), 'privsep-helper')
SECTION = privsep.CFG_SECTION
UUID = 'functional-vm'
BUSY = ('import os\nos.setgroups([]); os.setgid(65534); os.setuid(65534)\n'
        'while True:\n    pass\n')


def _requirements():
    if os.geteuid() != 0:
        return False, 'not root'
    if not os.path.isfile(os.path.join(CPU_ROOT, 'cpu.cfs_quota_us')):
        return False, 'no cgroup v1 cpu hierarchy at %s' % CPU_ROOT
    if not os.access(HELPER, os.X_OK):
        return False, 'no %s (pip install oslo.privsep)' % HELPER
    return True, ''


class Resolver(object):
    def __init__(self, tid, cgroup):
        self.tid = tid
        self.cgroup = cgroup

    def vcpu_tid(self, uuid, vcpu):
        return self.tid

    def vcpu_cgroup(self, uuid, vcpu):
        return self.cgroup

    def vm_cgroup(self, uuid):
        return self.cgroup


def _daemon_caps(marker, context=b''):
    """CapEff of the privsep daemon whose command line holds ``marker``
    (and ``context``, bytes: one of several contexts on the same file).
    """
    for pid in filter(str.isdigit, os.listdir('/proc')):
        try:
            with open('/proc/%s/cmdline' % pid, 'rb') as fh:
                cmd = fh.read()
            if marker.encode() not in cmd or context not in cmd:
                continue
            with open('/proc/%s/status' % pid) as fh:
                for line in fh:
                    if line.startswith('CapEff:'):
                        return int(line.split()[1], 16)
        except OSError:
            continue
    return None


def _start_daemon(tmp_path, name, extra=''):
    """Point the context at a privsep-helper with its own config file."""
    privsep.sys_admin_pctxt.stop()
    path = tmp_path / name
    path.write_text('[DEFAULT]\ndebug = true\n%s' % extra)
    CONF.set_override('helper_command', '%s --config-file %s'
                      % (HELPER, path), SECTION)
    return str(path)


def stop_daemon_and_remove(path):
    """Stop the privsep daemon, forget its helper, remove the test's
    cgroup (retrying while the killed tasks leave it).
    """
    privsep.sys_admin_pctxt.stop()
    CONF.clear_override('helper_command', SECTION)
    for _ in range(50):
        try:
            os.rmdir(path)
            break
        except OSError:
            time.sleep(0.05)
    assert not os.path.exists(path), 'could not remove %s' % path


def _run_ns(pid):
    return sched.read_schedstat('/proc', pid, pid)[0]


def _cpu_share(pid, seconds):
    start_ns, start = _run_ns(pid), time.monotonic()
    time.sleep(seconds)
    return (_run_ns(pid) - start_ns) / ((time.monotonic() - start) * 1e9)


@pytest.fixture
def busy_child_in_cgroup():
    ok, why = _requirements()
    fixtures.require('root + cgroup v1 cpu', ok, why)
    name = 'iosched-test-%s' % uuid.uuid4().hex[:8]
    path = os.path.join(CPU_ROOT, name)
    os.mkdir(path)
    child = subprocess.Popen([sys.executable, '-c', BUSY])
    try:
        for _ in range(100):         # until the child is nobody
            if os.stat('/proc/%d' % child.pid).st_uid == 65534:
                break
            time.sleep(0.01)
        with open(os.path.join(path, 'cgroup.procs'), 'w') as fh:
            fh.write(str(child.pid))
        yield child.pid, name
    finally:
        child.kill()
        child.wait()
        stop_daemon_and_remove(path)


def test_knobs_through_the_real_daemon(busy_child_in_cgroup, tmp_path):
    pid, cgroup = busy_child_in_cgroup
    knobs = linux_knobs.LinuxKnobs(CONF, Resolver(pid, cgroup))
    assert knobs.hierarchy.version == 'v1'
    assert knobs.knobs() == (knob_kinds.VCPU_SLICE,
                             knob_kinds.EMULATOR_SLICE,
                             knob_kinds.VCPU_DEADLINE,
                             knob_kinds.IO_DEADLINE,
                             knob_kinds.VCPU_WEIGHT,
                             knob_kinds.VCPU_CAP,
                             knob_kinds.VM_WEIGHT, knob_kinds.VM_CAP)
    slice_kind = knob_kinds.VCPU_SLICE

    # 1. A daemon without capabilities: uid 0 still writes the root-owned
    #    cgroup files (no CAP_DAC_OVERRIDE needed), but cannot change the
    #    slice of nobody's thread: CAP_SYS_NICE is the one needed.
    marker = _start_daemon(tmp_path, 'nocaps.conf',
                           '[%s]\ncapabilities =\n' % SECTION)
    knobs.write_knob(knob_kinds.VCPU_WEIGHT, UUID, '0', 150)
    assert _daemon_caps(marker) == 0
    with pytest.raises(driver_base.DriverError) as exc:
        knobs.write_knob(slice_kind, UUID, '0', 300)
    assert 'CAP_SYS_NICE' in str(exc.value), str(exc.value)

    # 2. The production daemon: the context's own capabilities.
    marker = _start_daemon(tmp_path, 'agent.conf')
    original = knobs.read_knob(slice_kind, UUID, '0')
    knobs.write_knob(slice_kind, UUID, '0', 300)
    assert _daemon_caps(marker) == 1 << 23      # CAP_SYS_NICE only
    assert knobs.read_knob(slice_kind, UUID, '0') == 300
    assert sched.sched_getattr(pid).runtime == 300000
    assert sched.read_sched_slice_ns('/proc', pid) == 300000
    knobs.write_knob(slice_kind, UUID, '0', original)
    assert sched.get_slice_us(pid) == original

    # 3. Weight: v2 scale in, cpu.shares on disk.
    knobs.write_knob(knob_kinds.VCPU_WEIGHT, UUID, '0', 200)
    with open(os.path.join(CPU_ROOT, cgroup, 'cpu.shares')) as fh:
        assert fh.read().strip() == '2048'
    assert knobs.read_knob(knob_kinds.VCPU_WEIGHT, UUID, '0') == 200

    # 4. Cap: 25 % of a CPU holds a busy loop near 25 %.
    uncapped = _cpu_share(pid, 1.0)
    knobs.write_knob(knob_kinds.VCPU_CAP, UUID, '0', 0.25)
    with open(os.path.join(CPU_ROOT, cgroup, 'cpu.cfs_quota_us')) as fh:
        assert fh.read().strip() == '25000'
    assert knobs.read_knob(knob_kinds.VCPU_CAP, UUID, '0') == 0.25
    time.sleep(0.2)                 # let the current period run out
    capped = _cpu_share(pid, 2.0)
    sys.stderr.write('busy child: %.1f %% uncapped, %.1f %% with a 25 %% '
                     'cap\n' % (uncapped * 100, capped * 100))
    assert 0.15 <= capped <= 0.40, capped
    knobs.write_knob(knob_kinds.VCPU_CAP, UUID, '0', None)
    with open(os.path.join(CPU_ROOT, cgroup, 'cpu.cfs_quota_us')) as fh:
        assert fh.read().strip() == '-1'
    assert knobs.read_knob(knob_kinds.VCPU_CAP, UUID, '0') is None
