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
"""The LSVM density bench's verdicts: the reported bound, or the
refusal, against what was measured (bench/testbed_lsvm_density_report.py),
on made-up densities and on the recorded run in docs/data.
"""

import os

import pytest

from bench import target_verdict as tv
from bench import testbed_lsvm_density_report as rep

DATA = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'docs',
                    'data')


def density(k, worst_ms, facts, idle_ms=5.0):
    """One density's results: the idle floor, stock and the ``facts``
    mechanisms with their worst LSVM p99 (``worst_ms``).
    """
    def arm(ms):
        return {'p99_us': {'lsvm1': ms * 1000.0}, 'worst_p99_us': ms * 1000,
                'excess_p99_us': (ms - idle_ms) * 1000, 'cpu_share': {
                    'lsvm1': 0.02}, 'burn_over_stock': 1.0}
    r = {'k': k, 'selftest': {'auto': 'weight', 'w_us': 50},
         'agent': facts,
         'idle': {'p99_us': {'lsvm1': idle_ms * 1000.0}},
         'stock': arm(10.0)}
    for mech, ms in worst_ms.items():
        r[mech] = arm(ms)
    return r


def facts(bound, refused, seen_us=40.0, wakes=3000, **kw):
    return dict({'bound_ms': bound, 'refused': refused, 'seen_us': seen_us,
                 'seen_wakes': wakes}, **kw)


@pytest.mark.parametrize('k,worst,f,met,words', [
    # admitted, 1.5 ms over the floor, 2 ms promised
    (2, 6.5, facts(2.0, 0), True, ['admitted', 'excess 1.50 ms']),
    # admitted, 7 ms over a 1 ms bound; the vCPUs waited 0.04 ms of it
    (2, 12.0, facts(1.0, 0), False, [
        '6.00 ms over the bound (7.0x)', 'wake-to-run p99 was 0.04 ms '
        '(3000 wakes): 6.96 ms']),
    # refused by all, and the excess was over L: honest
    (3, 12.0, facts(4.0, 3), True, ['refused (3 of 3', 'excess p99 > L 2 '
                                    'ms (the rr flavor\'s; L not recorded)',
                                    'excess 7.00 ms']),
    # refused, but 1 ms over the floor: the 2 ms flavor would have held
    (3, 6.0, facts(4.0, 3), False, ['the flavor would have held']),
    # the L the agent recorded is used over the flavor's
    (3, 9.0, facts(4.0, 3, latency_ms=5.0), False, [
        'excess p99 > L 5 ms: NOT met']),
    # some refused: the admitted ones were promised the bound
    (3, 8.0, facts(2.0, 1), False, ['refused 1 of 3', '<= reported bound '
                                    '2.00 ms']),
    # no seen W recorded (a run from before the tracer)
    (2, 12.0, facts(1.0, 0, wakes=0), False, [
        'wake-to-run delays not recorded']),
])
def test_judge_k(k, worst, f, met, words):
    [line] = rep.judge_k(density(k, {'weight': worst}, {'weight': f}))
    assert line.startswith('target k=%d weight' % k)
    assert (': met (' in line) is met
    for w in words:
        assert w in line


def test_a_mechanism_without_facts_is_not_judged():
    [line] = rep.judge_k(density(2, {'deadline': 9.0}, {}))
    assert line.endswith('not judged (bound or p99 not recorded)')


# The recorded run (docs/data/testbed_lsvm_density_seen_1129.json).
@pytest.mark.parametrize('k,mech,met,words', [
    (2, 'deadline', False, ['bound 1.03 ms', 'excess 12.16 ms',
                            'wake-to-run p99 was 0.04 ms (4115 wakes)']),
    (2, 'weight', True, ['refused (2 of 2', 'excess 14.77 ms']),
    (3, 'deadline', True, ['reported bound 6.75 ms', 'excess 11.24 ms']),
    (3, 'weight', True, ['excess 13.46 ms']),
    (4, 'deadline', True, ['reported bound 10.94 ms', 'excess 9.04 ms']),
    (4, 'weight', True, ['excess 13.66 ms']),
])
def test_recorded_run(k, mech, met, words):
    results = tv.load(os.path.join(DATA,
                                   'testbed_lsvm_density_seen_1129.json'))
    lines = [x for x in rep.judge(results)
             if x.startswith('target k=%d %s' % (k, mech))]
    assert len(lines) == 1
    assert (': met (' in lines[0]) is met
    for w in words:
        assert w in lines[0]


def test_report_prints_a_recorded_json(capsys):
    from bench import testbed_lsvm_density
    path = os.path.join(DATA, 'testbed_lsvm_density_seen_1129.json')
    assert testbed_lsvm_density.main(['--report', path]) == 0
    out = capsys.readouterr().out
    assert 'idle floor p99 5093 us' in out
    assert 'target k=2 deadline admitted' in out
