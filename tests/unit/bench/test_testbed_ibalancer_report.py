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
"""The I-Balancer testbed bench's verdicts and their measured reasons
(bench/testbed_ibalancer_report.py), on made-up runs and on the recorded
ones in docs/data.
"""

import os

import pytest

from bench import target_verdict as tv
from bench import testbed_ibalancer_report as rep

DATA = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'docs',
                    'data')


def run(stock_iops, agent_iops, caps=None, ticks=(), fields=True):
    """One round per element of the two lists of {vm: iops}."""
    def rnd(iops, cap):
        vals = list(iops.values())
        m = sum(vals) / len(vals)
        sd = (sum((v - m) ** 2 for v in vals) / len(vals)) ** 0.5
        return {'iops': iops, 'spread': round(sd / m, 4),
                'aggregate_iops': sum(vals),
                'mean_cap_iops': {n: (cap or {}).get(n) for n in rep.VMS}}
    rounds = {'stock': [rnd(i, None) for i in stock_iops],
              'agent': [rnd(i, caps) for i in agent_iops]}

    def ratios(key):
        per = [round(a[key] / s[key], 3)
               for a, s in zip(rounds['agent'], rounds['stock'])]
        return {'per_round': per, 'median': sorted(per)[len(per) // 2]}

    def pooled(arm):
        rs = rounds[arm]
        return {'iops': {n: sum(r['iops'][n] for r in rs) / len(rs)
                         for n in rep.VMS},
                'aggregate_mean': sum(r['aggregate_iops'] for r in rs)
                / len(rs)}
    res = {'arms': ['stock', 'agent'], 'per_round': rounds,
           'pooled': {a: pooled(a) for a in rounds},
           'ratios': {'spread': ratios('spread'),
                      'aggregate': ratios('aggregate_iops')},
           'agent_ticks': [{'vcpus': list(t)} for t in ticks]}
    if fields:
        res['agent_tick_fields'] = list(rep.TICK_FIELDS)
    return res


UNEVEN = {'s1': 100, 's2': 100, 'f1': 900, 'f2': 900}
CAPPED = {'s1': 250, 's2': 250, 'f1': 750, 'f2': 750}
EVEN = {'s1': 500, 's2': 500, 'f1': 500, 'f2': 500}
# vm, vcpu, events, pr_ms, vr_pr, en, ei_us, io, delay_us, wakeups
TICKS = [[['f1', 0, 900, 0, 0, 0, 0, True, 200, 400],
          ['f2', 0, 800, 0, 0, 0, 0, True, 250, 400],
          ['s1', 0, 400, 0, 0, 0, 0, True, 0, 100],
          ['s2', 0, 300, 0, 0, 0, 0, True, 0, 100]]]


def test_figures_from_rounds_and_ticks():
    f = rep.figures(run([UNEVEN], [CAPPED], {'f1': 720, 'f2': 710},
                        TICKS))
    assert f['fast_over_stock'] == [750 / 900] * 2
    assert f['fast_caps'] == [720, 710]
    assert f['equal_share'] == 500                  # 2000 / 4
    # events-weighted delay of the fast targets: (900*200 + 800*250)/1700
    assert f['delay_us'] == pytest.approx(380000 / 1700)
    assert f['rd'] == pytest.approx(900 * 380000 / 1700 * 1e-6)
    assert f['rpw_fast'] == [2.25, 2.0] and f['rpw_slow'] == [4.0, 3.0]
    assert f['fast_lost'] == 300 and f['slow_gained'] == 300


def test_old_ticks_without_field_list_have_no_wakeups():
    old = [[row[:9] for row in TICKS[0]]]
    f = rep.figures(run([UNEVEN], [CAPPED], None, old, fields=False))
    assert f['delay_us'] == pytest.approx(380000 / 1700)
    assert f['rpw_fast'] == [None, None]


@pytest.mark.parametrize('agent,spread_met,words', [
    # the agent's own spread 0.5 against stock's 0.8: ratio 0.625
    ([CAPPED], False, ['median 0.625', '0.80 -> 0.50', 'fast guests ran at '
                       '0.83', 'r*d', 'fast 2.0-2.2, slow 3.0-4.0']),
    ([EVEN], True, ['median 0.0']),
])
def test_spread_verdict(agent, spread_met, words):
    lines = rep.judge(run([UNEVEN], agent, {'f1': 720, 'f2': 710}, TICKS))
    spread = lines[0]
    assert spread.startswith('target spread agent/stock <= 0.5')
    assert (': met (' in spread) is spread_met
    assert ('NOT met (measured: ' in spread) is not spread_met
    for w in words:
        assert w in spread


def test_aggregate_not_met_names_what_moved():
    lost = {'s1': 150, 's2': 150, 'f1': 700, 'f2': 700}
    lines = rep.judge(run([UNEVEN], [lost]))
    assert 'NOT met (measured: median 0.85' in lines[1]
    assert 'lost 400 IOPS' in lines[1] and 'gained 100' in lines[1]


def test_missing_ratios_are_not_judged():
    res = run([UNEVEN], [CAPPED])
    del res['ratios']
    assert all('not judged (not recorded)' in x for x in rep.judge(res))


# The recorded runs: the verdict, and the reason names the run's figures.
@pytest.mark.parametrize('name,spread_met,words', [
    ('testbed_ibalancer_req_run1', False, [
        'median 0.678', "own spread stays at 0.33-0.37", '(0.39-0.74)',
        'caps of 613-837 IOPS', 'fast 2.2-2.5, slow 3.9-4.1']),
    ('testbed_ibalancer_req_run2', False, [
        'median 0.521', 'stays at 0.36-0.44', 'fast 2.2, slow 3.6']),
    ('testbed_ibalancer_req_run3', False, [
        'median 0.599', 'stays at 0.35-0.43', 'fast 2.1-2.2, slow 3.6-3.8',
        '200 us at their stock 841 requests/s']),
    ('testbed_ibalancer', False, [
        'median 0.603', 'fast not recorded, slow not recorded']),
    ('testbed_ibalancer_d800', True, ['median 0.082']),
])
def test_recorded_runs(name, spread_met, words):
    res = tv.load(os.path.join(DATA, name + '.json'))
    spread, aggregate = rep.judge(res)
    assert (': met (' in spread) is spread_met
    for w in words:
        assert w in spread
    assert ': met (median 0.9' in aggregate


def test_report_prints_a_recorded_json(capsys):
    from bench import testbed_ibalancer
    path = os.path.join(DATA, 'testbed_ibalancer_req_run2.json')
    assert testbed_ibalancer.main(['--report', path]) == 0
    out = capsys.readouterr().out
    assert 'events: requests' in out
    assert 'target spread agent/stock <= 0.5 (median of rounds): NOT met' \
        in out
