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
"""iosched.host_agent.assembly.build_agent, the knob sets chosen by driver
name, and the seams it closes: one place builds an Agent, drivers only read,
no writer chosen by probing, host_agent imports nothing of the
simulator.
"""

import ast
import os
import types

import pytest
from stevedore import extension

from iosched.contract import lsvm as lsvm_bound
from iosched.host_agent.actuators import driver as driver_act
from iosched.host_agent.actuators import host_knobs
from iosched.host_agent.actuators import knob_set
from iosched.host_agent.actuators import noop
from iosched.host_agent import assembly
from iosched.host_agent.drivers import base
from iosched.host_agent.drivers.libvirt import driver as lv_driver
from iosched.host_agent import model
from iosched.host_agent import plugins
from iosched.host_agent.policies import vslicer
from iosched.simdriver import daemon as sim_daemon
from iosched.simdriver import driver as sim_driver
from iosched.simdriver import knobs as sim_knobs
from tests import fixtures

CONF = fixtures.CONF
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))


def _sources(*tops):
    for top in tops:
        for base_dir, _, names in os.walk(os.path.join(ROOT, top)):
            for name in names:
                if name.endswith('.py'):
                    path = os.path.join(base_dir, name)
                    yield os.path.relpath(path, ROOT), open(path).read()


def _imported(text):
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield a.name
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            yield node.module
            for a in node.names:
                yield '%s.%s' % (node.module, a.name)


# -- what build_agent wires ---------------------------------------------
def test_the_simulated_driver_gets_the_simulators_knob_set():
    sim, driver = fixtures.sim_host_with_vms()
    agent = assembly.build_agent(CONF, driver, journal_path='')
    assert isinstance(agent.actuator, driver_act.DriverActuator)
    assert isinstance(agent.actuator.knobs, sim_knobs.SimulatedKnobs)
    assert agent.actuator.knobs.driver is driver
    assert agent.actuator.journal.path is None          # '' = in memory
    assert [p.name for p in agent.policies] == list(
        CONF.host_agent.policies)
    fixtures.run_ticks(sim, agent, 2)
    assert sim.get_vcpu_slice('lsvm-1', 0) == 1000      # written through it


@pytest.mark.parametrize('name, cls', [
    ('simulated', sim_knobs.SimulatedKnobs),
    ('libvirt', host_knobs.HostKnobs),
])
def test_each_driver_name_has_its_knob_set(name, cls):
    assert plugins.knobs_class(name) is cls
    assert issubclass(cls, knob_set.KnobSet)


def test_every_driver_entry_point_has_a_knob_set_of_the_same_name():
    drivers = set(extension.ExtensionManager(plugins.DRIVERS).names())
    knobs = set(extension.ExtensionManager(plugins.KNOBS).names())
    assert drivers == knobs == {'simulated', 'libvirt'}
    for name in drivers:
        assert plugins.load_class(plugins.DRIVERS, name).name == name


def test_a_driver_without_a_knob_set_is_a_clear_error():
    driver = types.SimpleNamespace(name='xen')
    with pytest.raises(plugins.PluginError) as err:
        plugins.load_knobs(CONF, driver)
    assert "named 'xen'" in str(err.value)
    assert 'libvirt' in str(err.value) and 'simulated' in str(err.value)


def test_overrides_are_used_as_given(tmp_path):
    sim, driver = fixtures.sim_host_with_vms()
    knobs = sim_knobs.SimulatedKnobs(driver)
    policy = vslicer.VSlicerPolicy(CONF)
    reporter = object()
    path = str(tmp_path / 'journal.jsonl')
    agent = assembly.build_agent(CONF, driver, policies=[policy],
                                 knobs=knobs, journal_path=path,
                                 reporter=reporter)
    assert agent.policies == [policy] and agent.reporter is reporter
    assert agent.actuator.knobs is knobs
    assert agent.actuator.journal.path == path
    own = noop.NoopActuator()
    assert assembly.build_agent(CONF, driver, policies=[],
                                actuator=own).actuator is own


# The copies disagreed: io-host-agent honoured [host_agent] actuator and
# journal_path, the demo and the benches always wrote through a journaled
# DriverActuator with an in-memory journal. One meaning now: the options
# hold everywhere; what a caller wants otherwise it passes (the demo and
# the benches pass journal_path='').
@pytest.mark.parametrize('actuator, journal_path, cls, path', [
    ('driver', None, driver_act.DriverActuator, 'from-conf'),
    ('driver', '', driver_act.DriverActuator, None),
    ('noop', None, noop.NoopActuator, None),
])
def test_the_options_hold_unless_overridden(tmp_path, actuator, journal_path,
                                            cls, path):
    conf_path = str(tmp_path / 'conf-journal.jsonl')
    CONF.set_override('actuator', actuator, 'host_agent')
    CONF.set_override('journal_path', conf_path, 'host_agent')
    try:
        _, driver = fixtures.sim_host_with_vms()
        agent = assembly.build_agent(CONF, driver, policies=[],
                                     journal_path=journal_path)
    finally:
        CONF.clear_override('actuator', 'host_agent')
        CONF.clear_override('journal_path', 'host_agent')
    assert type(agent.actuator) is cls
    if cls is driver_act.DriverActuator:
        assert agent.actuator.journal.path == (
            conf_path if path == 'from-conf' else path)


# -- the LSVM mechanism: resolved at start, or given --------------------
def test_start_resolves_the_mechanism_unless_one_is_given():
    sim, driver = fixtures.sim_host_with_vms()
    resolved = fixtures.make_agent(driver)
    assert resolved.host_sched == model.HostSched()
    resolved.start()
    assert resolved.host_sched != model.HostSched()     # measured
    given = model.HostSched(mechanism=lsvm_bound.MECH_WEIGHT)
    fixed = assembly.build_agent(CONF, driver, journal_path='',
                                 policies=[vslicer.VSlicerPolicy(CONF)],
                                 host_sched=given)
    assert fixed.host_sched is given
    fixed.start()
    assert fixed.host_sched is given


# -- the seams -------------------------------------------------------------
def test_only_the_assembly_builds_an_agent():
    """An Agent is constructed in iosched/host_agent/assembly.py only (the
    command, the demo, the benches and the tests call build_agent).
    """
    calls = []
    for path, text in _sources('iosched', 'bench', 'tests'):
        for node in ast.walk(ast.parse(text)):
            if (isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr == 'Agent'):
                calls.append(path)
    assert calls == ['iosched/host_agent/assembly.py']


@pytest.mark.parametrize('cls', [base.Driver, lv_driver.LibvirtDriver,
                                 sim_driver.SimulatedDriver,
                                 sim_daemon.WallClockSimulatedDriver])
def test_drivers_have_no_knob_methods(cls):
    for name in ('knobs', 'read_knob', 'write_knob', 'writes_' + 'itself'):
        assert not hasattr(cls, name), (cls, name)


def test_no_writer_is_chosen_by_probing():
    assert not [path for path, text in _sources('iosched', 'bench', 'tests')
                if 'writes_' + 'itself' in text]


@pytest.mark.parametrize('top, forbidden', [
    ('iosched/host_agent', 'iosched.simulator'),
    ('iosched/host_agent', 'iosched.simdriver'),
    ('iosched/host_agent/drivers', 'iosched.host_agent.actuators'),
    ('iosched/simulator', 'iosched.host_agent'),
])
def test_layers(top, forbidden):
    """The agent reaches the simulator only through the entry points of
    iosched.simdriver; drivers import no writer; the simulator knows
    nothing of the agent.
    """
    bad = ['%s imports %s' % (path, m)
           for path, text in _sources(top) for m in _imported(text)
           if m == forbidden or m.startswith(forbidden + '.')]
    assert not bad


def test_the_agent_measures_and_chooses_again_when_the_host_changed(
        monkeypatch):
    # issue 28: a re-test after the guests changed; a new mechanism first
    # puts every knob back.
    import dataclasses
    import time
    sim, driver = fixtures.sim_host_with_vms()
    agent = assembly.build_agent(CONF, driver, journal_path='')
    agent.start()
    first = agent.host_sched
    n = len(driver.list_instances())
    assert first.tested_guests == n and first.measured_by.startswith(
        'self-test ')
    restored = []
    monkeypatch.setattr(agent.actuator, 'restore_all',
                        lambda: restored.append(1) or 0)
    agent.tick()                       # nothing changed: no re-test
    assert agent.host_sched.tested_at == first.tested_at and not restored
    g = CONF['host_agent_policy.vslicer']
    agent.host_sched = dataclasses.replace(
        first, mechanism='slice', tested_guests=n + 1,
        tested_at=time.monotonic() - g.selftest_retest_min_interval - 1)
    agent.tick()
    assert agent.host_sched.mechanism == first.mechanism
    assert agent.host_sched.tested_guests == n and restored == [1]
    agent.shutdown()
