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
"""SCHED_DEADLINE in ``iosched.host_agent.linux.sched``: parameter checks, the
attributes set and read, error hints; the system calls are fakes.
"""

import errno

import pytest

from iosched.host_agent import linux
from iosched.host_agent.linux import sched
from iosched.host_agent.linux import sched_deadline

DL = sched.SCHED_DEADLINE
ROF = sched.SCHED_FLAG_RESET_ON_FORK


@pytest.mark.parametrize('r,d,p', [
    (2, 2, 100), (1000, 2000, 4000), (300, 1000, 3000),
    (100, 100, 100), (2, 4194304, 4194304), (4194304, 4194304, 4194304),
])
def test_check_deadline_accepts(r, d, p):
    assert sched_deadline.check_deadline(r, d, p) == (r, d, p)


@pytest.mark.parametrize('r,d,p,words', [
    (1, 100, 100, 'below 2 us (the kernel needs sched_runtime >= 1024 ns)'),
    (0, 100, 100, 'below 2 us'),
    (-5, 100, 100, 'below 2 us'),
    (300, 200, 1000, 'runtime 300 us <= deadline 200 us <= period 1000 us'),
    (300, 2000, 1000, '<= period 1000 us does not hold'),
    (50, 80, 99, 'period 99 us is outside 100..4194304 us'),
    (50, 80, 4194305, 'period 4194305 us is outside'),
    (1.0, 100, 100, 'runtime_us 1.0 is not an int'),
    ('300', 1000, 1000, "runtime_us '300' is not an int"),
    (300, None, 1000, 'deadline_us None is not an int'),
    (300, 1000, True, 'period_us True is not an int'),
])
def test_check_deadline_refuses(r, d, p, words):
    with pytest.raises(linux.LinuxKnobError) as exc:
        sched_deadline.check_deadline(r, d, p)
    assert words in str(exc.value), str(exc.value)
    assert exc.value.errno == errno.EINVAL


class FakeSyscalls(object):
    """sched_getattr/sched_setattr of one thread; ``fail`` maps a policy
    to the errno its sched_setattr fails with (once each, in order).
    """

    def __init__(self, monkeypatch, attr, fail=None):
        self.attr = attr
        self.fail = dict(fail or {})
        self.calls = []
        monkeypatch.setattr(sched, 'sched_getattr', self.getattr)
        monkeypatch.setattr(sched, 'sched_setattr', self.setattr)

    def getattr(self, tid):
        sched._tid(tid)
        return self.attr

    def setattr(self, tid, attr):
        self.calls.append(attr)
        key = (attr.policy, attr.runtime)
        err = self.fail.pop(key, None) or self.fail.pop(attr.policy, None)
        if err:
            raise linux.LinuxKnobError('sched_setattr failed', err)
        self.attr = attr


def dl_attr(r, d, p, flags=ROF):
    return sched.make_attr(policy=DL, flags=flags, runtime=r * 1000,
                           deadline=d * 1000, period=p * 1000)


def test_set_deadline_from_fair_always_resets_on_fork(monkeypatch):
    fake = FakeSyscalls(monkeypatch, sched.make_attr(nice=5,
                                                     runtime=300000))
    sched_deadline.set_deadline_us(4250, 1000, 2000, 4000)
    assert fake.calls == [dl_attr(1000, 2000, 4000)]
    assert sched_deadline.get_deadline_us(4250) == {
        'runtime_us': 1000, 'deadline_us': 2000, 'period_us': 4000}


def test_set_deadline_changes_a_reservation(monkeypatch):
    fake = FakeSyscalls(monkeypatch, dl_attr(1000, 2000, 4000, flags=0))
    sched_deadline.set_deadline_us(4250, 300, 1000, 3000)
    assert fake.calls == [dl_attr(300, 1000, 3000)]


@pytest.mark.parametrize('policy', [sched.SCHED_FIFO, sched.SCHED_RR])
def test_rt_threads_are_not_ours(monkeypatch, policy):
    fake = FakeSyscalls(monkeypatch, sched.make_attr(policy=policy,
                                                     priority=50))
    with pytest.raises(linux.LinuxKnobError, match='real-time policy'):
        sched_deadline.set_deadline_us(4250, 1000, 2000, 4000)
    with pytest.raises(linux.LinuxKnobError, match='real-time policy'):
        sched_deadline.set_fair(4250)
    with pytest.raises(linux.LinuxKnobError, match='not a reservation'):
        sched_deadline.get_deadline_us(4250)
    assert fake.calls == []


def test_set_deadline_checks_before_any_call(monkeypatch):
    fake = FakeSyscalls(monkeypatch, sched.make_attr())
    with pytest.raises(linux.LinuxKnobError, match='does not hold'):
        sched_deadline.set_deadline_us(4250, 3000, 2000, 4000)
    with pytest.raises(linux.LinuxKnobError, match='thread id'):
        sched_deadline.set_deadline_us(0, 1000, 2000, 4000)
    assert fake.calls == []


def test_set_fair_from_deadline_releases_bandwidth_first(monkeypatch):
    fake = FakeSyscalls(monkeypatch, dl_attr(1000, 2000, 4000))
    sched_deadline.set_fair(4250)
    zero, fair = fake.calls
    # a zero-bandwidth reservation (1024 << 20 / 4.19 s = 0) ...
    assert zero.policy == DL and zero.runtime == 1024
    assert (zero.deadline == zero.period
            == sched_deadline.DL_PERIOD_MAX_US * 1000)
    assert (zero.runtime << 20) // zero.period == 0
    # ... then SCHED_OTHER, nice 0, default slice, reset-on-fork kept
    assert fair == sched.make_attr(policy=sched.SCHED_OTHER, flags=ROF)
    assert sched_deadline.get_deadline_us(4250) is None


def test_set_fair_keeps_reset_on_fork_as_it_was(monkeypatch):
    fake = FakeSyscalls(monkeypatch, sched.make_attr(
        policy=sched.SCHED_BATCH, flags=0x20, nice=7, runtime=300000))
    sched_deadline.set_fair(4250)
    assert fake.calls == [sched.make_attr(policy=sched.SCHED_OTHER)]


def test_set_fair_with_a_lowered_period_max(monkeypatch):
    fake = FakeSyscalls(monkeypatch, dl_attr(1000, 2000, 4000),
                        fail={(DL, 1024): errno.EINVAL})
    sched_deadline.set_fair(4250)
    tried_max, zero, fair = fake.calls
    assert tried_max.period == sched_deadline.DL_PERIOD_MAX_US * 1000
    assert zero.runtime == 1024 and zero.period == 4000000
    assert fair.policy == sched.SCHED_OTHER


def test_set_fair_switches_even_when_the_release_is_refused(monkeypatch):
    fake = FakeSyscalls(monkeypatch, dl_attr(1000, 2000, 4000),
                        fail={(DL, 1024): errno.EBUSY})
    sched_deadline.set_fair(4250)
    assert [a.policy for a in fake.calls] == [DL, sched.SCHED_OTHER]
    assert sched_deadline.get_deadline_us(4250) is None


def test_set_slice_refuses_deadline_threads(monkeypatch):
    fake = FakeSyscalls(monkeypatch, dl_attr(1000, 2000, 4000))
    with pytest.raises(linux.LinuxKnobError, match='policy 6'):
        sched.set_slice_us(4250, 300)
    with pytest.raises(linux.LinuxKnobError, match='policy 6'):
        sched.get_slice_us(4250)
    assert fake.calls == []


def test_get_deadline_with_period_zero_means_deadline(monkeypatch):
    FakeSyscalls(monkeypatch, sched.make_attr(policy=DL, runtime=500000,
                                              deadline=2000000))
    assert sched_deadline.get_deadline_us(1) == {
        'runtime_us': 500, 'deadline_us': 2000, 'period_us': 2000}


@pytest.mark.parametrize('err,words', [
    (errno.EPERM, 'affinity to cover its whole root domain'),
    (errno.EPERM, 'CAP_SYS_NICE'),
    (errno.EBUSY, 'admission refused the bandwidth'),
    (errno.EINVAL, 'runtime >= 1024 ns'),
])
def test_kernel_errors_carry_a_hint(monkeypatch, err, words):
    monkeypatch.setattr(sched, 'sched_getattr',
                        lambda tid: sched.make_attr())
    monkeypatch.setattr(sched, '_syscall', lambda index, *a: (-1, err))
    with pytest.raises(linux.LinuxKnobError) as exc:
        sched_deadline.set_deadline_us(4250, 1000, 2000, 4000)
    text = str(exc.value)
    assert words in text, text
    assert 'tid 4250' in text and '1000/2000/4000 us' in text
    assert 'runtime 1000000 / deadline 2000000 / period 4000000 ns' in text
    assert exc.value.errno == err


def test_fair_eperm_hint_is_unchanged(monkeypatch):
    monkeypatch.setattr(sched, '_syscall', lambda index, *a: (-1,
                                                              errno.EPERM))
    with pytest.raises(linux.LinuxKnobError) as exc:
        sched.sched_setattr(4250, sched.make_attr(runtime=300000))
    assert 'another user\'s thread needs CAP_SYS_NICE' in str(exc.value)
    assert 'root domain' not in str(exc.value)
