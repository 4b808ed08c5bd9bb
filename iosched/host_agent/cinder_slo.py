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
"""An attached volume's QoS spec, read from the Cinder API and cached.

The disk's ``<serial>`` is the volume id (Nova sets it). Three reads, all
admin-readable in Cinder's default policy:

    GET /volumes/{id}        (microversion 3.63: ``volume_type_id``)
    GET /types/{type id}     (``qos_specs_id``, or none)
    GET /qos-specs/{qos id}  (``specs``: the keys ``cinder_qos`` wrote)

``CinderQosLookup.specs(serial)`` answers the spec dict as Nova would
receive it if the volume were attached now (``iosched.contract.qos_attach``:
per-GB keys turned into absolute values for the volume's current size; a
``back-end`` spec gives only its ``iosched:*`` SLO keys), {} for a volume
whose type has no QoS spec, None for an unknown volume, from a cache whose
entries live ``cache_ttl`` seconds, so a retype or a changed spec reaches
the agent within that time. While Cinder cannot be reached (connection
errors, timeouts, 5xx, refused credentials) the last known answer is kept,
one warning when the outage starts and one line when it ends, and Cinder
is asked again at most every ``RETRY_S`` seconds (not once per volume and
tick, each of which could hold the tick for ``timeout``).
"""

import time

from keystoneauth1 import exceptions as ks_exc
from oslo_log import log as logging

from iosched.contract import qos_attach
from iosched.contract import qos_keys
from iosched.host_agent.conf import cinder as cinder_conf
from iosched.host_agent.conf import keystone

LOG = logging.getLogger(__name__)
MICROVERSION = '3.63'        # volume_type_id in GET /volumes/{id}
HEADERS = {'OpenStack-API-Version': 'volume %s' % MICROVERSION}
RETRY_S = 10.0               # during an outage, ask again after this


class CinderError(Exception):
    """Cinder could not answer (not: the volume does not exist)."""


class CinderQosLookup(object):
    """The QoS spec of a volume by its id, looked up in Cinder and cached
    (not an SLO: ``iosched.host_agent.volume_slo`` reads the SLO out of it).
    """

    def __init__(self, adapter_factory, cache_ttl=60.0, timeout=5.0,
                 clock=time.monotonic):
        """``adapter_factory()`` returns a keystoneauth1 Adapter for the
        Block Storage API; it is called at the first lookup (a broken
        configuration is an outage, not a crash) and its result kept.
        """
        self._factory = adapter_factory
        self._adapter = None
        self.ttl = cache_ttl
        self.timeout = timeout
        self._clock = clock
        self._cache = {}        # serial -> (specs or None, fetched at)
        self.outage = None      # the error of the current outage, or None
        self._retry_at = 0.0    # during an outage: no request before this

    def specs(self, serial):
        """The QoS spec keys of volume ``serial`` ({}: none; None: no such
        volume, or never known and Cinder is down).
        """
        hit = self._cache.get(serial)
        now = self._clock()
        if hit is not None and now - hit[1] < self.ttl:
            return hit[0]
        if self.outage is not None and now < self._retry_at:
            # One failed request per retry interval, not one per volume
            # per tick: each would hold the agent's tick for ``timeout``.
            return hit[0] if hit is not None else None
        try:
            specs = self._lookup(serial)
        except CinderError as e:
            self._retry_at = now + min(self.ttl, RETRY_S)
            if self.outage is None:
                LOG.warning('Cinder cannot be read (%s): the SLOs of the %d '
                            'volumes known are kept until it answers', e,
                            len(self._cache))
            self.outage = str(e)
            return hit[0] if hit is not None else None
        if self.outage is not None:
            LOG.info('Cinder answers again (the outage was: %s)', self.outage)
            self.outage = None
        self._cache[serial] = (specs, now)
        return specs

    def forget(self, serials):
        for s in serials:
            self._cache.pop(s, None)

    def _lookup(self, serial):
        vol = self._get('/volumes/%s' % serial, 'volume')
        if vol is None:
            return None
        type_id = vol.get('volume_type_id')
        if not type_id:
            return {}
        vtype = self._get('/types/%s' % type_id, 'volume_type') or {}
        qos_id = vtype.get('qos_specs_id')
        if not qos_id:
            return {}
        qos = self._get('/qos-specs/%s' % qos_id, 'qos_specs') or {}
        raw = qos.get('specs') or {}
        if not isinstance(raw, dict):
            raise CinderError('/qos-specs/%s: unexpected answer (specs is '
                              'not an object)' % qos_id)
        specs = {str(k): str(v) for k, v in raw.items()}
        consumer = qos.get('consumer', 'back-end')
        if consumer not in qos_keys.HOST_CONSUMERS:
            return {k: v for k, v in specs.items()
                    if k.startswith(qos_keys.PREFIX)}
        try:
            size = int(vol.get('size') or 0)
            got = qos_attach.specs_at_attach(specs, consumer, size)
        except (TypeError, ValueError, OverflowError) as e:
            raise CinderError('volume %s: QoS spec %s: %s' % (
                serial, qos_id, str(e)[:200]))
        return {k: str(v) for k, v in got.items()}

    def _get(self, url, key):
        try:
            if self._adapter is None:
                self._adapter = self._factory()
            resp = self._adapter.get(url, headers=HEADERS,
                                     timeout=self.timeout, raise_exc=False)
        except (ks_exc.ClientException, ValueError, OSError) as e:
            raise CinderError('%s: %s' % (url, e))
        if resp.status_code == 404:
            return None
        if resp.status_code != 200:
            raise CinderError('%s: HTTP %d %s' % (
                url, resp.status_code, (resp.text or '')[:200]))
        try:
            body = resp.json()[key]
        except (ValueError, KeyError, TypeError) as e:
            raise CinderError('%s: unexpected answer (%s)' % (url, e))
        if not isinstance(body, dict):      # a proxy's page, a changed API
            raise CinderError('%s: unexpected answer (%s is not an object)'
                              % (url, key))
        return body


def cinder_adapter(conf, group=cinder_conf.CINDER_GROUP):
    """A keystoneauth1 Adapter for Cinder from the ``[cinder]`` options.

    Raises ValueError when no auth plugin is configured.
    """
    return keystone.load_adapter(
        conf, group, "nova-compute's [cinder] section, or \"admin_token\" "
        'with endpoint and token for a Cinder without Keystone')


def credentials_set(conf, group=cinder_conf.CINDER_GROUP):
    """True when ``[cinder] auth_type`` names an auth plugin."""
    return bool(conf[group].auth_type)


def enabled(conf):
    """``[volume_slo] from_cinder``, unset meaning: credentials are set."""
    on = conf.volume_slo.from_cinder
    return credentials_set(conf) if on is None else bool(on)


def from_conf(conf):
    """The Cinder source the options ask for, or None."""
    g = conf.volume_slo
    if not enabled(conf):
        return None
    return CinderQosLookup(lambda: cinder_adapter(conf),
                           cache_ttl=g.cache_ttl, timeout=g.timeout)
