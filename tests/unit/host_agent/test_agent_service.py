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
"""``io-host-agent`` as a service, without signals: the exit status of
each stop, the backoff while the hypervisor does not answer, what is
mutable. Real signals on a real agent: tests/functional/
test_agent_signals.py.
"""

import signal

from oslo_config import cfg
import pytest

from iosched.host_agent.cmd import agent as agent_cmd
from iosched.host_agent.cmd import service
from iosched.host_agent.conf import opts
from iosched.host_agent.drivers import base as driver_base
from iosched.host_agent import policy_params


@pytest.mark.parametrize('signum,status', [
    (None, 0),
    (signal.SIGTERM, 0),
    (signal.SIGINT, 0),
    (signal.SIGQUIT, 128 + signal.SIGQUIT),
    (signal.SIGUSR1, 128 + signal.SIGUSR1),
    (signal.SIGALRM, 128 + signal.SIGALRM),
])
def test_exit_status_of_each_stop(signum, status):
    launcher = service.Launcher(cfg.ConfigOpts())
    launcher.signum = signum
    assert launcher.exit_status() == status


class FakeLauncher(object):
    def __init__(self, stop_after=None):
        self.slept = []
        self.stop_after = stop_after

    def sleep(self, seconds):
        self.slept.append(round(seconds, 3))
        return self.stop_after is not None and len(
            self.slept) >= self.stop_after


def _conf(**host_agent):
    conf = cfg.ConfigOpts()
    opts.register_all(conf)
    conf([], project='iosched-test')
    for name, value in host_agent.items():
        conf.set_override(name, value, 'host_agent')
    return conf


def _driver_cls(fails):
    class Driver(object):
        name = 'fake'
        calls = 0

        @classmethod
        def from_conf(cls, conf):
            cls.calls += 1
            if cls.calls <= fails:
                raise driver_base.DriverUnavailable('cannot connect to x')
            return cls()
    return Driver


@pytest.mark.parametrize('fails,first,longest,slept', [
    (0, 1.0, 60.0, []),
    (3, 1.0, 60.0, [1.0, 2.0, 4.0]),
    (8, 1.0, 60.0, [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 60.0, 60.0]),
    (4, 0.5, 1.0, [0.5, 1.0, 1.0, 1.0]),
])
def test_backoff_doubles_up_to_the_longest_wait(fails, first, longest,
                                                slept):
    conf = _conf(driver_retry_interval=first,
                 driver_retry_max_interval=longest)
    launcher = FakeLauncher()
    driver = agent_cmd.wait_for_driver(conf, _driver_cls(fails), launcher)
    assert driver is not None
    assert launcher.slept == slept


def test_a_stop_ends_the_wait():
    launcher = FakeLauncher(stop_after=2)
    assert agent_cmd.wait_for_driver(_conf(), _driver_cls(100),
                                     launcher) is None
    assert len(launcher.slept) == 2


def test_wait_timeout_gives_up_with_a_clear_error(monkeypatch):
    clock = iter(range(0, 1000, 3))
    monkeypatch.setattr(agent_cmd.time, 'monotonic', lambda: next(clock))
    with pytest.raises(driver_base.DriverError) as e:
        agent_cmd.wait_for_driver(_conf(driver_wait_timeout=10.0),
                                  _driver_cls(100), FakeLauncher())
    assert 'driver_wait_timeout' in str(e.value)
    assert 'cannot connect to x' in str(e.value)


def test_a_permanent_driver_error_is_not_waited_for():
    class Broken(object):
        name = 'broken'

        @classmethod
        def from_conf(cls, conf):
            raise driver_base.DriverError('libvirt-python is not installed')
    launcher = FakeLauncher()
    with pytest.raises(driver_base.DriverError):
        agent_cmd.wait_for_driver(_conf(), Broken, launcher)
    assert launcher.slept == []


def test_mutable_options_are_those_read_at_each_use():
    """A policy's Params are read every tick: mutable; what is read once
    at start (the LSVM mechanism and its self-test) is not.
    """
    import dataclasses
    for group, group_opts in opts.list_opts():
        if not group.startswith(opts.MUTABLE_GROUP_PREFIX):
            continue
        params = policy_params.policy_class(
            group[len(opts.MUTABLE_GROUP_PREFIX):]).Params
        fields = {f.name for f in dataclasses.fields(params)}
        for opt in group_opts:
            assert opt.mutable == (opt.name in fields), (group, opt.name)
    (host_agent,) = [o for g, o in opts.list_opts() if g == 'host_agent']
    mutable = {o.name for o in host_agent if o.mutable}
    assert mutable == {'tick_interval', 'report_every_ticks'}


# -- the control loop: what the signal handlers call ----------------------

def _sim_agent():
    from tests import fixtures
    sim, driver = fixtures.sim_host_with_vms()
    fixtures.CONF.set_override('tick_interval', 0.05, 'host_agent')
    return sim, fixtures.make_agent(driver)


@pytest.fixture
def sim_agent():
    from tests import fixtures
    try:
        yield _sim_agent()
    finally:
        fixtures.CONF.clear_override('tick_interval', 'host_agent')


def test_calls_between_ticks_run_in_the_loop_then_stop_restores(
        sim_agent, monkeypatch):
    sim, agent = sim_agent
    seen, restored = [], []
    restore_all = agent.actuator.restore_all
    monkeypatch.setattr(agent.actuator, 'restore_all', lambda: (
        restored.append(agent.ticks), restore_all())[1])

    def between():
        seen.append(agent.ticks)
        if agent.ticks < 3:
            agent.call_between_ticks(between)    # again, in the wait
        else:
            agent.stop()
    agent.call_between_ticks(between)
    agent.run()
    # between ticks only (never before the first), then the restore
    assert sorted(set(seen)) == [1, 2, 3]
    assert restored[-1] == 3      # (start() replays the journal too)


def test_a_failing_call_between_ticks_does_not_end_the_loop(sim_agent):
    sim, agent = sim_agent

    def broken():
        raise RuntimeError('boom')
    agent.call_between_ticks(broken)
    agent.call_between_ticks(agent.stop)
    agent.run()
    assert agent.ticks == 1


def test_run_restores_even_when_start_raises(sim_agent, monkeypatch):
    sim, agent = sim_agent
    restored = []
    monkeypatch.setattr(agent.actuator, 'restore_all',
                        lambda: restored.append(1) or 0)

    def broken_start():
        raise RuntimeError('journal unreadable')
    monkeypatch.setattr(agent, 'start', broken_start)
    with pytest.raises(RuntimeError):
        agent.run()
    assert restored == [1]
