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
"""Thread counters over kept /proc descriptors (proc_files) read what
threads.thread_counters reads; thread names read once they are known
(threads.qemu_threads with ``known``).
"""

import os

import pytest

from iosched.host_agent.drivers.libvirt import proc_files
from iosched.host_agent.drivers.libvirt import threads
from tests.unit.host_agent.libvirt.test_parsing import _task


def _set(tmp_path, proc, tid, counters, comm='CPU 0/TCG'):
    """Rewrite a fake thread's files in place (a kept descriptor then
    reads the new text, as procfs regenerates it).
    """
    scratch = str(tmp_path / ('scratch-%d' % len(os.listdir(tmp_path))))
    _task(scratch, 100, tid, comm, *counters)
    for name in proc_files.NAMES + ('comm',):
        with open(os.path.join(scratch, '100', 'task', str(tid), name)) as f:
            text = f.read()
        path = os.path.join(proc, '100', 'task', str(tid), name)
        with open(path, 'r+' if os.path.exists(path) else 'w') as f:
            f.truncate(0)
            f.write(text)


# name, (run, wait, voluntary switches, cpu) of thread 101 at each read
COUNTS = [
    ('one read', [(5000, 700, 42, 1)]),
    ('the counters move, the descriptors stay',
     [(5000, 700, 42, 1), (9000, 800, 50, 0), (9100, 800, 51, 1)]),
]


@pytest.mark.parametrize('budget', [30, 0], ids=['kept', 'over budget'])
@pytest.mark.parametrize('name,reads', COUNTS, ids=[c[0] for c in COUNTS])
def test_counters_are_thread_counters(tmp_path, name, reads, budget):
    proc = str(tmp_path / 'proc')
    _task(proc, 100, 101, 'CPU 0/TCG')
    files = proc_files.ThreadFiles(proc, budget=budget)
    kept = None
    for counters in reads:
        _set(tmp_path, proc, 101, counters)
        assert files.counters(100, 101) == counters == (
            threads.thread_counters(proc, 100, 101))
        assert files.run_ns(100, 101) == counters[0]
        if budget:
            kept = kept or files._fds[(100, 101)]
            assert files._fds == {(100, 101): kept}
        else:
            assert files._fds == {}
    files.close()


def test_a_thread_gone_or_unlisted_has_its_descriptors_closed(tmp_path):
    proc = str(tmp_path / 'proc')
    _task(proc, 100, 101, 'CPU 0/TCG', 1, 2, 3, 0)
    _task(proc, 100, 102, 'CPU 1/TCG', 4, 5, 6, 1)
    files = proc_files.ThreadFiles(proc, budget=30)
    assert files.counters(100, 102) == (4, 5, 6, 1)
    fds = files._fds[(100, 102)]
    with open(os.path.join(proc, '100', 'task', '101', 'schedstat'),
              'w'):
        pass                             # exited: reads empty
    with pytest.raises(threads.ThreadError):
        files.counters(100, 101)
    assert list(files._fds) == [(100, 102)]
    with pytest.raises(threads.ThreadError):
        files.counters(100, 999)         # never existed
    with pytest.raises(threads.ThreadError):
        files.run_ns(100, 999)
    files.retain({(100, 101)})
    assert files._fds == {}
    with pytest.raises(OSError):
        os.fstat(fds[0])


def test_known_thread_names_are_not_read_again(tmp_path):
    proc = str(tmp_path / 'proc')
    _task(proc, 100, 100, 'qemu-system-x86')
    _task(proc, 100, 101, 'CPU 0/TCG')
    _task(proc, 100, 102, 'qemu-system-x86')     # not named yet
    known = {}
    got = threads.qemu_threads(proc, 100, known)
    assert (got.vcpus, known) == ({0: 101}, {
        (100, '100'): ('qemu-system-x86',), (100, '101'): 'CPU 0/TCG',
        (100, '102'): ('qemu-system-x86',)})     # others: read once more
    _set(tmp_path, proc, 102, (0, 0, 0, 0), comm='CPU 1/TCG')
    _set(tmp_path, proc, 101, (0, 0, 0, 0), comm='renamed')
    got = threads.qemu_threads(proc, 100, known)
    assert got.vcpus == {0: 101, 1: 102}         # 101 from known
    assert known[(100, '100')] == 'qemu-system-x86'   # now known
    _set(tmp_path, proc, 100, (0, 0, 0, 0), comm='CPU 7/TCG')
    assert threads.qemu_threads(proc, 100, known).vcpus == {0: 101, 1: 102}
    assert threads.qemu_threads(proc, 100).vcpus == {1: 102, 7: 100}
