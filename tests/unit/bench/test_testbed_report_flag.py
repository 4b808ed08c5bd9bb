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
"""``--report FILE`` of the ISACS and vTurbo testbed benches: a result
of the shape the bench writes, read back, judged and printed without
running anything.
"""

import json

from bench import testbed_isacs as isacs
from bench import testbed_vturbo as vturbo


def arm(names, p50, p99, other=None):
    return {'rtt_p50_us': p50, 'rtt_p99_us': p99,
            'burn_iter_per_s': {n: 1e6 for n in names},
            'cpu_share': {n: 0.25 for n in names},
            'qemu_other_share': {n: other or 0.01 for n in names},
            'rounds_p50_us': [p50], 'rounds_p99_us': [p99],
            'rounds_guests_cpu_total': [1.0]}


def write(tmp_path, res):
    path = tmp_path / 'res.json'
    path.write_text(json.dumps(res))
    return str(path)


def test_vturbo_report(tmp_path, capsys):
    names = (vturbo.LSVM,) + vturbo.BURNERS
    pooled = {'stock': arm(names, 1000, 8000),
              'agent': arm(names, 800, 6000, other=0.05)}
    res = {'args': {'regular_cpu': 1, 'turbo_cpu': 0, 'rounds': 1,
                    'seconds': 4, 'rate': 50, 'burst_us': 200},
           'arms': ['stock', 'agent'], 'pooled': pooled,
           'ratios': {'agent': vturbo.summarize(
               pooled['agent'], pooled['stock'], [pooled['agent']],
               [pooled['stock']])},
           'charge': vturbo.charge_summary(
               [{'turbo_used': 0.05, 'window_s': 1.0, 'binds': False,
                 'regular_used': 0.2, 'regular_allowance': 0.3,
                 'fair_share': 0.25, 'weight': 100}],
               [dict(pooled['agent'], wall_s=4.0)]),
           'knobs': {}, 'agent_cpu_ms_per_tick': 2.0}
    assert vturbo.main(['--report', write(tmp_path, res)]) == 0
    out = capsys.readouterr().out
    assert 'target LSVM p99 <= 0.90 x stock: met (0.75' in out
    assert 'target turbo CPU charged to the LSVM' in out


def test_isacs_report(tmp_path, capsys):
    names = (isacs.HYBRID,) + isacs.BURNERS
    pooled = {'stock': arm(names, 1000, 8000),
              'agent': arm(names, 950, 7900)}
    turns = {'turns': 10, 'turn_ms': 0.5, 'wait_per_turn_ms': 1.5}
    res = {'args': {'duty_pct': 50, 'shared_cpu': 1, 'rounds': 1,
                    'seconds': 4, 'rate': 50, 'burst_us': 200},
           'arms': ['stock', 'agent'], 'pooled': pooled,
           'ratios': {'agent': isacs.summarize(
               pooled['agent'], pooled['stock'], [pooled['agent']],
               [pooled['stock']])},
           'agent_view': {isacs.HYBRID: {
               'ticks': 10, 'io_ticks': 9, 'io_sources': {'requests': 10},
               'io_requests_mean': 50.0, 'io_strength_mean': 0.5,
               'ivcredit_mean': 0.2, 'exact': True, 'classes': {},
               'slices_us': {}}},
           'kernel_slices_us': {}, 'kernel_hz': 250,
           'hybrid_turns': {'stock': turns, 'agent': turns},
           'agent_cpu_ms_per_tick': 2.0}
    assert isacs.main(['--report', write(tmp_path, res)]) == 0
    out = capsys.readouterr().out
    assert 'target hybrid seen doing I/O in >= 80% of ticks: met' in out
    assert 'target agent p50 <= 0.90 x stock: NOT met (0.95)' in out
    assert 'reason: the hybrid vCPU is always runnable' in out


def test_vturbo_reason_names_the_turbo_pcpus_load():
    rounds = {'stock': [{'cpu_busy': {'0': 0.5, '1': 1.0},
                         'io_wait_us_per_run': 900.0}],
              'agent': [{'cpu_busy': {'0': 0.98, '1': 1.0},
                         'io_wait_us_per_run': 1200.0},
                        {'cpu_busy': {'0': 0.96, '1': 1.0},
                         'io_wait_us_per_run': 1000.0}]}
    why = vturbo.turbo_reason({'args': {'turbo_cpu': 0}, 'rounds': rounds})
    assert 'the turbo pCPU 0 was 97 % busy in the agent arm (50 % in ' \
        'stock)' in why
    assert 'waited 1100 us per run there against 900.0 us' in why
    assert 'a busy turbo pCPU gives them no shorter wait' in why
    rounds['agent'] = [{'cpu_busy': {'0': 0.2}, 'io_wait_us_per_run': 50.0,
                        'vcpu_wait_us_per_run': 4000.0}]
    rounds['stock'][0]['vcpu_wait_us_per_run'] = 3800.0
    why = vturbo.turbo_reason({'args': {'turbo_cpu': 0}, 'rounds': rounds})
    assert 'no shorter wait' not in why
    assert "its vCPU waited 4000 us per run (stock 3800): the tail is " \
        "the vCPU's" in why
    assert 'not recorded' in vturbo.turbo_reason({'args': {}, 'rounds': {}})


def test_cpu_busy_and_waits_are_differences():
    from bench import testbed_common as tc
    assert tc.cpu_busy({0: (10, 100), 1: (0, 100)},
                       {0: (60, 200), 1: (100, 200)}) == {'0': 0.5,
                                                          '1': 1.0}
    assert tc.wait_us_per_run((1000, 10), (5000, 14)) == 1.0
    assert tc.wait_us_per_run((1000, 10), (5000, 10)) is None
