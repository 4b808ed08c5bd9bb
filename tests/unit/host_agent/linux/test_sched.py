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
"""struct sched_attr packing, slice validation and the procfs parsers,
without system calls (the syscall wrappers are replaced by fakes).
"""

import errno
import struct

import pytest

from iosched.host_agent import linux
from iosched.host_agent.linux import sched

# /proc/<pid>/sched of a busy loop on kernel 6.18 (EEVDF), after a 300 us
# custom slice was set; trimmed.
PROC_SCHED = """\
python3 (41207, #threads: 1)
-------------------------------------------------------------------
se.exec_start                                :       2411933.461716
se.vruntime                                  :         81563.129340
se.sum_exec_runtime                          :          1210.845381
se.nr_migrations                             :                    3
nr_switches                                  :                 4302
nr_voluntary_switches                        :                    0
nr_involuntary_switches                      :                 4302
se.load.weight                               :              1048576
policy                                       :                    0
prio                                         :                  120
se.slice                                     :               300000
clock-delta                                  :                   40
"""

STATUS = """\
Name:\tqemu-system-x86
Umask:\t0022
State:\tS (sleeping)
Tgid:\t4242
Pid:\t4250
Cpus_allowed_list:\t0-1
voluntary_ctxt_switches:\t1520
nonvoluntary_ctxt_switches:\t37
"""


def test_struct_is_the_kernel_size():
    assert sched.SCHED_ATTR_SIZE == 56


def test_pack_layout():
    attr = sched.make_attr(policy=sched.SCHED_BATCH, flags=1, nice=-5,
                           runtime=300000, util_max=1024)
    data = sched.pack_attr(attr)
    assert len(data) == 56
    assert struct.unpack_from('=I', data, 0) == (56,)          # size
    assert struct.unpack_from('=I', data, 4) == (3,)           # policy
    assert struct.unpack_from('=Q', data, 8) == (1,)           # flags
    assert struct.unpack_from('=i', data, 16) == (-5,)         # nice
    assert struct.unpack_from('=Q', data, 24) == (300000,)     # runtime
    assert struct.unpack_from('=I', data, 52) == (1024,)       # util_max


def test_unpack_round_trip_and_longer_buffers():
    attr = sched.make_attr(nice=19, runtime=5000000, deadline=7, period=9)
    data = sched.pack_attr(attr)
    assert sched.unpack_attr(data) == attr
    assert sched.unpack_attr(bytearray(data) + b'\0' * 8) == attr
    with pytest.raises(ValueError):
        sched.unpack_attr(data[:48])


class FakeSyscalls(object):
    def __init__(self, monkeypatch, attr, set_errno=None):
        self.attr = attr
        self.set_errno = set_errno
        self.calls = []
        monkeypatch.setattr(sched, 'sched_getattr', self.getattr)
        monkeypatch.setattr(sched, 'sched_setattr', self.setattr)

    def getattr(self, tid):
        if isinstance(self.attr, Exception):
            raise self.attr
        return self.attr

    def setattr(self, tid, attr):
        self.calls.append((tid, attr))
        if self.set_errno:
            raise linux.LinuxKnobError('sched_setattr failed: EPERM',
                                       self.set_errno)


def test_set_slice_keeps_policy_nice_and_reset_on_fork(monkeypatch):
    fake = FakeSyscalls(monkeypatch, sched.make_attr(
        policy=sched.SCHED_BATCH, flags=sched.SCHED_FLAG_RESET_ON_FORK | 0x20,
        nice=-3, runtime=1400000, util_min=10))
    sched.set_slice_us(4250, 300)
    (tid, attr), = fake.calls
    assert tid == 4250
    assert attr == sched.make_attr(policy=sched.SCHED_BATCH, flags=1,
                                   nice=-3, runtime=300000)


@pytest.mark.parametrize('value', [99, 100001, 0, -1, 300.0, '300', True,
                                   None])
def test_set_slice_validates_range_and_type(monkeypatch, value):
    fake = FakeSyscalls(monkeypatch, sched.make_attr())
    with pytest.raises(linux.LinuxKnobError) as exc:
        sched.set_slice_us(4250, value)
    assert repr(value) in str(exc.value) and '100..100000' in str(exc.value)
    assert fake.calls == []


@pytest.mark.parametrize('tid', [0, -4, '4250', None, True])
def test_set_slice_validates_the_tid(monkeypatch, tid):
    FakeSyscalls(monkeypatch, sched.make_attr())
    with pytest.raises(linux.LinuxKnobError, match='thread id'):
        sched.set_slice_us(tid, 300)


def test_set_slice_refuses_rt_threads(monkeypatch):
    fake = FakeSyscalls(monkeypatch, sched.make_attr(policy=1, priority=10))
    with pytest.raises(linux.LinuxKnobError, match='policy 1'):
        sched.set_slice_us(4250, 300)
    assert fake.calls == []


def test_set_slice_error_names_tid_value_and_errno(monkeypatch):
    FakeSyscalls(monkeypatch, sched.make_attr(), set_errno=errno.EPERM)
    with pytest.raises(linux.LinuxKnobError) as exc:
        sched.set_slice_us(4250, 300)
    assert 'tid 4250' in str(exc.value) and '300 us' in str(exc.value)
    assert exc.value.errno == errno.EPERM


def test_error_survives_the_privsep_channel():
    # privsep rebuilds exceptions as cls(*args)
    err = linux.LinuxKnobError('boom', errno.ESRCH)
    again = type(err)(*err.args)
    assert str(again) == 'boom' and again.errno == errno.ESRCH


def test_get_slice_from_getattr(monkeypatch):
    FakeSyscalls(monkeypatch, sched.make_attr(runtime=1400000))
    assert sched.get_slice_us(4250) == 1400


def test_get_slice_falls_back_to_procfs(monkeypatch, tmp_path):
    FakeSyscalls(monkeypatch, linux.LinuxKnobError('ENOSYS', errno.ENOSYS))
    (tmp_path / '4250').mkdir()
    (tmp_path / '4250' / 'sched').write_text(PROC_SCHED)
    assert sched.get_slice_us(4250, str(tmp_path)) == 300
    with pytest.raises(linux.LinuxKnobError, match='tid 4251'):
        sched.get_slice_us(4251, str(tmp_path))


def test_parse_sched_slice():
    assert sched.parse_sched_slice_ns(PROC_SCHED) == 300000
    # the PN() "ms.ns" form, in case a kernel prints it that way
    assert sched.parse_sched_slice_ns(
        'se.slice     :       0.300000\n') == 300000
    assert sched.parse_sched_slice_ns('se.slice : 3.000001\n') == 3000001
    with pytest.raises(ValueError):
        sched.parse_sched_slice_ns('se.vruntime : 1.0\n')


def test_schedstat_and_status(tmp_path):
    task = tmp_path / '4242' / 'task' / '4250'
    task.mkdir(parents=True)
    (task / 'schedstat').write_text('2016454183 4915349 311\n')
    (task / 'status').write_text(STATUS)
    root = str(tmp_path)
    assert sched.read_schedstat(root, 4242, 4250) == (2016454183, 4915349,
                                                      311)
    assert sched.read_status_ctxt(root, 4242, 4250) == (1520, 37)
    with pytest.raises(OSError):
        sched.read_schedstat(root, 4242, 4251)
    with pytest.raises(ValueError):
        sched.parse_schedstat('12 34\n')
    with pytest.raises(ValueError, match='nonvoluntary'):
        sched.parse_status_ctxt('voluntary_ctxt_switches:\t3\n')


def test_unknown_architecture(monkeypatch):
    monkeypatch.setattr(sched.platform, 'machine', lambda: 'sparc64')
    with pytest.raises(linux.LinuxKnobError, match='sparc64') as exc:
        sched.sched_getattr(1)
    assert exc.value.errno == errno.ENOSYS
