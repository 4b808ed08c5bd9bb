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
"""Part 1's SLO volumes: what ``SloCapacityFilter`` reads per request.

Without this the filter's lookup fails in the bench's process (no Nova
database: "No sql_connection parameter is established") and every host
passes on ``slo_lookup_failure_policy``, so its per-host path would not
be timed. ``volumes(mode, log)`` is a context manager yielding a
``Volumes``:

* ``real`` (the default when Cinder is installed): Cinder's v3 API in a
  child process (``tests.cinder_process``: noauth, sqlite, the fake volume
  driver; Nova and Cinder cannot share an interpreter), with two SLO
  volume types made over its HTTP API as ``cinder_qos`` makes them
  (``gold`` 500 IOPS, front-end; ``silver`` 100 IOPS, both), a plain type
  and a volume of each SLO type. nova.conf's ``[cinder]`` points Nova's
  own client at it (``admin_token``, as ``tests/nova/
  test_slo_capacity_real_cinder.py`` does), so ``CinderVolumeTypes`` is
  the real one;
* ``double``: the same types and volumes in an in-process double of
  ``CinderVolumeTypes`` (no HTTP);
* ``off``: the lookup as before (it fails: the filter's failure path).

In ``real`` and ``double`` the one stub is the Nova database boundary:
``NovaVolumeLookup.mappings`` gives each request's block device mappings
(``MAPPINGS``, by flavor) as its BuildRequest would. The resolver is the
worker's (its caches, ``[iosched] slo_cache_seconds``), so Cinder is asked
once per request uuid and cache period, not per host.
"""

import contextlib

# flavor name -> its request's volume mappings: (source, type or volume)
MAPPINGS = {
    'io.large': [('volume', 'gold')],           # an existing gold volume
    'cpu.large': [],                            # image boot, no volume
    'mixed.medium': [('image', 'silver')],      # a new silver boot volume
    'lsvm.small': [('volume', 'silver')],
    'io.small': [('volume', 'gold'), ('blank', 'silver')],
    'plain.medium': [],
    'mixed.large': [('image', 'gold')],
    'lsvm.medium': [('image', 'plain')],        # a type without a QoS spec
}
# type suffix -> (consumer, specs) of its QoS spec; None: no QoS spec
TYPES = {
    'gold': ('front-end', {'iosched:min_iops': '500',
                           'total_iops_sec': '750'}),
    'silver': ('both', {'iosched:min_iops': '100'}),
    'plain': None,
}
MODES = ('real', 'double', 'off')


class Volumes(object):
    """``lookup``: the filter's ``NovaVolumeLookup`` (None: as built);
    ``mode``: what answers for Cinder.
    """

    def __init__(self, mode, lookup=None):
        self.mode = mode
        self.lookup = lookup

    def install(self, filters):
        """Give every ``SloCapacityFilter`` of ``filters`` the lookup."""
        if self.lookup is None:
            return
        for flt in filters:
            if type(flt).__name__ == 'SloCapacityFilter':
                flt.volumes = self.lookup


class _DoubleTypes(object):
    """``slo_request.CinderVolumeTypes`` answered from dicts."""

    def __init__(self, types, volumes):
        self.types = types          # type name -> (consumer, specs)
        self.volumes = volumes      # volume id -> type name

    def volume_type(self, ctxt, volume_id):
        return self.volumes[volume_id]

    def snapshot_volume(self, ctxt, snapshot_id):
        raise KeyError(snapshot_id)

    def default_type(self, ctxt):
        return None

    def type_qos(self, ctxt, type_ref):
        return self.types[type_ref]


def _lookup(by_uuid, cinder_types=None):
    """A ``NovaVolumeLookup`` whose mappings come from ``by_uuid``."""
    from iosched.nova_plugin.filters import slo_request
    from iosched.nova_plugin import slo_lookup

    class BenchLookup(slo_request.NovaVolumeLookup):
        @staticmethod
        def mappings(ctxt, uuid):
            return slo_lookup.SOURCE_BUILD_REQUEST, by_uuid.get(uuid, [])

    return BenchLookup(cinder_types)


def _bdms(specs, type_ids, volume_ids):
    """instance uuid -> BlockDeviceMappings of its flavor's MAPPINGS."""
    from nova import objects

    out = {}
    for spec in specs:
        bdms = []
        for index, (source, ref) in enumerate(MAPPINGS[spec.flavor.name]):
            kw = dict(boot_index=0 if index == 0 else -1,
                      destination_type='volume', source_type=source)
            if source == 'volume':
                kw['volume_id'] = volume_ids[ref]
            else:
                kw['volume_type'] = type_ids[ref]
            bdms.append(objects.BlockDeviceMapping(**kw))
        out[str(spec.instance_uuid)] = bdms
    return out


@contextlib.contextmanager
def volumes(mode, specs, log):
    """Yield the ``Volumes`` of ``mode`` for the requests ``specs``."""
    if mode == 'off':
        yield Volumes(mode)
        return
    if mode == 'double':
        type_ids = {k: 'bench-%s' % k for k in TYPES}
        volume_ids = {k: 'vol-%s' % k for k in ('gold', 'silver')}
        double = _DoubleTypes(
            {type_ids[k]: v or (None, {}) for k, v in TYPES.items()},
            {volume_ids[k]: type_ids[k] for k in volume_ids})
        yield Volumes(mode, _lookup(_bdms(specs, type_ids, volume_ids),
                                    double))
        return
    from tests import cinder_process
    log('  SLO volumes: starting Cinder\'s API in a child process')
    with cinder_process.cinder_server() as server:
        api = server.adapter()
        type_ids, volume_ids = {}, {}
        for suffix, qos in TYPES.items():
            name = 'bench-%s' % suffix
            type_ids[suffix] = _ok(api.post('/types', json={
                'volume_type': {'name': name}}))['volume_type']['id']
            if qos is not None:
                consumer, specs_ = qos
                body = dict(specs_, name=name + '-qos', consumer=consumer)
                qid = _ok(api.post('/qos-specs', json={
                    'qos_specs': body}))['qos_specs']['id']
                _ok(api.get('/qos-specs/%s/associate?vol_type_id=%s'
                            % (qid, type_ids[suffix])), 200, 202)
        for suffix in ('gold', 'silver'):
            volume_ids[suffix] = _volume(api, 'bench-%s' % suffix)
        _point_nova_at(server)
        log('  SLO volumes: Cinder pid %d, types %s, volumes %s' % (
            server.pid, ', '.join(sorted(type_ids)),
            ', '.join(sorted(volume_ids))))
        yield Volumes(mode, _lookup(_bdms(specs, type_ids, volume_ids)))


def _ok(resp, *codes):
    if resp.status_code not in (codes or (200,)):
        raise RuntimeError('Cinder: %s %s' % (resp.status_code, resp.text))
    return resp.json() if resp.content else {}


def _volume(api, type_name, timeout=60.0):
    import time

    vol = _ok(api.post('/volumes', json={'volume': {
        'size': 1, 'volume_type': type_name, 'name': type_name}}),
        202)['volume']
    deadline = time.monotonic() + timeout
    while vol['status'] != 'available' and time.monotonic() < deadline:
        time.sleep(0.2)
        vol = _ok(api.get('/volumes/%s' % vol['id']))['volume']
    if vol['status'] != 'available':
        raise RuntimeError('Cinder volume not available: %s' % vol)
    return vol['id']


def _point_nova_at(server):
    """nova.conf ``[cinder]``: admin_token with the server's endpoint."""
    from keystoneauth1 import loading as ks_loading
    import nova.conf
    from nova import service_auth

    conf = nova.conf.CONF
    conf.register_opts(ks_loading.get_auth_plugin_conf_options(
        'admin_token'), group='cinder')
    conf.set_override('auth_type', 'admin_token', 'cinder')
    conf.set_override('endpoint', server.endpoint, 'cinder')
    conf.set_override('token', server.token, 'cinder')
    service_auth.reset_globals()
