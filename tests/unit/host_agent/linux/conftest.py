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
"""Fake cgroup/procfs trees of a libvirt host (v1 and v2), the agent's
configuration pointed at them, and the privsep context run in-process.
"""

import collections

import pytest

from iosched.host_agent import conf as agent_conf
from iosched.host_agent import privsep

QEMU_PID = 4242
MACHINE = 'qemu-1-instance-00000001'
V1_DOMAIN = 'machine/%s.libvirt-qemu' % MACHINE
V2_SCOPE = 'machine.slice/machine-qemu\\x2d1\\x2dinstance\\x2d00000001.scope'

Tree = collections.namedtuple('Tree', 'version cgroup_root proc_root '
                                      'cpu_dir vm threads')


def _write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _v1_group(d):
    for name, text in (('cpu.shares', '1024\n'),
                       ('cpu.cfs_quota_us', '-1\n'),
                       ('cpu.cfs_period_us', '100000\n'),
                       ('cgroup.procs', ''), ('notify_on_release', '0\n')):
        _write(d / name, text)


def _v2_group(d):
    for name, text in (('cpu.weight', '100\n'), ('cpu.max', 'max 100000\n'),
                       ('cgroup.procs', ''), ('cpu.stat', 'usage_usec 0\n')):
        _write(d / name, text)


def make_v1(base, co_mounted=False):
    """cgroup v1 with libvirt's machine/<m>.libvirt-qemu/{vcpuN,emulator};
    ``co_mounted``: cpu,cpuacct with a 'cpu' symlink (Debian, RHEL).
    """
    cg = base / 'cgroup'
    cpu_dir = 'cpu,cpuacct' if co_mounted else 'cpu'
    cpu = cg / cpu_dir
    _v1_group(cpu)
    _write(cpu / 'release_agent', '\n')
    (cg / 'cpuacct' if not co_mounted else cg / 'memory').mkdir()
    (cg / 'unified').mkdir()
    _write(cg / 'unified' / 'cgroup.controllers', '\n')
    if co_mounted:
        (cg / 'cpu').symlink_to(cpu_dir)
        (cg / 'cpuacct').symlink_to(cpu_dir)
    for sub in ('', '/vcpu0', '/vcpu1', '/emulator'):
        _v1_group(cpu / (V1_DOMAIN + sub))
    ctrl = 'cpu,cpuacct' if co_mounted else 'cpu'
    _write(base / 'proc' / str(QEMU_PID) / 'cgroup',
           '12:pids:/%s\n4:%s:/%s/emulator\n1:name=systemd:/%s\n0::/\n'
           % (V1_DOMAIN, ctrl, V1_DOMAIN, V1_DOMAIN))
    return Tree('v1', str(cg), str(base / 'proc'), 'cpu', V1_DOMAIN,
                V1_DOMAIN)


def make_v2(base):
    """cgroup v2 with libvirt's machine-<m>.scope/libvirt/{vcpuN,...}."""
    cg = base / 'cgroup'
    _write(cg / 'cgroup.controllers',
           'cpuset cpu io memory hugetlb pids rdma misc\n')
    _write(cg / 'cgroup.procs', '1\n')
    for sub in ('', '/libvirt', '/libvirt/vcpu0', '/libvirt/vcpu1',
                '/libvirt/emulator'):
        _v2_group(cg / (V2_SCOPE + sub))
    _write(base / 'proc' / str(QEMU_PID) / 'cgroup',
           '0::/%s/libvirt/emulator\n' % V2_SCOPE)
    return Tree('v2', str(cg), str(base / 'proc'), '', V2_SCOPE,
                V2_SCOPE + '/libvirt')


@pytest.fixture(params=['v1', 'v2'])
def tree(request, tmp_path):
    if request.param == 'v1':
        return make_v1(tmp_path)
    return make_v2(tmp_path)


@pytest.fixture
def conf(tmp_path):
    """The agent's CONF with [host_paths] under tmp_path.

    Overrides only: oslo.config's Config fixture would ``reset()`` the
    global CONF and drop the defaults the PrivContext set (capabilities).
    """
    conf = agent_conf.CONF
    conf.set_override('cgroup_root', str(tmp_path / 'cgroup'), 'host_paths')
    conf.set_override('proc_root', str(tmp_path / 'proc'), 'host_paths')
    yield conf
    conf.clear_override('cgroup_root', 'host_paths')
    conf.clear_override('proc_root', 'host_paths')


@pytest.fixture
def in_process_privsep():
    """Entrypoints run in this process (no daemon, no privilege)."""
    ctx = privsep.sys_admin_pctxt
    ctx.set_client_mode(False)
    yield ctx
    ctx.set_client_mode(True)
