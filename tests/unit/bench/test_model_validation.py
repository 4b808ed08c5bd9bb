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
    ('[1, 2]', [], 'not a JSON object'),
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
