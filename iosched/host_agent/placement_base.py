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
"""What the agent's Placement publishers share.

The LSVM trait (``placement_trait``) and the I/O inventories
(``placement_inventory``) are kept in Placement the same way, by a
``Publisher`` subclass:

* ``report_host_io`` (called on the agent's tick) only records the wanted
  state derived from the report; it never does HTTP and never raises.
* One background thread calls ``sync()`` when the wanted state changes,
  after a failure (capped exponential backoff, ``retry_delay``) and every
  ``recheck_interval`` seconds once settled (someone may have changed
  Placement by hand). A failure is a WARNING naming why and when the next
  try is; nothing raises into the agent.
* ``PlacementAPI`` sends each call with the subclass's microversion over a
  keystoneauth1 Adapter that does not raise on HTTP errors, and finds the
  compute node's resource provider by name.

Also here: ``ReportFanout``/``with_publisher``, which hand each report to
the publishers before the RPC reporter.
"""

import dataclasses
import threading
import time
import urllib.parse

from oslo_log import log as logging

from iosched.host_agent.conf import keystone
from iosched.host_agent.conf import placement as placement_conf

LOG = logging.getLogger(__name__)

MAX_CONFLICTS = 4          # generation conflicts re-read within one attempt


class PlacementError(Exception):
    """Placement answered something the publisher cannot use."""


class ProviderNotFound(PlacementError):
    """No resource provider of that name (nova-compute not started yet?)."""


class GenerationConflict(PlacementError):
    """The provider changed between our read and our write (409)."""


def retry_delay(failures, initial, cap):
    """Seconds to wait after ``failures`` consecutive failures (>= 1)."""
    return min(cap, initial * 2 ** (max(1, failures) - 1))


def next_attempt(wanted, confirmed, failures, last_attempt, now, recheck,
                 initial, cap):
    """Seconds from ``now`` until the next attempt; None: nothing to do.

    ``wanted``: None until the first report, else what Placement must
    show. ``confirmed``: what the last successful attempt saw or made
    (None before one). A failure backs off even if the wanted state
    changes meanwhile, so a flapping report cannot hammer a broken
    Placement; otherwise a change is acted on at once and a settled state
    is re-checked every ``recheck`` seconds.
    """
    if wanted is None:
        return None
    if failures:
        due = last_attempt + retry_delay(failures, initial, cap)
    elif confirmed != wanted:
        return 0.0
    else:
        due = last_attempt + recheck
    return max(0.0, due - now)


def placement_adapter(conf, group=placement_conf.PLACEMENT_GROUP,
                      microversion='1.6'):
    """A keystoneauth1 Adapter for Placement from the ``[placement]`` options.

    Raises ValueError when no auth plugin is configured, keystoneauth1's
    errors for incomplete auth options.
    """
    return keystone.load_adapter(conf, group,
                                 "nova-compute's [placement] section",
                                 default_microversion=microversion)


class PlacementAPI:
    """Placement calls over a ksa Adapter (``raise_exc=False``).

    Subclasses set ``MICROVERSION`` (sent with every call) and
    ``NAME_OPTION`` (the option an operator fixes when the compute node's
    provider is not found).
    """

    MICROVERSION = '1.6'
    NAME_OPTION = '[lsvm_trait] provider_name'

    def __init__(self, adapter):
        self.adapter = adapter

    def _call(self, method, url, **kw):
        kw.setdefault('microversion', self.MICROVERSION)
        kw.setdefault('raise_exc', False)
        return getattr(self.adapter, method)(url, **kw)

    @staticmethod
    def _error(what, resp):
        text = (getattr(resp, 'text', '') or '').strip().replace('\n', ' ')
        return PlacementError('%s: HTTP %s %s' % (what, resp.status_code,
                                                  text[:300]))

    def find_provider(self, name):
        """The provider named ``name`` (Placement's JSON object) or None."""
        resp = self._call('get', '/resource_providers?' +
                          urllib.parse.urlencode({'name': name}))
        if resp.status_code != 200:
            raise self._error('cannot list resource provider %r' % name,
                              resp)
        providers = resp.json().get('resource_providers', [])
        return providers[0] if providers else None

    def provider_uuid(self, name):
        provider = self.find_provider(name)
        if provider is None:
            raise ProviderNotFound(
                'no resource provider named %r in Placement (has '
                'nova-compute started on this host? %s must be the '
                'hypervisor hostname)' % (name, self.NAME_OPTION))
        return provider['uuid']


@dataclasses.dataclass
class State:
    wanted: object = None        # None until the first report
    confirmed: object = None     # what Placement had last time (None: ?)
    failures: int = 0
    last_attempt: float = 0.0
    last_error: str = ''
    attempts: int = 0
    changes: int = 0


class Publisher:
    """Keeps Placement as the reports say, from one thread (see module).

    Subclasses implement ``wanted_from_report(report)`` (the wanted state,
    comparable with ``==``), ``_apply(api, wanted)`` (one attempt: make
    Placement so; True if it changed something; raise on failure) and
    ``_failed(wanted)`` (what could not be done, for the WARNING), and set
    ``WHAT`` (the log prefix), ``THREAD_NAME`` and ``_log``.

    ``api_factory()`` returns the subclass's ``PlacementAPI``; it is called
    in the background thread (so a broken configuration is a WARNING and a
    retry, not a crash) and its result kept. ``sync()`` runs one attempt
    in the caller's thread; ``start()`` runs them in the background.
    """

    WHAT = 'Placement'
    THREAD_NAME = 'iosched-placement'
    _log = LOG

    def __init__(self, api_factory, provider_name, recheck_interval=300.0,
                 retry_initial=2.0, retry_max=300.0, clock=time.monotonic):
        if not provider_name:
            raise ValueError('provider_name is empty: accepted is the name '
                             'of the compute node resource provider')
        self.provider_name = provider_name
        self.recheck_interval = recheck_interval
        self.retry_initial = retry_initial
        self.retry_max = retry_max
        self._factory = api_factory
        self._api = None
        self._clock = clock
        self._cond = threading.Condition()
        self._stopping = False
        self._thread = None
        self.state = State()

    # -- the agent's side (never blocks on HTTP, never raises) -------------

    def report_host_io(self, report):
        try:
            self.want(self.wanted_from_report(report))
        except Exception:
            self._log.exception('%s: cannot read the report', self.WHAT)

    def want(self, wanted):
        """Record the wanted state; True if it changed."""
        with self._cond:
            if self.state.wanted == wanted:
                return False
            self.state.wanted = wanted
            self._cond.notify_all()
            return True

    # -- one attempt ------------------------------------------------------

    def sync(self):
        """One attempt now. True when Placement is as wanted afterwards."""
        with self._cond:
            wanted = self.state.wanted
            self.state.last_attempt = self._clock()
            self.state.attempts += 1
        if wanted is None:
            return False
        try:
            if self._api is None:
                self._api = self._factory()
            changed = self._apply(self._api, wanted)
        except Exception as e:
            with self._cond:
                self.state.failures += 1
                self.state.last_error = '%s: %s' % (type(e).__name__, e)
                delay = retry_delay(self.state.failures, self.retry_initial,
                                    self.retry_max)
            self._log.warning('%s: could not %s: %s; retrying in %.0f s',
                              self.WHAT, self._failed(wanted),
                              self.state.last_error, delay)
            return False
        with self._cond:
            self.state.failures = 0
            self.state.last_error = ''
            self.state.confirmed = wanted
            self.state.changes += int(bool(changed))
            self._cond.notify_all()
        return True

    # -- the background thread --------------------------------------------

    def _delay(self):
        s = self.state
        return next_attempt(s.wanted, s.confirmed, s.failures,
                            s.last_attempt, self._clock(),
                            self.recheck_interval, self.retry_initial,
                            self.retry_max)

    def _run(self):
        while True:
            with self._cond:
                while not self._stopping:
                    delay = self._delay()
                    if delay is not None and delay <= 0:
                        break
                    self._cond.wait(delay)
                if self._stopping:
                    return
            self.sync()

    def start(self):
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._run, name=self.THREAD_NAME, daemon=True)
            self._thread.start()
        return self

    def stop(self, timeout=10.0):
        """Stop the thread (an HTTP call in flight ends first, or times out).

        Leaves Placement as it is.
        """
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(timeout)

    def wait_settled(self, timeout):
        """Wait until Placement is as wanted; False on timeout (for tests)."""
        end = self._clock() + timeout
        with self._cond:
            while not (self.state.wanted is not None and
                       self.state.confirmed == self.state.wanted and
                       not self.state.failures):
                left = end - self._clock()
                if left <= 0:
                    return False
                self._cond.wait(left)
            return True


class ReportFanout:
    """Hands each report to several reporters: the publishers, then RPC."""

    def __init__(self, *reporters):
        self.reporters = [r for r in reporters if r is not None]

    def report_host_io(self, report):
        for reporter in self.reporters:
            reporter.report_host_io(report)


def with_publisher(reporter, *publishers):
    """The agent's reporter with ``publishers`` added (any may be None)."""
    publishers = [p for p in publishers if p is not None]
    if not publishers:
        return reporter
    return ReportFanout(*publishers, reporter)
