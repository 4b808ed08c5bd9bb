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
"""The agent on a simulated host: one tick end to end, and a tick that
never raises whatever fails underneath.
"""

import pytest

from iosched.contract import knob_kinds
from iosched.host_agent import model
from iosched.host_agent.policies import vslicer_seen
from tests import fixtures


@pytest.fixture
def host():
    return fixtures.sim_host_with_vms()


def test_ticks_measure_decide_act_and_report(host):
    sim, driver = host
    agent = fixtures.make_agent(driver)
    fixtures.run_ticks(sim, agent, 3)
    # vSlicer: LSVM microslice 1 ms (L=2ms, k=1), others T_NLSVM = 3 ms.
    assert sim.get_vcpu_slice('lsvm-1', 0) == 1000
    assert [sim.get_vcpu_slice('cpu-1', i) for i in range(3)] == [3000] * 3
    report = agent.last_report
    assert report.seq == 2 and report.host == 'compute-1'
    klass = {(v.instance_uuid, v.vcpu): v.klass for v in report.vcpus}
    assert klass[('lsvm-1', 0)] == 'io'
    assert klass[('db-1', 0)] == 'io'
    assert {klass[('cpu-1', i)] for i in range(3)} == {'cpu'}
    assert report.io_vcpus == 2
    assert report.lsvm.count == 1 and report.lsvm.capacity == 5
    assert report.disk.reserved_iops == 100.0
    assert report.disk.latency_p99_ms > 0
    assert report.health.status == 'ok'
    # Every change is explained: rule + reason, before and after.
    decision = agent.actuator.decisions()[
        (knob_kinds.VCPU_SLICE, 'lsvm-1', '0')]
    assert decision.rule == 'vslicer.lsvm_microslice'
    assert 'T_m' in decision.reason and decision.before == 3000
    assert (decision.after, decision.applied) == (1000, True)
    # ... and reported: the same explanation reaches the HostReport.
    sent = {(d.kind, d.instance_uuid, d.target): d for d in report.decisions}
    assert sent[decision.key].reason == decision.reason


def test_stop_restores_every_knob(host):
    sim, driver = host
    agent = fixtures.make_agent(driver)
    fixtures.run_ticks(sim, agent, 2)
    assert sim.get_vcpu_slice('lsvm-1', 0) == 1000
    agent.shutdown()
    assert sim.get_vcpu_slice('lsvm-1', 0) == 3000
    assert agent.actuator.journal.pending() == {}


def test_crashed_agent_is_undone_by_the_next_start(host, tmp_path):
    sim, driver = host
    path = str(tmp_path / 'journal.jsonl')
    agent = fixtures.make_agent(driver, journal_path=path)
    fixtures.run_ticks(sim, agent, 2)
    agent.actuator.journal.close()          # killed: no shutdown()
    assert sim.get_vcpu_slice('lsvm-1', 0) == 1000
    fresh = fixtures.make_agent(driver, journal_path=path)
    fresh.start()
    assert sim.get_vcpu_slice('lsvm-1', 0) == 3000


class _Broken(object):
    """Wrap a driver; fail reads of one VM, or everything."""

    def __init__(self, driver, bad_uuid=None, all_fail=False):
        self._d = driver
        self.bad_uuid = bad_uuid
        self.all_fail = all_fail

    def __getattr__(self, name):
        return getattr(self._d, name)

    def list_instances(self):
        if self.all_fail:
            raise RuntimeError('libvirt went away')
        return self._d.list_instances()

    def vcpu_samples(self, instance):
        if instance.uuid == self.bad_uuid:
            raise RuntimeError('thread vanished')
        return self._d.vcpu_samples(instance)


def test_one_bad_vm_is_skipped_and_the_others_regulated(host):
    sim, driver = host
    agent = fixtures.make_agent(_Broken(driver, bad_uuid='cpu-1'))
    fixtures.run_ticks(sim, agent, 3)
    assert sim.get_vcpu_slice('lsvm-1', 0) == 1000
    report = agent.last_report
    assert report.health.status == 'degraded'
    assert any('cpu-1' in e for e in report.health.errors)
    assert 'cpu-1' not in {v.instance_uuid for v in report.vcpus}


def test_tick_survives_a_dead_driver_and_a_failing_policy(host):
    sim, driver = host
    agent = fixtures.make_agent(_Broken(driver, all_fail=True))
    fixtures.run_ticks(sim, agent, 2)        # must not raise
    assert agent.ticks == 2

    class Boom(object):
        name = 'boom'

        def decide(self, snapshot, state):
            raise ZeroDivisionError('bad policy')

    agent = fixtures.make_agent(driver)
    agent.policies.insert(0, Boom())
    fixtures.run_ticks(sim, agent, 2)
    assert sim.get_vcpu_slice('lsvm-1', 0) == 1000   # vslicer still ran
    assert any('boom' in e for e in agent.last_report.health.errors)


def test_failing_reporter_does_not_break_the_loop(host):
    sim, driver = host

    class DeadBus(object):
        def report_host_io(self, report):
            raise ConnectionError('broker down')

    agent = fixtures.make_agent(driver, reporter=DeadBus())
    fixtures.run_ticks(sim, agent, 3)
    assert agent.ticks == 3 and sim.get_vcpu_slice('lsvm-1', 0) == 1000


def test_vanished_vm_is_forgotten(host):
    sim, driver = host
    agent = fixtures.make_agent(driver)
    fixtures.run_ticks(sim, agent, 2)
    sim.remove_vm('lsvm-1')
    fixtures.run_ticks(sim, agent, 2)
    assert 'lsvm-1' not in {k[1] for k in agent.actuator.journal.pending()}
    assert agent.last_report.lsvm.count == 0
    # Only the LSVM's slice had changed: nothing of others is left over.
    assert agent.actuator.journal.pending() == {}


def test_a_lasting_note_is_logged_once(host, caplog):
    """A refused bound that holds tick after tick is said when it appears,
    not every second.
    """
    import logging
    sim, driver = host
    agent = fixtures.make_agent(driver)

    class Noting(object):
        name = 'noting'

        def decide(self, snapshot, state):
            return model.Plan(policy='noting', notes=('refused bound X',))
    agent.policies.append(Noting())
    with caplog.at_level(logging.WARNING):
        fixtures.run_ticks(sim, agent, 3)
    assert sum('refused bound X' in r.getMessage()
               for r in caplog.records) == 1


def test_each_policy_gets_back_its_own_state(host):
    """The agent keeps each policy's Plan.state under the policy's name and
    gives it to that policy's next decide; a failing decide keeps it.
    """
    sim, driver = host
    agent = fixtures.make_agent(driver)
    seen = []

    class Counting(object):
        name = 'counting'

        def decide(self, snapshot, state):
            seen.append(state)
            if state == 2:
                raise RuntimeError('fails from its third tick on')
            return model.Plan(policy=self.name,
                              state=1 if state is None else state + 1)
    agent.policies.append(Counting())
    fixtures.run_ticks(sim, agent, 4)
    assert seen == [None, 1, 2, 2]
    assert agent.policy_states == {
        'vslicer': vslicer_seen.State(mechanism='slice', last_ts=4.0),
        'counting': 2}
    assert agent.last_plan.state is None         # merged: no one's state


class _Outage(_Broken):
    """The hypervisor unreadable for a while (libvirtd restarting)."""

    def list_instances(self):
        if self.all_fail:
            from iosched.host_agent.drivers import base
            raise base.DriverError('libvirt at qemu:///system does not '
                                   'answer')
        return self._d.list_instances()


def test_a_driver_outage_keeps_the_knobs_and_is_said_once(host, caplog):
    import logging
    sim, driver = host
    broken = _Outage(driver)
    agent = fixtures.make_agent(broken)
    fixtures.run_ticks(sim, agent, 2)
    held = dict(agent.actuator.journal.pending())
    assert held and sim.get_vcpu_slice('lsvm-1', 0) == 1000
    broken.all_fail = True
    caplog.clear()
    with caplog.at_level(logging.DEBUG):
        fixtures.run_ticks(sim, agent, 5)
    said = [r for r in caplog.records if r.levelno >= logging.WARNING
            and r.name == 'iosched.host_agent.agent']
    assert len(said) == 1 and 'does not answer' in said[0].getMessage()
    assert not [r for r in caplog.records if r.exc_info]   # no tracebacks
    # Nothing is restored or forgotten for an outage.
    assert agent.actuator.journal.pending() == held
    assert sim.get_vcpu_slice('lsvm-1', 0) == 1000
    assert agent.last_report.health.status == 'degraded'
    broken.all_fail = False
    caplog.clear()
    with caplog.at_level(logging.INFO):
        fixtures.run_ticks(sim, agent, 1)              # recovered at once
    assert any('answers again' in r.getMessage() and '5 failed ticks'
               in r.getMessage() for r in caplog.records)
    assert agent.last_report is not None
    assert agent.actuator.journal.pending() == held


class _Restarted(_Broken):
    """One instance reported under a new generation (a new QEMU)."""

    restarted = None

    def list_instances(self):
        import dataclasses
        return [dataclasses.replace(i, generation=i.generation + 1)
                if i.uuid == self.restarted else i
                for i in self._d.list_instances()]


def test_an_instance_in_a_new_process_starts_from_its_defaults(host):
    sim, driver = host
    wrapped = _Restarted(driver)
    agent = fixtures.make_agent(wrapped)
    fixtures.run_ticks(sim, agent, 2)
    key = (knob_kinds.VCPU_SLICE, 'lsvm-1', '0')
    assert key in agent.actuator.journal.pending()
    # A hard reboot: the new process's thread starts at the default; the
    # old entry is retired, not restored onto the new process, and the
    # policy's decision is applied to it afresh.
    sim.set_vcpu_slice('lsvm-1', 0, 3000)
    wrapped.restarted = 'lsvm-1'
    agent.tick()
    assert sim.get_vcpu_slice('lsvm-1', 0) == 1000
    assert agent.actuator.journal.pending()[key] == 3000
    agent.shutdown()
    assert sim.get_vcpu_slice('lsvm-1', 0) == 3000
