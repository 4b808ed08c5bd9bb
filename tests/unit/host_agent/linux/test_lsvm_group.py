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
"""The top-level LSVM groups, pure parts (``linux.lsvm_group``) and the
privileged side's checks (``linux.privileged_group``), table-driven.
"""

import pytest

from iosched.host_agent import linux
from iosched.host_agent.linux import cgroups
from iosched.host_agent.linux import lsvm_group
from iosched.host_agent.linux import privileged_group

U = '0f6c1a52-3b2e-4d7a-9e61-2f4c8a9b1d00'
DOM = cgroups.DomainCgroups('v1', 'machine/qemu-1-vm.libvirt-qemu',
                            'machine/qemu-1-vm.libvirt-qemu')


@pytest.mark.parametrize('name, ok', [
    ('iosched-lsvm', True), ('iosched', True), ('iosched_x.1', True),
    ('lsvm', False), ('iosched/x', False), ('iosched-..', True),
    ('../iosched', False), ('', False), (None, False),
    ('iosched' + 'x' * 41, False), ('Iosched', False),
])
def test_parent_names(name, ok):
    if ok:
        assert lsvm_group.check_parent(name) == name
    else:
        with pytest.raises(linux.LinuxKnobError, match='starting with'):
            lsvm_group.check_parent(name)


@pytest.mark.parametrize('uuid, ok', [
    (U, True), ('abc', True), ('../x', False), ('a/b', False), ('', False),
    (None, False),
])
def test_vm_group_names(uuid, ok):
    if ok:
        assert lsvm_group.vm_group('iosched-lsvm', uuid) == (
            'iosched-lsvm/vm-' + uuid)
    else:
        with pytest.raises(linux.LinuxKnobError, match='not a uuid'):
            lsvm_group.vm_group('iosched-lsvm', uuid)


@pytest.mark.parametrize('cg, want', [
    ('iosched-lsvm/vm-' + U, True), ('/iosched-lsvm/vm-' + U, True),
    ('iosched-lsvm/vm-' + U + '/x', False), ('iosched-lsvm', False),
    ('other/vm-' + U, False), ('iosched-lsvm/x-' + U, False),
    ('machine/vm-' + U, False), ('', False),
])
def test_is_vm_group(cg, want):
    assert lsvm_group.is_vm_group('iosched-lsvm', cg) is want


@pytest.mark.parametrize('role, want', [
    (('vcpu', 0), DOM.vm + '/vcpu0'), (('vcpu', 3), DOM.vm + '/vcpu3'),
    (('io', 'emulator'), DOM.vm + '/emulator'),
    (('io', 'IO iothread2'), DOM.vm + '/iothread2'),
    (('io', 'vhost-4242'), DOM.vm + '/emulator'),
    (('io', 'IO mon_iothread'), DOM.vm + '/emulator'),
])
def test_home_is_where_libvirt_put_the_thread(role, want):
    assert lsvm_group.home(DOM, role) == want


G = 'iosched-lsvm/vm-' + U
SETTINGS = {'weight': 10000, 'cap': 0.25}


@pytest.mark.parametrize('where, want', [
    ({1: DOM.vm + '/vcpu0', 2: DOM.vm + '/emulator'}, None),
    ({1: G, 2: G}, SETTINGS),
    ({1: '/' + G, 2: G}, SETTINGS),
    ({1: G, 2: DOM.vm + '/emulator'}, SETTINGS),   # a write cut short
    ({}, None),
])
def test_read_value(where, want):
    calls = []

    def settings():
        calls.append(1)
        return SETTINGS

    assert lsvm_group.read_value(where, G, settings) == want
    assert bool(calls) == (want is not None)


ROWS = [(1, DOM.vm + '/vcpu0', DOM.vm + '/vcpu0'),
        (2, G, DOM.vm + '/emulator'),
        (3, G, DOM.vm + '/vcpu1')]


@pytest.mark.parametrize('value, want', [
    (SETTINGS, [(1, G)]),
    (None, [(2, DOM.vm + '/emulator'), (3, DOM.vm + '/vcpu1')]),
])
def test_plan_moves_only_what_is_elsewhere(value, want):
    assert lsvm_group.plan_moves(ROWS, G, value) == want


@pytest.mark.parametrize('value, ok', [
    (None, True), ({'weight': 10000, 'cap': 0.25}, True),
    ({'weight': 100, 'cap': None}, True), ({'weight': 100}, True),
    ({'weight': 0, 'cap': 0.25}, False), ({'weight': 10001}, False),
    ({'weight': True}, False), ({'weight': 1.5}, False),
    ({'cap': 0.25}, False), ({'weight': 100, 'cap': 0.001}, False),
    ({'weight': 100, 'cap': 'x'}, False),
    ({'weight': 100, 'extra': 1}, False), ([100, 0.25], False),
])
def test_check_value(value, ok):
    if ok:
        got = lsvm_group.check_value(value)
        assert got == (None if value is None else
                       {'weight': value['weight'], 'cap': value.get('cap')})
    else:
        with pytest.raises(linux.LinuxKnobError):
            lsvm_group.check_value(value)


@pytest.mark.parametrize('cg, ok', [
    (G, True), ('machine/qemu-1-vm.libvirt-qemu/vcpu0', True),
    ('machine', False), ('machine/../x', False), ('/', False),
    ('system.slice/sshd', False), ('iosched-lsvm', False),
    ('iosched-lsvm/vm-' + U + '/../../x', False),
])
def test_privileged_moves_only_between_guest_groups(cg, ok):
    assert privileged_group.allowed_group('iosched-lsvm', cg) is ok
