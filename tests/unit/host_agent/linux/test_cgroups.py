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
"""cgroup probing, libvirt domain discovery, weight/cap conversions, the
read side and the write plans, on fake v1 and v2 trees.
"""

import pytest

from iosched.host_agent import linux
from iosched.host_agent.linux import cgroups
from iosched.host_agent import paths
from tests.unit.host_agent.linux import conftest


def test_probe_and_discover(tree):
    hier = cgroups.probe(tree.cgroup_root)
    assert hier == cgroups.Hierarchy(tree.version, tree.cgroup_root,
                                     tree.cpu_dir)
    dom = cgroups.domain_cgroups(tree.proc_root, conftest.QEMU_PID, hier)
    assert dom.vm == tree.vm
    assert dom.threads == tree.threads
    assert dom.vcpu(1) == tree.threads + '/vcpu1'
    assert dom.emulator() == tree.threads + '/emulator'


def test_probe_v1_co_mounted(tmp_path):
    tree = conftest.make_v1(tmp_path, co_mounted=True)
    hier = cgroups.probe(tree.cgroup_root)
    assert hier.version == 'v1' and hier.cpu_dir == 'cpu'
    dom = cgroups.domain_cgroups(tree.proc_root, conftest.QEMU_PID, hier)
    assert dom.vm == conftest.V1_DOMAIN
    assert cgroups.read_weight(hier, dom.vcpu(0)) == 100


def test_probe_v1_only_comma_name(tmp_path):
    cpu = tmp_path / 'cpu,cpuacct'
    cpu.mkdir()
    (cpu / 'cpu.shares').write_text('1024\n')
    hier = cgroups.probe(str(tmp_path))
    assert hier == cgroups.Hierarchy('v1', str(tmp_path), 'cpu,cpuacct')


def test_probe_hybrid_with_cpu_on_unified(tmp_path):
    (tmp_path / 'unified').mkdir()
    (tmp_path / 'unified' / 'cgroup.controllers').write_text('cpu io\n')
    assert cgroups.probe(str(tmp_path)) == cgroups.Hierarchy(
        'v2', str(tmp_path), 'unified')


@pytest.mark.parametrize('layout', [
    {},                                                  # empty directory
    {'cgroup.controllers': 'memory io pids\n'},          # v2 without cpu
    {'unified/cgroup.controllers': '\n', 'cpuacct/cpuacct.usage': '0\n'},
    {'cpuset/cpu.shares': '1\n'},                        # 'cpuset' != 'cpu'
])
def test_probe_without_cpu_controller(tmp_path, layout):
    for rel, text in layout.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    with pytest.raises(linux.LinuxKnobError, match='no cpu controller'):
        cgroups.probe(str(tmp_path))


def test_probe_missing_root(tmp_path):
    with pytest.raises(linux.LinuxKnobError, match='cannot list'):
        cgroups.probe(str(tmp_path / 'nope'))


# /proc/<pid>/cgroup of a QEMU process, v1 (this project's testbed layout)
PROC_CGROUP_V1 = """\
12:pids:/machine/qemu-2-instance-0000002a.libvirt-qemu
9:name=systemd:/machine/qemu-2-instance-0000002a.libvirt-qemu
3:cpuset:/machine/qemu-2-instance-0000002a.libvirt-qemu/emulator
2:cpuacct:/machine/qemu-2-instance-0000002a.libvirt-qemu/emulator
1:cpu:/machine/qemu-2-instance-0000002a.libvirt-qemu/emulator
0::/
"""


def test_parse_proc_cgroup():
    rows = cgroups.parse_proc_cgroup(PROC_CGROUP_V1)
    assert rows[0] == (12, ('pids',),
                       '/machine/qemu-2-instance-0000002a.libvirt-qemu')
    assert rows[1][1] == ('name=systemd',)
    assert rows[-1] == (0, (), '/')
    # a ':' inside the path stays in the path
    assert cgroups.parse_proc_cgroup('0::/a:b\n') == [(0, (), '/a:b')]
    for bad in ('0:/a\n', 'x::/a\n'):
        with pytest.raises(linux.LinuxKnobError, match='is not'):
            cgroups.parse_proc_cgroup(bad)


DISCOVERY = [
    # (version, cgroup of the qemu process or thread, vm, threads)
    ('v1', 'machine/qemu-2-i.libvirt-qemu/emulator',
     'machine/qemu-2-i.libvirt-qemu', 'machine/qemu-2-i.libvirt-qemu'),
    ('v1', 'machine/qemu-2-i.libvirt-qemu/vcpu3',
     'machine/qemu-2-i.libvirt-qemu', 'machine/qemu-2-i.libvirt-qemu'),
    ('v1', 'machine/qemu-2-i.libvirt-qemu',
     'machine/qemu-2-i.libvirt-qemu', 'machine/qemu-2-i.libvirt-qemu'),
    ('v2', 'machine.slice/machine-qemu\\x2d2\\x2di.scope/libvirt/emulator',
     'machine.slice/machine-qemu\\x2d2\\x2di.scope',
     'machine.slice/machine-qemu\\x2d2\\x2di.scope/libvirt'),
    ('v2', 'machine.slice/machine-qemu\\x2d2\\x2di.scope/libvirt/iothread1',
     'machine.slice/machine-qemu\\x2d2\\x2di.scope',
     'machine.slice/machine-qemu\\x2d2\\x2di.scope/libvirt'),
    # libvirt < 7.1 had no nested 'libvirt' directory
    ('v2', 'machine.slice/machine-qemu\\x2d2\\x2di.scope/vcpu0',
     'machine.slice/machine-qemu\\x2d2\\x2di.scope',
     'machine.slice/machine-qemu\\x2d2\\x2di.scope'),
]


@pytest.mark.parametrize('version,cg,vm,threads', DISCOVERY)
def test_domain_cgroups_from_path(version, cg, vm, threads):
    dom = cgroups.domain_cgroups_from_path(cg, version)
    assert (dom.vm, dom.threads) == (vm, threads)


@pytest.mark.parametrize('cg', ['', 'emulator', 'machine/../../etc/vcpu0',
                                'machine/a b/emulator', 'machine/.'])
def test_domain_cgroups_refuses(cg):
    with pytest.raises((linux.LinuxKnobError, paths.UnsafePath)):
        cgroups.domain_cgroups_from_path(cg, 'v1')


def test_cpu_cgroup_line_selection():
    v1 = cgroups.Hierarchy('v1', '/x', 'cpu')
    v2 = cgroups.Hierarchy('v2', '/x', '')
    assert cgroups.cpu_cgroup(PROC_CGROUP_V1, v1) == \
        'machine/qemu-2-instance-0000002a.libvirt-qemu/emulator'
    assert cgroups.cpu_cgroup(PROC_CGROUP_V1, v2) == ''
    with pytest.raises(linux.LinuxKnobError):
        cgroups.cpu_cgroup('3:cpuset:/a\n', v1)


WEIGHTS = [
    # (shares, weight): the kernel's sched_weight_to_cgroup
    (2, 1), (10, 1), (15, 1), (16, 2), (512, 50), (1024, 100), (2048, 200),
    (102400, 10000), (262144, 10000),
]


@pytest.mark.parametrize('shares,weight', WEIGHTS)
def test_shares_to_weight(shares, weight):
    assert cgroups.shares_to_weight(shares) == weight


def test_weight_round_trip_over_the_whole_range():
    for weight in range(1, 10001):
        shares = cgroups.weight_to_shares(weight)
        assert 2 <= shares <= 262144
        assert cgroups.shares_to_weight(shares) == weight
    assert cgroups.weight_to_shares(100) == 1024
    assert cgroups.weight_to_shares(1) == 10
    for bad in (0, 10001):
        with pytest.raises(linux.LinuxKnobError):
            cgroups.weight_to_shares(bad)


def test_oci_linear_conversion():
    assert cgroups.oci_linear_shares_to_weight(2) == 1
    assert cgroups.oci_linear_shares_to_weight(262144) == 10000
    assert cgroups.oci_linear_shares_to_weight(1024) == 39   # not 100
    for weight in range(1, 10001):
        assert cgroups.oci_linear_shares_to_weight(
            cgroups.oci_linear_weight_to_shares(weight)) == weight


@pytest.mark.parametrize('text,want', [
    ('max 100000\n', (None, 100000)),
    ('25000 100000\n', (25000, 100000)),
    ('150000 50000', (150000, 50000)),
])
def test_parse_cpu_max(text, want):
    assert cgroups.parse_cpu_max(text) == want


@pytest.mark.parametrize('text', ['max\n', '', 'x 100000', '1 2 3'])
def test_parse_cpu_max_refuses(text):
    with pytest.raises(linux.LinuxKnobError):
        cgroups.parse_cpu_max(text)


def test_cap_conversions():
    assert cgroups.cap_fraction(None, 100000) is None
    assert cgroups.cap_fraction(25000, 100000) == 0.25
    assert cgroups.cap_fraction(100000, 300000) == 0.333333
    assert cgroups.cap_quota(None, 100000) is None
    assert cgroups.cap_quota(0.25, 100000) == 25000
    assert cgroups.cap_quota(2, 100000) == 200000
    assert cgroups.cap_quota(0.01, 100000) == 1000
    for bad in (0.0099, 0, -0.5, float('nan'), float('inf'), 'x', True):
        with pytest.raises(linux.LinuxKnobError):
            cgroups.cap_quota(bad, 100000)


def test_read_and_plan(tree):
    hier = cgroups.probe(tree.cgroup_root)
    vcpu0 = tree.threads + '/vcpu0'
    prefix = (tree.cpu_dir + '/' if tree.cpu_dir else '') + vcpu0
    assert cgroups.read_weight(hier, vcpu0) == 100
    assert cgroups.read_weight(hier, tree.vm) == 100
    assert cgroups.read_cap(hier, vcpu0) == (None, 100000)
    if tree.version == 'v1':
        assert cgroups.plan_weight(hier, vcpu0, 200) == [
            (prefix + '/cpu.shares', '2048')]
        assert cgroups.plan_cap(hier, vcpu0, 0.25, 100000) == [
            (prefix + '/cpu.cfs_quota_us', '25000')]
        assert cgroups.plan_cap(hier, vcpu0, None, 100000) == [
            (prefix + '/cpu.cfs_quota_us', '-1')]
    else:
        assert cgroups.plan_weight(hier, vcpu0, 200) == [
            (prefix + '/cpu.weight', '200')]
        assert cgroups.plan_cap(hier, vcpu0, 0.25, 50000) == [
            (prefix + '/cpu.max', '12500 50000')]
        assert cgroups.plan_cap(hier, vcpu0, None, 100000) == [
            (prefix + '/cpu.max', 'max 100000')]
    with pytest.raises(linux.LinuxKnobError):
        cgroups.plan_weight(hier, vcpu0, 0)


def test_reads_fail_clearly(tree):
    hier = cgroups.probe(tree.cgroup_root)
    with pytest.raises(linux.LinuxKnobError, match='vcpu9'):
        cgroups.read_weight(hier, tree.threads + '/vcpu9')
    with pytest.raises(paths.UnsafePath):
        cgroups.read_weight(hier, tree.threads + '/../../../etc')
    with pytest.raises(linux.LinuxKnobError, match='/proc-nope'):
        cgroups.domain_cgroups(tree.proc_root + '-nope', 1, hier)
