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
"""The SLO floors B of a scheduling request, from Nova's DB and Cinder.

A RequestSpec carries ``is_bfv`` but neither block device mappings nor
volume types, so ``Resolver.demand(spec_obj)`` reads them where Nova keeps
them:

1. the request's ``BuildRequest`` (API DB), which holds the mappings of a
   server being created until it is scheduled; else
2. the instance's ``BlockDeviceMappingList`` in its cell (reschedules,
   cold and live migration, resize, evacuate, unshelve);

then, for every mapping with ``destination_type=volume``
(``slo_rule.volume_ref``): the explicit ``volume_type`` (API 2.67+), the
type of the existing volume, the type of a snapshot's source volume, or
Cinder's default type; and the type's B, ``iosched:min_iops`` of its
``front-end``/``both`` QoS spec (``slo_rule.min_iops_from_qos``). Boot and
data volumes both count: once attached, each adds its B to the host's
``disk.reserved_iops``.

Every Cinder call goes through ``CinderSlo`` (Nova's ``nova.volume.cinder``
with an admin context, so ``[cinder]`` credentials of nova.conf), the one
boundary the tests replace. A type's B and a request's total are cached
per worker (``[iosched] slo_cache_seconds``, ``slo_cache_max_entries``), so
a request asks Cinder once, not once per host. A failed lookup is not
raised: it comes back as ``Demand.error`` (logged once at WARNING) and the
filter applies ``[iosched] slo_lookup_failure_policy``.
"""

import collections
import dataclasses
import threading
import time

from oslo_log import log as logging

from nova import context as nova_context
from nova import exception
from nova import objects
from nova.volume import cinder

from nova_plugin import request_spec
from nova_plugin import slo_rule

LOG = logging.getLogger(__name__)

SOURCE_BUILD_REQUEST = 'build_request'
SOURCE_INSTANCE = 'instance'
SOURCE_NONE = 'none'


@dataclasses.dataclass(frozen=True)
class Demand:
    """The SLO floors of one request.

    ``iops``: the sum of B; ``volumes``: ``(ref, B)`` per volume mapping,
    as text; ``source``: where the mappings came from; ``error``: why B
    could not be read (empty when it could).
    """

    iops: float = 0.0
    volumes: tuple = ()
    source: str = SOURCE_NONE
    error: str = ''


NO_DEMAND = Demand()


class CinderSlo(object):
    """The Cinder boundary: every call that leaves the scheduler process."""

    def __init__(self):
        self._api = cinder.API()

    def volume_type(self, ctxt, volume_id):
        """The type (name) of an existing volume, or None."""
        return self._api.get(ctxt, volume_id).get('volume_type_id')

    def snapshot_volume(self, ctxt, snapshot_id):
        """The id of the volume a snapshot was taken from."""
        return self._api.get_snapshot(ctxt, snapshot_id)['volume_id']

    def default_type(self, ctxt):
        """Cinder's default volume type (id), or None."""
        vtype = cinder.cinderclient(ctxt).volume_types.default()
        return getattr(vtype, 'id', None)

    def type_qos(self, ctxt, type_ref):
        """``(consumer, specs)`` of the QoS spec of a type (name or id).

        ``(None, {})`` when the type has no QoS spec. Raises
        ``exception.VolumeTypeNotFound`` for an unknown type. Needs admin
        credentials: Cinder shows ``qos_specs_id`` and QoS specs to admins.
        """
        client = cinder.cinderclient(ctxt)
        for vtype in client.volume_types.list(is_public=None):
            if type_ref in (vtype.id, vtype.name):
                qos_id = getattr(vtype, 'qos_specs_id', None)
                if not qos_id:
                    return None, {}
                qos = client.qos_specs.get(qos_id)
                return qos.consumer, dict(qos.specs or {})
        raise exception.VolumeTypeNotFound(id_or_name=type_ref)


class _Cache(object):
    """A bounded LRU map whose entries expire ``ttl`` seconds after put.

    The age is checked against the current ``ttl`` on every read, so a
    new ``[iosched] slo_cache_seconds`` applies to entries already held.
    """

    def __init__(self, clock, ttl, max_entries):
        self._clock = clock
        self._lock = threading.Lock()
        self._data = collections.OrderedDict()
        self.ttl = ttl
        self.max_entries = max_entries

    def get(self, key):
        with self._lock:
            item = self._data.get(key)
            if item is None:
                return None
            value, put_at = item
            if self._clock() - put_at >= self.ttl:
                del self._data[key]
                return None
            self._data.move_to_end(key)
            return value

    def put(self, key, value):
        with self._lock:
            self._data.pop(key, None)
            self._data[key] = (value, self._clock())
            while len(self._data) > max(1, self.max_entries):
                self._data.popitem(last=False)

    def __len__(self):
        return len(self._data)

    def clear(self):
        with self._lock:
            self._data.clear()


class Resolver(object):
    """``demand(spec_obj)``: the request's SLO floors, cached per worker."""

    def __init__(self, cinder_slo=None, clock=time.monotonic, ttl=60,
                 max_entries=1000):
        self._cinder = cinder_slo
        self._types = _Cache(clock, ttl, max_entries)
        self._requests = _Cache(clock, ttl, max_entries)

    def configure(self, ttl=None, max_entries=None):
        """Apply ``[iosched]`` settings; None keeps the current."""
        for cache in (self._types, self._requests):
            if ttl is not None:
                cache.ttl = ttl
            if max_entries is not None:
                cache.max_entries = max_entries

    def clear(self):
        self._types.clear()
        self._requests.clear()

    @property
    def cinder(self):
        if self._cinder is None:
            self._cinder = CinderSlo()
        return self._cinder

    def demand(self, spec_obj):
        """The ``Demand`` of ``spec_obj``; lookups once per request."""
        uuid = request_spec.field(spec_obj, 'instance_uuid')
        if not uuid:
            return NO_DEMAND
        uuid = str(uuid)
        found = self._requests.get(uuid)
        if found is None:
            found = self._resolve(uuid)
            self._requests.put(uuid, found)
            if found.error:
                LOG.warning('SLO floors of %(uuid)s unknown: %(error)s',
                            {'uuid': uuid, 'error': found.error})
            elif found.volumes:
                LOG.debug('SLO floors of %(uuid)s from the %(source)s: '
                          '%(total).1f IOPS (%(volumes)s)',
                          {'uuid': uuid, 'source': found.source,
                           'total': found.iops,
                           'volumes': ', '.join(
                               '%s=%.1f' % v for v in found.volumes)})
        return found

    def _resolve(self, uuid):
        ctxt = nova_context.get_admin_context()
        try:
            source, bdms = self._mappings(ctxt, uuid)
        except Exception as e:
            return Demand(error='block device mappings of %s not read: %s'
                          % (uuid, e))
        volumes = []
        try:
            for bdm in bdms:
                ref = slo_rule.volume_ref(*(
                    request_spec.field(bdm, name) for name in (
                        'destination_type', 'source_type', 'volume_id',
                        'volume_type', 'snapshot_id')))
                if ref is None:
                    continue
                label, b = self._ref_iops(ctxt, ref)
                volumes.append((label, b))
        except Exception as e:
            return Demand(source=source, volumes=tuple(volumes),
                          error='%s: %s' % (type(e).__name__, e))
        return Demand(iops=sum(b for _, b in volumes),
                      volumes=tuple(volumes), source=source)

    @staticmethod
    def _mappings(ctxt, uuid):
        """``(source, bdms)``: the BuildRequest's, else the cell's."""
        try:
            build = objects.BuildRequest.get_by_instance_uuid(ctxt, uuid)
            return SOURCE_BUILD_REQUEST, list(
                request_spec.field(build, 'block_device_mappings') or [])
        except exception.BuildRequestNotFound:
            pass
        mapping = objects.InstanceMapping.get_by_instance_uuid(ctxt, uuid)
        if request_spec.field(mapping, 'cell_mapping') is None:
            raise exception.InstanceMappingNotFound(uuid=uuid)
        with nova_context.target_cell(ctxt, mapping.cell_mapping) as cctxt:
            return SOURCE_INSTANCE, list(
                objects.BlockDeviceMappingList.get_by_instance_uuid(
                    cctxt, uuid))

    def _ref_iops(self, ctxt, ref):
        """``(label, B)`` of one volume reference."""
        if ref.kind == slo_rule.REF_VOLUME:
            type_ref = self.cinder.volume_type(ctxt, ref.ref)
            label = 'volume %s' % ref.ref
        elif ref.kind == slo_rule.REF_SNAPSHOT:
            volume_id = self.cinder.snapshot_volume(ctxt, ref.ref)
            type_ref = self.cinder.volume_type(ctxt, volume_id)
            label = 'snapshot %s' % ref.ref
        elif ref.kind == slo_rule.REF_DEFAULT:
            type_ref = self._default_type(ctxt)
            label = 'new volume'
        else:
            type_ref = ref.ref
            label = 'new volume'
        if not type_ref:
            return '%s (no type)' % label, 0.0
        return '%s type %s' % (label, type_ref), self._type_iops(ctxt,
                                                                 type_ref)

    def _default_type(self, ctxt):
        key = ('default',)
        found = self._types.get(key)
        if found is None:
            found = (self.cinder.default_type(ctxt),)
            self._types.put(key, found)
        return found[0]

    def _type_iops(self, ctxt, type_ref):
        key = ('type', type_ref)
        found = self._types.get(key)
        if found is None:
            consumer, specs = self.cinder.type_qos(ctxt, type_ref)
            found = slo_rule.min_iops_from_qos(
                consumer, specs, name='volume type %s' % type_ref)
            self._types.put(key, found)
        return found


RESOLVER = Resolver()


def get_resolver(conf=None):
    """The process-wide resolver; applies ``conf.iosched`` if given."""
    if conf is not None:
        RESOLVER.configure(ttl=conf.iosched.slo_cache_seconds,
                           max_entries=conf.iosched.slo_cache_max_entries)
    return RESOLVER
