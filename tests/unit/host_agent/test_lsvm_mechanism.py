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
"""The choice of an LSVM mechanism from the self-test (table-driven), and
the agent's start-up resolution with a driver that has a self-test.
"""

import pytest

from iosched.host_agent import lsvm_mechanism
from iosched.host_agent import model
from tests import fixtures


def row(mech, ok=True, p99=0.0, error=''):
    return model.WakeupProbe(mech, ok, p99 / 2, p99, 300, error)


THIS_KERNEL = (row('stock', p99=3900), row('deadline', p99=13),
               row('weight', p99=63), row('slice', p99=4800))
NO_DL = (row('stock', p99=3900), row('deadline', False, error='EPERM'),
         row('weight', p99=63), row('slice', p99=4800))

# name, wanted, rows, target, want (mechanism, p99), problem?
CASES = [
    ('auto on this kernel: weight (measured best on real guests)', 'auto',
     THIS_KERNEL, 500, ('weight', 63), False),
    ('auto without deadline: weight', 'auto', NO_DL, 500, ('weight', 63),
     False),
    ('auto, weight beside busy VMs misses: deadline', 'auto',
     (row('stock', p99=3900), row('deadline', p99=60),
      row('weight', p99=12000), row('slice', p99=4800)), 500,
     ('deadline', 60), False),
    ('auto, nothing within target: the lowest p99, with a warning', 'auto',
     NO_DL, 50, ('weight', 63), True),
    ('auto, tie on p99: the preferred order', 'auto',
     (row('deadline', p99=900), row('weight', p99=900)), 100,
     ('weight', 900), True),
    ('auto, no rows: slice, unmeasured', 'auto', (), 500, ('slice', 0),
     True),
    ('explicit weight', 'weight', THIS_KERNEL, 500, ('weight', 63), False),
    ('explicit slice keeps its measured tick', 'slice', THIS_KERNEL, 500,
     ('slice', 4800), False),
    ('explicit deadline refused: slice', 'deadline', NO_DL, 500,
     ('slice', 4800), True),
    ('explicit, not measured', 'deadline', (), 500, ('deadline', 0), False),
]


@pytest.mark.parametrize('name,wanted,rows,target,want,problem', CASES,
                         ids=[c[0] for c in CASES])
def test_choose(name, wanted, rows, target, want, problem):
    mech, p99, why = lsvm_mechanism.choose(wanted, rows, target)
    assert (mech, p99) == want
    assert bool(why) is problem


def test_table_has_ratio_to_stock():
    lines = lsvm_mechanism.format_table(NO_DL)
    assert lines[0].split()[:4] == ['case', 'ok', 'p50', 'us']
    assert lines[1].split()[4] == '1.000'            # stock
    assert lines[2].split()[1] == 'no' and 'EPERM' in lines[2]
    assert lines[3].split()[4] == '%.3f' % (63 / 3900.0)   # weight


class ProbingDriver(object):
    """A driver whose self-test answers with the given rows."""
    name = 'probing'

    def __init__(self, rows, state):
        self.rows, self.state, self.asked = rows, state, []

    def wakeup_probe(self, cases, wakes=300, hogs_per_cpu=2,
                     lsvm_weight=10000, repeats=1, share_ms=0):
        self.asked.append(tuple(cases))
        return tuple(r for r in self.rows if r.mechanism in cases)

    def deadline_state(self):
        return self.state


def test_resolve_runs_the_self_test_and_reads_the_admission_figures():
    conf = fixtures.CONF
    state = model.DeadlineState(cpus=(0, 1), limit=1.9, foreign=0.1,
                                reserved=0.0)
    drv = ProbingDriver(THIS_KERNEL, state)
    sched = lsvm_mechanism.resolve(conf, drv)
    assert drv.asked == [('stock', 'deadline', 'weight', 'slice')]
    assert (sched.mechanism, sched.wakeup_p99_us) == ('weight', 63)
    assert sched.dl_cpus == ()          # figures read for deadline only
    drv = ProbingDriver((row('stock', p99=3900), row('deadline', p99=60),
                         row('weight', p99=9000)), state)
    sched = lsvm_mechanism.resolve(conf, drv)
    assert (sched.mechanism, sched.wakeup_p99_us) == ('deadline', 60)
    assert (sched.dl_cpus, sched.dl_bw_limit, sched.dl_bw_foreign) == (
        (0, 1), 1.9, 0.1)
    assert len(sched.probes) == 3


def test_resolve_without_a_self_test_is_slice_unmeasured():
    sched = lsvm_mechanism.resolve(fixtures.CONF, object())
    assert sched == model.HostSched()


def test_refresh_keeps_the_choice_and_updates_the_figures():
    drv = ProbingDriver((), model.DeadlineState((0, 1), 1.9, 0.5, 0.2))
    s = model.HostSched(mechanism='deadline', wakeup_p99_us=13)
    s2 = lsvm_mechanism.refresh_deadline(s, drv)
    assert (s2.mechanism, s2.wakeup_p99_us, s2.dl_bw_foreign) == (
        'deadline', 13, 0.5)
    assert lsvm_mechanism.refresh_deadline(model.HostSched(), drv) == \
        model.HostSched()


# -- issue 28: the share limit, the measurement named, re-tests ------------
def _row(mech, p99, share=0.0, ok=True):
    return model.WakeupProbe(mech, ok, 10.0, p99, 450, share=share)


@pytest.mark.parametrize('rows, fair, want', [
    # weight within the target and the share limit: weight
    ([('stock', 3900, 0.33), ('deadline', 60, 0.15), ('weight', 90, 0.33),
      ('slice', 3900, 0.33)], 1 / 3.0, 'weight'),
    # weight's cap did not hold (0.6 of a CPU): the next, deadline
    ([('stock', 3900, 0.33), ('deadline', 60, 0.15), ('weight', 90, 0.60),
      ('slice', 3900, 0.33)], 1 / 3.0, 'deadline'),
    # 5 % over the limit is tolerated
    ([('stock', 3900, 0.30), ('weight', 90, 0.349)], 1 / 3.0, 'weight'),
    # stock gives more than the limit: its share is the limit
    ([('stock', 3900, 0.5), ('weight', 90, 0.5)], 1 / 3.0, 'weight'),
    # share not measured (0): the latency alone decides
    ([('stock', 3900), ('deadline', 60), ('weight', 90)], 1 / 3.0,
     'weight'),
    # none within the target: the lowest p99 among those within the share
    ([('stock', 3900, 0.33), ('deadline', 900, 0.15),
      ('weight', 700, 0.9)], 1 / 3.0, 'deadline'),
])
def test_auto_keeps_the_share_within_the_fair_limit(rows, fair, want):
    probes = tuple(_row(*r) for r in rows)
    mech, _, _ = lsvm_mechanism.choose('auto', probes, 500, fair)
    assert mech == want


def test_a_choice_over_the_share_names_it():
    probes = (_row('stock', 3900, 0.33), _row('deadline', 900, 0.15),
              _row('weight', 700, 0.9))
    _, _, problem = lsvm_mechanism.choose('auto', probes, 500, 1 / 3.0)
    assert 'weight (share 0.900 > limit 0.333)' in problem


def test_describe_names_when_where_and_the_repeats():
    row = model.WakeupProbe('weight', True, 20.0, 204.0, 450,
                            p99s_us=(204.0, 28.0, 310.0))
    g = fixtures.CONF['host_agent_policy.vslicer']
    text = lsvm_mechanism.describe((row,), 'weight', 0.0, 4, 3.25, (1,), g)
    assert text == (
        'self-test 1970-01-01T00:00:00Z: weight p99 204us (median of '
        '204/28/310, 450 wakes) on pCPUs 1 among %d busy loop(s) per pCPU, '
        'beside 4 running guest(s), load 3.25' % g.selftest_hogs_per_cpu)
    assert 'deadline not measured' in lsvm_mechanism.describe(
        (row,), 'deadline', 0.0, None, None, (), g)


class _G(object):
    mechanism = 'auto'
    selftest_retest_min_interval = 600
    selftest_retest_load_delta = 1.0
    selftest_retest_interval = 0


@pytest.mark.parametrize('tested, now, guests, load, over, want', [
    ((0.0, 4, 2.0), 300.0, 5, 2.0, {}, False),      # too soon
    ((0.0, 4, 2.0), 700.0, 5, 2.0, {}, True),       # a guest more
    ((0.0, 4, 2.0), 700.0, 4, 3.1, {}, True),       # load +1.1
    ((0.0, 4, 2.0), 700.0, 4, 2.9, {}, False),      # load +0.9
    ((0.0, 4, 2.0), 700.0, 4, None, {}, False),     # load unknown
    ((0.0, 4, 2.0), 3700.0, 4, 2.0,
     {'selftest_retest_interval': 3600}, True),     # periodic
    ((0.0, 4, 2.0), 3500.0, 4, 2.0,
     {'selftest_retest_interval': 3600}, False),
    ((0.0, 4, 2.0), 9000.0, 5, 9.0, {'mechanism': 'weight'}, False),
    ((None, None, None), 9000.0, 5, 9.0, {}, False),  # never tested
])
def test_should_retest(tested, now, guests, load, over, want):
    g = _G()
    for k, v in over.items():
        setattr(g, k, v)
    sched = model.HostSched(mechanism='weight', tested_at=tested[0],
                            tested_guests=tested[1], tested_load=tested[2])
    got, why = lsvm_mechanism.should_retest(sched, now, guests, load, g)
    assert got is want and bool(why) is want
