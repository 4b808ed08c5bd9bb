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
"""The VA bench's hang probe and trial load sampler on a fake /proc."""

import os

import pytest

from bench import hang_probe as hp
from bench import trial_load as tl


def write(root, rel, text):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as f:
        f.write(text)


@pytest.mark.parametrize('line, want', [
    ('12 (qemu-system-x86) S 1 2', ('qemu-system-x86', 'S')),
    ('13 (IO mon_iothread) D 1 2', ('IO mon_iothread', 'D')),  # space
    ('14 (a) b)) R 1', ('a) b)', 'R')),                    # ) in the name
    ('error: gone', (None, None)),
])
def test_stat_state(line, want):
    assert hp._stat_state(line) == want


def test_probe_names_threads_d_state_stacks_and_dirty_pages(tmp_path):
    proc, sysb = str(tmp_path / 'proc'), str(tmp_path / 'sys')
    write(proc, '100/task/100/stat', '100 (qemu-system-x86) S 1')
    write(proc, '100/task/100/wchan', 'do_sys_poll')
    write(proc, '100/task/101/stat', '101 (worker) D 1')
    write(proc, '100/task/101/wchan', 'folio_wait_bit')
    write(proc, '100/task/101/stack', '[<0>] folio_wait_bit\n[<0>] x\n')
    write(proc, 'meminfo', 'MemFree: 10 kB\nDirty: 2048 kB\n'
                           'Writeback: 512 kB\nOther: 1 kB\n')
    write(sysb, 'loop0/stat', '1 2 3 4 5 6 7 8 1 9 10')
    write(sysb, 'loop0/inflight', '       0        3\n')
    write(sysb, 'loop0/queue/scheduler', 'none [bfq]\n')

    class Dom:
        def state(self):
            return [1, 1]

    write(proc, 'console.log', 'x' * 3000 + 'iosched-guest: dd read: EIO\n')
    got = hp.probe({'vm1': 100}, ['loop0'], {'vm1': Dom()},
                   {'vm1': os.path.join(proc, 'console.log')}, proc, sysb)
    assert got['qemu_threads']['vm1'] == [
        {'tid': 100, 'name': 'qemu-system-x86', 'state': 'S',
         'wchan': 'do_sys_poll'},
        {'tid': 101, 'name': 'worker', 'state': 'D',
         'wchan': 'folio_wait_bit'}]
    assert got['d_state'] == [{'tid': 101, 'comm': 'worker', 'stack': [
        '[<0>] folio_wait_bit', '[<0>] x']}]
    assert got['meminfo'] == {'MemFree_kb': 10, 'Dirty_kb': 2048,
                              'Writeback_kb': 512}
    assert got['devices']['loop0']['inflight'] == ['0', '3']
    assert got['domains'] == {'vm1': [1, 1]}
    assert len(got['consoles']['vm1']) == 2000
    assert got['consoles']['vm1'].endswith('dd read: EIO\n')


def test_a_domain_that_raises_is_recorded_not_raised():
    class Hung:
        def state(self):
            raise RuntimeError('timed out')
    assert hp.domain_states({'a': Hung()}) == {'a': 'error: timed out'}


@pytest.mark.parametrize('stat, want_s', [
    ('7 (qemu) S ' + ' '.join(['0'] * 10) + ' 300 100 0 0', 400),
    ('7 (q e m u) R ' + ' '.join(['0'] * 10) + ' 0 50 0', 50),
])
def test_proc_cpu_seconds(tmp_path, stat, want_s):
    write(str(tmp_path), '7/stat', stat)
    assert tl._proc_cpu_s(7, str(tmp_path)) == pytest.approx(
        want_s / float(tl.HZ))


def test_io_ticks_and_missing_device(tmp_path):
    write(str(tmp_path), 'loop0/stat', '1 2 3 4 5 6 7 8 0 2500 10')
    assert tl._io_ticks_s('loop0', str(tmp_path)) == 2.5
    assert tl._io_ticks_s('/dev/loop0', str(tmp_path)) == 2.5
    assert tl._io_ticks_s('nope', str(tmp_path)) == 0.0
