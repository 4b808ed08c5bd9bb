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
"""The VA testbed bench's verdicts and their measured reasons
(bench/testbed_vaio_report.py), on made-up trials and on the recorded
runs in docs/data.
"""

import os

import pytest

from bench import target_verdict as tv
from bench import testbed_vaio_report as rep

DATA = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'docs',
                    'data')


def trial(finish, cpus=None, host=1.5, busy=None, wall=None):
    """A trial: finish times and, with ``cpus``, QEMU CPUs over the
    trial's wall (the makespan).
    """
    t = {'guests': {n: {'finish_s': f} for n, f in finish.items()}}
    if cpus is not None:
        w = wall or max(finish.values())
        t['load'] = {'wall_s': w, 'qemu_cpus': cpus,
                     'qemu_cpus_total': sum(cpus.values()),
                     'host_busy_cpus': host, 'host_cpus': 2,
                     'device_busy': busy if busy is not None
                     else {'loop0': 0.5}}
    return t


@pytest.mark.parametrize('finish,cpus,below,lowest', [
    # vm2 slowest with the lowest CPU rate: 0.2 * 10 / 10 against 0.3
    ({'vm1': 5.0, 'vm2': 10.0, 'vm3': 6.0}, {'vm1': 0.15, 'vm2': 0.2,
                                             'vm3': 0.3}, 1, 1),
    # vm2 slowest, below the fastest, but vm3 lower still
    ({'vm1': 5.0, 'vm2': 10.0, 'vm3': 6.0}, {'vm1': 0.3, 'vm2': 0.3,
                                             'vm3': 0.1}, 1, 0),
    # the slowest had more CPU per second than the fastest
    ({'vm1': 5.0, 'vm2': 10.0}, {'vm1': 0.1, 'vm2': 0.5}, 0, 0),
])
def test_slowest_cpu(finish, cpus, below, lowest):
    got = rep.slowest_cpu([trial(finish, cpus), trial(finish)])
    assert got['trials'] == 1                # the one with a load
    assert (got['below_fastest'], got['lowest']) == (below, lowest)


def test_a_device_named_by_its_path_was_not_read():
    assert rep.device_busy({'/dev/loop0': 0.0, 'vda': 0.5}) == {'vda': 0.5}
    assert rep.device_busy(None) == {}


@pytest.mark.parametrize('host,busy,want', [
    ([1.95, 2.0], [0.3, 0.2], 'CPU'),
    ([1.5, 1.3], [0.8, 0.99], 'device'),
    ([1.5, 1.96], [0.5, 0.99], 'neither'),
    ([1.95, 2.0], None, 'CPU'),
    (None, None, None),
])
def test_bottleneck(host, busy, want):
    trials = [trial({'vm1': 1.0, 'vm2': 1.0}, {'vm1': 0.5, 'vm2': 0.5},
                    host=h, busy={} if busy is None else {'loop0': b})
              for h, b in zip(host or (), busy or [None] * 9)]
    assert rep.bottleneck(rep.load_figures(trials), 'loop0') == want


def result(sd_ratio, tput, stock_trials, agent_trials):
    def summary(trials, ratio=None, per=None):
        return {'sd_s_mean': 0.5 * (ratio or 1), 'trials': len(trials),
                'unfair_trials': 1, 'sd_ratio_to_stock': ratio or 1.0,
                'throughput_ratio_to_stock': per,
                'throughput_ratio_per_trial': {'median': per,
                                               'per_round': [per]}}
    return {'arms': ['stock', 'agent'], 'device': {'loop': '/dev/loop0'},
            'per_trial': {'stock': stock_trials, 'agent': agent_trials},
            'summary': {'stock': summary(stock_trials, 1.0, 1.0),
                        'agent': summary(agent_trials, sd_ratio, tput)}}


CPU_TRIALS = [trial({'vm1': 10.0, 'vm2': 12.0}, {'vm1': 0.5, 'vm2': 0.4},
                    host=1.98, busy={'loop0': 0.3})] * 2
DEV_TRIALS = [trial({'vm1': 1.0, 'vm2': 1.1}, {'vm1': 0.3, 'vm2': 0.3},
                    host=1.3, busy={'loop0': 0.98})] * 2


@pytest.mark.parametrize('sd,tput,trials,sd_words,tput_met', [
    (0.8, 1.05, CPU_TRIALS, ['x0.8', 'CPU-bound', 'host 1.98 of 2',
                             'loop0 0.30', 'in 4 of 4 trials',
                             'unfair trials (slowest/fastest > 1.1) 1 of 2'],
     True),
    (0.6, 0.9, DEV_TRIALS, ['x0.6', 'device-bound (loop0 >= 75%',
                            'loop0 0.98'], False),
    (0.2, 1.0, DEV_TRIALS, ['x0.2'], True),
])
def test_judge(sd, tput, trials, sd_words, tput_met):
    sd_line, tput_line = rep.judge(result(sd, tput, trials, trials))
    assert sd_line.startswith('target agent finish-time SD <= 0.5 x stock')
    assert ('NOT met (measured: ' in sd_line) is (sd > rep.TARGET_SD_RATIO)
    for w in sd_words:
        assert w in sd_line
    assert (': met (' in tput_line) is tput_met


def test_a_run_without_loads_says_so():
    plain = [trial({'vm1': 1.0, 'vm2': 1.5})] * 2
    sd_line = rep.judge(result(0.9, 1.0, plain, plain))[0]
    assert 'CPU and device use not recorded' in sd_line


# The recorded runs: per arm the SD verdict, the reason's figures.
@pytest.mark.parametrize('name,arm,sd_met,words', [
    ('testbed_vaio_wb_bs44k', 'agent', False, [
        'x0.8 (1.018 s', 'CPU-bound', 'host 1.93-1.99 of 2 CPUs busy',
        'devices busy: not recorded', 'in 15 of 15 trials',
        '(0.25-0.33 against 0.29-0.41 CPUs)', 'lowest of all guests in 13']),
    ('testbed_vaio_wb_bs44k', 'agent:slice_idle_us=0', False, [
        'x0.618', 'CPU-bound']),
    ('testbed_vaio_wb_bs1m', 'agent', True, ['x0.163']),
    ('testbed_vaio_wb_bs1m', 'agent:slice_idle_us=0', False, [
        'x0.603', 'device-bound', 'loop0 0.77-0.79']),
    ('testbed_vaio_wb_bs1m_run2', 'agent', True, ['x0.197']),
    ('testbed_vaio_wb_bs1m_run3', 'agent', True, ['x0.193']),
    ('testbed_vaio', 'agent', False, [
        'x1.003', 'CPU and device use not recorded']),
    ('testbed_vaio_writeback', 'agent', True, ['x0.499']),
])
def test_recorded_runs(name, arm, sd_met, words):
    res = tv.load(os.path.join(DATA, name + '.json'))
    lines = [x for x in rep.judge(res)
             if x.startswith('target %s finish-time SD' % arm)]
    assert len(lines) == 1
    assert (': met (' in lines[0]) is sd_met
    for w in words:
        assert w in lines[0]


def test_report_prints_a_recorded_json(capsys):
    from bench import testbed_vaio
    path = os.path.join(DATA, 'testbed_vaio_wb_bs44k.json')
    assert testbed_vaio.main(['--report', path]) == 0
    out = capsys.readouterr().out
    assert 'busy not recorded' in out
    assert 'target agent finish-time SD <= 0.5 x stock: NOT met' in out
