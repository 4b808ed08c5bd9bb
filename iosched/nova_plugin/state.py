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
"""What a scheduler worker keeps between requests, and how it is found.

``SchedulerState`` is all of it: the report ``store`` (slim entries, fed
by the listener), ``prepared`` (each report's figures and the in-flight
baselines of Nova's placements since that report), ``views`` (per thread,
the figures of the request being scheduled), ``requests`` (the last
RequestSpec read, per thread), the ``explainer`` ring (the why of every
decision), the SLO ``resolver`` (its caches of Cinder's answers),
``metrics`` (counters, registry, endpoint) and the ``listener`` handle.
Nothing else in nova_plugin holds mutable state between requests
(tests/unit/nova_plugin/test_state.py checks every module).

Finding it. Nova builds filters and weighers without arguments, so they
find the state of their process here:

* ``for_worker(conf)``, called when the plugin loads (the filters' and
  the weigher's ``__init__``): the first call of a process makes the
  worker's state and starts its report listener (when ``[iosched]
  listen_for_reports`` is set; else it says once, at WARNING, that
  nothing feeds the store); later calls return the same state.
* ``for_request()``, once per scheduling request (``filter_all``,
  ``weigh_objects``): the same state, without a lock on the common path;
  ``current()`` is the same without the eventlet check below (Nova's
  per-host ``host_passes`` and ``_weigh_object``).
* ``use_state(state)``: tests, the demo and the benchmarks build their
  own ``SchedulerState`` (a simulated clock, a store they feed) and
  install it for a ``with`` block; the filters and weighers use it
  meanwhile. Its owner starts (or not) its listener; ``for_worker``
  leaves it alone.

Worker start. Nova builds its filters and weighers in the parent process,
then oslo.service forks the scheduler workers (the threading backend
through ``multiprocessing``'s fork, the eventlet backend through
``os.fork``). Threads, connections and held locks do not survive a fork,
so ``os.register_at_fork`` hooks run at every fork:

* before it, in the parent: a process that forks is a launcher, not a
  worker, so its state is retired: its listener asked to stop at once (a
  listener still connecting stops before it listens or asks for a resync)
  and stopped, with its metrics endpoint, in a background thread (a fork
  must not wait for the bus);
* after it, in the child: a new state of its own, whose listener starts
  straight away, before its first request. The parent's state is kept
  referenced and never touched (its server shares the parent's sockets;
  no finalizer may close them).

A process that never forks (a single scheduler worker, tests) keeps the
state made at load. One that forks and schedules after all (a single
worker that spawned a process through a fork, which the hooks cannot tell
from a launcher's) listens again at its next request (``for_request()``),
and asks the agents for a resync.

Eventlet. With nova-scheduler monkey-patched by eventlet the listener is a
green thread. oslo.service's eventlet ``ProcessLauncher`` replaces the hub
right after the fork (``eventlet.hubs.use_hub()``), which silently drops a
green thread spawned in the at-fork hook (and the RPC server's), and Nova
calls nothing of the plugin between that and the first request. So
``for_request()`` checks that the listener's hub still runs
(``BackgroundListener.lost()``) and starts it again if not. That and the
retired case above are the only starts a request can make, and only
there. In native-thread mode
(``OS_NOVA_DISABLE_EVENTLET_PATCHING=true``, the default of nova-scheduler
since Nova 2025.2) the at-fork start stands.

No nova import.
"""

import contextlib
import os
import threading
import time

from oslo_config import cfg
from oslo_log import log as logging

from iosched.nova_plugin import explain
from iosched.nova_plugin import listener as listener_mod
from iosched.nova_plugin import metrics as metrics_mod
from iosched.nova_plugin import prepared
from iosched.nova_plugin import request_spec
from iosched.nova_plugin import request_view
from iosched.nova_plugin import slo_lookup
from iosched.nova_plugin import store as store_mod

LOG = logging.getLogger(__name__)


class SchedulerState(object):
    """One scheduler worker's store, caches, ring, metrics and listener.

    ``clock`` is the store's (the demo's is simulated), ``slo_clock`` the
    SLO caches' (monotonic).
    """

    def __init__(self, clock=time.time, slo_clock=time.monotonic):
        self.pid = os.getpid()
        # the age bound from the start: the resync fills it before the
        # first request configures it (``[iosched] report_max_age``)
        self.store = store_mod.ReportStore(clock=clock, slim=True,
                                           max_age=0.0)
        self.prepared = prepared.Cache()
        self.requests = request_spec.LastRead()
        # each request's report figures, shared by the filters and weigher
        self.views = request_view.Views()
        self.explainer = explain.Explainer()
        self.resolver = slo_lookup.Resolver(clock=slo_clock)
        self.metrics = metrics_mod.SchedulerMetrics(self.store)
        # hosts whose agent cannot know its SLO floors, warned about once
        self.slo_unknowing_warned = set()
        self.listener = None
        # this process forked: it is a launcher (see the module docstring)
        self.retired = False
        # listeners eventlet dropped with their hub: never resumed, never
        # stopped (their sockets may be shared), kept referenced
        self.lost_listeners = []
        self._listen = None         # (conf, transport_url) of the listener
        self._warned_off = False
        self._lock = threading.Lock()
        # the [iosched] options last read (``_options``)
        self._read_options = None

    def configure(self, conf):
        """Apply ``conf.iosched`` to the store and the SLO caches; cheap
        when nothing changed (once per request). Returns the state.
        """
        (ttl, max_hosts, skew, max_age, slo_ttl,
         slo_entries) = self._options(conf).store
        st = self.store
        if (ttl != st.ttl_intervals or max_hosts != st.max_hosts or
                skew != st.max_clock_skew or max_age != st.max_age):
            st.configure(ttl_intervals=ttl, max_hosts=max_hosts,
                         max_clock_skew=skew, max_age=max_age)
        self.resolver.configure(ttl=slo_ttl, max_entries=slo_entries)
        return self

    def settings(self, conf):
        """``prepared.settings(conf)``, read again only when oslo.config
        may have changed a value (``_options``).
        """
        return self._options(conf).settings

    def _options(self, conf):
        # oslo.config caches every value it returns, the group's
        # ``GroupAttr`` too, and empties that cache whenever a value may
        # change (set_override, set_default, clear_override, reload,
        # mutate, a new parse, register): a new ``conf.iosched`` object
        # is then made. So the values read with the object held here
        # stand while ``conf.iosched`` is that object.
        g = conf.iosched
        held = self._read_options
        if held is not None and held.group is g:
            return held
        held = self._read_options = _Options(g, prepared.settings(conf), (
            g.report_ttl_intervals, g.store_max_hosts,
            g.report_max_clock_skew, g.report_max_age,
            g.slo_cache_seconds, g.slo_cache_max_entries))
        return held

    def start_listener(self, conf, transport_url=None):
        """Start the report listener once, if ``[iosched]
        listen_for_reports`` is set; returns it, or None (listening off:
        said once, at WARNING). Never blocks on the bus.
        """
        if not conf.iosched.listen_for_reports:
            if not self._warned_off:
                self._warned_off = True
                LOG.warning('[iosched] listen_for_reports is off: nothing '
                            'feeds this scheduler worker\'s report store, so '
                            'every host counts as missing (set it in '
                            'nova.conf of nova-scheduler)')
            return None
        with self._lock:
            held = self.listener
            if held is not None and not held.lost() and not self.retired:
                return held
            if self.retired:
                LOG.info('iosched report listener: this process forked but '
                         'schedules; listening again')
            elif held is not None:
                LOG.info('iosched report listener: its green threads were '
                         'dropped with the eventlet hub after fork; starting '
                         'it again')
                self.lost_listeners.append(held)
            self.retired = False
            self._listen = (conf, transport_url)
            self.listener = listener_mod.BackgroundListener(
                conf, self.store, transport_url=transport_url,
                metrics=self.metrics)
            return self.listener.start()

    def revive_listener(self):
        """Start the listener again if eventlet dropped it or this process
        forked (see the module docstring); cheap otherwise.
        """
        held = self.listener
        if held is not None and (self.retired or held.lost()):
            self.start_listener(*self._listen)

    def retire(self):
        """This process forks workers: stop listening and serving metrics,
        without waiting (see the module docstring).
        """
        held = self.listener
        if held is None or self.retired:
            return
        self.retired = True
        held.cancel()
        exporter = self.metrics.release_exporter()
        threading.Thread(target=_stop_retired, args=(held, exporter),
                         name='iosched-retire', daemon=True).start()

    def stop(self):
        """Stop the listener and the metrics endpoint (tests, shutdown)."""
        held, self.listener = self.listener, None
        if held is not None:
            held.stop()
        self.metrics.stop_exporter()


class _Options(object):
    """``[iosched]`` as read from one ``conf.iosched`` object."""

    __slots__ = ('group', 'settings', 'store')

    def __init__(self, group, settings, store):
        self.group = group
        self.settings = settings
        self.store = store


def _stop_retired(held, exporter):
    held.stop()
    if exporter is not None:
        exporter.stop()


class _Worker(object):
    """This process's state, and whether ``for_worker`` made it (then a
    forked child makes its own) or its owner installed it.
    """

    def __init__(self):
        self.state = None
        self.owned = False
        self.conf = None
        self.transport_url = None
        # states of parent processes: never stopped, never freed
        self.inherited = []
        self.lock = threading.Lock()


# The one module-level holder of mutable state in nova_plugin.
_WORKER = _Worker()


def for_worker(conf, transport_url=None):
    """The state of this worker; the first call of a process (or of a
    forked child) makes it and starts its listener. A state installed by
    ``use_state`` is returned as it is.
    """
    w = _WORKER
    pid = os.getpid()
    with w.lock:
        st = w.state
        if st is not None and (st.pid == pid or not w.owned):
            return st
        if st is not None:
            w.inherited.append(st)
        st = SchedulerState()
        w.state, w.owned = st, True
        w.conf, w.transport_url = conf, transport_url
    st.configure(conf)
    st.start_listener(conf, transport_url)
    return st


def current():
    """The state of this worker (made if the plugin was not loaded in
    this process).
    """
    st = _WORKER.state
    if st is None or (_WORKER.owned and st.pid != os.getpid()):
        return for_worker(_WORKER.conf or cfg.CONF, _WORKER.transport_url)
    return st


def for_request():
    """``current()``, with a listener that eventlet dropped (or that a
    fork retired) started again (see the module docstring): once per
    scheduling request.
    """
    st = current()
    st.revive_listener()
    return st


@contextlib.contextmanager
def use_state(state):
    """Install ``state`` as this process's for the ``with`` block (tests,
    the demo, benchmarks); the previous one comes back afterwards.
    """
    w = _WORKER
    with w.lock:
        previous = (w.state, w.owned)
        w.state, w.owned = state, False
    try:
        yield state
    finally:
        with w.lock:
            w.state, w.owned = previous


def _before_fork():
    """In a process about to fork: retire its state (it is a launcher)."""
    w = _WORKER
    st = w.state
    if st is not None and w.owned and st.pid == os.getpid():
        try:
            st.retire()
        except Exception:       # a fork must never fail because of us
            LOG.exception('iosched scheduler state not retired before fork')


def _after_fork_in_child():
    """In a forked child: a new state of its own, and its listener."""
    w = _WORKER
    w.lock = threading.Lock()   # the parent's may have been held at fork
    if w.state is None or not w.owned:
        return                  # nothing loaded, or a state someone owns
    w.inherited.append(w.state)
    w.state = None
    try:
        for_worker(w.conf, w.transport_url)
    except Exception:           # a fork must never fail because of us
        LOG.exception('iosched scheduler state not made after fork; it is '
                      'made at the first scheduling request')


if hasattr(os, 'register_at_fork'):
    os.register_at_fork(before=_before_fork,
                        after_in_child=_after_fork_in_child)
