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
"""The SLO floors B of a scheduling request, cached per scheduler worker.

A RequestSpec carries ``is_bfv`` but neither block device mappings nor
volume types, so ``Resolver.demand(spec_obj, lookup)`` reads them where
Nova keeps them, through ``lookup`` (in nova-scheduler
``iosched.nova_plugin.filters.slo_request.NovaVolumeLookup``):

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

``lookup`` is the boundary the tests replace: ``context()`` (one admin
context per lookup), ``mappings(ctxt, uuid)`` (``(where, mappings)``,
raising when the instance has none) and ``cinder`` (``volume_type``,
``snapshot_volume``, ``default_type``, ``type_qos``, each with the
context first). A type's B and a request's total are cached per worker
(``[iosched] slo_cache_seconds``, ``slo_cache_max_entries``), so a request
asks Cinder once, not once per host. A failed lookup is not raised: it
comes back as ``Demand.error`` (logged once at WARNING) and the filter
applies ``[iosched] slo_lookup_failure_policy``.

No nova import: ``lookup`` brings Nova's and Cinder's answers.
"""

import collections
import dataclasses
import threading
import time

from oslo_log import log as logging

from iosched.nova_plugin import request_spec
from iosched.nova_plugin import slo_rule

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


class TtlCache(object):
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
    """``demand(spec_obj, lookup)``: the request's SLO floors, cached."""

    def __init__(self, clock=time.monotonic, ttl=60, max_entries=1000):
        self._types = TtlCache(clock, ttl, max_entries)
        self._requests = TtlCache(clock, ttl, max_entries)

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

    def demand(self, spec_obj, lookup):
        """The ``Demand`` of ``spec_obj``; lookups (through ``lookup``)
        once per request.
        """
        uuid = request_spec.field(spec_obj, 'instance_uuid')
        if not uuid:
            return NO_DEMAND
        uuid = str(uuid)
        found = self._requests.get(uuid)
        if found is None:
            found = self._resolve(uuid, lookup)
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

    def _resolve(self, uuid, lookup):
        ctxt = lookup.context()
        try:
            source, bdms = lookup.mappings(ctxt, uuid)
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
                label, b = self._ref_iops(lookup, ctxt, ref)
                volumes.append((label, b))
        except Exception as e:
            return Demand(source=source, volumes=tuple(volumes),
                          error='%s: %s' % (type(e).__name__, e))
        return Demand(iops=sum(b for _, b in volumes),
                      volumes=tuple(volumes), source=source)

    def _ref_iops(self, lookup, ctxt, ref):
        """``(label, B)`` of one volume reference."""
        cinder = lookup.cinder
        if ref.kind == slo_rule.REF_VOLUME:
            type_ref = cinder.volume_type(ctxt, ref.ref)
            label = 'volume %s' % ref.ref
        elif ref.kind == slo_rule.REF_SNAPSHOT:
            volume_id = cinder.snapshot_volume(ctxt, ref.ref)
            type_ref = cinder.volume_type(ctxt, volume_id)
            label = 'snapshot %s' % ref.ref
        elif ref.kind == slo_rule.REF_DEFAULT:
            type_ref = self._default_type(cinder, ctxt)
            label = 'new volume'
        else:
            type_ref = ref.ref
            label = 'new volume'
        if not type_ref:
            return '%s (no type)' % label, 0.0
        return '%s type %s' % (label, type_ref), self._type_iops(
            cinder, ctxt, type_ref)

    def _default_type(self, cinder, ctxt):
        key = ('default',)
        found = self._types.get(key)
        if found is None:
            found = (cinder.default_type(ctxt),)
            self._types.put(key, found)
        return found[0]

    def _type_iops(self, cinder, ctxt, type_ref):
        key = ('type', type_ref)
        found = self._types.get(key)
        if found is None:
            consumer, specs = cinder.type_qos(ctxt, type_ref)
            found = slo_rule.min_iops_from_qos(
                consumer, specs, name='volume type %s' % type_ref)
            self._types.put(key, found)
        return found
