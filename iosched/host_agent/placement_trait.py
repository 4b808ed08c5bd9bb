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

Threading (``placement_base.Publisher``): ``report_host_io`` (called on
the agent's tick) only records the wanted state; one background thread
does the HTTP, when the wanted state changes, after a failure (capped
exponential backoff) and every ``recheck_interval`` seconds (someone may
have removed the trait). Nothing here raises into the agent. INFO says
what was changed, WARNING why it could not be. A clean stop leaves the trait in
place (the host keeps the capability); it is removed only when the reports say
unsupported.
"""

from oslo_log import log as logging

from iosched.host_agent.conf import placement as placement_conf
from iosched.host_agent import placement_base

LOG = logging.getLogger(__name__)

MICROVERSION = '1.6'       # traits on resource providers
MAX_CONFLICTS = placement_base.MAX_CONFLICTS

# The shared machinery, under the names this module always had.
PlacementError = placement_base.PlacementError
ProviderNotFound = placement_base.ProviderNotFound
GenerationConflict = placement_base.GenerationConflict
retry_delay = placement_base.retry_delay
next_attempt = placement_base.next_attempt
State = placement_base.State
ReportFanout = placement_base.ReportFanout
with_publisher = placement_base.with_publisher


def traits_to_put(current, trait, present):
    """The provider's new trait set, or None if ``current`` is right."""
    current = set(current)
    if (trait in current) == present:
        return None
    return current | {trait} if present else current - {trait}


class PlacementTraits(placement_base.PlacementAPI):
    """The few Placement calls the trait publisher makes (microversion 1.6).
    """

    MICROVERSION = MICROVERSION
    NAME_OPTION = '[lsvm_trait] provider_name'

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
    return placement_base.placement_adapter(conf, group, MICROVERSION)


class TraitPublisher(placement_base.Publisher):
    """Keeps the LSVM trait on the provider as the reports say (see module).

    ``api_factory()`` returns a ``PlacementTraits``; the threading is
    ``placement_base.Publisher``'s.
    """

    WHAT = 'LSVM trait'
    THREAD_NAME = 'iosched-lsvm-trait'
    _log = LOG

    def __init__(self, api_factory, provider_name,
                 trait=placement_conf.DEFAULT_TRAIT, **kw):
        self.trait = placement_conf.validate_trait_name(trait)
        super().__init__(api_factory, provider_name, **kw)

    def wanted_from_report(self, report):
        return bool(report.lsvm.supported)

    def _failed(self, wanted):
        return '%s trait %s on resource provider %r' % (
            'set' if wanted else 'remove', self.trait, self.provider_name)

    def _apply(self, api, wanted):
        changed = set_trait(api, self.provider_name, self.trait, wanted)
        if changed and wanted:
            LOG.info('LSVM trait: added %s to resource provider %r (the '
                     'agent reports this host supports LSVMs)', self.trait,
                     self.provider_name)
        elif changed:
            LOG.info('LSVM trait: removed %s from resource provider %r (the '
                     'agent reports this host does not support LSVMs: '
                     'vslicer policy not enabled)', self.trait,
                     self.provider_name)
        return changed


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
