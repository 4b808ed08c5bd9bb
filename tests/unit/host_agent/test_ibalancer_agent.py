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
"""The agent with the ibalancer policy on a simulated host: four identical
disk guests, two of them sharing their pCPU with a CPU hog; the loop evens
out their throughput; every decision is explained in the log, the
HostReport and ``iosched-explain``; stop restores every iotune. And the
composition of two iotune caps (slo + ibalancer) on one disk.
"""

import json
import logging
import statistics

from oslo_config import cfg
import pytest

from iosched.contract import knob_kinds
from iosched.host_agent import assembly
from iosched.host_agent.cmd import explain
from iosched.host_agent.conf import opts
from iosched.host_agent import model
from iosched.host_agent.policies import compose
from iosched.host_agent.policies import ibalancer
from iosched.simdriver import driver as sim_driver
from iosched.simulator import host as sim_host
from iosched.simulator import spec as S

VMS = ('a', 'b', 'c', 'd')


@pytest.fixture(autouse=True)
def _no_leaked_overrides():
    yield
    cfg.CONF.clear_override('journal_path', 'host_agent')


def _run(tmp_path, with_policy, seconds=30, measure_from=10):
    conf = cfg.ConfigOpts()
    opts.register_all(conf)
    conf([], default_config_files=[])
    conf.set_override('journal_path', str(tmp_path / 'journal.jsonl'),
                      'host_agent')
    host = sim_host.SimHost(S.HostSpec(
        name='h', pcpus=2, disk=S.DiskSpec(service_us=400, parallelism=2)),
        seed=3)
    drv = sim_driver.SimulatedDriver(host)
    for uuid, pcpu in zip(VMS, (0, 0, 1, 1)):
        host.add_vm(S.VmSpec(uuid=uuid, name=uuid, vcpus=(
            S.DiskClosedLoop(outstanding=4, cpu_per_io_us=150),),
            disks=('vda',)))
        drv.add_instance(model.InstanceInfo(
            uuid=uuid, name=uuid, disks=(model.DiskInfo('vda'),)))
        host.set_vcpu_affinity(uuid, 0, (pcpu,))
    # unequal CPU opportunity: a hog shares pCPU 0 with a and b
    host.add_vm(S.VmSpec(uuid='hog', name='hog', vcpus=(S.CpuBound(),)))
    host.set_vcpu_affinity('hog', 0, (0,))
    policies = [ibalancer.IBalancerPolicy(conf)] if with_policy else []
    ag = assembly.build_agent(conf, drv, policies=policies)
    ag.start()

    def done():
        c = {u: host.disk_counters(u, 'vda') for u in VMS}
        return {u: c[u].rd_reqs + c[u].wr_reqs for u in VMS}
    start = None
    for t in range(seconds):
        host.run_until(host.now_us + 1000000)
        ag.tick()
        if t + 1 == measure_from:
            start = done()
    end = done()
    tp = [(end[u] - start[u]) / float(seconds - measure_from) for u in VMS]
    return ag, host, tp


def _spread(tp):
    return statistics.pstdev(tp) / statistics.mean(tp)


def test_loop_evens_out_per_vm_throughput_and_explains_it(tmp_path, caplog,
                                                          capsys):
    caplog.set_level(logging.INFO,
                     logger='iosched.host_agent.actuators.driver')
    _, _, stock = _run(tmp_path / 's', False)
    ag, host, tp = _run(tmp_path / 'a', True)
    # stock: the hog's neighbours get clearly less
    assert _spread(stock) > 0.15, stock
    assert _spread(tp) <= 0.5 * _spread(stock), (stock, tp)
    assert sum(tp) >= 0.9 * sum(stock), (stock, tp)

    # the log line: rule, before, after and the inputs
    lines = [r.getMessage() for r in caplog.records
             if 'ibalancer.cap' in r.getMessage()]
    assert lines, [r.getMessage() for r in caplog.records][:5]
    assert all(w in lines[0] for w in ('disk_iotune', '->', 'D/n', 'EN ',
                                       'EI ', 'VR/PR', 'DRV', 'delay',
                                       "r'/r"))
    # the HostReport's decisions
    report = ag.last_report
    ours = [d for d in report.decisions if d.rule.startswith('ibalancer.')]
    assert ours, report.decisions
    assert {d.rule for d in ours} <= {ibalancer.RULE_CAP,
                                      ibalancer.RULE_HOLD,
                                      ibalancer.RULE_RELEASE}
    assert all('D/n' in d.reason and d.after and d.before for d in ours)
    assert any(d.rule == ibalancer.RULE_CAP and 'delay' in d.reason
               for d in ours) or any(d.rule == ibalancer.RULE_HOLD and
                                     'cap' in d.reason for d in ours)
    # iosched-explain, from the saved report and from the journal
    path = tmp_path / 'report.json'
    path.write_text(json.dumps(report.to_dict()))
    assert explain.main(['--report', str(path)]) == 0
    out = capsys.readouterr().out
    assert 'ibalancer.' in out and 'D/n' in out
    assert explain.RULES[ibalancer.RULE_CAP][:30] in out.replace('\n', ' ') \
        or 'I-Balancer' in out
    assert explain.main(['--journal', str(tmp_path / 'a' /
                                          'journal.jsonl')]) == 0
    out = capsys.readouterr().out
    assert 'ibalancer.' in out and 'disk_iotune' in out
    # stop: every iotune back to what it was (none)
    held = [k for k in ag.actuator.journal.pending()]
    ag.shutdown()
    for kind, uuid, target in held:
        assert host.get_disk_iotune(uuid, target) == {}


def _cap(rule, iops, size=None, reason='why'):
    value = {'total_iops_sec': iops}
    if size:
        value['size_iops_sec'] = size
    return model.Action(knob_kinds.DISK_IOTUNE, 'u', 'vda', value, rule,
                        reason)


@pytest.mark.parametrize('first, second, winner', [
    # the tighter of two caps wins, whatever the order
    (_cap('slo.hold_back', 100, 16384), _cap('ibalancer.cap', 80, 16384),
     'ibalancer.cap'),
    (_cap('ibalancer.cap', 80, 16384), _cap('slo.hold_back', 100, 16384),
     'ibalancer.cap'),
    # compared in 16 KiB operations: 400 x 4 KiB = 100 ref ops < 150
    (_cap('slo.hold_back', 400, 4096), _cap('ibalancer.cap', 150, 16384),
     'slo.hold_back'),
    # a release never undoes the other policy's cap
    (_cap('slo.hold_back', 100), model.Action(
        knob_kinds.DISK_IOTUNE, 'u', 'vda', knob_kinds.ORIGINAL,
        'ibalancer.release', 'calm'), 'slo.hold_back'),
    (model.Action(knob_kinds.DISK_IOTUNE, 'u', 'vda', knob_kinds.ORIGINAL,
                  'slo.release', 'met'), _cap('ibalancer.cap', 90),
     'ibalancer.cap'),
])
def test_two_iotune_caps_compose_tighter_wins_both_explained(first, second,
                                                             winner):
    plan = compose.merge_plans([
        model.Plan('one', actions=(first,)),
        model.Plan('two', actions=(second,))])
    (action,) = plan.actions
    assert action.rule == winner
    loser = first if winner == second.rule else second
    assert action.reason.startswith('[tighter of two: %s' % winner)
    assert loser.rule in action.reason and loser.reason in action.reason


def test_other_kinds_keep_later_wins():
    a = model.Action(knob_kinds.VCPU_SLICE, 'u', '0', 1000, 'x.a', 'a')
    b = model.Action(knob_kinds.VCPU_SLICE, 'u', '0', 3000, 'y.b', 'b')
    assert compose.combine(a, b) is b
    assert compose.merge_plans([model.Plan('x', (a,)),
                                  model.Plan('y', (b,))]).actions == (b,)
