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
"""The privileged side re-checks every write (in-process, fake tree)."""

import errno
import os

from oslo_privsep import capabilities
import pytest

from iosched.host_agent.conf import paths as paths_conf
from iosched.host_agent import linux
import iosched.host_agent.linux.privileged
from iosched.host_agent.linux import sched
from iosched.host_agent import privsep
from tests.unit.host_agent.linux import conftest

privileged = iosched.host_agent.linux.privileged
VCPU0 = 'cpu/' + conftest.V1_DOMAIN + '/vcpu0/'

WRITES_OK = [
    ('cpu.shares', '2048'), ('cpu.shares', '2'), ('cpu.shares', '262144'),
    ('cpu.cfs_quota_us', '-1'), ('cpu.cfs_quota_us', '25000'),
    ('cpu.cfs_quota_us', '1000'), ('cpu.cfs_period_us', '100000'),
    ('cpu.weight', '1'), ('cpu.weight', '10000'),
    ('cpu.max', 'max 100000'), ('cpu.max', '25000 100000'),
]

WRITES_REFUSED = [
    # (file, value, words in the message)
    ('cgroup.procs', '1', 'not one the agent writes'),
    ('release_agent', '/tmp/x', 'not one the agent writes'),
    ('notify_on_release', '1', 'not one the agent writes'),
    ('cpu.stat', '0', 'not one the agent writes'),
    ('cpu.shares', '1', 'not valid'),
    ('cpu.shares', '262145', 'not valid'),
    ('cpu.shares', ' 1024', 'not valid'),
    ('cpu.shares', '1024\n0', 'not valid'),
    ('cpu.shares', '0x400', 'not valid'),
    ('cpu.cfs_quota_us', '999', 'not valid'),
    ('cpu.cfs_quota_us', '-2', 'not valid'),
    ('cpu.cfs_period_us', '999', 'not valid'),
    ('cpu.cfs_period_us', '1000001', 'not valid'),
    ('cpu.weight', '0', 'not valid'),
    ('cpu.weight', '10001', 'not valid'),
    ('cpu.max', 'max', 'not valid'),
    ('cpu.max', '-1 100000', 'not valid'),
    ('cpu.max', '500 100000', 'not valid'),
    ('cpu.max', 'max  100000', 'not valid'),
    ('cpu.max', '25000 100000 1', 'not valid'),
]


@pytest.mark.parametrize('name,value', WRITES_OK)
def test_check_write_accepts(conf, tmp_path, name, value):
    conftest.make_v1(tmp_path)
    root = conf.host_paths.cgroup_root
    assert privileged.check_write(root, VCPU0 + name, value) == \
        os.path.join(root, VCPU0 + name)


@pytest.mark.parametrize('name,value,words', WRITES_REFUSED)
def test_check_write_refuses(conf, tmp_path, name, value, words):
    conftest.make_v1(tmp_path)
    with pytest.raises(linux.LinuxKnobError) as exc:
        privileged.check_write(conf.host_paths.cgroup_root, VCPU0 + name,
                               value)
    assert words in str(exc.value)


@pytest.mark.parametrize('relpath,words', [
    ('cpu/../../../etc/cpu.shares', "'..'"),
    ('/etc/cpu.shares', 'absolute'),
    ('cpu//cpu.shares', 'empty'),
    ('cpu/\0/cpu.shares', 'NUL'),
    (42, 'must be strings'),
])
def test_check_write_refuses_paths(conf, tmp_path, relpath, words):
    conftest.make_v1(tmp_path)
    with pytest.raises(linux.LinuxKnobError) as exc:
        privileged.check_write(conf.host_paths.cgroup_root, relpath, '1024')
    assert words in str(exc.value)


def test_check_write_insists_on_the_configured_root(conf, tmp_path):
    conftest.make_v1(tmp_path)
    for root in ('/etc', str(tmp_path), None):
        with pytest.raises(linux.LinuxKnobError, match='not the configured'):
            privileged.check_write(root, 'cpu/cpu.shares', '1024')
    # the same directory spelled differently is fine
    privileged.check_write(conf.host_paths.cgroup_root + '/', VCPU0 +
                           'cpu.shares', '1024')


def test_symlinks_may_not_leave_the_root(conf, tmp_path, in_process_privsep):
    conftest.make_v1(tmp_path)
    outside = tmp_path / 'outside'
    outside.mkdir()
    (outside / 'cpu.shares').write_text('1024\n')
    root = tmp_path / 'cgroup'
    (root / 'cpu' / 'evil').symlink_to(outside)
    with pytest.raises(linux.LinuxKnobError, match='outside'):
        privileged.check_write(str(root), 'cpu/evil/cpu.shares', '2048')
    # a symlinked file inside the root is refused by O_NOFOLLOW
    (root / 'cpu' / 'machine' / 'cpu.shares').symlink_to(
        root / 'cpu' / 'cpu.shares')
    with pytest.raises(linux.LinuxKnobError, match='cannot write'):
        privileged.write_cgroup_file(str(root), 'cpu/machine/cpu.shares',
                                     '2048')
    assert (outside / 'cpu.shares').read_text() == '1024\n'


def test_write_cgroup_file_in_process(conf, tmp_path, in_process_privsep):
    conftest.make_v1(tmp_path)
    root = conf.host_paths.cgroup_root
    privileged.write_cgroup_file(root, VCPU0 + 'cpu.shares', '2048')
    privileged.write_cgroup_file(root, VCPU0 + 'cpu.cfs_quota_us', 25000)
    assert open(os.path.join(root, VCPU0 + 'cpu.shares')).read() == '2048'
    assert open(os.path.join(root, VCPU0 + 'cpu.cfs_quota_us')).read() == \
        '25000'
    # never creates a file
    with pytest.raises(linux.LinuxKnobError, match='cannot write'):
        privileged.write_cgroup_file(root, 'cpu/new/cpu.shares', '2048')
    assert not os.path.exists(os.path.join(root, 'cpu/new'))


def test_set_slice_in_process_goes_to_sched(monkeypatch, in_process_privsep):
    calls = []
    monkeypatch.setattr(sched, 'set_slice_us',
                        lambda tid, us: calls.append((tid, us)))
    privileged.set_slice(4250, 300)
    assert calls == [(4250, 300)]


class FakeThreads(object):
    """sched_getattr/sched_setattr over tid -> SchedAttr, recording sets."""

    def __init__(self, monkeypatch, attrs):
        self.attrs = dict(attrs)
        self.sets = []
        monkeypatch.setattr(sched, 'sched_getattr', self.getattr)
        monkeypatch.setattr(sched, 'sched_setattr', self.setattr)

    def getattr(self, tid):
        sched._tid(tid)
        try:
            return self.attrs[tid]
        except KeyError:
            raise linux.LinuxKnobError('sched_getattr(tid %d): No such '
                                       'process' % tid, errno.ESRCH)

    def setattr(self, tid, attr):
        self.sets.append((tid, attr))
        self.attrs[tid] = attr


DL_ATTR = sched.make_attr(policy=sched.SCHED_DEADLINE, flags=1,
                          runtime=1000000, deadline=2000000, period=4000000)


def test_set_deadline_in_process(monkeypatch, in_process_privsep):
    fake = FakeThreads(monkeypatch, {4250: sched.make_attr()})
    privileged.set_deadline(4250, 1000, 2000, 4000)
    assert fake.sets == [(4250, DL_ATTR)]


@pytest.mark.parametrize('args,words', [
    ((4250, 1, 100, 100), 'the kernel needs sched_runtime >= 1024 ns'),
    ((4250, 3000, 2000, 4000), 'does not hold'),
    ((4250, 10, 50, 50), 'outside 100..4194304'),
    ((4250, 10, 100, 5000000), 'outside 100..4194304'),
    ((4250, 1000.0, 2000, 4000), 'not an int'),
    ((4250, '1000', 2000, 4000), 'not an int'),
    ((0, 1000, 2000, 4000), 'thread id'),
    ((-1, 1000, 2000, 4000), 'thread id'),
    (('4250', 1000, 2000, 4000), 'thread id'),
    ((True, 1000, 2000, 4000), 'thread id'),
    ((4251, 1000, 2000, 4000), 'real-time policy 1'),
    ((4252, 1000, 2000, 4000), 'No such process'),
])
def test_set_deadline_revalidates(monkeypatch, in_process_privsep, args,
                                  words):
    fake = FakeThreads(monkeypatch, {
        4250: sched.make_attr(),
        4251: sched.make_attr(policy=sched.SCHED_FIFO, priority=10)})
    with pytest.raises(linux.LinuxKnobError) as exc:
        privileged.set_deadline(*args)
    assert words in str(exc.value), str(exc.value)
    assert fake.sets == []


def test_set_fair_ends_a_reservation(monkeypatch, in_process_privsep):
    fake = FakeThreads(monkeypatch, {4250: DL_ATTR})
    privileged.set_fair(4250)
    assert [a.policy for _, a in fake.sets] == [sched.SCHED_DEADLINE,
                                                sched.SCHED_OTHER]
    assert fake.attrs[4250] == sched.make_attr(flags=1)


@pytest.mark.parametrize('tid,words', [
    (4250, 'policy 0, not SCHED_DEADLINE'),     # fair: no renicing
    (4251, 'policy 3, not SCHED_DEADLINE'),
    (4252, 'policy 1, not SCHED_DEADLINE'),     # real-time
    (4253, 'No such process'),
    (0, 'thread id'), ('4250', 'thread id'), (None, 'thread id'),
])
def test_set_fair_refuses_all_but_deadline_threads(monkeypatch,
                                                   in_process_privsep,
                                                   tid, words):
    fake = FakeThreads(monkeypatch, {
        4250: sched.make_attr(nice=19),
        4251: sched.make_attr(policy=sched.SCHED_BATCH),
        4252: sched.make_attr(policy=sched.SCHED_FIFO, priority=10)})
    with pytest.raises(linux.LinuxKnobError) as exc:
        privileged.set_fair(tid)
    assert words in str(exc.value), str(exc.value)
    assert fake.sets == []


def test_only_five_entrypoints():
    ctx = privsep.sys_admin_pctxt
    exported = sorted(name for name, obj in vars(privileged).items()
                      if ctx.is_entrypoint(obj))
    assert exported == ['set_affinity', 'set_deadline', 'set_fair',
                        'set_slice', 'write_cgroup_file']


def test_the_lsvm_group_entrypoints_and_their_contexts():
    from iosched.host_agent.linux import privileged_group
    names = vars(privileged_group).items()
    assert sorted(n for n, obj in names
                  if privsep.sys_admin_pctxt.is_entrypoint(obj)) == [
        'make_vm_group', 'move_thread', 'remove_vm_group']
    # The one call with CAP_DAC_OVERRIDE, in a context of its own.
    assert sorted(n for n, obj in names
                  if privsep.cgroup_admin_pctxt.is_entrypoint(obj)) == [
        'make_parent']


def test_capabilities_are_minimal_and_match_the_sample():
    assert privsep.CAPABILITIES == [capabilities.CAP_SYS_NICE]
    assert [capabilities.CAPS_BYNAME[n] for n in
            paths_conf.PRIVSEP_CAPABILITIES] == privsep.CAPABILITIES
    assert privsep.sys_admin_pctxt.conf.capabilities == privsep.CAPABILITIES
    assert privsep.sys_admin_pctxt.cfg_section == paths_conf.PRIVSEP_GROUP
    assert privsep.CGROUP_CAPABILITIES == [capabilities.CAP_DAC_OVERRIDE]
    assert [capabilities.CAPS_BYNAME[n] for n in
            paths_conf.PRIVSEP_CGROUP_CAPABILITIES] == (
        privsep.CGROUP_CAPABILITIES)
    assert privsep.cgroup_admin_pctxt.conf.capabilities == (
        privsep.CGROUP_CAPABILITIES)
    assert privsep.cgroup_admin_pctxt.cfg_section == (
        paths_conf.PRIVSEP_CGROUP_GROUP)
