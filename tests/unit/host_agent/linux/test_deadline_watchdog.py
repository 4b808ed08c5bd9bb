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
"""The SCHED_DEADLINE watchdog: parsing /proc, the stuck rule over scans,
and a scan of a fake /proc tree.
"""

import pytest

from iosched.host_agent.linux import deadline_watchdog as w


def stat(state, policy, comm='qemu-system-x86'):
    # pid (comm) state, then fields 4..52; policy is field 41
    fields = ['0'] * 50
    fields[41 - 4] = str(policy)
    return '4242 (%s) %s %s\n' % (comm, state, ' '.join(fields))


SCHED = ('qemu-system-x86 (4242, #threads: 4)\n'
         '---------------------------------\n'
         'se.sum_exec_runtime    :    330.426591\n'
         'dl.runtime             :        -19918\n'
         'dl.deadline            : 2365933374429\n')


@pytest.mark.parametrize('text,want', [
    (stat('R', 6), ('R', 6)),
    (stat('S', 0), ('S', 0)),
    (stat('R', 6, comm='CPU 0/TCG'), ('R', 6)),       # a space in comm
    (stat('R', 6, comm='a) (b'), ('R', 6)),           # a ")" in comm
    ('4242 (x) R 1 2', None),                         # cut short
    ('', None),
])
def test_parse_stat(text, want):
    assert w.parse_stat(text) == want


@pytest.mark.parametrize('text,want', [
    (SCHED, (-19918, 2365933374429)),
    ('se.sum_exec_runtime : 1.0\n', None),            # not a deadline task
    ('dl.runtime : x\ndl.deadline : 1\n', None),
    ('', None),
])
def test_parse_sched(text, want):
    assert w.parse_sched(text) == want


@pytest.mark.parametrize('text,want', [
    ('4:cpu,cpuacct:/machine/qemu-1-vm.libvirt-qemu/emulator\n', True),
    ('0::/machine.slice/machine-qemu\\x2d1.scope/libvirt\n', True),
    ('4:cpu,cpuacct:/\n1:name=systemd:/user.slice\n', False),
    ('4:cpu:/machinery/x\n', False),
    ('', False),
])
def test_in_machine_group(text, want):
    assert w.in_machine_group(text) is want


@pytest.mark.parametrize('state,runtime,want', [
    ('R', -19918, True), ('R', 0, True), ('R', 5, False),
    ('S', -5, False), ('D', -5, False),
])
def test_throttled(state, runtime, want):
    assert w.throttled(state, runtime) is want


def t(tid, deadline):
    return w.Throttled(1, tid, 'x', -1, deadline)


S = w.STUCK_AFTER_NS
# name, scans [(now, [Throttled])], stuck tids after the last scan
SCANS = [
    ('first sight is never stuck', [(0, [t(7, 100)])], []),
    ('same deadline a second later: stuck', [(0, [t(7, 100)]),
                                            (S, [t(7, 100)])], [7]),
    ('just under a second: not yet', [(0, [t(7, 100)]),
                                      (S - 1, [t(7, 100)])], []),
    ('a new deadline is a replenishment: starts over',
     [(0, [t(7, 100)]), (S, [t(7, 200)])], []),
    ('not throttled in between: starts over',
     [(0, [t(7, 100)]), (S // 2, []), (S, [t(7, 100)])], []),
    ('each thread on its own', [(0, [t(7, 100)]),
                                (S, [t(7, 100), t(8, 100)])], [7]),
]


@pytest.mark.parametrize('name,scans,want', SCANS, ids=[s[0] for s in SCANS])
def test_stuck_over_scans(name, scans, want):
    dog = w.Watchdog('/nonexistent')
    got = []
    for now, found in scans:
        got = dog.stuck(found, now)
    assert [x.tid for x in got] == want


def _task(root, pid, tid, state, policy, sched_text, cgroup):
    base = root / str(pid)
    (base / 'task' / str(tid)).mkdir(parents=True)
    (base / 'cgroup').write_text(cgroup)
    task = base / 'task' / str(tid)
    (task / 'stat').write_text(stat(state, policy))
    (task / 'sched').write_text(sched_text)
    (task / 'comm').write_text('CPU 0/TCG\n')


def test_scan_a_fake_proc(tmp_path):
    guest = '4:cpu,cpuacct:/machine/qemu-1-vm.libvirt-qemu/vcpu0\n'
    _task(tmp_path, 10, 11, 'R', 6, SCHED, guest)            # throttled
    _task(tmp_path, 10, 12, 'S', 6, SCHED, guest)            # sleeping
    _task(tmp_path, 10, 13, 'R', 0, '', guest)               # fair class
    _task(tmp_path, 20, 21, 'R', 6, SCHED, '4:cpu:/\n')      # not a guest
    (tmp_path / 'self').mkdir()
    assert w.scan(str(tmp_path)) == [
        w.Throttled(10, 11, 'CPU 0/TCG', -19918, 2365933374429)]
    clock = iter([0, S])
    dog = w.Watchdog(str(tmp_path), clock=lambda: next(clock))
    assert dog.check() == []
    assert [x.tid for x in dog.check()] == [11]


def test_scan_of_a_missing_proc_finds_nothing(tmp_path):
    assert w.scan(str(tmp_path / 'nope')) == []


class Writer(object):
    """The two thread lookups deadline_unstick.refuse uses."""

    def _tid(self, uuid, target):
        return {'0': 11, '1': 12}[target]

    def _io_tids(self, uuid):
        return [('emulator', 21), ('IO iothread1', 22)]


@pytest.mark.parametrize('kind,target,value,refused', [
    ('vcpu_deadline', '0', {'runtime_us': 1}, True),     # freed tid 11
    ('vcpu_deadline', '1', {'runtime_us': 1}, False),
    ('vcpu_deadline', '0', None, False),                 # back to fair: ok
    ('io_thread_deadline', '', {'runtime_us': 1}, True),  # tid 22 freed
    ('vcpu_slice', '0', 1000, False),                    # not a reservation
])
def test_a_freed_thread_gets_no_reservation_again(kind, target, value,
                                                  refused):
    from iosched.host_agent.actuators import deadline_unstick
    from iosched.host_agent.drivers import base
    u = deadline_unstick.Unsticker('/nonexistent')
    u.freed = {11, 22}
    if refused:
        with pytest.raises(base.DriverError, match='freeze them again'):
            u.refuse(Writer(), kind, 'vm', target, value)
    else:
        u.refuse(Writer(), kind, 'vm', target, value)
