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
"""The LSVM trait on this host's compute node resource provider.

While the agent's reports say the host supports LSVMs
(``report.lsvm.supported``: the vslicer policy ran), ``TraitPublisher``
keeps the custom trait ``[lsvm_trait] trait_name`` (default
``CUSTOM_IOSCHED_LSVM``) on the compute node's resource provider in
Placement, and takes it off when they say it does not; an LSVM flavor then
asks for it with ``trait:CUSTOM_IOSCHED_LSVM=required``.

Placement protocol (microversion 1.6, ``PlacementTraits``): find the
provider by name (``GET /resource_providers?name=``), read its traits and
generation, and if the trait must change, create the custom trait
(``PUT /traits/{name}``, only when adding) and ``PUT`` the provider's full
trait set back with that generation, keeping every other trait (Nova's
``COMPUTE_*`` traits, operators' ones). A 409 (someone, usually
nova-compute, wrote in between) is answered by reading again, up to
``MAX_CONFLICTS`` times per attempt. Nova does not drop a trait it did not
set: its resource tracker writes traits with the provider generation too,
re-reads on a 409, and only manages its own capability traits.

Threading: ``report_host_io`` (called on the agent's tick) only records
the wanted state; one background thread does the HTTP, when the wanted
state changes, after a failure (capped exponential backoff, ``retry_delay``)
and every ``recheck_interval`` seconds (someone may have removed the
trait). Nothing here raises into the agent. INFO says what was changed,
WARNING why it could not be. A clean stop leaves the trait in place (the
host keeps the capability); it is removed only when the reports say
unsupported.
"""

import dataclasses
import threading
import time
import urllib.parse

from oslo_log import log as logging

from host_agent.conf import keystone
from host_agent.conf import placement as placement_conf

LOG = logging.getLogger(__name__)

MICROVERSION = '1.6'       # traits on resource providers
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

    ``wanted``: None until the first report, else whether the trait must
    be on the provider. ``confirmed``: what the last successful attempt
    saw or made (None before one). A failure backs off even if the wanted
    state changes meanwhile, so a flapping report cannot hammer a broken
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


def traits_to_put(current, trait, present):
    """The provider's new trait set, or None if ``current`` is right."""
    current = set(current)
    if (trait in current) == present:
        return None
    return current | {trait} if present else current - {trait}


class PlacementTraits:
    """The few Placement calls the publisher makes, over a ksa Adapter.

    The adapter must not raise on HTTP errors (``raise_exc=False``); each
    call sends microversion 1.6.
    """

    def __init__(self, adapter):
        self.adapter = adapter

    def _call(self, method, url, **kw):
        kw.setdefault('microversion', MICROVERSION)
        kw.setdefault('raise_exc', False)
        return getattr(self.adapter, method)(url, **kw)

    @staticmethod
    def _error(what, resp):
        text = (getattr(resp, 'text', '') or '').strip().replace('\n', ' ')
        return PlacementError('%s: HTTP %s %s' % (what, resp.status_code,
                                                  text[:300]))

    def provider_uuid(self, name):
        resp = self._call('get', '/resource_providers?' +
                          urllib.parse.urlencode({'name': name}))
        if resp.status_code != 200:
            raise self._error('cannot list resource provider %r' % name,
                              resp)
        providers = resp.json().get('resource_providers', [])
        if not providers:
            raise ProviderNotFound(
                'no resource provider named %r in Placement (has '
                'nova-compute started on this host? [lsvm_trait] '
                'provider_name must be the hypervisor hostname)' % name)
        return providers[0]['uuid']

    def provider_traits(self, uuid):
        """(set of trait names, resource provider generation)."""
        resp = self._call('get', '/resource_providers/%s/traits' % uuid)
        if resp.status_code == 404:
            raise ProviderNotFound('resource provider %s was deleted' % uuid)
        if resp.status_code != 200:
            raise self._error('cannot read the traits of %s' % uuid, resp)
        body = resp.json()
        return set(body['traits']), body['resource_provider_generation']

    def ensure_trait(self, name):
        resp = self._call('put', '/traits/%s' % name)
        if resp.status_code not in (201, 204):
            raise self._error('cannot create trait %s' % name, resp)

    def put_traits(self, uuid, traits, generation):
        resp = self._call('put', '/resource_providers/%s/traits' % uuid,
                          json={'traits': sorted(traits),
                                'resource_provider_generation': generation})
        if resp.status_code == 409:
            raise GenerationConflict(
                'resource provider %s changed meanwhile (generation %s)'
                % (uuid, generation))
        if resp.status_code != 200:
            raise self._error('cannot set the traits of %s' % uuid, resp)


def set_trait(api, provider_name, trait, present,
              max_conflicts=MAX_CONFLICTS):
    """Make ``trait`` present or absent on the named provider, once.

    Returns True if it changed the provider, False if it was already
    right. Raises PlacementError (ProviderNotFound, GenerationConflict
    after ``max_conflicts`` conflicting writes) or keystoneauth1's
    exceptions (unreachable, auth refused).
    """
    uuid = api.provider_uuid(provider_name)
    created = False
    for attempt in range(max_conflicts):
        current, generation = api.provider_traits(uuid)
        new = traits_to_put(current, trait, present)
        if new is None:
            return False
        if present and not created:
            api.ensure_trait(trait)
            created = True
        try:
            api.put_traits(uuid, new, generation)
            return True
        except GenerationConflict:
            if attempt == max_conflicts - 1:
                raise
            LOG.debug('trait %s on %s: generation %s conflicted, re-reading',
                      trait, provider_name, generation)


def placement_adapter(conf, group=placement_conf.PLACEMENT_GROUP):
    """A keystoneauth1 Adapter for Placement from the ``[placement]`` options.

    Raises ValueError when no auth plugin is configured, keystoneauth1's
    errors for incomplete auth options.
    """
    return keystone.load_adapter(conf, group,
                                 "nova-compute's [placement] section",
                                 default_microversion=MICROVERSION)


@dataclasses.dataclass
class State:
    wanted: object = None        # None | bool
    confirmed: object = None     # None | bool: what Placement had last time
    failures: int = 0
    last_attempt: float = 0.0
    last_error: str = ''
    attempts: int = 0
    changes: int = 0


class TraitPublisher:
    """Keeps the LSVM trait on the provider as the reports say (see module).

    ``api_factory()`` returns a ``PlacementTraits``; it is called in the
    background thread (so a broken configuration is a WARNING and a retry,
    not a crash) and its result kept. ``sync()`` runs one attempt in the
    caller's thread; ``start()`` runs them in the background.
    """

    def __init__(self, api_factory, provider_name,
                 trait=placement_conf.DEFAULT_TRAIT, recheck_interval=300.0,
                 retry_initial=2.0, retry_max=300.0, clock=time.monotonic):
        if not provider_name:
            raise ValueError('provider_name is empty: accepted is the name '
                             'of the compute node resource provider')
        self.trait = placement_conf.validate_trait_name(trait)
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
            self.want(bool(report.lsvm.supported))
        except Exception:
            LOG.exception('LSVM trait: cannot read the report')

    def want(self, present):
        with self._cond:
            if self.state.wanted != present:
                self.state.wanted = present
                self._cond.notify_all()

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
            changed = set_trait(self._api, self.provider_name, self.trait,
                                wanted)
        except Exception as e:
            with self._cond:
                self.state.failures += 1
                self.state.last_error = '%s: %s' % (type(e).__name__, e)
                delay = retry_delay(self.state.failures, self.retry_initial,
                                    self.retry_max)
            LOG.warning('LSVM trait: could not %s trait %s on resource '
                        'provider %r: %s; retrying in %.0f s',
                        'set' if wanted else 'remove', self.trait,
                        self.provider_name, self.state.last_error, delay)
            return False
        with self._cond:
            self.state.failures = 0
            self.state.last_error = ''
            self.state.confirmed = wanted
            self.state.changes += int(changed)
            self._cond.notify_all()
        if changed and wanted:
            LOG.info('LSVM trait: added %s to resource provider %r (the '
                     'agent reports this host supports LSVMs)', self.trait,
                     self.provider_name)
        elif changed:
            LOG.info('LSVM trait: removed %s from resource provider %r (the '
                     'agent reports this host does not support LSVMs: '
                     'vslicer policy not enabled)', self.trait,
                     self.provider_name)
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
                target=self._run, name='iosched-lsvm-trait', daemon=True)
            self._thread.start()
        return self

    def stop(self, timeout=10.0):
        """Stop the thread (an HTTP call in flight ends first, or times out).

        Leaves the trait where it is.
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
    """Hands each report to several reporters: the publisher, then RPC."""

    def __init__(self, *reporters):
        self.reporters = [r for r in reporters if r is not None]

    def report_host_io(self, report):
        for reporter in self.reporters:
            reporter.report_host_io(report)


def start_from_conf(conf, host):
    """A started TraitPublisher, or None unless ``[lsvm_trait] publish``."""
    opts = conf.lsvm_trait
    if not opts.publish:
        return None
    publisher = TraitPublisher(
        lambda: PlacementTraits(placement_adapter(conf)),
        opts.provider_name or host, trait=opts.trait_name,
        recheck_interval=opts.recheck_interval,
        retry_initial=opts.retry_initial_interval,
        retry_max=opts.retry_max_interval)
    LOG.info('LSVM trait: publishing %s on resource provider %r',
             publisher.trait, publisher.provider_name)
    return publisher.start()


def with_publisher(reporter, publisher):
    """The agent's reporter with ``publisher`` added (either may be None)."""
    if publisher is None:
        return reporter
    return ReportFanout(publisher, reporter)
