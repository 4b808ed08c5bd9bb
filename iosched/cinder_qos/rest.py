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
"""Cinder's v3 REST API as ``SloAdmin`` (``iosched.cinder_qos.client``) calls
it.

``RestApi`` is the ``Api`` of ``client.SloAdmin``: one method per Cinder
call (QoS specs, their keys and associations, volume types, the volumes of
a type); a refused call raises ``client.AdminError`` naming the method, the
URL and Cinder's answer.

Why openstacksdk: it gives the admin's auth exactly as ``openstack`` does
(``--os-cloud``/clouds.yaml, OS_* env; in the osc plugin the connection is
osc's own) and endpoint/microversion discovery for block-storage v3. Its
QoS resource covers list/associate, but Cinder reads a QoS spec's keys flat
in ``{"qos_specs": {...}}`` bodies, so ``RestApi`` sends the documented v3
bodies through the proxy's raw ``get/post/put/delete``: one code path for
every call, and the ``FakeApi``-style tests mirror it call for call.
python-cinderclient would need its own session set-up and is deprecated in
favour of the SDK for new code.
"""

from iosched.cinder_qos import client


class RestApi:
    """Cinder v3 REST calls through an openstacksdk block-storage proxy."""

    def __init__(self, proxy):
        self.proxy = proxy

    def _call(self, method, url, **kw):
        from openstack import exceptions
        resp = getattr(self.proxy, method)(url, **kw)
        try:
            exceptions.raise_from_response(resp)
        except exceptions.SDKException as e:
            raise client.AdminError('Cinder: %s %s: %s'
                                    % (method.upper(), url, e)) from e
        return resp.json() if resp.content else {}

    def qos_specs(self):
        return self._call('get', '/qos-specs')['qos_specs']

    def create_qos_spec(self, name, consumer, specs):
        body = dict(specs, name=name, consumer=consumer)
        return self._call('post', '/qos-specs',
                          json={'qos_specs': body})['qos_specs']

    def set_qos_keys(self, spec_id, specs):
        self._call('put', '/qos-specs/%s' % spec_id,
                   json={'qos_specs': dict(specs)})

    def unset_qos_keys(self, spec_id, names):
        self._call('put', '/qos-specs/%s/delete_keys' % spec_id,
                   json={'keys': list(names)})

    def delete_qos_spec(self, spec_id):
        self._call('delete', '/qos-specs/%s' % spec_id)

    def associations(self, spec_id):
        return self._call('get', '/qos-specs/%s/associations'
                          % spec_id)['qos_associations']

    def associate(self, spec_id, type_id):
        self._call('get', '/qos-specs/%s/associate?vol_type_id=%s'
                   % (spec_id, type_id))

    def disassociate(self, spec_id, type_id):
        self._call('get', '/qos-specs/%s/disassociate?vol_type_id=%s'
                   % (spec_id, type_id))

    def types(self):
        return self._call('get', '/types?is_public=None')['volume_types']

    def create_type(self, name, description):
        return self._call('post', '/types', json={'volume_type': {
            'name': name, 'description': description}})['volume_type']

    def delete_type(self, type_id):
        self._call('delete', '/types/%s' % type_id)

    def volumes_of_type(self, type_id, type_name):
        """IDs of the volumes (all projects) of a type; None if unknown.

        Cinder filters ``volume_type_id``; the ``volume_type`` query
        parameter matched nothing on the tested release, so the names are
        checked here too. Cinder's own refusal to delete a type in use
        stays the authority (one page of osapi_max_limit volumes is read).
        """
        try:
            vols = self._call('get', '/volumes/detail?all_tenants=1&'
                              'volume_type_id=%s' % type_id)['volumes']
        except client.AdminError:
            return None
        return [v['id'] for v in vols
                if v.get('volume_type') in (type_name, type_id)]
