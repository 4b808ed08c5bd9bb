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
"""LsvmGroupKnobs' write logic against a simulated kernel (a dict of
thread -> group; privileged calls replaced): which threads move, what a
failed move undoes, and which failures are skipped. The real kernel is in
tests/functional/test_lsvm_group_knobs.py.
"""

import errno

import pytest

from iosched.host_agent.actuators import lsvm_group_knobs as lgk
from iosched.host_agent.drivers import base as driver_base
from iosched.host_agent import linux
from iosched.host_agent.linux import cgroups
from iosched.host_agent.linux import lsvm_group

U = 'a1b2c3d4-0000-4000-8000-000000000001'
DOM = cgroups.DomainCgroups('v1', 'machine/q.libvirt-qemu',
                            'machine/q.libvirt-qemu')
EMU, VCPU, IOT, VHOST = 100, 101, 102, 103
GROUP = lsvm_group.vm_group('iosched-lsvm', U)


class Resolver(object):
    def vcpu_tids(self, uuid):
        return {0: VCPU}

    def io_threads(self, uuid):
        return {'emulator': EMU, 'io': {'IO iothread1': IOT,
                                         'vhost-100': VHOST}}

    def domain_cgroups(self, uuid):
        return DOM


class Kernel(object):
    def __init__(self, fail=None):
        self.where = {EMU: DOM.emulator(), VCPU: DOM.vcpu(0),
                      IOT: DOM.vm + '/iothread1', VHOST: DOM.emulator()}
        self.fail = fail or {}
        self.calls = []

    def call(self, name, func, *args):
        self.calls.append(name)
        if name == 'move_thread':
            _, tid, dest = args
            if tid in self.fail:
                raise linux.LinuxKnobError('refused', self.fail.pop(tid))
            self.where[tid] = dest


@pytest.fixture
def knobs(monkeypatch, tmp_path):
    class Conf(object):
        class host_paths:
            proc_root = str(tmp_path)
            cgroup_root = str(tmp_path)

        def __getitem__(self, name):
            class G:
                weight_group = 'iosched-lsvm'
                weight_group_weight = 1000
            return G

    k = lgk.LsvmGroupKnobs(Conf(), Resolver(),
                           hierarchy=cgroups.Hierarchy('v1', str(tmp_path),
                                                       'cpu'))
    kernel = Kernel()
    monkeypatch.setattr(lgk, '_call', kernel.call)
    monkeypatch.setattr(k, '_where', lambda threads: {
        t: kernel.where[t] for t, _ in threads if t in kernel.where})
    monkeypatch.setattr(lgk.cgroups, 'plan_weight', lambda *a: [])
    monkeypatch.setattr(lgk.cgroups, 'plan_cap', lambda *a: [])
    return k, kernel


VALUE = {'weight': 100, 'cap': 0.25}
HOME = {EMU: DOM.emulator(), VCPU: DOM.vcpu(0),
        IOT: DOM.vm + '/iothread1', VHOST: DOM.emulator()}


@pytest.mark.parametrize('fail, want, raises', [
    ({}, {t: GROUP for t in HOME}, False),
    # an I/O worker that ended or that the kernel keeps: the rest move
    ({VHOST: errno.ESRCH}, {EMU: GROUP, VCPU: GROUP, IOT: GROUP,
                            VHOST: HOME[VHOST]}, False),
    ({IOT: errno.EINVAL}, {EMU: GROUP, VCPU: GROUP, IOT: HOME[IOT],
                           VHOST: GROUP}, False),
    # the emulator or a vCPU refused: every thread moved goes back
    ({EMU: errno.EPERM}, HOME, True),
    ({IOT: errno.EPERM}, HOME, True),
    ({VCPU: errno.ESRCH}, HOME, True),
])
def test_moves_all_or_skips_only_io_workers(knobs, fail, want, raises):
    k, kernel = knobs
    kernel.fail = dict(fail)
    if raises:
        with pytest.raises(driver_base.DriverError):
            k.write_knob(lgk.KIND, U, '', VALUE)
    else:
        k.write_knob(lgk.KIND, U, '', VALUE)
    assert kernel.where == want


def test_back_home_moves_each_thread_to_its_own_group(knobs):
    k, kernel = knobs
    k.write_knob(lgk.KIND, U, '', VALUE)
    kernel.calls = []
    k.write_knob(lgk.KIND, U, '', None)
    assert kernel.where == HOME
    assert kernel.calls[-1] == 'remove_vm_group'


def test_idempotent_write_moves_nothing(knobs):
    k, kernel = knobs
    k.write_knob(lgk.KIND, U, '', VALUE)
    kernel.calls = []
    k.write_knob(lgk.KIND, U, '', VALUE)
    assert 'move_thread' not in kernel.calls


@pytest.mark.parametrize('kind, target', [('vm_weight', ''),
                                          (lgk.KIND, '0')])
def test_other_kinds_and_targets_are_refused(knobs, kind, target):
    k, _ = knobs
    with pytest.raises(driver_base.DriverError, match='accepted'):
        k.write_knob(kind, U, target, VALUE)
