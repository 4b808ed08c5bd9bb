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
"""The LSVM testbed bench's pooling, targets and table (pure)."""

import pytest

from bench import testbed_common
from bench import testbed_lsvm_report as rep
from iosched.contract import knob_kinds
from iosched.host_agent import model


def phase(rtts, shares, burn):
    return {'rtts': rtts, 'cpu_share': shares, 'burn_iter_per_s': burn,
            'rtt_p50_us': testbed_common.rounded_us(rtts, 0.5),
            'rtt_p99_us': testbed_common.rounded_us(rtts, 0.99)}


def results():
    s = {'lsvm': 0.04, 'cpu1': 0.32, 'cpu2': 0.32}
    b = {'cpu1': 100, 'cpu2': 100}
    r = {'idle': testbed_common.pool([phase([1000] * 99 + [2000], s, b)]),
         'stock': testbed_common.pool([phase([2000] * 98 + [8000] * 2, s, b),
                            phase([3000] * 100, s, b)]),
         'deadline': testbed_common.pool([phase([1100] * 99 + [2500], dict(
             s, cpu1=0.31), {'cpu1': 99, 'cpu2': 100})]),
         'slice': testbed_common.pool([phase([2500] * 98 + [9000] * 2, s, b)]),
         'selftest': {'seconds': 3.2, 'auto': 'deadline'}}
    r['targets'] = rep.targets(r, ['deadline', 'slice'])
    return r


def test_pool_and_figures():
    r = results()
    assert r['stock']['requests'] == 200
    assert r['stock']['rounds_p50_us'] == [2000, 3000]
    f = rep.figures(r, 'deadline')
    assert f['p99_over_idle'] == 1.1            # 1100 / 1000 (nearest rank)
    assert f['burn_over_stock'] == 0.995
    assert f['share_deviation'] == round(1 - 0.31 / 0.32, 3)
    # cpu1 lost 3 %: inside the band (the limit is 1 / 3 guests)
    assert f['share_excess'] == round(1 - 0.31 / 0.32, 3)


def test_share_excess_is_a_band_not_a_deviation():
    stock = {'cpu_share': {'lsvm': 0.04, 'cpu1': 0.30, 'cpu2': 0.30}}
    gained = {'cpu_share': {'lsvm': 0.04, 'cpu1': 0.33, 'cpu2': 0.33}}
    assert rep.share_deviation(gained, stock) == 0.1
    assert rep.worst_share_excess(gained, stock) == -0.01  # inside
    over = {'cpu_share': {'lsvm': 0.04, 'cpu1': 0.36, 'cpu2': 0.30}}
    assert rep.worst_share_excess(over, stock) == round(0.36 * 3 - 1, 3)
    lost = {'cpu_share': {'lsvm': 0.04, 'cpu1': 0.27, 'cpu2': 0.30}}
    assert rep.worst_share_excess(lost, stock) == 0.1
    # the LSVM using less for the same requests is not a loss
    quick = {'cpu_share': {'lsvm': 0.03, 'cpu1': 0.30, 'cpu2': 0.30}}
    assert rep.worst_share_excess(quick, stock) == 0.0


def test_targets_met_and_not_met():
    t = results()['targets']
    assert t['deadline']['p99_over_idle']['met']
    assert t['deadline']['burn_over_stock']['met']
    assert not t['slice']['p99_over_stock']['met']
    assert t['selftest_seconds']['met']


def test_autos_choice_is_judged_on_all_its_targets():
    r = results()
    t = r['targets']
    assert t['auto']['value'] == 'deadline'
    assert t['auto']['met'] is all(v['met'] for v in t['deadline'].values())
    r['selftest']['auto'] = 'slice'
    t = rep.targets(r, ['deadline', 'slice'])
    assert t['auto'] == {'value': 'slice', 'target': 'all five met',
                         'met': False}
    assert "auto's choice slice: NOT all targets met" in '\n'.join(
        rep.table(dict(r, targets=t), ['deadline', 'slice']))


def test_table_names_every_phase_and_target():
    lines = rep.table(results(), ['deadline', 'slice'])
    text = '\n'.join(lines)
    for word in ('idle', 'stock', 'deadline', 'slice', 'NOT met',
                 'auto picks deadline'):
        assert word in text


def test_share_limit_from_decisions():
    d = model.Decision(knob_kinds.VCPU_DEADLINE, 'u', '0', None,
                       {'runtime_us': 1000, 'deadline_us': 2000,
                        'period_us': 4000}, 'r', '', 1.0)
    assert rep.share_limit({d.key: d}, 'u') == 0.25
    c = model.Decision(knob_kinds.VM_CAP, 'u', '', None, 0.5, 'r', '', 1.0)
    assert rep.share_limit({c.key: c}, 'u') == 0.5
    g = model.Decision(knob_kinds.LSVM_GROUP, 'u', '', None,
                       {'weight': 10000, 'cap': 0.25}, 'r', '', 1.0)
    assert rep.share_limit({g.key: g}, 'u') == 0.25    # its own group
    assert rep.share_limit({}, 'u') is None


KNOBS = {'policy': 'other', 'voluntary_ctxt_switches': 50,
         'nonvoluntary_ctxt_switches': 2,
         'groups': [{'cgroup': '/iosched-lsvm/u', 'weight': 10000,
                     'cap': 0.25, 'nr_throttled': 40, 'throttled_ms': 900.0},
                    {'cgroup': '/', 'weight': 100, 'cap': None,
                     'nr_throttled': 0, 'throttled_ms': 0.0}]}


@pytest.mark.parametrize('weight_shares, starved', [
    ([0.05, 0.048, 0.052], []),                     # none below half
    ([0.013, 0.05, 0.049], [('weight', 0, 0.013)]),  # run 4's first round
    ([0.05, 0.02, 0.024], [('weight', 1, 0.02), ('weight', 2, 0.024)]),
])
def test_starved_rounds_are_named_with_their_knobs(weight_shares, starved):
    r = {'stock': {'rounds_cpu_share': [{'lsvm': 0.05}, {'lsvm': 0.052},
                                        {'lsvm': 0.049}]},
         'weight': {'rounds_cpu_share': [{'lsvm': v} for v in weight_shares],
                    'rounds_p50_us': [900.0] * 3,
                    'rounds_lsvm_knobs': [KNOBS] * 3}}
    got = rep.starved_rounds(r, ['weight'])
    assert [g[:3] for g in got] == starved
    assert all(g[4] is KNOBS for g in got)


def test_a_starved_round_prints_where_it_competed():
    r = results()
    r['stock']['rounds_cpu_share'] = [{'lsvm': 0.05}]
    r['deadline'].update(rounds_cpu_share=[{'lsvm': 0.01}],
                         rounds_lsvm_knobs=[KNOBS])
    text = '\n'.join(rep.table(r, ['deadline', 'slice']))
    assert ('STARVED: deadline round 1, LSVM share 0.010' in text
            and 'cap=0.25 throttled 40 x (900.0 ms)' in text), text


def test_transfer_names_who_pays():
    r = {'stock': {'rounds_guests_cpu_total': [0.4, 0.4],
                   'loops_share': {'host_hogs': 0.3, 'outside': 0.1}},
         'weight': {'rounds_guests_cpu_total': [0.46, 0.46],
                    'loops_share': {'host_hogs': 0.25, 'outside': 0.09}},
         'slice': {}}
    assert rep.transfer(r, ['weight', 'slice']) == {'weight': (1.15, 0.85)}
    full = results()
    full['stock'].update(r['stock'])
    full['deadline'].update(r['weight'])
    assert 'deadline 1.15 / 0.85' in '\n'.join(rep.table(full, ['deadline']))
