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

"""Fuzzing every SLO input (issue 15, bad input): admin text, SLO tuples,
QoS specs read back by the agent (Cinder, ``volume_qos_file``).

Properties: only ``SLOError`` (or the admin tool's ``InputError``) escapes,
its message names the field and what is accepted and stays short; a valid
SLO round-trips text -> SLO -> QoS spec -> SLO; a refused ``plan`` sends
nothing to Cinder and a failed ``create`` leaves Cinder as it was; the
agent's readers of a spec (``volume_slo``, ``qos_attach.iotune``, the
report's reserved IOPS) never raise and never yield a non-finite number.
Examples per property: ``IOSCHED_INPUT_FUZZ_EXAMPLES``.
"""

import dataclasses
import json
import math

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import pytest

from iosched.cinder_qos import client
from iosched.cinder_qos import translate
from iosched.contract import qos_attach
from iosched.contract import qos_keys
from iosched.contract import slo
from iosched.contract import slo_units
from iosched.host_agent import model
from iosched.host_agent.reporter import build
from iosched.host_agent import volume_slo
from tests import fault_campaign
from tests.unit.cinder_qos import test_client
from tests.unit import input_fuzz as fz

CAMPAIGN = fault_campaign.Campaign('SLOs and QoS specs')
_tally = CAMPAIGN.fixture()

UNITS = ('iops', 'IOPS', 'B/s', 'KB/s', 'MB/s', 'MiB/s', 'GiB/s', 'ms', 'us',
         'µs', 's', 'S', 'B', 'KiB', 'MB', '%', '', 'parsecs', 'mb/S',
         'ms/s', 'iop', 'x')
WORDS = qos_keys.LATENCY_STATS + qos_keys.CLASSES + ('P99', 'avg', 'latency',
                                             'none', '=')
NAMES = slo.FIELDS + ('thruput', 'LATENCY', '', 'ref-io', 'class ')
SEPS = (',', ' ', ', ', ',,', '\t', '\n', ' = ', '=')
# What an SLO refusal may name: a field, or the text it could not place.
FIELD_NAMES = slo.FIELDS + ('field', 'min_iops', 'latency_ms', 'window_s',
                            'ref_io_bytes', 'expected_qd', 'min_bytes_sec',
                            'QoS spec', 'stat', 'qd', 'headroom')
ACCEPTED = ('accepted', 'give each field once')


@st.composite
def slo_texts(draw):
    """Admin text: tokens near the grammar, mutated; or any text."""
    if draw(st.integers(0, 9)) == 0:
        return draw(fz.junk_text)
    parts = []
    for _ in range(draw(st.integers(0, 7))):
        value = draw(st.one_of(
            st.tuples(fz.numbers_text, st.sampled_from(('', ' ')),
                      st.sampled_from(UNITS)).map(''.join),
            st.sampled_from(WORDS), fz.junk_text))
        if draw(st.booleans()):
            value = draw(st.sampled_from(NAMES)) + '=' + value
        parts.append(value)
        parts.append(draw(st.sampled_from(SEPS)))
    return ''.join(parts)


def _valid_texts():
    """Text of valid SLOs, from the tuple strategy of test_properties."""
    from tests.unit.cinder_qos import test_properties
    return test_properties.slos().map(lambda s: s.to_text())


def _refused(err):
    fz.check_message(str(err), FIELD_NAMES, ACCEPTED)


@fz.SETTINGS
@given(slo_texts())
@CAMPAIGN.counted
def test_slo_text_parses_or_is_refused_clearly(text):
    try:
        s = slo.parse(text)
    except slo.SLOError as e:
        _refused(e)
        return
    # Accepted: the canonical text reads back the same, and translate
    # either gives a QEMU-valid spec or refuses with SLOError.
    assert slo.parse(s.to_text()) == s
    try:
        specs = translate.translate(s)
    except slo.SLOError as e:
        _refused(e)
        return
    assert translate.check(specs) == []


_FIELD_UNITS = {'throughput': ('iops', 'MB/s', 'B/s'), 'latency': ('ms', 's'),
                'window': ('s', 'ms'), 'ref_io': ('B', 'KiB', ''),
                'qd': ('',), 'tolerance': ('', '%'), 'stat': ('',),
                'class': ('',)}


@pytest.mark.parametrize('field, number, unit', [
    (f, n, u) for f in sorted(_FIELD_UNITS) for n in fz.NASTY_NUMBERS
    for u in _FIELD_UNITS[f]])
@CAMPAIGN.counted
def test_each_field_with_nasty_numbers(field, number, unit):
    base = {'throughput': '500iops', 'latency': '10ms'}
    base[field] = number + unit
    text = ','.join('%s=%s' % kv for kv in base.items())
    try:
        s = slo.parse(text)
    except slo.SLOError as e:
        _refused(e)
        return
    assert slo.parse(s.to_text()) == s


_NUM = st.one_of(st.floats(allow_nan=True, allow_infinity=True),
                 st.integers(-10, 10 ** 20), st.booleans(), st.none(),
                 fz.numbers_text, st.just([1]))


@fz.SETTINGS
@given(st.fixed_dictionaries({}, optional={
    'min_iops': _NUM, 'latency_ms': _NUM, 'window_s': _NUM,
    'tolerance': _NUM, 'ref_io_bytes': _NUM, 'expected_qd': _NUM,
    'min_bytes_sec': _NUM,
    'latency_stat': st.sampled_from(qos_keys.LATENCY_STATS) | fz.scalars,
    'slo_class': st.sampled_from(qos_keys.CLASSES) | fz.scalars}))
@CAMPAIGN.counted
def test_slo_tuple_is_valid_or_refused_clearly(kwargs):
    kwargs.setdefault('min_iops', 500)
    kwargs.setdefault('latency_ms', 10)
    try:
        s = slo.SLO(**kwargs)
    except slo.SLOError as e:
        _refused(e)
        return
    assert math.isfinite(s.min_iops) and s.min_iops > 0
    assert s.latency_ms >= slo.MIN_LATENCY_MS


@fz.SETTINGS
@given(_valid_texts(), st.sampled_from([1, 1.5, 2, 10]),
       st.none() | st.integers(1, 4096))
@CAMPAIGN.counted
def test_valid_slo_round_trips_through_its_qos_spec(text, headroom, qd):
    s = slo.parse(text)
    specs = translate.translate(s, headroom=headroom, expected_qd=qd)
    back = slo.SLO.from_specs(specs)
    want = dataclasses.replace(
        s, slo_class=specs[qos_keys.CLASS],
        expected_qd=qd if qd is not None else s.expected_qd)
    assert back == want
    # as the agent sees it: every value a string, through the QoS file
    disk = volume_slo.slo_of({k: str(v) for k, v in specs.items()})
    assert (disk.min_iops, disk.latency_ms, disk.latency_stat) == (
        s.min_iops, s.latency_ms, s.latency_stat)
    assert qos_attach.iotune(specs)['total_iops_sec'] == int(
        specs['total_iops_sec'])


def _spec_values():
    good = translate.translate(slo.parse('500iops,10ms,p99,qd=8'))
    return st.one_of(st.sampled_from(sorted(good.values())), fz.scalars,
                     fz.numbers_text)


_SPEC_KEYS = st.sampled_from(qos_keys.IOSCHED_KEYS + qos_keys.FRONTEND_KEYS + (
    'iosched:min_iop', 'iosched:', 'consumer', 'total_iops_sec_per_gb',
    'read_iops_sec_per_gb_min', 'x'))


@fz.SETTINGS
@given(st.dictionaries(_SPEC_KEYS, _spec_values(), max_size=10))
@CAMPAIGN.counted
def test_qos_spec_read_back_never_raises_anything_but_sloerror(specs):
    # the reader of the admin tool and of the agent
    try:
        s = slo.SLO.from_specs(specs)
        assert s.min_iops > 0 and math.isfinite(s.min_iops)
    except slo.SLOError as e:
        _refused(e)
    problems = translate.check({k: str(v) for k, v in specs.items()})
    assert all(isinstance(p, str) and len(p) <= fz.MAX_MESSAGE
               for p in problems)
    try:
        disk = volume_slo.slo_of({k: str(v) for k, v in specs.items()})
    except slo.SLOError as e:
        _refused(e)
    else:
        assert disk is None or math.isfinite(disk.min_iops)
    # the agent re-applies the front-end keys it can read, ignores the rest
    tune = qos_attach.iotune(specs)
    assert all(k in qos_keys.FRONTEND_KEYS and isinstance(v, int) and v > 0
               for k, v in tune.items())
    inst = model.InstanceInfo(uuid='u', name='d', disks=(
        model.DiskInfo('vda', 'vol', {k: str(v) for k, v in specs.items()}),))
    reserved = build.reserved_iops([inst])
    assert math.isfinite(reserved) and reserved >= 0


@fz.SETTINGS
@given(st.one_of(fz.json_values.map(json.dumps), fz.junk_text,
                 st.dictionaries(st.text(max_size=5), st.dictionaries(
                     _SPEC_KEYS, _spec_values(), max_size=4),
                     max_size=3).map(json.dumps),
                 st.just('[' * 100000), st.just('{"v": ' * 5000)))
@CAMPAIGN.counted
def test_volume_qos_file_never_stops_the_agent(tmp_path_factory, content):
    path = fz.scratch(tmp_path_factory) / 'qos.json'
    path.write_text(content)
    qf = volume_slo.QosFile(str(path))
    specs = qf.specs()
    assert isinstance(specs, dict)
    resolver = volume_slo.Resolver(str(path))
    inst = model.InstanceInfo(uuid='u', name='d', disks=tuple(
        model.DiskInfo('vd%d' % i, serial) for i, serial in
        enumerate(list(specs)[:3] + ['none'])))
    [out] = resolver.attach([inst])
    assert len(out.disks) == len(inst.disks)


@fz.SETTINGS
@given(slo_texts(), st.sampled_from(('gold', '', ' ', 'x' * 300)),
       st.sampled_from((1, 1.5, 0.5, float('nan'))),
       st.sampled_from((None, 0, 5, -1)))
@CAMPAIGN.counted
def test_refused_plan_sends_nothing_to_cinder(text, name, headroom, minlat):
    api = test_client.FakeApi()
    calls = []

    class Recording(object):
        def __getattr__(self, attr):
            calls.append(attr)
            return getattr(api, attr)

    admin = client.SloAdmin(Recording())
    try:
        p = client.plan(name, text, headroom=headroom,
                        min_latency_ms=minlat)
    except client.InputError as e:
        assert e.code == client.EXIT_INPUT
        fz.check_message(str(e), FIELD_NAMES + ('type name',
                                                '--min-latency-ms'),
                         ACCEPTED + ('must be',))
        assert calls == []
        return
    admin.create(p)
    assert admin.show(p.type_name).specs == p.specs


_OPS = ('create_qos_spec', 'set_qos_keys', 'associate', 'create_type')


@fz.SETTINGS
@given(_valid_texts(), st.sets(st.sampled_from(_OPS), min_size=1),
       st.booleans())
@CAMPAIGN.counted
def test_failed_create_leaves_cinder_as_it_was(text, fail, existing):
    api = test_client.FakeApi()
    admin = client.SloAdmin(api)
    if existing:     # a spec of the same name with other keys: --force
        admin.create(client.plan('gold', '100iops,50ms'))
    before = (json.dumps(api.qos_specs(), sort_keys=True),
              json.dumps(api.types(), sort_keys=True), dict(api.assoc))
    api.fail = fail
    p = client.plan('gold', text)
    try:
        admin.create(p, force=True)
    except client.AdminError:
        after = (json.dumps(api.qos_specs(), sort_keys=True),
                 json.dumps(api.types(), sort_keys=True), dict(api.assoc))
        assert after == before
    else:
        assert admin.show('gold').specs == p.specs


@CAMPAIGN.counted
def test_units_shorten_huge_raw_values():
    try:
        slo_units.throughput('throughput', '5' + 'x' * 100000)
    except slo.SLOError as e:
        assert len(str(e)) < 500 and 'accepted' in str(e)
    else:
        raise AssertionError('accepted')


@settings(fz.SETTINGS, max_examples=max(10, fz.EXAMPLES // 5))
@given(st.dictionaries(_SPEC_KEYS, _spec_values(), max_size=8))
@CAMPAIGN.counted
def test_any_qos_spec_on_a_disk_leaves_the_agent_ticking(specs):
    """The agent's whole tick with that spec on every disk: the policies
    still act (vSlicer's LSVM slice) and no tick fails.
    """
    from iosched.host_agent.conf import CONF
    from tests import fixtures
    sim, driver = fixtures.sim_host_with_vms()
    listed = driver.list_instances

    def with_spec():
        return [dataclasses.replace(inst, disks=tuple(
            dataclasses.replace(d, qos={k: str(v) for k, v in specs.items()})
            for d in inst.disks)) for inst in listed()]

    driver.list_instances = with_spec
    CONF.set_override('report_every_ticks', 1, 'host_agent')
    try:
        agent = fixtures.make_agent(driver)
        fixtures.run_ticks(sim, agent, 2)
    finally:
        CONF.clear_override('report_every_ticks', 'host_agent')
    assert sim.get_vcpu_slice('lsvm-1', 0) == 1000
    errors = agent.last_report.health.errors
    assert not [e for e in errors if e.startswith(('tick', 'policy'))], errors
    assert math.isfinite(agent.last_report.disk.reserved_iops)
    agent.stop()


class _Answer(object):
    def __init__(self, status, body):
        self.status_code, self._body = status, body
        self.text = str(body)[:1000]

    def json(self):
        if isinstance(self._body, Exception):
            raise self._body
        return self._body


_PER_GB = st.sampled_from(['total_iops_sec_per_gb',
                           'total_iops_sec_per_gb_min', 'total_iops_sec_max',
                           'read_bytes_sec_per_gb'])


@fz.SETTINGS
@given(st.fixed_dictionaries({
    'size': fz.scalars | st.sampled_from([float('inf'), float('nan'), 1,
                                          10 ** 30, '20', -1]),
    'consumer': st.sampled_from(
        ['front-end', 'both', 'back-end', None, 5]) | fz.junk_text,
    'specs': st.dictionaries(_SPEC_KEYS | _PER_GB, _spec_values(),
                             max_size=6) | fz.json_values,
    'broken': st.sampled_from([None, 'volume', 'type', 'qos']),
    'junk': fz.json_values | st.just(ValueError('not JSON')),
    'status': st.sampled_from([200, 200, 404, 500, 300])}))
@CAMPAIGN.counted
def test_cinder_answers_never_stop_the_agent(case):
    """Whatever Cinder answers for a volume, its type and QoS spec, the
    agent's reader returns spec keys as text, {} or None; never raises.
    """
    from iosched.host_agent import cinder_slo
    bodies = {
        '/volumes/vol-1': {'volume': {'id': 'vol-1', 'size': case['size'],
                                      'volume_type_id': 't1'}},
        '/types/t1': {'volume_type': {'id': 't1', 'qos_specs_id': 'q1'}},
        '/qos-specs/q1': {'qos_specs': {'id': 'q1',
                                        'consumer': case['consumer'],
                                        'specs': case['specs']}}}
    broken = {'volume': '/volumes/vol-1', 'type': '/types/t1',
              'qos': '/qos-specs/q1'}.get(case['broken'])

    class Adapter(object):
        def get(self, url, **kw):
            if url == broken:
                return _Answer(case['status'], case['junk'])
            return _Answer(200, bodies[url])

    source = cinder_slo.CinderQosLookup(Adapter, cache_ttl=60.0)
    got = source.specs('vol-1')
    assert got is None or (isinstance(got, dict) and all(
        isinstance(k, str) and isinstance(v, str) for k, v in got.items()))
    if got:
        try:
            volume_slo.slo_of(got)
        except slo.SLOError as e:
            _refused(e)


@fz.SETTINGS
@given(st.sampled_from(qos_keys.CONSUMERS + ('', None, 'x')),
       st.dictionaries(_SPEC_KEYS, _spec_values(), max_size=6))
@CAMPAIGN.counted
def test_the_scheduler_reads_b_as_the_agent_does(consumer, specs):
    """iosched.nova_plugin.slo_rule's B of a QoS spec: a finite number >= 0 or
    SloSpecError naming the key; when the agent accepts the SLO, the
    scheduler counts the same B.
    """
    from iosched.nova_plugin import slo_rule
    try:
        b = slo_rule.min_iops_from_qos(consumer, specs, name='gold')
    except slo_rule.SloSpecError as e:
        fz.check_message(str(e), [qos_keys.MIN_IOPS], ('accepted',))
        return
    assert math.isfinite(b) and b >= 0
    try:
        s = slo.SLO.from_specs({k: str(v) for k, v in specs.items()})
    except slo.SLOError:
        return
    if consumer in ('front-end', 'both'):
        assert b == s.min_iops
