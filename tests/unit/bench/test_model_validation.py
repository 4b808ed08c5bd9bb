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
"""bench/model_validation.py: the testbed's results read defensively, the
ratios the table compares, the agent's reservation, --kernel-set, and a
short run end to end.
"""

import json

import pytest

from bench import model_fit
from bench import model_validation as mv


def pred(p50, p99):
    return {'pred_rtt_p50_us': p50, 'pred_rtt_p99_us': p99}


def test_ratios_to_stock_and_idle_sim_and_real():
    rows = {'idle': pred(500, 1000), 'stock': pred(1000, 8000),
            'weight': pred(500, 2000)}
    real = {'idle': {'rtt_p50_us': 400.0, 'rtt_p99_us': 1000.0},
            'stock': {'rtt_p50_us': 800.0, 'rtt_p99_us': 5000.0},
            'weight': {'rtt_p50_us': 400.0, 'rtt_p99_us': 2500.0}}
    r = mv.ratios(rows, real)['weight']
    assert r == {'ratio_p50': 1.25, 'ratio_p99': 0.8,
                 'sim_p50_over_stock': 0.5, 'sim_p99_over_stock': 0.25,
                 'real_p50_over_stock': 0.5, 'real_p99_over_stock': 0.5,
                 'sim_p99_over_idle': 2.0, 'real_p99_over_idle': 2.5}
    # no real phase: only the simulated ratios
    r = mv.ratios(rows, {})['weight']
    assert r['ratio_p99'] is None and r['real_p99_over_stock'] is None
    assert r['sim_p99_over_stock'] == 0.25


@pytest.mark.parametrize('content,phases,why', [
    (None, [], 'no file'),
    ('{not json', [], 'unreadable'),
    ('[1, 2]', [], 'no entry for k = 1'),
    ('"x"', [], 'not a JSON object'),
    ('{"stock": {"rtt_p50_us": 0, "rtt_p99_us": 5}}', [], 'no phase'),
    ('{"stock": {"rtt_p50_us": 500, "rtt_p99_us": 5000, "cpu_share": 3},'
     ' "weight": {"rtt_p50_us": "x"}}', ['stock'], ''),
])
def test_load_real_is_defensive(tmp_path, content, phases, why):
    path = str(tmp_path / 'testbed_lsvm.json')
    if content is not None:
        with open(path, 'w') as fh:
            fh.write(content)
    real, reason = mv.load_real(path)
    assert sorted(real) == phases
    assert why in reason
    for r in real.values():
        assert r['cpu_share'] == {}


@pytest.mark.parametrize('argv,runtime,period', [
    # the testbed's second run: 175 us per activation -> Q = T_m
    ([], 1000, 4000),
    (['--io-runtime-us', '200'], 1000, 2400),           # the first run's
    (['--activation-us', '600'], 2500, 7000),           # 4 x 600 -> 2500
    (['--activation-us', '600', '--t-m-us', '3000'], 3000, 8000),
])
def test_the_agents_reservation(argv, runtime, period):
    dl = mv.reservation(mv.parse(argv))
    assert (dl['runtime_us'], dl['deadline_us'], dl['period_us']) == (
        runtime, period, period)


@pytest.mark.parametrize('sets,field,value', [
    (['preempt_short=false'], 'preempt_short', False),
    (['hz=1000'], 'hz', 1000),
    (['idle_exit_us=0', 'protect_min_slice=False'], 'protect_min_slice',
     False),
])
def test_kernel_set(sets, field, value):
    argv = [x for s in sets for x in ('--kernel-set', s)]
    k = mv.parse(argv).kernel_spec
    assert getattr(k, field) == value
    assert k.name == 'linux-6.18-hz250+set'


@pytest.mark.parametrize('item', ['nope=1', 'hz', 'name=x',
                                  'preempt_short=maybe', 'hz=fast',
                                  'hz=0'])
def test_kernel_set_refuses_bad_items(item, capsys):
    with pytest.raises(SystemExit):
        mv.parse(['--kernel-set', item])
    err = capsys.readouterr().err
    assert '--kernel-set' in err or 'KernelSpec.hz' in err


def test_short_run_writes_the_table(tmp_path, capsys):
    real = {ph: {'rtt_p50_us': 500.0 + i, 'rtt_p99_us': 3000.0 + i,
                 'cpu_share': {'lsvm': 0.01}}
            for i, ph in enumerate(mv.PHASES)}
    path = tmp_path / 'real.json'
    path.write_text(json.dumps(real))
    md = tmp_path / 'table.md'
    assert mv.main(['--seconds', '0.5', '--burst-jitter', '0', '--real',
                    str(path), '-o', str(tmp_path), '--markdown',
                    str(md)]) == 0
    out = json.loads((tmp_path / 'model_validation.json').read_text())
    assert out['burst_us'] == 200                      # 0.01 x 1e6 / 50
    assert out['phases']['idle']['ratio_p50'] == 1.0   # the path constant
    assert set(out['phases']) == set(mv.PHASES)
    lines = md.read_text().splitlines()
    assert lines[0].startswith('| phase | sim p50')
    assert len(lines) == 2 + len(mv.PHASES)
    assert 'deadline phase: runtime 1000 us' in capsys.readouterr().out


# -- out of sample: the fit frozen, the target's setup, the misses ---------

@pytest.mark.parametrize(
    'phase,lsvms,root_load,group,want', [
        # nothing outside machine on the pCPU: the weights inside it
        ('stock', ('lsvm',), False, 'machine',
         {'lsvm': 100, 'cpu1': 100, 'cpu2': 100, 'cpu3': 100}),
        ('weight', ('lsvm',), False, 'machine',
         {'lsvm': 10000, 'cpu1': 100, 'cpu2': 100, 'cpu3': 100}),
        # load at the top level: machine's 100 split among its members
        ('stock', ('lsvm',), True, 'machine',
         {'lsvm': 25, 'cpu1': 25, 'cpu2': 25, 'cpu3': 25}),
        ('weight', ('lsvm',), True, 'machine',
         {'lsvm': 97, 'cpu1': 1, 'cpu2': 1, 'cpu3': 1}),
        # a top-level LSVM group competes with machine itself
        ('weight', ('lsvm',), False, 'top',
         {'lsvm': 1000, 'cpu1': 33, 'cpu2': 33, 'cpu3': 33}),
        ('weight', ('lsvm',), True, 'top',
         {'lsvm': 1000, 'cpu1': 33, 'cpu2': 33, 'cpu3': 33}),
        ('slice', ('lsvm',), True, 'top',
         {'lsvm': 25, 'cpu1': 25, 'cpu2': 25, 'cpu3': 25}),
        ('weight', ('lsvm1', 'lsvm2'), False, 'top',
         {'lsvm1': 1000, 'lsvm2': 1000, 'cpu1': 33, 'cpu2': 33,
          'cpu3': 33}),
        ('stock', ('lsvm1', 'lsvm2'), True, 'machine',
         {'lsvm1': 20, 'lsvm2': 20, 'cpu1': 20, 'cpu2': 20, 'cpu3': 20}),
        ('idle', (), True, 'top', {'cpu1': 33, 'cpu2': 33, 'cpu3': 33}),
    ])
def test_flat_weights(phase, lsvms, root_load, group, want):
    assert mv.flat_weights(phase, lsvms, ('cpu1', 'cpu2', 'cpu3'),
                           root_load, group, 10000, 1000) == want


@pytest.mark.parametrize('data,want', [
    ({}, {'outside_load': 0}),
    ([], {'outside_load': 0}),
    ({'config': {'rate': 50, 'host_hogs': 3, 'outside_load': 1,
                 'client': 'fifo', 'shared_cpu': 1}},
     {'rate': 50, 'host_hogs': 3, 'outside_load': 1, 'shared_cpu': 1}),
    ({'config': {'outside_load': True, 'rate': 'x'}}, {'outside_load': 0}),
    # the measurement is not setup
    ({'config': {}, 'idle': {'rtt_p50_us': 5000}}, {'outside_load': 0}),
])
def test_setup_from_run_reads_the_config_only(data, want):
    assert mv.setup_from_run(data) == want


@pytest.mark.parametrize('k,p50,p99', [(2, 150.0, 1500.0), (3, 300.0,
                                                              3000.0)])
def test_load_real_reads_a_density_entry(tmp_path, k, p50, p99):
    data = [{'k': 2, 'stock': {'p50_us': {'lsvm1': 100, 'lsvm2': 200},
                               'p99_us': {'lsvm1': 1000, 'lsvm2': 2000}}},
            {'k': 3, 'stock': {'p50_us': {'a': 300}, 'p99_us': {'a': 3000}},
             'weight': {'p50_us': {}, 'p99_us': {}}}]
    path = tmp_path / 'density.json'
    path.write_text(json.dumps(data))
    real, why = mv.load_real(str(path), k)
    assert (real['stock']['rtt_p50_us'], real['stock']['rtt_p99_us']) == (
        p50, p99)
    assert sorted(real) == ['stock'] and why == ''
    assert 'no entry for k = 4' in mv.load_real(str(path), 4)[1]


@pytest.mark.parametrize('sim,real,want', [
    (1.0, 1.0, False), (1.15, 1.0, False), (0.85, 1.0, False),
    (1.16, 1.0, True), (0.3, 1.0, True), (None, 1.0, None), (1.0, None,
                                                             None)])
def test_miss(sim, real, want):
    assert mv.miss(sim, real) is want


def test_summary_rows_name_the_missed_ratio():
    row = {'sim_p50_over_stock': 0.5, 'real_p50_over_stock': 0.1,
           'sim_p99_over_stock': 0.5, 'real_p99_over_stock': 0.45,
           'ratio_p50': 1.2, 'ratio_p99': 0.8, 'real_rtt_p50_us': 100.0}
    stock = dict(row, sim_p50_over_stock=1.0, real_p50_over_stock=1.0,
                 sim_p99_over_stock=1.0, real_p99_over_stock=1.0)
    unmeasured = dict(row, real_rtt_p50_us=None)
    rows = mv.summary_rows([{'target': 'run', 'phases': {
        'stock': stock, 'weight': row, 'slice': unmeasured}}])
    assert rows == [
        ('run', 'stock', '1.00 (1.00)', '1.00 (1.00)', '1.20', '0.80', '-'),
        ('run', 'weight', '0.50 (0.10)', '0.50 (0.45)', '1.20', '0.80',
         'p50')]


def _fit(**kw):
    fit = {'burst_us': 594, 'burst_jitter': 0.85, 'path_us': 239.0,
           'kernel': 'linux-6.18-hz250', 'source': 'run1.json',
           'source_date': '2026-11-25', 'seed': 1, 'seconds': 50.0,
           'kernel_spec': {
               'name': 'linux-6.18-hz250', 'hz': 250, 'hrtick': False,
               'preempt_short': True, 'protect_min_slice': True,
               'place_lag': True, 'idle_exit_us': 15,
               'timer_slack_us': 50, 'dl_bw_limit': 0.95,
               'cfs_period_us': 100000}}
    fit.update(kw)
    return fit


@pytest.mark.parametrize('change,why', [
    ({'burst_us': 0}, 'burst_us'),
    ({'burst_us': 1.5}, 'burst_us'),
    ({'burst_jitter': 1.2}, 'burst_jitter'),
    ({'path_us': float('nan')}, 'path_us'),
    ({'path_us': True}, 'path_us'),
    ({'kernel_spec': {'hz': 250}}, 'kernel_spec'),
    ({'kernel_spec': None}, 'kernel_spec'),
])
def test_fit_check_refuses(change, why):
    with pytest.raises(ValueError, match=why):
        model_fit.check(_fit(**change))


def test_fit_written_and_read_back(tmp_path):
    path = str(tmp_path / 'fit.json')
    k = mv.parse([]).kernel_spec
    model_fit.write(path, model_fit.build(594, 0.85, 239.04, k, 'run1',
                                          '2026-11-25', 1, 50.0))
    fit = model_fit.read(path)
    assert (fit['burst_us'], fit['path_us']) == (594, 239.0)
    assert model_fit.kernel_of(fit) == k
    del fit['path_us']
    with pytest.raises(ValueError, match='no path_us'):
        model_fit.check(fit)
    with pytest.raises(ValueError, match='unreadable'):
        model_fit.read(str(tmp_path / 'none.json'))


def _run(tmp_path, idle, name):
    real = {ph: {'rtt_p50_us': 500.0, 'rtt_p99_us': 3000.0,
                 'cpu_share': {'lsvm': 0.01}} for ph in mv.PHASES}
    real['idle'] = idle
    real['config'] = {'outside_load': 1}
    path = tmp_path / name
    path.write_text(json.dumps(real))
    return str(path)


def test_with_a_fit_nothing_comes_from_the_target(tmp_path):
    """Two targets alike but for their idle phase: the same prediction,
    the fit's request and path constant, the target's setup.
    """
    fit_path = tmp_path / 'fit.json'
    fit_path.write_text(json.dumps(_fit(burst_us=300, burst_jitter=0.5,
                                        path_us=111.0)))
    a = _run(tmp_path, {'rtt_p50_us': 700.0, 'rtt_p99_us': 2000.0,
                        'cpu_share': {'lsvm': 0.03}}, 'a.json')
    b = _run(tmp_path, {'rtt_p50_us': 9000.0, 'rtt_p99_us': 40000.0,
                        'cpu_share': {'lsvm': 0.09}}, 'b.json')
    assert mv.main(['--seconds', '0.3', '--fit', str(fit_path), '--real', a,
                    '--real', b, '-o', str(tmp_path)]) == 0
    outs = json.loads((tmp_path / 'model_validation.json').read_text())[
        'targets']
    pred = [{ph: (r['pred_rtt_p50_us'], r['pred_rtt_p99_us'])
             for ph, r in o['phases'].items()} for o in outs]
    assert pred[0] == pred[1]
    for o in outs:
        assert (o['burst_us'], o['burst_jitter'], o['path_us']) == (
            300, 0.5, 111.0)
        assert o['config']['outside_load'] == 1
    # the real columns do differ
    assert outs[0]['phases']['idle']['real_rtt_p50_us'] == 700.0
    assert outs[1]['phases']['idle']['real_rtt_p50_us'] == 9000.0


@pytest.mark.parametrize('argv', [
    ['--write-fit', 'f.json'],
    ['--write-fit', 'f.json', '--real', 'a', '--real', 'b'],
    ['--write-fit', 'f.json', '--real', 'a', '--fit', 'g.json'],
    ['--outside-load', '-1'], ['--lsvms', '0'], ['--other-weight', '0'],
    ['--fit', 'f.json', '--burst-us', '300'],
    ['--fit', 'f.json', '--kernel-set', 'hz=1000'],
])
def test_parse_refuses(argv):
    with pytest.raises(SystemExit):
        mv.parse(argv)


@pytest.mark.parametrize('hogs,outside,autogroup,want', [
    (3, 1, False, 100), (3, 1, True, 25), (3, 0, True, 33), (0, 0, True, 100),
    (200, 0, True, 1)])
def test_loop_weight(hogs, outside, autogroup, want):
    assert mv.loop_weight(hogs, outside, autogroup) == want


@pytest.mark.parametrize('content,lsvms,want', [
    ('[{"k": 2}, {"k": 4}, {"k": "x"}, 3]', None, [2, 4]),
    ('[{"k": 2}, {"k": 4}]', 3, [3]),
    ('{"stock": {}}', None, [1]),
    (None, None, [1]),
])
def test_targets_one_per_density(tmp_path, content, lsvms, want):
    path = tmp_path / 't.json'
    if content is not None:
        path.write_text(content)
    assert mv.targets([str(path)], lsvms) == [(str(path), k) for k in want]
