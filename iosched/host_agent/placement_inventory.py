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
"""The host's I/O capacity as Placement inventories of a child provider.

``InventoryPublisher`` keeps a child resource provider of this host's
compute node, named ``<compute node provider name>:iosched`` (as Neutron
and Cyborg keep theirs), with inventories of three custom resource classes
derived from the agent's reports. What they should be (the classes, their
totals and reserves from a report and the ``[io_inventory]`` options, the
unclaimed I/O vCPUs' reserve, what to write over what Placement has) is
``placement_sizing`` (pure); this module keeps them in Placement.

Placement protocol (microversion 1.26: reserved may equal total): find the
compute node's provider by name, find or create the child
(``POST /resource_providers`` with ``parent_provider_uuid``), read its
inventories and generation, create the custom resource classes it lacks
(``PUT /resource_classes/{name}``) and ``PUT`` the full inventory set with
that generation; a 409 (a concurrent write, or allocations made meanwhile)
is answered by reading again. A class no longer wanted that allocations
still use cannot be deleted (Placement: inventory in use): it stays with
reserved = total, so nothing new fits, and a WARNING says so; the next
recheck deletes it once the allocations are gone. Nova's resource tracker
leaves the child alone (it only writes the providers its driver changes).

Threading is ``placement_base.Publisher``'s. The child is never deleted by
the agent (the capacity is the host's, not the agent's).
"""

import dataclasses

from oslo_log import log as logging

from iosched.host_agent.conf import placement as placement_conf
from iosched.host_agent import placement_base
from iosched.host_agent import placement_sizing as sizing

LOG = logging.getLogger(__name__)

MICROVERSION = '1.26'      # 1.14 parents, 1.20 POST body, 1.26 reserved=total
CHILD_SUFFIX = ':iosched'


class InventoryInUse(placement_base.GenerationConflict):
    """Placement refused to delete a class that allocations use (409)."""


def child_name(compute_name):
    return compute_name + CHILD_SUFFIX


class PlacementInventories(placement_base.PlacementAPI):
    """The Placement calls of the inventory publisher (microversion 1.26)."""

    MICROVERSION = MICROVERSION
    NAME_OPTION = '[io_inventory] provider_name'

    def ensure_child(self, compute_name):
        """The child provider's uuid, creating it under the compute node."""
        parent = self.provider_uuid(compute_name)
        name = child_name(compute_name)
        for _ in range(2):
            child = self.find_provider(name)
            if child is not None:
                if child.get('parent_provider_uuid') != parent:
                    raise placement_base.PlacementError(
                        'resource provider %r (%s) is not a child of the '
                        'compute node %r (%s) but of %s: was the compute '
                        'node re-created? Delete it (openstack resource '
                        'provider delete %s) once no server uses it'
                        % (name, child['uuid'], compute_name, parent,
                           child.get('parent_provider_uuid'),
                           child['uuid']))
                return child['uuid']
            resp = self._call('post', '/resource_providers',
                              json={'name': name,
                                    'parent_provider_uuid': parent})
            if resp.status_code == 200:
                LOG.info('I/O inventory: created resource provider %r (%s), '
                         'child of %r', name, resp.json()['uuid'],
                         compute_name)
                return resp.json()['uuid']
            if resp.status_code != 409:    # 409: created meanwhile
                raise self._error('cannot create resource provider %r'
                                  % name, resp)
        raise placement_base.PlacementError(
            'resource provider %r: Placement says it exists but does not '
            'list it' % name)

    def inventories(self, uuid):
        """({class: inventory}, resource provider generation)."""
        resp = self._call('get', '/resource_providers/%s/inventories' % uuid)
        if resp.status_code == 404:
            raise placement_base.ProviderNotFound(
                'resource provider %s was deleted' % uuid)
        if resp.status_code != 200:
            raise self._error('cannot read the inventories of %s' % uuid,
                              resp)
        body = resp.json()
        return body['inventories'], body['resource_provider_generation']

    def usages(self, uuid):
        resp = self._call('get', '/resource_providers/%s/usages' % uuid)
        if resp.status_code != 200:
            raise self._error('cannot read the usages of %s' % uuid, resp)
        return resp.json()['usages']

    def ensure_resource_class(self, name):
        resp = self._call('put', '/resource_classes/%s' % name)
        if resp.status_code not in (201, 204):
            raise self._error('cannot create resource class %s' % name, resp)

    def put_inventories(self, uuid, inventories, generation):
        resp = self._call('put', '/resource_providers/%s/inventories' % uuid,
                          json={'inventories': inventories,
                                'resource_provider_generation': generation})
        if resp.status_code == 409:
            codes = [e.get('code') for e in _errors(resp)]
            if 'placement.inventory.inuse' in codes:
                raise InventoryInUse(
                    'resource provider %s: a class to delete is in use '
                    '(allocated meanwhile)' % uuid)
            raise placement_base.GenerationConflict(
                'resource provider %s changed meanwhile (generation %s)'
                % (uuid, generation))
        if resp.status_code != 200:
            raise self._error('cannot set the inventories of %s' % uuid,
                              resp)


def _errors(resp):
    try:
        return list(resp.json().get('errors') or ())
    except Exception:
        return []


@dataclasses.dataclass
class Outcome:
    changed: bool
    before: dict
    after: dict
    held: list
    warnings: tuple = ()
    unclaimed: str = ''     # how the IO_VCPU reserve was made, if adjusted


def set_inventories(api, compute_name, wanted,
                    max_conflicts=placement_base.MAX_CONFLICTS,
                    io_vcpus=None):
    """Make the child's inventories ``wanted``, once (see module).

    ``io_vcpus``: the measured I/O vCPUs whose unclaimed part is added to
    the IO_VCPU reserve (``placement_sizing.reserve_unclaimed``); None:
    no adjustment.
    Returns an ``Outcome``. Raises PlacementError (ProviderNotFound,
    GenerationConflict after ``max_conflicts`` conflicting writes) or
    keystoneauth1's exceptions (unreachable, auth refused).
    """
    uuid = api.ensure_child(compute_name)
    created = set()
    adjust = io_vcpus is not None and sizing.IO_VCPU in wanted
    for attempt in range(max_conflicts):
        current, generation = api.inventories(uuid)
        usages = (api.usages(uuid) if adjust or set(current) - set(wanted)
                  else {})
        used = usages.get(sizing.IO_VCPU, 0)
        target, warnings = sizing.reserve_unclaimed(wanted, io_vcpus, used)
        new, held = sizing.plan_inventories(current, usages, target)
        if new is None:
            return Outcome(False, current, current, held)
        unclaimed = ''
        io_vcpu = sizing.IO_VCPU
        before = current.get(io_vcpu, {}).get('reserved')
        after = new.get(io_vcpu, {}).get('reserved')
        configured = wanted.get(io_vcpu, {}).get('reserved')
        # say why when the IO_VCPU reserve changes and was or becomes
        # more than the configured one
        if adjust and before != after and (
                after != configured or before not in (None, configured)):
            unclaimed = ('%s reserved %d = %d configured + max(0, %d '
                         'measured I/O vCPUs - %d allocated)%s'
                         % (io_vcpu, target[io_vcpu]['reserved'],
                            wanted[io_vcpu]['reserved'], io_vcpus, used,
                            ', cut to the total' if warnings else ''))
        for rc in sorted(set(new) - set(current) - created):
            api.ensure_resource_class(rc)
            created.add(rc)
        try:
            api.put_inventories(uuid, new, generation)
            return Outcome(True, current, new, held, warnings, unclaimed)
        except placement_base.GenerationConflict:
            if attempt == max_conflicts - 1:
                raise
            LOG.debug('inventories of %s: generation %s conflicted, '
                      're-reading', child_name(compute_name), generation)


def placement_adapter(conf, group=placement_conf.PLACEMENT_GROUP):
    """A keystoneauth1 Adapter for Placement from ``[placement]``."""
    return placement_base.placement_adapter(conf, group, MICROVERSION)


class InventoryPublisher(placement_base.Publisher):
    """Keeps the child provider's inventories as the reports say.

    ``InventoryPublisher(api_factory, compute_name, options=Options())``
    (``placement_sizing.Options``);
    ``api_factory()`` returns a ``PlacementInventories``. ``report_host_io``
    (never raises) or ``want_from_report`` (raises on a bad report) record
    the wanted state (a ``Wanted``; ``want()`` also takes a plain
    {class: inventory}, without the unclaimed reserve); ``sync()`` makes
    one attempt; ``start()`` runs the background thread
    (``placement_base.Publisher``).
    """

    WHAT = 'I/O inventory'
    THREAD_NAME = 'iosched-io-inventory'
    _log = LOG

    def __init__(self, api_factory, compute_name, options=None, **kw):
        self.options = sizing.Options() if options is None else options
        super().__init__(api_factory, compute_name, **kw)
        self.child_name = child_name(compute_name)
        self.last_outcome = None
        self._warned_for = None

    def _wanted(self, report):
        inventories, warnings = sizing.wanted_inventories(report,
                                                          self.options)
        io_vcpus = None
        if self.options.reserve_unclaimed_io_vcpus:
            io_vcpus = int(report.io_vcpus)
            if io_vcpus < 0:
                raise ValueError('report io_vcpus %d: accepted is an '
                                 'integer >= 0' % io_vcpus)
        return sizing.Wanted(inventories, io_vcpus), warnings

    def wanted_from_report(self, report):
        return self._wanted(report)[0]

    def want_from_report(self, report):
        """Record the state ``report`` calls for; return it (a Wanted).

        The sizing's warnings are logged once per change of the
        inventories (not of the measured I/O vCPUs alone).
        """
        wanted, warnings = self._wanted(report)
        if self.want(wanted) and wanted.inventories != self._warned_for:
            self._warned_for = wanted.inventories
            for warning in warnings:
                LOG.warning('I/O inventory of %r: %s', self.child_name,
                            warning)
        return wanted

    def report_host_io(self, report):
        try:
            self.want_from_report(report)
        except Exception:
            LOG.exception('I/O inventory: cannot read the report')

    def _failed(self, wanted):
        return 'set the inventories of resource provider %r' % (
            self.child_name,)

    def _apply(self, api, wanted):
        if isinstance(wanted, sizing.Wanted):
            outcome = set_inventories(api, self.provider_name,
                                      wanted.inventories,
                                      io_vcpus=wanted.io_vcpus)
        else:
            outcome = set_inventories(api, self.provider_name, wanted)
        self.last_outcome = outcome
        if outcome.changed:
            LOG.info('I/O inventory: resource provider %r: %s%s',
                     self.child_name,
                     '; '.join(sizing.describe_change(outcome.before,
                                                      outcome.after)),
                     ' (%s)' % outcome.unclaimed if outcome.unclaimed
                     else '')
            for warning in outcome.warnings:
                LOG.warning('I/O inventory of %r: %s', self.child_name,
                            warning)
            for rc in outcome.held:
                LOG.warning('I/O inventory: %s of resource provider %r is '
                            'no longer offered but servers still use it: '
                            'kept with reserved = total (%s) so that no '
                            'new server gets it; deleted at a recheck '
                            'once they are gone', rc, self.child_name,
                            outcome.after[rc]['total'])
        return outcome.changed


def start_from_conf(conf, host):
    """A started InventoryPublisher, or None unless ``[io_inventory]
    publish``.
    """
    opts = conf.io_inventory
    if not opts.publish:
        return None
    name = opts.provider_name or conf.lsvm_trait.provider_name or host
    publisher = InventoryPublisher(
        lambda: PlacementInventories(placement_adapter(conf)), name,
        options=sizing.Options.from_conf(opts),
        recheck_interval=opts.recheck_interval,
        retry_initial=opts.retry_initial_interval,
        retry_max=opts.retry_max_interval)
    LOG.info('I/O inventory: keeping resource provider %r (child of %r)',
             publisher.child_name, name)
    return publisher.start()
