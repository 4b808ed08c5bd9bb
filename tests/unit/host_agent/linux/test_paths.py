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
"""Path safety: safe_join and check_name against hostile names."""

import pytest

from iosched.host_agent import paths

ROOT = '/sys/fs/cgroup'

JOIN_OK = [
    # (name, parts, want)
    ('nothing', (), ROOT),
    ('one', ('cpu',), ROOT + '/cpu'),
    ('several parts', ('cpu', 'machine', 'cpu.shares'),
     ROOT + '/cpu/machine/cpu.shares'),
    ('multi-segment part', ('cpu/machine/qemu-1-vm.libvirt-qemu',),
     ROOT + '/cpu/machine/qemu-1-vm.libvirt-qemu'),
    ('systemd escapes', ('machine.slice/machine-qemu\\x2d1\\x2dvm.scope',),
     ROOT + '/machine.slice/machine-qemu\\x2d1\\x2dvm.scope'),
    ('int pid', (1234, 'task', 1235), ROOT + '/1234/task/1235'),
    ('dots inside a name', ('a..b', '.hidden', '...'),
     ROOT + '/a..b/.hidden/...'),
    ('spaces and unicode', ('a b', 'vm-é'), ROOT + '/a b/vm-é'),
]

JOIN_REFUSED = [
    # (name, root, parts, words the message must contain)
    ('absolute part', ROOT, ('/etc/passwd',), ('absolute', '/etc/passwd')),
    ('dotdot', ROOT, ('..',), ("'..'", ROOT)),
    ('dotdot inside', ROOT, ('cpu/../../etc',), ("'..'", 'cpu/../../etc')),
    ('dotdot after', ROOT, ('cpu', '..', '..', 'etc'), ("'..'",)),
    ('dot', ROOT, ('./cpu',), ("'.'",)),
    ('NUL', ROOT, ('cpu\0/etc',), ('NUL',)),
    ('empty part', ROOT, ('',), ('empty',)),
    ('double slash', ROOT, ('cpu//machine',), ('empty',)),
    ('trailing slash', ROOT, ('cpu/',), ('empty',)),
    ('negative int', ROOT, (-1,), ('negative',)),
    ('bool', ROOT, (True,), ('not a string',)),
    ('None', ROOT, (None,), ('not a string',)),
    ('bytes', ROOT, (b'cpu',), ('not a string',)),
    ('relative root', 'sys/fs', ('cpu',), ('not absolute',)),
    ('empty root', '', ('cpu',), ('not a usable path',)),
    ('NUL root', '/sys\0', ('cpu',), ('not a usable path',)),
]


@pytest.mark.parametrize('name,parts,want', JOIN_OK,
                         ids=[r[0] for r in JOIN_OK])
def test_safe_join_accepts(name, parts, want):
    assert paths.safe_join(ROOT, *parts) == want


@pytest.mark.parametrize('name,root,parts,words', JOIN_REFUSED,
                         ids=[r[0] for r in JOIN_REFUSED])
def test_safe_join_refuses(name, root, parts, words):
    with pytest.raises(paths.UnsafePath) as exc:
        paths.safe_join(root, *parts)
    assert isinstance(exc.value, ValueError)
    for word in words:
        assert word in str(exc.value)


def test_safe_join_normalizes_the_root():
    assert paths.safe_join('/sys/fs/cgroup/', 'cpu') == ROOT + '/cpu'
    assert paths.safe_join('/', 'proc') == '/proc'


def test_is_below():
    assert paths.is_below('/a', '/a')
    assert paths.is_below('/a', '/a/b/../c')
    assert not paths.is_below('/a', '/ab')
    assert not paths.is_below('/a', '/a/../b')


NAMES = [
    # (kind, value, accepted)
    ('domain', 'instance-0000002a', True),
    ('domain', 'my_vm.prod:1', True),
    ('domain', '../../etc/passwd', False),
    ('domain', 'vm/evil', False),
    ('domain', 'vm\nevil', False),
    ('domain', 'vm evil', False),
    ('domain', '-leading-dash', False),
    ('domain', '', False),
    ('domain', 'a' * 256, False),
    ('machine', 'qemu-1-instance-0000002a', True),
    ('machine', 'qemu-12', True),
    ('machine', 'qemu-1-vm_1', False),
    ('machine', 'qemu-1-' + 'a' * 58, False),      # 65 characters
    ('machine', 'lxc-1-vm', False),
    ('cgroup_component', 'qemu-1-vm.libvirt-qemu', True),
    ('cgroup_component', 'machine-qemu\\x2d1\\x2dvm.scope', True),
    ('cgroup_component', 'user@1000.service', True),
    ('cgroup_component', 'vcpu0', True),
    ('cgroup_component', '..', False),
    ('cgroup_component', '.', False),
    ('cgroup_component', 'a/b', False),
    ('cgroup_component', 'a\0b', False),
    ('cgroup_component', 'a b', False),
    ('cgroup_component', 'release_agent\n', False),
    ('disk_target', 'vda', True),
    ('disk_target', 'sdaa', True),
    ('disk_target', 'xvdb', True),
    ('disk_target', 'vda1', False),
    ('disk_target', 'vda/../../x', False),
    ('disk_target', 'VDA', False),
    ('tap', 'tap3f1c2a9b-1e', True),
    ('tap', 'a' * 15, True),
    ('tap', 'a' * 16, False),
    ('tap', '..', False),
    ('tap', '.', False),
    ('tap', 'tap:0', False),
    ('tap', 'tap 0', False),
    ('tap', 'tap/0', False),
    ('vcpu_dir', 'vcpu12', True),
    ('vcpu_dir', 'vcpu', False),
    ('vcpu_dir', 'emulator', False),
]


@pytest.mark.parametrize('kind,value,accepted', NAMES,
                         ids=['%s:%r' % (k, v[:20]) for k, v, _ in NAMES])
def test_check_name(kind, value, accepted):
    if accepted:
        assert paths.check_name(kind, value) == value
    else:
        with pytest.raises(paths.UnsafePath) as exc:
            paths.check_name(kind, value)
        assert kind in str(exc.value)


def test_check_name_custom_pattern_and_errors():
    assert paths.check_name('x', 'ab', r'[a-z]+') == 'ab'
    with pytest.raises(paths.UnsafePath):
        paths.check_name('x', 'ab1', r'[a-z]+')      # full match only
    with pytest.raises(paths.UnsafePath, match='no accepted pattern'):
        paths.check_name('nonsense', 'ab')
    with pytest.raises(paths.UnsafePath, match='not a string'):
        paths.check_name('domain', 42)


ESCAPES = [
    ('qemu-1-instance-00000001', 'qemu\\x2d1\\x2dinstance\\x2d00000001'),
    ('a.b_c:d', 'a.b_c:d'),
    ('.hidden', '\\x2ehidden'),
    ('a/b', 'a-b'),
    ('a\\b', 'a\\x5cb'),
    ('a b', 'a\\x20b'),
    ('é', '\\xc3\\xa9'),
]


@pytest.mark.parametrize('name,want', ESCAPES)
def test_escape_systemd(name, want):
    assert paths.escape_systemd(name) == want
    if '/' not in name:
        assert paths.unescape_systemd(want) == name


MACHINES = [
    # (id, domain name, libvirt's machine name)
    (1, 'instance-00000001', 'qemu-1-instance-00000001'),
    (7, 'my_vm.prod', 'qemu-7-myvm.prod'),
    (3, '..--lead', 'qemu-3-lead'),
    (3, 'a..b--c', 'qemu-3-a.b-c'),
    (3, 'a_.b', 'qemu-3-a.b'),
    (6, 'x/.y', 'qemu-6-x.y'),
    (2, 'trail.-', 'qemu-2-trail'),
    (5, '../../etc', 'qemu-5-etc'),
    (9, 'x' * 100, 'qemu-9-' + 'x' * 57),
    (4, '___', 'qemu-4'),
]


@pytest.mark.parametrize('dom_id,name,want', MACHINES)
def test_machine_name(dom_id, name, want):
    got = paths.machine_name(dom_id, name)
    assert got == want
    assert paths.check_name('machine', got) == got


def test_libvirt_cgroup_dir_names():
    m = 'qemu-1-instance-00000001'
    assert paths.v1_machine_dir(m) == m + '.libvirt-qemu'
    assert paths.v2_scope_name(m) == \
        'machine-qemu\\x2d1\\x2dinstance\\x2d00000001.scope'
    with pytest.raises(paths.UnsafePath):
        paths.v1_machine_dir('../qemu-1-x')
