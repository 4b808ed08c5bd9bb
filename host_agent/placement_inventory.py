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
derived from the agent's reports (``wanted_inventories``):

* ``CUSTOM_IOSCHED_IO_VCPU``: I/O-intensive vCPU slots, total =
  floor(pcpus x max_io_vcpus_per_pcpu);
* ``CUSTOM_IOSCHED_LSVM_BW``: LSVM bandwidth in milli-CPUs; ``deadline``:
  total = floor(1000 x dl_bw_limit), reserved = ceil(1000 x dl_bw_foreign)
  + the configured reserve; ``weight``/``slice``: total = pcpus x
  max_per_pcpu x per_vcpu (per_vcpu = round(1000 x lsvm_vcpu_share));
  none while the host does not support LSVMs;
* ``CUSTOM_IOSCHED_SLO_IOPS``: total = floor(capacity_iops x
  slo_capacity_fraction); none while the capacity is unknown (0).

The IO_VCPU reserve also holds the I/O vCPUs that no allocation claims
(``[io_inventory] reserve_unclaimed_io_vcpus``, ``reserve_unclaimed``):
servers whose flavors carry no ``resources:CUSTOM_IOSCHED_IO_VCPU``, a
``cpu`` VM that turned out I/O-bound, a VM outside Nova. reserved =
reserved_io_vcpus + max(0, the report's measured I/O vCPUs - the child's
IO_VCPU usage), read at each sync; the wanted state (``Wanted``) keeps the
measurement, so a change of it syncs at once, and the same measurement and
usage write nothing.

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
import math
import typing

from oslo_log import log as logging

from host_agent.conf import placement as placement_conf
from host_agent import placement_base

LOG = logging.getLogger(__name__)

MICROVERSION = '1.26'      # 1.14 parents, 1.20 POST body, 1.26 reserved=total
IO_VCPU = 'CUSTOM_IOSCHED_IO_VCPU'
LSVM_BW = 'CUSTOM_IOSCHED_LSVM_BW'
SLO_IOPS = 'CUSTOM_IOSCHED_SLO_IOPS'
CLASSES = (IO_VCPU, LSVM_BW, SLO_IOPS)
CHILD_SUFFIX = ':iosched'
FIELDS = ('total', 'reserved', 'min_unit', 'max_unit', 'step_size',
          'allocation_ratio')


class InventoryInUse(placement_base.GenerationConflict):
    """Placement refused to delete a class that allocations use (409)."""


def child_name(compute_name):
    return compute_name + CHILD_SUFFIX


@dataclasses.dataclass(frozen=True)
class Options:
    """The ``[io_inventory]`` sizing options (see host_agent/conf)."""

    max_io_vcpus_per_pcpu: float = 1.0
    lsvm_vcpu_share: float = 0.5
    slo_capacity_fraction: float = 1.0
    reserved_io_vcpus: int = 0
    reserved_lsvm_bw: int = 0
    reserved_slo_iops: int = 0
    reserve_unclaimed_io_vcpus: bool = True

    def __post_init__(self):
        if not isinstance(self.reserve_unclaimed_io_vcpus, bool):
            raise ValueError('[io_inventory] reserve_unclaimed_io_vcpus = '
                             '%r: accepted is true or false'
                             % (self.reserve_unclaimed_io_vcpus,))
        checks = (
            ('max_io_vcpus_per_pcpu', lambda v: v >= 0, 'a number >= 0'),
            ('lsvm_vcpu_share', lambda v: 0.001 <= v <= 1,
             'a fraction of a CPU from 0.001 to 1'),
            ('slo_capacity_fraction', lambda v: 0 <= v <= 1,
             'a fraction from 0 to 1'),
            ('reserved_io_vcpus', _count, 'an integer >= 0'),
            ('reserved_lsvm_bw', _count, 'an integer >= 0 (milli-CPUs)'),
            ('reserved_slo_iops', _count, 'an integer >= 0'),
        )
        for name, ok, accepted in checks:
            value = getattr(self, name)
            if (isinstance(value, bool) or
                    not isinstance(value, (int, float)) or
                    value != value or not ok(value)):
                raise ValueError('[io_inventory] %s = %r: accepted is %s'
                                 % (name, value, accepted))

    @classmethod
    def from_conf(cls, opts):
        return cls(**{f.name: getattr(opts, f.name)
                      for f in dataclasses.fields(cls)})


def _count(value):
    return isinstance(value, int) and value >= 0


# 1000 x 0.95 is 949.999... in binary floating point: round to a millionth
# before flooring or ceiling, so decimal figures convert as written.
def _floor(x):
    return int(math.floor(round(x, 6)))


def _ceil(x):
    return int(math.ceil(round(x, 6)))


def per_lsvm_vcpu(share):
    """Milli-CPUs of ``CUSTOM_IOSCHED_LSVM_BW`` one LSVM vCPU asks."""
    return int(round(1000 * share))


def inventory(total, reserved=0):
    return {'total': total, 'reserved': reserved, 'min_unit': 1,
            'max_unit': total, 'step_size': 1, 'allocation_ratio': 1.0}


# The wanted inventories of the child, from one report:
#   IO_VCPU  total = floor(pcpus * max_io_vcpus_per_pcpu)
#   LSVM_BW  only if lsvm.supported;
#            deadline: total = floor(1000 * dl_bw_limit),
#                      reserved = ceil(1000 * dl_bw_foreign) + reserve
#            weight, slice: total = pcpus * max_per_pcpu * per_vcpu
#   SLO_IOPS only if capacity_iops > 0;
#            total = floor(capacity_iops * slo_capacity_fraction)
#   reserved = the configured reserve (plus dl_bw_foreign for deadline;
#              IO_VCPU: plus the unclaimed I/O vCPUs, added at each sync
#              by reserve_unclaimed, which needs Placement's usage).
# Placement refuses total < 1 (the class is left out) and reserved > total
# (reserved is cut to total: nothing fits); each is named in a warning.
# max_unit = total, min_unit = step_size = 1, allocation_ratio = 1.
def wanted_inventories(report, options):
    """({resource class: inventory}, (warning, ...)) for ``report``.

    Raises ValueError for an LSVM mechanism it does not know.
    """
    sizes = {}      # class -> (total, reserved, what the total is)
    pcpus = int(report.pcpus)
    sizes[IO_VCPU] = (
        _floor(pcpus * options.max_io_vcpus_per_pcpu),
        options.reserved_io_vcpus,
        '%d pCPUs x max_io_vcpus_per_pcpu %g'
        % (pcpus, options.max_io_vcpus_per_pcpu))
    lsvm = report.lsvm
    if lsvm.supported:
        if lsvm.mechanism == 'deadline':
            sizes[LSVM_BW] = (
                _floor(1000 * lsvm.dl_bw_limit),
                _ceil(1000 * lsvm.dl_bw_foreign) + options.reserved_lsvm_bw,
                'SCHED_DEADLINE bandwidth dl_bw_limit %g CPUs'
                % lsvm.dl_bw_limit)
        elif lsvm.mechanism in ('weight', 'slice'):
            sizes[LSVM_BW] = (
                pcpus * int(lsvm.max_per_pcpu) *
                per_lsvm_vcpu(options.lsvm_vcpu_share),
                options.reserved_lsvm_bw,
                '%d pCPUs x max_per_pcpu %d x lsvm_vcpu_share %g'
                % (pcpus, lsvm.max_per_pcpu, options.lsvm_vcpu_share))
        else:
            raise ValueError('report lsvm.mechanism %r: accepted are '
                             'deadline, weight, slice' % (lsvm.mechanism,))
    capacity = float(report.disk.capacity_iops)
    if capacity > 0:
        sizes[SLO_IOPS] = (
            _floor(capacity * options.slo_capacity_fraction),
            options.reserved_slo_iops,
            'capacity_iops %g x slo_capacity_fraction %g'
            % (capacity, options.slo_capacity_fraction))
    wanted, warnings = {}, []
    for rc, (total, reserved, what) in sizes.items():
        if total < 1:
            warnings.append('%s left out: total %d (%s) is below 1, which '
                            'Placement refuses' % (rc, total, what))
            continue
        if reserved > total:
            warnings.append('%s reserved %d cut to the total %d (%s): '
                            'nothing of it is left to allocate'
                            % (rc, reserved, total, what))
            reserved = total
        wanted[rc] = inventory(total, reserved)
    return wanted, tuple(warnings)


@dataclasses.dataclass(frozen=True)
class Wanted:
    """The publisher's wanted state: the inventories one report calls for
    (IO_VCPU reserved = the configured reserve) and the report's measured
    I/O vCPUs (None: ``reserve_unclaimed_io_vcpus`` off)."""

    inventories: dict
    io_vcpus: typing.Optional[int] = None


# The IO_VCPU reserve for I/O vCPUs that hold no slot: servers whose
# flavors carry no resources:CUSTOM_IOSCHED_IO_VCPU (booted before the keys
# were set), a `cpu` VM that turned out I/O-bound, a VM outside Nova. The
# report measures the host's I/O-intensive vCPUs (io_vcpus); the child's
# IO_VCPU usage is what allocations claim. The measured vCPUs beyond the
# claims are unclaimed and reserved on top of the configured reserve:
#   reserved = reserved_io_vcpus + max(0, io_vcpus - usage)
# Claimed servers that are idle (usage > io_vcpus) count 0, never less.
# Above the total it is cut to the total (nothing left to allocate) with a
# warning, unless the configured reserve alone already filled it (warned
# when the report came). io_vcpus None (the option off) or no IO_VCPU
# class: unchanged. Same io_vcpus and usage -> same inventories.
def reserve_unclaimed(inventories, io_vcpus, usage):
    """(inventories with the IO_VCPU reserve, (warning, ...))."""
    if io_vcpus is None or IO_VCPU not in inventories:
        return inventories, ()
    unclaimed = max(0, io_vcpus - usage)
    if unclaimed == 0:
        return inventories, ()
    inv = dict(inventories[IO_VCPU])
    configured, total = inv['reserved'], inv['total']
    reserved, warnings = configured + unclaimed, ()
    if reserved > total:
        if configured < total:
            warnings = ('%s reserved %d cut to the total %d (reserved '
                        '%d + %d unclaimed: %d measured I/O vCPUs - %d '
                        'allocated): nothing of it is left to allocate'
                        % (IO_VCPU, reserved, total, configured, unclaimed,
                           io_vcpus, usage),)
        reserved = total
    inv['reserved'] = reserved
    return dict(inventories, **{IO_VCPU: inv}), warnings


def _same(a, b):
    return ({rc: tuple(inv.get(f) for f in FIELDS) for rc, inv in a.items()}
            == {rc: tuple(inv.get(f) for f in FIELDS)
                for rc, inv in b.items()})


# The child's new inventories, or None when Placement already has them:
# every wanted class as wanted; a class Placement has but is no longer
# wanted is deleted, unless allocations use it (Placement refuses: 409
# inventory in use): then it stays with reserved = total, so nothing new
# fits, until they are gone ("held").
def plan_inventories(current, usages, wanted):
    """(new inventories or None, [held class, ...])."""
    new = {rc: dict(inv) for rc, inv in wanted.items()}
    held = []
    for rc in sorted(set(current) - set(wanted)):
        if usages.get(rc, 0) > 0:
            inv = {f: current[rc].get(f) for f in FIELDS}
            inv['reserved'] = inv['total']
            new[rc] = inv
            held.append(rc)
    return (None if _same(current, new) else new), held


def describe_change(before, after):
    """Short phrases naming what changed, one per class, sorted."""
    out = []
    for rc in sorted(set(before) | set(after)):
        if rc not in after:
            out.append('%s removed' % rc)
        elif rc not in before:
            out.append('%s total %s reserved %s (new)'
                       % (rc, after[rc]['total'], after[rc]['reserved']))
        elif not _same({rc: before[rc]}, {rc: after[rc]}):
            out.append('%s total %s->%s reserved %s->%s'
                       % (rc, before[rc]['total'], after[rc]['total'],
                          before[rc]['reserved'], after[rc]['reserved']))
    return out


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
    the IO_VCPU reserve (``reserve_unclaimed``); None: no adjustment.
    Returns an ``Outcome``. Raises PlacementError (ProviderNotFound,
    GenerationConflict after ``max_conflicts`` conflicting writes) or
    keystoneauth1's exceptions (unreachable, auth refused).
    """
    uuid = api.ensure_child(compute_name)
    created = set()
    adjust = io_vcpus is not None and IO_VCPU in wanted
    for attempt in range(max_conflicts):
        current, generation = api.inventories(uuid)
        usages = (api.usages(uuid) if adjust or set(current) - set(wanted)
                  else {})
        used = usages.get(IO_VCPU, 0)
        target, warnings = reserve_unclaimed(wanted, io_vcpus, used)
        new, held = plan_inventories(current, usages, target)
        if new is None:
            return Outcome(False, current, current, held)
        unclaimed = ''
        before = current.get(IO_VCPU, {}).get('reserved')
        after = new.get(IO_VCPU, {}).get('reserved')
        configured = wanted.get(IO_VCPU, {}).get('reserved')
        # say why when the IO_VCPU reserve changes and was or becomes
        # more than the configured one
        if adjust and before != after and (
                after != configured or before not in (None, configured)):
            unclaimed = ('%s reserved %d = %d configured + max(0, %d '
                         'measured I/O vCPUs - %d allocated)%s'
                         % (IO_VCPU, target[IO_VCPU]['reserved'],
                            wanted[IO_VCPU]['reserved'], io_vcpus, used,
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

    ``InventoryPublisher(api_factory, compute_name, options=Options())``;
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
        self.options = Options() if options is None else options
        super().__init__(api_factory, compute_name, **kw)
        self.child_name = child_name(compute_name)
        self.last_outcome = None
        self._warned_for = None

    def _wanted(self, report):
        inventories, warnings = wanted_inventories(report, self.options)
        io_vcpus = None
        if self.options.reserve_unclaimed_io_vcpus:
            io_vcpus = int(report.io_vcpus)
            if io_vcpus < 0:
                raise ValueError('report io_vcpus %d: accepted is an '
                                 'integer >= 0' % io_vcpus)
        return Wanted(inventories, io_vcpus), warnings

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
        if isinstance(wanted, Wanted):
            outcome = set_inventories(api, self.provider_name,
                                      wanted.inventories,
                                      io_vcpus=wanted.io_vcpus)
        else:
            outcome = set_inventories(api, self.provider_name, wanted)
        self.last_outcome = outcome
        if outcome.changed:
            LOG.info('I/O inventory: resource provider %r: %s%s',
                     self.child_name,
                     '; '.join(describe_change(outcome.before,
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
    publish``."""
    opts = conf.io_inventory
    if not opts.publish:
        return None
    name = opts.provider_name or conf.lsvm_trait.provider_name or host
    publisher = InventoryPublisher(
        lambda: PlacementInventories(placement_adapter(conf)), name,
        options=Options.from_conf(opts),
        recheck_interval=opts.recheck_interval,
        retry_initial=opts.retry_initial_interval,
        retry_max=opts.retry_max_interval)
    LOG.info('I/O inventory: keeping resource provider %r (child of %r)',
             publisher.child_name, name)
    return publisher.start()
