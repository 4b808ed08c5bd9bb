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
"""Tests of iosched.nova_plugin.state: one SchedulerState per worker, made (and
its listener started) at plugin load, a new one in a forked child, installed
by tests and the demo with ``use_state``; and no other module-level
mutable state anywhere in nova_plugin. No nova import (the filters'
load path is tested in tests/nova/test_scheduler_plugin.py).
"""

import ast
import dataclasses
import importlib
import importlib.util
import logging
import os
import pkgutil
import re
import threading
import types

import pytest

import iosched.nova_plugin
from iosched.nova_plugin import endpoint
from iosched.nova_plugin import listener as listener_mod
from iosched.nova_plugin import prepared
from iosched.nova_plugin import state
from tests.unit.nova_plugin import reports
from tests.unit.nova_plugin import test_endpoint

_conf = test_endpoint._conf


@pytest.fixture
def worker(monkeypatch, started):
    """An empty per-process holder; the listeners a test started (stopped
    afterwards by ``started``).
    """
    monkeypatch.setattr(state, '_WORKER', state._Worker())
    return started


def test_listen_off_warns_once_per_worker(worker, caplog):
    conf = _conf()
    with caplog.at_level(logging.WARNING, logger='iosched.nova_plugin.state'):
        first = state.for_worker(conf, 'fake:/')
        for _ in range(4):
            assert state.for_worker(conf, 'fake:/') is first
            assert state.for_request() is first
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 1, messages
    assert 'listen_for_reports is off' in messages[0]
    assert first.listener is None and worker == []


def test_load_starts_the_listener_once_and_resyncs(worker):
    conf = _conf(listen_for_reports=True)
    st = state.for_worker(conf, transport_url='fake:/')
    assert st.pid == os.getpid() and worker == [st.listener]
    assert state.for_worker(conf, transport_url='fake:/') is st
    assert state.current() is st and state.for_request() is st
    assert st.listener.listening.wait(10)
    assert st.listener.state == 'listening'
    ep = st.listener.server.dispatcher.endpoints[0]
    assert ep.store is st.store and ep.metrics is st.metrics
    assert st.listener.resyncs == 1     # resync_on_start defaults to True
    assert worker == [st.listener]      # requests started nothing


def test_resync_on_start_off(worker):
    st = state.for_worker(_conf(listen_for_reports=True,
                                resync_on_start=False), 'fake:/')
    assert st.listener.listening.wait(10)
    assert st.listener.resyncs == 0


def test_a_forked_child_gets_a_state_of_its_own(worker):
    conf = _conf(listen_for_reports=True)
    parent = state.for_worker(conf, transport_url='fake:/')
    assert parent.listener.listening.wait(10)
    state._after_fork_in_child()        # as if this were the child
    child = state.current()
    assert child is not parent
    assert child.store is not parent.store
    assert child.listener is not parent.listener
    assert state._WORKER.inherited == [parent]
    assert parent.listener.state == 'listening'     # not stopped
    assert child.listener.listening.wait(10)
    assert worker == [parent.listener, child.listener]


def _wait_for(predicate, timeout=10.0):
    return test_endpoint._wait_for(predicate, timeout)


def test_a_process_that_forks_retires_its_listener(worker, caplog):
    """A launcher (it forked) stops listening; if it schedules after all,
    its next request listens again and resyncs.
    """
    conf = _conf(listen_for_reports=True)
    st = state.for_worker(conf, transport_url='fake:/')
    first = st.listener
    assert first.listening.wait(10) and first.resyncs == 1
    state._before_fork()                # as if this process forked
    assert st.retired
    assert _wait_for(lambda: first.state == 'stopped')
    state._before_fork()                # the next fork: nothing more
    assert state.current() is st and st.listener is first   # no start
    with caplog.at_level(logging.INFO, logger='iosched.nova_plugin.state'):
        assert state.for_request() is st
    assert 'forked but schedules' in caplog.text
    assert not st.retired and st.listener is not first
    assert st.listener.listening.wait(10) and st.listener.resyncs == 1
    assert worker == [first, st.listener]


def test_a_listener_retired_while_connecting_never_listens(
        worker, monkeypatch):
    release = threading.Event()

    def hanging_start(conf, **kwargs):
        release.wait(30)
        return endpoint.start_listener(conf, **kwargs)

    real_init = listener_mod.BackgroundListener.__init__

    def init(self, conf, store, **kwargs):
        real_init(self, conf, store, start=hanging_start, **kwargs)
    monkeypatch.setattr(listener_mod.BackgroundListener, '__init__', init)
    st = state.for_worker(_conf(listen_for_reports=True), 'fake:/')
    held = st.listener
    assert held.began.wait(10) and held.state == 'connecting'
    state._before_fork()
    release.set()
    assert _wait_for(lambda: held.state == 'stopped')
    assert held.server is None and held.resyncs == 0
    assert not held.listening.is_set()


def test_after_fork_leaves_an_installed_state_alone(worker):
    state._after_fork_in_child()        # nothing loaded: nothing to do
    assert state._WORKER.state is None
    own = state.SchedulerState()
    with state.use_state(own):
        own.start_listener(_conf(listen_for_reports=True), 'fake:/')
        state._before_fork()
        state._after_fork_in_child()
        assert state.current() is own and not own.retired
    assert worker == [own.listener]


def test_another_pid_makes_a_new_worker_state(worker):
    conf = _conf(listen_for_reports=True)
    first = state.for_worker(conf, transport_url='fake:/')
    first.pid = -1                      # as if inherited without the hook
    second = state.current()
    assert second is not first and second.pid == os.getpid()
    assert state._WORKER.inherited == [first]
    assert second.listener.listening.wait(10)


def test_use_state_installs_and_restores(worker):
    conf = _conf(listen_for_reports=True)
    own = state.SchedulerState(clock=reports.FakeClock(5.0))
    with state.use_state(own) as installed:
        assert installed is own
        # the plugin loading meanwhile takes it, and leaves its listener
        # to its owner
        assert state.for_worker(conf, 'fake:/') is own
        assert state.for_request() is own and own.listener is None
        inner = state.SchedulerState()
        with state.use_state(inner):
            assert state.current() is inner
        assert state.current() is own
    assert state._WORKER.state is None and worker == []


def test_a_listener_eventlet_dropped_is_started_again_per_request(
        worker, monkeypatch, caplog):
    conf = _conf(listen_for_reports=True, resync_on_start=False)
    st = state.for_worker(conf, transport_url='fake:/')
    first = st.listener
    assert first.listening.wait(10)
    monkeypatch.setattr(first, 'lost', lambda: True)   # its hub replaced
    assert state.current().listener is first    # host_passes: no start
    with caplog.at_level(logging.INFO, logger='iosched.nova_plugin.state'):
        assert state.for_request() is st
    assert st.listener is not first and st.lost_listeners == [first]
    assert any('dropped with the eventlet hub' in r.getMessage()
               for r in caplog.records)
    assert st.listener.listening.wait(10)
    assert state.for_request().listener is st.listener   # once


def test_loading_never_blocks_on_the_bus(worker, monkeypatch):
    """A start that hangs (broker half up) holds up neither the load nor
    the requests.
    """
    release = threading.Event()
    starts = []

    def hanging_start(conf, **kwargs):
        release.wait(30)
        starts.append(kwargs)
        return endpoint.start_listener(conf, **kwargs)

    real_init = listener_mod.BackgroundListener.__init__

    def init(self, conf, store, **kwargs):
        real_init(self, conf, store, start=hanging_start, **kwargs)
    monkeypatch.setattr(listener_mod.BackgroundListener, '__init__', init)
    conf = _conf(listen_for_reports=True, resync_on_start=False)
    st = state.for_worker(conf, transport_url='fake:/')
    # the "scheduling request" goes on: nothing held, nothing waited for
    assert state.for_request().store.get('compute-1') is None
    assert st.listener.began.wait(10)
    assert st.listener.state == 'connecting'
    release.set()
    assert st.listener.listening.wait(10)
    assert len(starts) == 1


def test_configure_applies_conf_to_store_and_resolver():
    conf = _conf()
    for name, value in (('report_ttl_intervals', 7.0),
                        ('store_max_hosts', 42),
                        ('report_max_clock_skew', 9.0),
                        ('slo_cache_seconds', 5),
                        ('slo_cache_max_entries', 3)):
        conf.set_override(name, value, group='iosched')
    st = state.SchedulerState()
    assert st.configure(conf) is st
    assert (st.store.ttl_intervals, st.store.max_hosts,
            st.store.max_clock_skew) == (7.0, 42, 9.0)
    assert (st.resolver._types.ttl, st.resolver._requests.max_entries) == (
        5, 3)


def test_two_states_share_nothing():
    a, b = state.SchedulerState(), state.SchedulerState()
    a.store.update(reports.report(host='c1'))
    a.metrics.note_report()
    a.explainer.record('filter', 'c1', 'r', passed=True, reason='ok')
    assert b.store.hosts() == [] and b.explainer.recent() == []
    assert b.metrics.registry.get_sample_value(
        'iosched_scheduler_reports_received_total') == 0
    assert a.metrics.registry.get_sample_value(
        'iosched_scheduler_reports_received_total') == 1
    for name in ('store', 'prepared', 'requests', 'explainer', 'resolver',
                 'metrics'):
        assert getattr(a, name) is not getattr(b, name), name


# -- no module-level mutable state but state._WORKER -------------------------

# Module-level calls that build values, not state.
_VALUE_CALLS = re.compile(
    r'^(logging\.getLogger|collections\.namedtuple|re\.compile|'
    r'cfg\.OptGroup|operator\.(attrgetter|itemgetter))$')
# The one holder, and what needs nova to be imported here.
_ALLOWED = {('iosched.nova_plugin.state', '_WORKER'),
            ('iosched.nova_plugin.validators', 'UNKNOWN_KEY')}


def _modules():
    for info in pkgutil.walk_packages(iosched.nova_plugin.__path__,
                                      'iosched.nova_plugin.'):
        yield info.name


def _module_level_values(name):
    """(target, value node) of each module-level assignment of ``name``."""
    spec = importlib.util.find_spec(name)
    tree = ast.parse(open(spec.origin).read())
    for node in tree.body:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    yield target.id, node.value


def _is_value(module, target, node):
    """True for what holds no state: a constant, a frozen dataclass or an
    object without attributes, a logger, a compiled pattern, a list of
    options.
    """
    if isinstance(node, (ast.List, ast.Dict, ast.Set)) and not (
            node.elts if hasattr(node, 'elts') else node.keys):
        return False        # an empty accumulator
    if not isinstance(node, ast.Call):
        return True
    if _VALUE_CALLS.match(ast.unparse(node.func)):
        return True
    value = getattr(module, target)
    if dataclasses.is_dataclass(value):
        return type(value).__dataclass_params__.frozen
    return not getattr(value, '__dict__', True) and not isinstance(
        value, types.ModuleType)


def test_no_module_level_mutable_state():
    found = []
    for name in _modules():
        try:
            module = importlib.import_module(name)
        except ImportError:             # nova-only modules without nova
            continue
        for target, node in _module_level_values(name):
            if (name, target) in _ALLOWED:
                continue
            if not _is_value(module, target, node):
                found.append('%s.%s = %s' % (name, target,
                                             ast.unparse(node)[:40]))
    assert found == []


@pytest.mark.parametrize('source, flagged', [
    ('X = []', True),
    ('X = {}', True),
    ('X = Cls()', True),
    ('X = FROZEN', False),
    ('X = [1]', False),
    ('X = logging.getLogger(__name__)', False),
])
def test_the_mutable_state_check_can_fail(source, flagged):
    @dataclasses.dataclass(frozen=True)
    class Frozen:
        a: int = 0

    class Cls(object):
        def __init__(self):
            self.held = {}
    module = types.SimpleNamespace(X=Cls() if 'Cls' in source else
                                   Frozen() if 'FROZEN' in source else
                                   None)
    node = ast.parse(source).body[0].value
    if 'FROZEN' in source:
        node = ast.parse('X = Frozen()').body[0].value
    assert (not _is_value(module, 'X', node)) is flagged


def test_settings_follow_every_change_of_conf():
    conf = _conf()
    st = state.SchedulerState()
    first = st.settings(conf)
    assert first == prepared.settings(conf)
    assert st.settings(conf) is first           # nothing changed: kept
    for change, value in (
            (lambda: conf.set_override('max_io_vcpus_per_pcpu', 2.0,
                                       group='iosched'), 2.0),
            (lambda: conf.set_default('max_io_vcpus_per_pcpu', 3.0,
                                      group='iosched'), 2.0),
            (lambda: conf.clear_override('max_io_vcpus_per_pcpu',
                                         group='iosched'), 3.0),
            (lambda: conf.clear_default('max_io_vcpus_per_pcpu',
                                        group='iosched'), 1.0)):
        change()
        assert st.settings(conf).max_io_vcpus_per_pcpu == value
        assert st.settings(conf) == prepared.settings(conf)
    conf.set_override('report_ttl_intervals', 7.0, group='iosched')
    assert st.configure(conf).store.ttl_intervals == 7.0
