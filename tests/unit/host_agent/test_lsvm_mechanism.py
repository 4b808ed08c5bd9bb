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
                     lsvm_weight=10000):
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
