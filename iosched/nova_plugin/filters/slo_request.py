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
"""Where ``SloCapacityFilter`` reads a request's volumes: Nova and Cinder.

``NovaVolumeLookup`` is the ``lookup`` of ``iosched.nova_plugin.slo_lookup.
Resolver.demand`` inside nova-scheduler: an admin context, the request's
block device mappings (its ``BuildRequest`` in the API DB, else the
instance's mappings in its cell) and ``CinderVolumeTypes``, the calls to
Cinder. These are the scheduler's only calls out of its process for the
SLO check; what they return is read by ``slo_lookup``.
"""

from nova import context as nova_context
from nova import exception
from nova import objects
from nova.volume import cinder

from iosched.nova_plugin import request_spec
from iosched.nova_plugin import slo_lookup


class CinderVolumeTypes(object):
    """Volume types from Cinder: of a volume, of a snapshot's source, the
    default, and a type's QoS spec (Nova's ``nova.volume.cinder`` with the
    caller's admin context: ``[cinder]`` credentials of nova.conf).
    """

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


class NovaVolumeLookup(object):
    """Nova's mappings of a request and Cinder's types (``cinder``, a
    ``CinderVolumeTypes`` unless given, made at first use).
    """

    def __init__(self, cinder_types=None):
        self._cinder = cinder_types

    @property
    def cinder(self):
        if self._cinder is None:
            self._cinder = CinderVolumeTypes()
        return self._cinder

    @staticmethod
    def context():
        """An admin context for one lookup."""
        return nova_context.get_admin_context()

    @staticmethod
    def mappings(ctxt, uuid):
        """``(source, bdms)``: the BuildRequest's, else the cell's."""
        try:
            build = objects.BuildRequest.get_by_instance_uuid(ctxt, uuid)
            return slo_lookup.SOURCE_BUILD_REQUEST, list(
                request_spec.field(build, 'block_device_mappings') or [])
        except exception.BuildRequestNotFound:
            pass
        mapping = objects.InstanceMapping.get_by_instance_uuid(ctxt, uuid)
        if request_spec.field(mapping, 'cell_mapping') is None:
            raise exception.InstanceMappingNotFound(uuid=uuid)
        with nova_context.target_cell(ctxt, mapping.cell_mapping) as cctxt:
            return slo_lookup.SOURCE_INSTANCE, list(
                objects.BlockDeviceMappingList.get_by_instance_uuid(
                    cctxt, uuid))
