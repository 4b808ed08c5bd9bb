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
"""iosched.host_agent.linux.deadline on fake procfs/sysfs/cgroup trees: the
kernel's limit, root-domain CPUs, the thread scan and the debugfs sum.
"""

import os

import pytest

from iosched.host_agent import linux
from iosched.host_agent.linux import deadline
from iosched.host_agent import model

# /sys/kernel/debug/sched/debug of the project's 2-CPU 6.18 host, trimmed:
# the fair servers (2 x 0.05 CPU) and one 0.25 reservation.
DEBUG = """\
Sched Debug Version: v0.11, 6.18.44-fc-v669 #1
ktime                                   : 695480.241986

cpu#0
  .nr_running                    : 1
dl_rq[0]:
  .dl_nr_running                 : 0
  .dl_bw->bw                     : 996147
  .dl_bw->total_bw               : 366999

runnable tasks:
 S            task   PID       vruntime
-------------------------------------------------------
cpu#1
dl_rq[1]:
  .dl_nr_running                 : 1
  .dl_bw->bw                     : 996147
  .dl_bw->total_bw               : 366999
"""
FAIR_SERVERS = 2 * 52428 / float(1 << 20)
QUARTER = 262143 / float(1 << 20)


def stat_line(tid, comm, policy):
    """A 52-field /proc/<pid>/task/<tid>/stat line with ``policy`` as
    field 41 (fields after the comm are numbered from 3).
    """
    rest = ['S'] + ['0'] * 49
    rest[41 - 3] = str(policy)
    return '%d (%s) %s\n' % (tid, comm, ' '.join(rest))


class Host(object):
    """A fake host: proc_root, sys_root, cgroup_root under ``base``, and
    the reservations ``getattr`` returns by tid.
    """

    def __init__(self, base, online='0-1', isolated='', runtime='950000',
                 release='6.18.44-fc-v669', debug=None):
        self.proc = base / 'proc'
        self.sys = base / 'sys'
        self.cgroup = base / 'cgroup'
        self.cgroup.mkdir()
        self.params = {}
        kernel = self.proc / 'sys' / 'kernel'
        kernel.mkdir(parents=True)
        (kernel / 'sched_rt_runtime_us').write_text(runtime + '\n')
        (kernel / 'sched_rt_period_us').write_text('1000000\n')
        (kernel / 'osrelease').write_text(release + '\n')
        cpu = self.sys / 'devices' / 'system' / 'cpu'
        cpu.mkdir(parents=True)
        (cpu / 'online').write_text(online + '\n')
        if isolated is not None:
            (cpu / 'isolated').write_text(isolated + '\n')
        if debug is not None:
            d = self.sys / 'kernel' / 'debug' / 'sched'
            d.mkdir(parents=True)
            (d / 'debug').write_text(debug)

    def thread(self, pid, tid, params=None, comm='qemu-system-x86',
               policy=None):
        task = self.proc / str(pid) / 'task' / str(tid)
        task.mkdir(parents=True)
        if policy is None:
            policy = 6 if params else 0
        (task / 'stat').write_text(stat_line(tid, comm, policy))
        self.params[tid] = params
        return tid

    def getattr(self, tid):
        if tid not in self.params:
            raise linux.LinuxKnobError('sched_getattr: ESRCH', 3)
        value = self.params[tid]
        if isinstance(value, Exception):
            raise value
        return value


def res(r, p):
    return {'runtime_us': r, 'deadline_us': p, 'period_us': p}


@pytest.mark.parametrize('runtime,limit', [
    ('950000', 0.95), ('1000000', 1.0), ('-1', 1.0), ('0', 0.0),
    ('500000', 0.5),
])
def test_limit_per_cpu(tmp_path, runtime, limit):
    host = Host(tmp_path, runtime=runtime)
    assert deadline.read_limit_per_cpu(str(host.proc)) == limit


def test_limit_unreadable(tmp_path):
    with pytest.raises(linux.LinuxKnobError, match='deadline limit'):
        deadline.read_limit_per_cpu(str(tmp_path))


@pytest.mark.parametrize('online,isolated,cpus', [
    ('0-1', '', (0, 1)),
    ('0-3', '2', (0, 1, 3)),
    ('0-7', '4-7', (0, 1, 2, 3)),
    ('0-3', None, (0, 1, 2, 3)),          # no isolated file (old kernels)
    ('0,2-3', '', (0, 2, 3)),             # CPU 1 offline
])
def test_root_domain_cpus(tmp_path, online, isolated, cpus):
    host = Host(tmp_path, online=online, isolated=isolated)
    assert deadline.root_domain_cpus(str(host.sys)) == (cpus, ())


@pytest.mark.parametrize('where', [(), ('unified',)])
def test_v2_partitions_leave_the_top_cpuset(tmp_path, where):
    host = Host(tmp_path, online='0-3')
    d = host.cgroup.joinpath(*where)
    d.mkdir(exist_ok=True)
    (d / 'cpuset.cpus.effective').write_text('0-1\n')   # 2-3: a partition
    assert deadline.root_domain_cpus(str(host.sys), str(host.cgroup)) == (
        (0, 1), ())


def test_v1_split_root_domains_are_said(tmp_path):
    host = Host(tmp_path, online='0-3')
    (host.cgroup / 'cpuset').mkdir()
    flag = host.cgroup / 'cpuset' / 'cpuset.sched_load_balance'
    flag.write_text('1\n')
    assert deadline.root_domain_cpus(str(host.sys), str(host.cgroup)) == (
        (0, 1, 2, 3), ())
    flag.write_text('0\n')
    cpus, warnings = deadline.root_domain_cpus(str(host.sys),
                                               str(host.cgroup))
    assert cpus == (0, 1, 2, 3)
    assert 'sched_load_balance = 0' in warnings[0]


def test_no_online_file(tmp_path):
    with pytest.raises(linux.LinuxKnobError, match='online CPUs'):
        deadline.root_domain_cpus(str(tmp_path))


@pytest.mark.parametrize('comm,policy', [
    ('qemu-system-x86', 6), ('CPU 0/KVM', 0), ('a) (b) 6', 1),
    (')', 6), ('', 3),
])
def test_parse_stat_policy(comm, policy):
    assert deadline.parse_stat_policy(stat_line(42, comm, policy)) == policy


def test_parse_stat_policy_refuses_short_lines():
    with pytest.raises(ValueError, match='no policy field'):
        deadline.parse_stat_policy('42 (x) S 1 2 3\n')


def test_scan_splits_ours_from_foreign(tmp_path):
    host = Host(tmp_path)
    host.thread(100, 100, res(1000, 4000))          # VM 1: emulator 0.25
    host.thread(100, 101, res(500, 2000), comm='CPU 0/TCG')   # vCPU 0.25
    host.thread(100, 102)                           # fair worker
    host.thread(200, 200, res(100, 1000))           # VM 2: 0.1
    host.thread(300, 300, res(300, 3000), comm='sleeper')     # foreign 0.1
    host.thread(300, 301, comm='rt', policy=1)
    host.params[301] = linux.LinuxKnobError('real-time', 22)
    host.thread(400, 400, res(50, 1000))            # exits: no params
    del host.params[400]
    found = deadline.scan(str(host.proc), [100, 200], everything=True,
                          getattr=host.getattr)
    assert found.ours == pytest.approx(0.6)
    assert found.foreign == pytest.approx(0.1)
    assert sorted(found.threads) == [100, 101, 200, 300]
    assert found.threads[101] == (100, res(500, 2000))
    ours_only = deadline.scan(str(host.proc), [100, 200],
                              getattr=host.getattr)
    assert ours_only.ours == pytest.approx(0.6)
    assert ours_only.foreign == 0.0


def test_scan_by_stat_asks_only_deadline_threads(tmp_path):
    host = Host(tmp_path)
    host.thread(100, 100, res(1000, 4000))
    host.thread(100, 101)
    asked = []

    def getattr(tid):
        asked.append(tid)
        return host.getattr(tid)

    deadline.scan(str(host.proc), [100], getattr=getattr, by_stat=True)
    assert asked == [100]
    asked.clear()
    deadline.scan(str(host.proc), [100], getattr=getattr, by_stat=False)
    assert sorted(asked) == [100, 101]


def test_scan_of_a_gone_process_is_empty(tmp_path):
    host = Host(tmp_path)
    found = deadline.scan(str(host.proc), [999], getattr=host.getattr)
    assert found == deadline.Scan(0.0, 0.0, {})


def test_scan_with_real_syscalls_needs_our_pid_namespace(tmp_path):
    host = Host(tmp_path)
    assert not deadline.same_pid_namespace(str(host.proc))
    with pytest.raises(linux.LinuxKnobError, match='pid namespace'):
        deadline.scan(str(host.proc), [100])
    (host.proc / 'self').symlink_to(str(os.getpid()))
    assert deadline.same_pid_namespace(str(host.proc))
    assert deadline.same_pid_namespace('/proc')


def test_parse_debug():
    bw, total = deadline.parse_debug_dl_bw(DEBUG, 0)
    assert bw == pytest.approx(0.95, abs=1e-6)
    assert total == pytest.approx(FAIR_SERVERS + QUARTER)
    assert deadline.parse_debug_dl_bw(DEBUG, 1) == (bw, total)
    unlimited = DEBUG.replace(': 996147', ': -1')
    assert deadline.parse_debug_dl_bw(unlimited, 0)[0] == 1.0


@pytest.mark.parametrize('text,cpu,words', [
    (DEBUG, 2, 'no dl_rq[2]: block'),
    ('dl_rq[0]:\n  .dl_nr_running : 0\n  .dl_bw->bw : 1\n\n', 0,
     'total_bw'),
    ('', 0, 'no dl_rq[0]'),
])
def test_parse_debug_refuses(text, cpu, words):
    with pytest.raises(ValueError) as exc:
        deadline.parse_debug_dl_bw(text, cpu)
    assert words in str(exc.value)


@pytest.mark.parametrize('release,servers', [
    ('6.18.44-fc-v669', 0.1), ('6.12.0', 0.1), ('7.0.1', 0.1),
    ('6.11.9', 0.0), ('5.15.0-91-generic', 0.0), ('weird', 0.0),
])
def test_server_bandwidth_by_kernel_release(tmp_path, release, servers):
    host = Host(tmp_path, release=release)
    got, how = deadline.server_bandwidth(str(host.sys), str(host.proc),
                                         (0, 1))
    assert got == pytest.approx(servers)


def test_server_bandwidth_from_debugfs(tmp_path):
    host = Host(tmp_path, release='6.18.0')
    for cpu, runtime in ((0, '25000000'), (1, '100000000')):
        d = host.sys / 'kernel' / 'debug' / 'sched' / 'fair_server' / (
            'cpu%d' % cpu)
        d.mkdir(parents=True)
        (d / 'runtime').write_text(runtime + '\n')
        (d / 'period').write_text('1000000000\n')
    got, how = deadline.server_bandwidth(str(host.sys), str(host.proc),
                                         (0, 1))
    assert got == pytest.approx(0.125) and how == 'debugfs fair_server'


def _vm_and_foreign(host):
    host.thread(100, 100, res(1000, 4000))          # the VM's 0.25
    host.thread(300, 300, res(300, 3000))           # foreign 0.1


def test_measure_from_debugfs(tmp_path):
    host = Host(tmp_path, debug=DEBUG)
    host.thread(100, 100, res(1000, 4000))
    got = deadline.measure(str(host.proc), str(host.sys), [100],
                           cgroup_root=str(host.cgroup),
                           getattr=host.getattr)
    assert got.source == deadline.SOURCE_DEBUGFS and got.warnings == ()
    assert got.state == model.DeadlineState(
        cpus=(0, 1), limit=1.9, foreign=pytest.approx(FAIR_SERVERS, abs=1e-5),
        reserved=0.25)


def test_measure_from_a_scan(tmp_path):
    host = Host(tmp_path)
    _vm_and_foreign(host)
    got = deadline.measure(str(host.proc), str(host.sys), [100],
                           getattr=host.getattr)
    assert got.source == deadline.SOURCE_SCAN
    assert got.state.cpus == (0, 1) and got.state.limit == 1.9
    assert got.state.reserved == 0.25
    assert got.state.foreign == pytest.approx(0.1 + 0.1)   # + servers
    assert 'kernel 6.18 default' in got.warnings[0]


def test_measure_isolated_cpus_and_no_limit(tmp_path):
    host = Host(tmp_path, online='0-3', isolated='3', runtime='-1',
                release='6.1.0')
    _vm_and_foreign(host)
    got = deadline.measure(str(host.proc), str(host.sys), [100],
                           getattr=host.getattr)
    assert got.state == model.DeadlineState(cpus=(0, 1, 2), limit=3.0,
                                            foreign=0.1, reserved=0.25)
    assert got.warnings == ()


def test_measure_without_cpus(tmp_path):
    host = Host(tmp_path, online='0', isolated='0')
    with pytest.raises(linux.LinuxKnobError, match='no CPU left'):
        deadline.measure(str(host.proc), str(host.sys), [],
                         getattr=host.getattr)
