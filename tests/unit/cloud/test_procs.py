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
"""``down``'s check for processes of the cloud that outlived their
pidfiles: which command lines belong to a state dir, over a fake /proc.
"""

import os

import pytest

from iosched.cloud import procs

D = '/var/lib/iosched-cloud'

# (argv, cwd, belongs to D)
CASES = [
    (['nova-compute', '--config-file', D + '/etc/nova-fake1/nova.conf'],
     '/', True),
    (['io-host-agent', '--config-file=%s/etc/iosched/host-agent.conf' % D],
     '/', True),
    (['ceph-mgr', '-c', D + '/ceph/ceph.conf', '-i', 'x'], '/', True),
    (['gunicorn: worker [gunicorn]'], D, True),
    (['gunicorn: worker [gunicorn]'], D + ' (deleted)', True),
    (['python', '-m', 'iosched.cloud.cli', '--state-dir', D, 'down'],
     '/root', False),
    (['tail', '-f', D + '/logs/nova-compute.log'], '/root', False),
    (['nova-compute', '--config-file', '/etc/nova/nova.conf'], '/', False),
    (['x', D + '-other/etc/nova.conf'], '/', False),
    (['x', D + '/../etc/nova.conf'], '/', False),
    (['bash'], D + '/logs', False),
]


@pytest.mark.parametrize('argv,cwd,expected', CASES,
                         ids=[' '.join(c[0])[:40] for c in CASES])
def test_belongs(argv, cwd, expected):
    assert procs.belongs(argv, cwd, D) is expected
    assert procs.belongs(argv, cwd, D + '/') is expected


def _proc(root, pid, argv, cwd, ppid=1):
    base = root / str(pid)
    base.mkdir()
    (base / 'cmdline').write_bytes(b'\0'.join(a.encode() for a in argv)
                                   + (b'\0' if argv else b''))
    (base / 'stat').write_text('%d (x) S %d 0 0' % (pid, ppid))
    if cwd is not None:
        os.symlink(cwd, str(base / 'cwd'))


def test_strays_over_a_fake_proc(tmp_path):
    root = tmp_path / 'proc'
    root.mkdir()
    conf = D + '/etc/nova-fake1/nova.conf'
    _proc(root, 10, ['nova-compute', '--config-file', conf], '/')
    _proc(root, 11, ['gunicorn: worker'], D + ' (deleted)')
    _proc(root, 12, [], D)                       # zombie: no command line
    _proc(root, 13, ['sshd'], '/')
    # this process and its parent name the state dir: not strays
    _proc(root, 20, ['pytest'], D, ppid=1)
    _proc(root, 21, ['iosched-cloud', '-c', D + '/x.conf'], D, ppid=20)
    (root / 'self').mkdir()                      # not a pid
    got = procs.strays(D, proc_root=str(root), self_pid=21)
    assert got == {10: 'nova-compute --config-file %s' % conf,
                   11: 'gunicorn: worker'}


def test_no_strays_on_this_machine_for_an_unused_dir(tmp_path):
    assert procs.strays(str(tmp_path / 'no-cloud')) == {}
