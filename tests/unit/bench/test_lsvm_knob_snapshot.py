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
"""bench.lsvm_knob_snapshot: the LSVM thread's class and cgroups, read
from a fake cgroup tree and this process's own /proc entry.
"""

import os

import pytest

from bench import lsvm_knob_snapshot as snap


def _v1_tree(root, groups):
    """A v1 cpu hierarchy: {relpath: (shares, quota_us, nr_throttled,
    throttled_ns)}.
    """
    for rel, (shares, quota, nr, ns) in groups.items():
        d = root / 'cpu' / rel if rel else root / 'cpu'
        d.mkdir(parents=True, exist_ok=True)
        (d / 'cpu.shares').write_text('%d\n' % shares)
        (d / 'cpu.cfs_quota_us').write_text('%d\n' % quota)
        (d / 'cpu.cfs_period_us').write_text('100000\n')
        (d / 'cpu.stat').write_text('nr_periods 10\nnr_throttled %d\n'
                                    'throttled_time %d\n' % (nr, ns))


def test_snapshot_walks_the_threads_group_up_to_the_root(tmp_path,
                                                         monkeypatch):
    pid = os.getpid()
    _v1_tree(tmp_path, {'': (1024, -1, 0, 0),
                        'lsvm': (262144, -1, 0, 0),
                        'lsvm/u1': (1024, 25000, 7, 300_000_000)})
    proc = tmp_path / 'proc'
    task = proc / str(pid) / 'task' / str(pid)
    task.mkdir(parents=True)
    for name in ('stat', 'status'):
        with open('/proc/%d/task/%d/%s' % (pid, pid, name)) as fh:
            (task / name).write_text(fh.read())
    (task / 'cgroup').write_text('4:cpu,cpuacct:/lsvm/u1\n')
    got = snap.snapshot(pid, pid, proc=str(proc), cgroup_root=str(tmp_path))
    assert got['policy'] == 'other'
    assert [(g['cgroup'], g['weight'], g['cap'], g['nr_throttled'])
            for g in got['groups']] == [('/lsvm/u1', 100, 0.25, 7),
                                        ('/lsvm', 10000, None, 0),
                                        ('/', 100, None, 0)]


@pytest.mark.parametrize('before, after, want', [
    # throttled over the phase: the counters' difference
    ({'nr_throttled': 3, 'throttled_ms': 10.0},
     {'nr_throttled': 9, 'throttled_ms': 70.5}, (6, 60.5)),
    # a group made during the phase: no difference to give
    (None, {'nr_throttled': 2, 'throttled_ms': 5.0}, (None, None)),
])
def test_delta_gives_what_a_phase_throttled(before, after, want):
    b = {'voluntary_ctxt_switches': 10, 'groups': [] if before is None
         else [dict(before, cgroup='/g')]}
    a = {'voluntary_ctxt_switches': 25, 'policy': 'other',
         'groups': [dict(after, cgroup='/g', weight=100, cap=0.5)]}
    d = snap.delta(b, a)
    assert d['voluntary_ctxt_switches'] == 15
    assert (d['groups'][0]['nr_throttled'],
            d['groups'][0]['throttled_ms']) == want
    assert snap.describe(d).startswith('other; switches vol 15')
