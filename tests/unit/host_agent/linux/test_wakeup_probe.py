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
"""The wake-up self-test's pure parts: arguments, percentiles and rows,
cgroup plans and the sweep of stale groups on fake trees, the sleeper's
protocol, and the privsep entrypoint's re-checks (in-process).
"""

import ast
import errno
import io
import json
import os
import signal

import pytest

from iosched.contract import lsvm as lsvm_bound
from iosched.host_agent import linux
from iosched.host_agent.linux import cgroups
from iosched.host_agent.linux import privileged_probe
from iosched.host_agent.linux import wakeup_probe as wp
from iosched.host_agent.linux import wakeup_probe_groups as groups
from iosched.host_agent.linux import wakeup_probe_rows as wp_rows
from iosched.host_agent.linux import wakeup_probe_session as wp_session
from iosched.host_agent.linux import wakeup_sleeper
from iosched.host_agent import model
from tests.unit.host_agent.linux import conftest

ONLINE = (0, 1, 2, 3)
GOOD = dict(cases=['stock', 'deadline', 'weight', 'slice'], cpus=[0, 1],
            wakes=300, hogs_per_cpu=2, lsvm_weight=10000)


def _args(**kw):
    a = dict(GOOD)
    a.update(kw)
    return a


@pytest.mark.parametrize('kw', [
    {}, dict(cases=['stock']), dict(cases=('slice', 'stock')),
    dict(cpus=[3]), dict(cpus=[1, 0, 1]), dict(wakes=50),
    dict(wakes=5000), dict(hogs_per_cpu=0), dict(hogs_per_cpu=8),
    dict(lsvm_weight=1),
])
def test_check_args_accepts(kw):
    a = _args(**kw)
    cases, cpus = wp.check_args(a['cases'], a['cpus'], a['wakes'],
                                a['hogs_per_cpu'], a['lsvm_weight'], ONLINE)
    assert cases == tuple(a['cases'])
    assert cpus == tuple(sorted(set(a['cpus'])))


@pytest.mark.parametrize('kw, words', [
    (dict(cases=[]), 'empty; accepted: one or more of stock, deadline'),
    (dict(cases=['stock', 'fifo']), "unknown ['fifo']"),
    (dict(cases='stock'), 'not a list'),
    (dict(cases=['stock', 'stock']), 'twice'),
    (dict(cases=[None]), 'unknown'),
    (dict(cpus=[]), 'non-empty list'),
    (dict(cpus='0-1'), 'non-empty list'),
    (dict(cpus=[0, '1']), 'non-empty list'),
    (dict(cpus=[0, True]), 'non-empty list'),
    (dict(cpus=[0, 7]), 'cpus [7] are not online; online: [0, 1, 2, 3]'),
    (dict(wakes=49), 'wakes 49 is not an int in 50..5000'),
    (dict(wakes=5001), 'wakes 5001'),
    (dict(wakes=300.0), 'wakes 300.0'),
    (dict(wakes=True), 'wakes True'),
    (dict(hogs_per_cpu=-1), 'hogs_per_cpu -1 is not an int in 0..8'),
    (dict(hogs_per_cpu=9), 'hogs_per_cpu 9'),
    (dict(lsvm_weight=0), 'lsvm_weight 0 is not an int in 1..10000'),
    (dict(lsvm_weight=10001), 'lsvm_weight 10001'),
    (dict(lsvm_weight='100'), "lsvm_weight '100'"),
])
def test_check_args_refuses(kw, words):
    a = _args(**kw)
    with pytest.raises(wp.ProbeArgError) as exc:
        wp.check_args(a['cases'], a['cpus'], a['wakes'], a['hogs_per_cpu'],
                      a['lsvm_weight'], ONLINE)
    assert words in str(exc.value)
    assert exc.value.errno == errno.EINVAL


@pytest.mark.parametrize('period, work, words', [
    (499, 50, 'period_us 499'), (100001, 50, 'period_us 100001'),
    (2000, 1001, 'work_us 1001 is not an int in 0..1000'),
    (2000, -1, 'work_us -1'),
    (800, 50, 'shorter than the deadline case'),
])
def test_check_args_refuses_timing(period, work, words):
    with pytest.raises(wp.ProbeArgError, match=words):
        wp.check_args(['stock', 'deadline'], [0], 300, 2, 100, ONLINE,
                      period, work)


@pytest.mark.parametrize('samples, p50, p99, n', [
    ([5.0] * 10, 5.0, 5.0, 10),
    ([3.0, 1.0, 2.0], 2.0, 3.0, 3),
    ([10.04] * 99 + [4000.0], 10.0, 10.0, 100),
    ([10.0] * 98 + [4000.0, 5000.0], 10.0, 4000.0, 100),
])
def test_row_from_lateness(samples, p50, p99, n):
    r = wp_rows.row('stock', samples)
    assert r == model.WakeupProbe('stock', True, p50, p99, n, '')


def test_row_without_samples_is_a_failed_row():
    r = wp_rows.row('weight', [])
    assert not r.ok and 'no wake-ups' in r.error


def _r(case, p50, p99, ok=True):
    return model.WakeupProbe(case, ok, p50, p99, 100 if ok else 0,
                             '' if ok else 'EPERM')


@pytest.mark.parametrize('rows, expected', [
    ([_r('stock', 15, 4000), _r('deadline', 45, 60), _r('slice', 15, 4000)],
     {'stock': (1.0, 1.0), 'deadline': (3.0, 0.01), 'slice': (1.0, 1.0)}),
    ([_r('deadline', 45, 60), _r('stock', 10, 100)],
     {'deadline': (4.5, 0.6), 'stock': (1.0, 1.0)}),
    ([_r('stock', 10, 100), _r('weight', 0, 0, ok=False)],
     {'stock': (1.0, 1.0)}),
    ([_r('stock', 0, 0, ok=False), _r('deadline', 45, 60)], {}),
    ([_r('deadline', 45, 60)], {}),
])
def test_ratios_to_stock(rows, expected):
    assert wp_rows.ratios(rows) == expected


@pytest.mark.parametrize('exc, text', [
    (linux.LinuxKnobError('sched_setattr failed', errno.EPERM),
     'EPERM (Operation not permitted): sched_setattr failed'),
    (OSError(errno.EACCES, 'Permission denied'), 'EACCES (Permission '
                                                 'denied): '),
    (linux.LinuxKnobError('no cgroups'), 'no cgroups'),
])
def test_error_text(exc, text):
    assert wp_rows.error_text(exc).startswith(text)


def test_rows_survive_the_privsep_channel_as_dicts():
    rows = (_r('stock', 15.5, 4000.1), _r('weight', 0, 0, ok=False))
    back = tuple(wp_rows.from_dict(json.loads(json.dumps(wp_rows.to_dict(r))))
                 for r in rows)
    assert back == rows


# -- cgroup plans ------------------------------------------------------------
V1 = cgroups.Hierarchy('v1', '/sys/fs/cgroup', 'cpu')
V2 = cgroups.Hierarchy('v2', '/sys/fs/cgroup', '')


@pytest.mark.parametrize('hier, base, hogs, weight, hogs_per_cpu, writes', [
    (V1, '', 4, 10000, 2, [
        ('cpu/iosched-selftest-77-lsvm/cpu.shares', '102400'),
        ('cpu/iosched-selftest-77-lsvm/cpu.cfs_period_us', '100000'),
        ('cpu/iosched-selftest-77-lsvm/cpu.cfs_quota_us', '33333')]),
    (V1, 'machine', 2, 100, 1, [
        ('cpu/machine/iosched-selftest-77-lsvm/cpu.shares', '1024'),
        ('cpu/machine/iosched-selftest-77-lsvm/cpu.cfs_period_us',
         '100000'),
        ('cpu/machine/iosched-selftest-77-lsvm/cpu.cfs_quota_us',
         '50000')]),
    (V2, '', 6, 10000, 3, [
        ('iosched-selftest-77-lsvm/cpu.weight', '10000'),
        ('iosched-selftest-77-lsvm/cpu.max', '25000 100000')]),
    (V2, 'machine.slice', 0, 500, 0, [
        ('machine.slice/iosched-selftest-77-lsvm/cpu.weight', '500'),
        ('machine.slice/iosched-selftest-77-lsvm/cpu.max',
         '100000 100000')]),
])
def test_plan_cgroups_are_siblings_of_the_guests(hier, base, hogs, weight,
                                                 hogs_per_cpu, writes):
    plan = groups.plan_cgroups(hier, 77, hogs, weight, hogs_per_cpu, base)
    pre = base + '/' if base else ''
    assert plan.parent == base
    assert plan.sleeper == pre + 'iosched-selftest-77-sleeper'
    assert plan.lsvm == pre + 'iosched-selftest-77-lsvm'
    assert plan.hogs == tuple('%siosched-selftest-77-hog%d' % (pre, i)
                              for i in range(hogs))
    assert plan.dirs == (plan.sleeper, plan.lsvm) + plan.hogs
    assert plan.setup == ()
    assert list(plan.lsvm_writes) == writes


def test_plan_refuses_a_bad_base():
    with pytest.raises(Exception):
        groups.plan_cgroups(V1, 77, 1, 100, 1, '../etc')


@pytest.mark.parametrize('names, alive, me, stale', [
    (['iosched-selftest-10-lsvm', 'iosched-selftest-11-hog0',
      'iosched-selftest-11-sleeper'], {10}, 99,
     ['iosched-selftest-11-hog0', 'iosched-selftest-11-sleeper']),
    (['iosched-selftest-99-lsvm'], {99}, 99,
     ['iosched-selftest-99-lsvm']),                     # own leftover
    (['iosched-selftest-x', 'machine', 'iosched-test-5', 'iosched-selftest-',
      'iosched-selftest--3', 'qemu-1-iosched-selftest-4'], set(), 99, []),
    # the layout before issue 28: one parent group per run
    (['iosched-selftest-12', 'iosched-selftest-3-hog1'], set(), 1,
     ['iosched-selftest-12', 'iosched-selftest-3-hog1']),
])
def test_stale_names(names, alive, me, stale):
    assert groups.stale_names(names, lambda pid: pid in alive, me) == stale


def _fake_group(path, pids=()):
    path.mkdir(parents=True)
    (path / 'cgroup.procs').write_text(''.join('%d\n' % p for p in pids))


def _fake_rmdir(path):
    """cgroupfs removes a group with its control files; a plain
    directory needs them removed first.
    """
    if any(os.path.isdir(os.path.join(path, d)) for d in os.listdir(path)):
        raise OSError(errno.EBUSY, 'busy')
    for f in os.listdir(path):
        os.unlink(os.path.join(path, f))
    os.rmdir(path)


@pytest.mark.parametrize('version', ['v1', 'v2'])
def test_sweep_removes_dead_runs_only(tmp_path, version):
    tree = (conftest.make_v1 if version == 'v1' else conftest.make_v2)(
        tmp_path)
    hier = cgroups.probe(tree.cgroup_root)
    top = tmp_path / 'cgroup' / hier.cpu_dir
    machine = top / groups.MACHINE_GROUPS[version]
    _fake_group(top / 'iosched-selftest-10' / 'hog0', [1001])
    (top / 'iosched-selftest-10' / 'cgroup.procs').write_text('')
    _fake_group(top / 'iosched-selftest-20' / 'hog0', [2001])
    _fake_group(machine / 'iosched-selftest-30-lsvm', [3001, 3002])
    _fake_group(machine / 'iosched-selftest-20-hog1', [2002])
    killed = []
    removed = groups.sweep(hier, alive=lambda pid: pid == 20, me=99,
                       kill=lambda pid, sig: killed.append((pid, sig)),
                       rmdir=_fake_rmdir)
    assert sorted(removed) == sorted([
        'iosched-selftest-10',
        '%s/iosched-selftest-30-lsvm' % groups.MACHINE_GROUPS[version]])
    assert sorted(killed) == [(1001, signal.SIGKILL), (3001, signal.SIGKILL),
                              (3002, signal.SIGKILL)]
    assert not (top / 'iosched-selftest-10').exists()
    assert (top / 'iosched-selftest-20' / 'hog0').is_dir()
    assert (machine / 'iosched-selftest-20-hog1').is_dir()
    assert machine.is_dir()


def test_bases_lists_libvirts_group_when_present(tmp_path):
    tree = conftest.make_v1(tmp_path)
    hier = cgroups.probe(tree.cgroup_root)
    assert groups.bases(hier) == ['machine', '']   # beside the guests
    bare = conftest.make_v2(tmp_path / 'v2')
    hier2 = cgroups.probe(bare.cgroup_root)
    assert groups.bases(hier2) == ['machine.slice', '']
    empty = tmp_path / 'empty'
    (empty / 'cpu').mkdir(parents=True)
    (empty / 'cpu' / 'cpu.shares').write_text('1024\n')
    assert groups.bases(cgroups.probe(str(empty))) == ['']


def test_session_without_a_cpu_controller_fails_the_weight_row(tmp_path):
    s = wp_session.Session([0], cgroup_root=str(tmp_path))
    s._make_groups(2)
    assert s.plan is None and 'no cpu controller' in s.cg_error
    with pytest.raises(linux.LinuxKnobError, match='no cpu controller'):
        s._prepare(lsvm_bound.MECH_WEIGHT, 1, 100, None)


# -- the sleeper
# ---------------------------------------------------------------
def test_sleeper_protocol(monkeypatch):
    monkeypatch.setattr(wakeup_sleeper, 'WARMUP', 2)
    out = io.StringIO()
    rc = wakeup_sleeper.sleep(5, 1000, 10, os.getppid(),
                              stdin=io.StringIO('sync\ngo\n'), stdout=out)
    lines = out.getvalue().splitlines()
    assert rc == 0
    assert lines[:2] == ['ready', 'ready']
    lateness = json.loads(lines[2])['lateness_us']
    assert len(lateness) == 5 and all(v >= 0 for v in lateness)


def test_sleeper_gives_up_when_the_parent_closes_stdin():
    out = io.StringIO()
    assert wakeup_sleeper.sleep(5, 1000, 10, os.getppid(),
                                stdin=io.StringIO(''), stdout=out) == 1
    assert out.getvalue() == 'ready\n'


# -- the privsep entrypoint (in-process)
# -----------------------------------------
@pytest.fixture
def sysfs(tmp_path):
    d = tmp_path / 'sys' / 'devices' / 'system' / 'cpu'
    d.mkdir(parents=True)
    (d / 'online').write_text('0-1\n')
    conf = privileged_probe.CONF
    conf.set_override('sys_root', str(tmp_path / 'sys'), 'host_paths')
    yield conf
    conf.clear_override('sys_root', 'host_paths')


@pytest.mark.parametrize('kw, words', [
    (dict(cases=['stock', 'rt']), "unknown ['rt']"),
    (dict(cpus=[0, 2]), 'cpus [2] are not online; online: [0, 1]'),
    (dict(wakes=10 ** 6), 'wakes 1000000'),
    (dict(hogs_per_cpu=100), 'hogs_per_cpu 100'),
    (dict(lsvm_weight=-5), 'lsvm_weight -5'),
])
def test_entrypoint_rechecks_every_argument(sysfs, in_process_privsep,
                                            monkeypatch, kw, words):
    monkeypatch.setattr(wp, 'run', lambda *a, **k: pytest.fail('ran'))
    a = _args(**kw)
    with pytest.raises(wp.ProbeArgError, match=words.replace('[', r'\[')
                       .replace(']', r'\]')):
        privileged_probe.run_wakeup_probe(
            a['cases'], a['cpus'], a['wakes'], a['hogs_per_cpu'],
            a['lsvm_weight'])


def test_entrypoint_uses_the_daemons_cgroup_root(sysfs, in_process_privsep,
                                                 monkeypatch):
    seen = {}

    def fake_run(cases, cpus, **kw):
        seen.update(kw, cases=cases, cpus=cpus)
        return tuple(_r(c, 10, 20) for c in cases)

    monkeypatch.setattr(wp, 'run', fake_run)
    rows = privileged_probe.run_wakeup_probe(['stock', 'slice'], [1, 0],
                                             60, 1, 500)
    assert seen['cgroup_root'] == sysfs.host_paths.cgroup_root
    assert seen['cpus'] == (0, 1) and seen['wakes'] == 60
    assert [r['mechanism'] for r in rows] == ['stock', 'slice']
    assert all(isinstance(r, dict) for r in rows)


def test_client_side_rebuilds_wakeup_probes(sysfs, in_process_privsep,
                                            monkeypatch):
    monkeypatch.setattr(wp, 'run', lambda cases, cpus, **kw: tuple(
        _r(c, 10, 20) for c in cases))
    rows = privileged_probe.probe(sysfs, ['deadline'], [0], wakes=50)
    assert rows == (_r('deadline', 10, 20),)


def _imported(path):
    for node in ast.walk(ast.parse(open(path).read())):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield a.name
        elif isinstance(node, ast.ImportFrom) and node.module:
            for a in node.names:
                yield '%s.%s' % (node.module, a.name)


def test_only_the_driver_and_the_cli_import_the_probe_entrypoint():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.dirname(os.path.abspath(__file__))))))
    users = []
    for base, _, files in os.walk(os.path.join(root, 'iosched', 'host_agent')):
        for f in files:
            path = os.path.join(base, f)
            probe = 'iosched.host_agent.linux.privileged_probe'
            if f.endswith('.py') and probe in set(_imported(path)):
                users.append(os.path.relpath(path, root))
    assert sorted(users) == [
        'iosched/host_agent/cmd/wakeup_probe.py',
        'iosched/host_agent/drivers/libvirt/lsvm_probes.py']


# -- repeats (issue 28) ------------------------------------------------------
@pytest.mark.parametrize('reps, want', [
    ([(10, 200, 150, 0.33), (12, 9000, 150, 0.0), (11, 300, 150, 0.0)],
     (11.0, 300.0, 450, 0.33, (200.0, 9000.0, 300.0))),   # one spell: median
    ([(10, 200, 150, 0.2)], (10.0, 200.0, 150, 0.2, ())),  # one run as is
])
def test_combine_takes_the_median_of_the_repeats(reps, want):
    rows = [model.WakeupProbe('weight', True, p50, p99, n, share=sh)
            for p50, p99, n, sh in reps]
    got = wp_rows.combine(rows)
    assert (got.p50_us, got.p99_us, got.samples, got.share,
            got.p99s_us) == want


def test_combine_keeps_a_refusal():
    rows = [model.WakeupProbe('deadline', True, 1, 2, 3),
            model.WakeupProbe('deadline', False, error='EPERM')]
    assert wp_rows.combine(rows).error == 'EPERM'


def test_spin_share_is_cpu_over_wall():
    # warm-up 0 -> 0.1 s, then a window of 1 s (a throttled sleeper reads
    # the clock again only when the next period starts: 0.13)
    t = iter([0.0, 0.05, 0.1, 0.13, 0.5, 1.13, 1.13])
    cpu = iter([2.0, 2.25])
    assert wakeup_sleeper.spin_share(1000, clock=lambda: next(t),
                                     cpu=lambda: next(cpu)) == pytest.approx(
        0.25)
    assert wakeup_sleeper.spin_share(0) == 0.0
