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
"""The agent's Cinder lookups over HTTP (requests-mock in Cinder's v3
shapes): volume -> type -> QoS spec, the cache, outages. The same reads
against Cinder's real API are in tests/cinder.
"""

from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import session as ks_session
import pytest
import requests_mock

from iosched.cinder_qos import translate
from iosched.contract import slo as slo_mod
from iosched.host_agent import cinder_slo
from iosched.host_agent import model
from iosched.host_agent import volume_slo

EP = 'http://cinder.test/v3/p1'
SPECS = translate.translate(slo_mod.parse('120iops,60ms,p99,qd=8'))


class Clock(object):
    t = 0.0

    def __call__(self):
        return self.t


def _adapter():
    return ks_adapter.Adapter(ks_session.Session(), endpoint_override=EP)


def _source(clock):
    return cinder_slo.CinderQosLookup(_adapter, cache_ttl=60.0, clock=clock)


def _cinder(m, type_id='t1', qos_id='q1', specs=SPECS):
    m.get(EP + '/volumes/vol-1', json={'volume': {
        'id': 'vol-1', 'volume_type': 'gold', 'volume_type_id': type_id}})
    m.get(EP + '/types/' + str(type_id), json={'volume_type': {
        'id': type_id, 'name': 'gold', 'qos_specs_id': qos_id}})
    m.get(EP + '/qos-specs/' + str(qos_id), json={'qos_specs': {
        'id': qos_id, 'consumer': 'front-end', 'specs': specs}})


def test_volume_type_qos_spec_chain_and_microversion():
    with requests_mock.Mocker() as m:
        _cinder(m)
        got = _source(Clock()).specs('vol-1')
        assert got == SPECS
        assert m.request_history[0].headers['OpenStack-API-Version'] == \
            'volume 3.63'


@pytest.mark.parametrize('type_id, qos_id, want', [
    (None, None, {}),            # a volume without a type
    ('t1', None, {}),            # a type without a QoS spec
])
def test_no_type_or_no_spec_is_no_slo(type_id, qos_id, want):
    with requests_mock.Mocker() as m:
        _cinder(m, type_id=type_id, qos_id=qos_id)
        assert _source(Clock()).specs('vol-1') == want


def test_unknown_volume_is_none():
    with requests_mock.Mocker() as m:
        m.get(EP + '/volumes/nope', status_code=404, json={})
        assert _source(Clock()).specs('nope') is None


def test_cached_for_the_ttl_then_asked_again():
    clock = Clock()
    src = _source(clock)
    with requests_mock.Mocker() as m:
        _cinder(m)
        src.specs('vol-1')
        n = m.call_count
        clock.t = 59.0
        src.specs('vol-1')
        assert m.call_count == n
        clock.t = 61.0
        _cinder(m, specs=dict(SPECS, **{'iosched:min_iops': '200'}))
        assert src.specs('vol-1')['iosched:min_iops'] == '200'   # retyped


def test_outage_keeps_the_last_answer_and_warns_once(caplog):
    clock = Clock()
    src = _source(clock)
    with requests_mock.Mocker() as m:
        _cinder(m)
        src.specs('vol-1')
    clock.t = 120.0
    with requests_mock.Mocker() as m:
        m.get(EP + '/volumes/vol-1', status_code=503, text='down')
        m.get(EP + '/volumes/vol-2', status_code=503, text='down')
        with caplog.at_level('WARNING'):
            assert src.specs('vol-1') == SPECS
            assert src.specs('vol-1') == SPECS
            assert src.specs('vol-2') is None
            # one request, then none until the retry interval has passed
            assert m.call_count == 1
            clock.t += cinder_slo.RETRY_S
            assert src.specs('vol-2') is None
            assert m.call_count == 2
        assert src.outage and 'HTTP 503' in src.outage
        warnings = [r for r in caplog.records if 'cannot be read' in
                    r.getMessage()]
        assert len(warnings) == 1
    clock.t += cinder_slo.RETRY_S
    with requests_mock.Mocker() as m:
        _cinder(m)
        assert src.specs('vol-1') == SPECS
    assert src.outage is None


def test_a_broken_configuration_is_an_outage_not_a_crash():
    def factory():
        raise ValueError('[cinder] auth_type is not set')
    src = cinder_slo.CinderQosLookup(factory, clock=Clock())
    assert src.specs('vol-1') is None
    assert 'auth_type' in src.outage


def test_resolver_takes_cinder_for_disks_not_in_the_file():
    with requests_mock.Mocker() as m:
        _cinder(m)
        res = volume_slo.Resolver('', _source(Clock()))
        (inst,) = res.attach([model.InstanceInfo(uuid='u', name='u', disks=(
            model.DiskInfo('vdb', serial='vol-1'),))])
    assert inst.disks[0].slo.min_iops == 120.0
    assert inst.disks[0].qos['total_iops_sec'] == SPECS['total_iops_sec']


def _inst(uuid, *serials):
    return model.InstanceInfo(uuid=uuid, name=uuid, disks=tuple(
        model.DiskInfo('vd' + 'bcd'[i], serial=s)
        for i, s in enumerate(serials)))


class _Lookup(object):
    """Counts the Cinder reads a Resolver makes through the cache."""

    def __init__(self):
        self.cache, self.reads = {}, []

    def specs(self, serial):
        if serial not in self.cache:
            self.reads.append(serial)
            self.cache[serial] = dict(SPECS)
        return self.cache[serial]

    def forget(self, serials):
        for s in serials:
            self.cache.pop(s, None)


# ticks: the instances listed at each call; want: serials read from
# Cinder at each call (a fresh attachment is read afresh, a volume still
# attached comes from the cache, a detached one leaves the cache)
@pytest.mark.parametrize('ticks, want, cached', [
    ([[('u', 'v1')], [('u', 'v1')]], [['v1'], []], {'v1'}),
    # detached (retyped meanwhile), attached again: read afresh
    ([[('u', 'v1')], [], [('u', 'v1')]], [['v1'], [], ['v1']], {'v1'}),
    # moved to another instance: read afresh
    ([[('u', 'v1')], [('w', 'v1')]], [['v1'], ['v1']], {'v1'}),
    # a second volume attached: only it is read
    ([[('u', 'v1')], [('u', 'v1', 'v2')]], [['v1'], ['v2']], {'v1', 'v2'}),
    ([[('u', 'v1', 'v2')], [('u', 'v2')]], [['v1', 'v2'], []], {'v2'}),
])
def test_fresh_attachments_are_read_afresh(ticks, want, cached):
    look = _Lookup()
    res = volume_slo.Resolver('', look)
    got = []
    for tick in ticks:
        look.reads = []
        res.attach([_inst(t[0], *t[1:]) for t in tick])
        got.append(look.reads)
    assert got == want
    assert set(look.cache) == cached


def test_from_conf_is_off_by_default():
    from iosched.host_agent import conf
    assert cinder_slo.from_conf(conf.CONF) is None
