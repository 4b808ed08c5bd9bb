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
"""CPU lists, online CPUs and the affinity check (fake sysfs trees)."""

import os

import pytest

from iosched.host_agent import linux
from iosched.host_agent.linux import cpus as cpulist


@pytest.mark.parametrize('text,cpus', [
    ('0-1\n', (0, 1)), ('0\n', (0,)), ('0-3,6\n', (0, 1, 2, 3, 6)),
    ('\n', ()), ('', ()), ('2,0-1', (0, 1, 2)), ('8-9, 4', (4, 8, 9)),
])
def test_parse_cpu_list(text, cpus):
    assert cpulist.parse_cpu_list(text) == cpus


@pytest.mark.parametrize('text', ['a', '3-1', '0-', '-1', '0,,1', '0-x'])
def test_parse_cpu_list_refuses(text):
    with pytest.raises(ValueError):
        cpulist.parse_cpu_list(text)


@pytest.fixture
def sysfs(tmp_path):
    d = tmp_path / 'devices' / 'system' / 'cpu'
    d.mkdir(parents=True)
    (d / 'online').write_text('0-2\n')
    return str(tmp_path)


def test_online_cpus_from_a_fake_sysfs(sysfs, tmp_path):
    assert cpulist.online_cpus(sysfs) == (0, 1, 2)
    with pytest.raises(linux.LinuxKnobError, match='online CPUs'):
        cpulist.online_cpus(str(tmp_path / 'missing'))


@pytest.mark.parametrize('cpus,want', [
    ([0], (0,)), ((2, 0, 2), (0, 2)), ([0, 1, 2], (0, 1, 2)),
    ([], None), ([3], None), (['0'], None), ([True], None), (None, None),
    ('0-1', None),
])
def test_check_cpus(sysfs, cpus, want):
    if want is None:
        with pytest.raises(linux.LinuxKnobError, match='online CPU ids'):
            cpulist.check_cpus(cpus, sysfs)
    else:
        assert cpulist.check_cpus(cpus, sysfs) == want


def test_set_affinity_checks_before_the_syscall(sysfs, monkeypatch):
    calls = []
    monkeypatch.setattr(os, 'sched_setaffinity',
                        lambda tid, cpus: calls.append((tid, cpus)))
    cpulist.set_affinity(42, [1, 0], sysfs)
    assert calls == [(42, (0, 1))]
    with pytest.raises(linux.LinuxKnobError):
        cpulist.set_affinity(42, [7], sysfs)
    assert len(calls) == 1

    def refuse(tid, cpus):
        raise OSError(3, 'No such process')
    monkeypatch.setattr(os, 'sched_setaffinity', refuse)
    with pytest.raises(linux.LinuxKnobError, match='No such process'):
        cpulist.set_affinity(42, [0], sysfs)
