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
"""Shared test helpers: a simulated host with an agent, and the rule that a
test needing a real component fails (not skips) in CI when it is missing.
"""

import contextlib
import os
import socket
import urllib.parse
import uuid as uuid_mod

import pytest

from iosched.host_agent import assembly
from iosched.host_agent import conf as agent_conf
from iosched.host_agent.policies import vslicer
from iosched.simdriver import daemon as sim_daemon
from iosched.simdriver import driver as sim_driver
from iosched.simdriver import knobs as sim_knobs
from iosched.simulator import host as sim_host
from iosched.simulator import spec as sim_spec

CONF = agent_conf.CONF
# Tests count one report per tick (the product's default is every 10 ticks,
# see [host_agent] report_every_ticks); tests that need another interval
# override it.
CONF.set_default('report_every_ticks', 1, 'host_agent')
LSVM_SPECS = sim_daemon.LSVM_SPECS


def libvirt_ok(*modules):
    """(available, why) of libvirt's qemu:///system as root, with the
    extra Python ``modules`` importable (e.g. 'libvirt_qemu').
    """
    if os.geteuid() != 0:
        return False, 'needs root'
    try:
        import libvirt
        for name in modules:
            __import__(name)
        libvirt.open('qemu:///system').close()
    except Exception as e:
        return False, 'no qemu:///system: %s' % e
    return True, ''


def require(component, available, why):
    """Skip locally, fail in CI (CI=true), when a real component is absent."""
    if available:
        return
    msg = '%s unavailable: %s' % (component, why)
    if os.environ.get('CI') == 'true':
        pytest.fail(msg + ' (CI must provide it)')
    pytest.skip(msg)


def rabbit_url():
    """The broker URL for functional tests, after checking it answers."""
    url = os.environ.get('IOSCHED_RABBIT_URL',
                         'rabbit://guest:guest@127.0.0.1:5672/')
    parts = urllib.parse.urlparse(url)
    try:
        socket.create_connection((parts.hostname, parts.port or 5672),
                                 timeout=2).close()
        ok, why = True, ''
    except OSError as e:
        ok, why = False, 'nothing answers at %s:%s (%s)' % (
            parts.hostname, parts.port or 5672, e)
    require('RabbitMQ', ok, why)
    return url


@contextlib.contextmanager
def agent_topics(*overrides):
    """Fresh report and resync topics for agents built on ``CONF``.

    Agents tick every 60 s and report every tick, so only what a test
    drives (or a resync) produces a report. Yields (report_topic,
    agents_topic); ``overrides`` are more (name, value, group) to set.
    """
    tag = uuid_mod.uuid4().hex[:8]
    report_topic = 'iosched-test-reports-%s' % tag
    agents_topic = 'iosched-test-agents-%s' % tag
    overrides = [('topic', report_topic, 'reporter'),
                 ('resync_topic', agents_topic, 'reporter'),
                 ('tick_interval', 60.0, 'host_agent'),
                 ('report_every_ticks', 1, 'host_agent')] + list(overrides)
    for name, value, group in overrides:
        CONF.set_override(name, value, group)
    try:
        yield report_topic, agents_topic
    finally:
        for name, _, group in overrides:
            CONF.clear_override(name, group)


def sim_host_with_vms(name='compute-1', pcpus=2, seed=7):
    """A SimHost with an LSVM, a CPU-bound VM and a disk VM, plus the
    Nova metadata the driver reports for them.
    """
    sim = sim_host.SimHost(sim_spec.HostSpec(name=name, pcpus=pcpus,
                                             default_slice_us=3000),
                           seed=seed)
    driver = sim_daemon.add_example_vms(
        sim, sim_driver.SimulatedDriver(sim))
    return sim, driver


def sim_knobs_of(driver):
    """The knob set over a simulated driver's host: what a test reads
    (or sets) knobs through, as the agent's actuator does.
    """
    return sim_knobs.SimulatedKnobs(driver)


def make_agent(driver, reporter=None, journal_path=None, policies=None):
    """An agent over ``driver`` on ``CONF`` (policies: vSlicer unless
    given), journal in memory unless ``journal_path``.
    """
    if policies is None:
        policies = [vslicer.VSlicerPolicy(CONF)]
    return assembly.build_agent(CONF, driver, policies=policies,
                                journal_path=journal_path or '',
                                reporter=reporter)


def run_ticks(sim, agent, ticks, tick_us=1_000_000):
    for _ in range(ticks):
        sim.run_until(sim.now_us + tick_us)
        agent.tick()


def mutated(data, path, value):
    """A deep copy of ``data`` with the item at ``path`` (a tuple of keys
    and indexes) set to ``value``, or deleted when ``value is KeyError``:
    table-driven tests of validators.
    """
    import copy
    data = copy.deepcopy(data)
    target = data
    for key in path[:-1]:
        target = target[key]
    if value is KeyError:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return data


def use_driver_in_main(driver):
    """Make ``io-host-agent``'s main() (iosched.host_agent.cmd.agent, run in a
    subprocess by tests) use ``driver`` whatever ``[host_agent] driver``
    names: its driver class is loaded through ``plugins.load_class``.
    """
    from iosched.host_agent.cmd import agent as cmd

    class Driver(object):
        name = driver.name       # its knob set is the one for that name

        @staticmethod
        def from_conf(conf):
            return driver

    load_class = cmd.plugins.load_class
    cmd.plugins.load_class = lambda namespace, name: (
        Driver if namespace == cmd.plugins.DRIVERS
        else load_class(namespace, name))
