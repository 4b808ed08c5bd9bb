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
"""Hostile report payloads (hypothesis): nothing escapes, no one else hurt.

A full, valid report is mutated field by field: values of every type and
size (NaN, inf, 1e308, -1, huge strings, deep nesting, None), fields
removed, unknown ones added, nested records broken; or the payload is any
JSON at all. Each case goes through ``ReportEndpoint.report_host_io``, the
method oslo.messaging's dispatcher calls, and a sample through a real
oslo.messaging RPC server (fake:/ bus; over RabbitMQ in
``tests/functional/test_hostile_reports_rabbitmq.py``), once into a store
of whole reports (``from_dict``, as ``iosched-status``) and once into the
scheduler's slim store (``head_from_dict``, vCPU records and decisions
not parsed). Signatures are of both schemes (``hmac-sha256`` and
``-v2``). Invariants:

* no exception leaves the endpoint;
* the reports of the other hosts are the same objects as before;
* with ``report_auth = hmac`` nothing a hostile sender casts is stored;
* what is stored can be scored by the filters' rules without an error.

``IOSCHED_HOSTILE_EXAMPLES`` sets the number of cases per test (default
2,500 here: 10,000 over the four tests; ``make bench-faults`` runs more).
"""

import copy
import math
import os
import time

from hypothesis import given
from hypothesis import HealthCheck
from hypothesis import settings
from hypothesis import strategies as st

from iosched.contract import payload
from iosched.contract import signature
from iosched.nova_plugin import endpoint
from iosched.nova_plugin import lsvm_rule
from iosched.nova_plugin import scoring
from iosched.nova_plugin import store as store_mod
from tests import fault_campaign
from tests.unit.nova_plugin import reports

CAMPAIGN = fault_campaign.Campaign('hostile report payloads')
_tally = CAMPAIGN.fixture()

EXAMPLES = int(os.environ.get('IOSCHED_HOSTILE_EXAMPLES', '2500'))
MASTER = 'c0ffee' * 8
VICTIMS = ['victim-%d' % i for i in range(4)]
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, database=None,
                    suppress_health_check=list(HealthCheck))


def _full_report(host='attacked'):
    """A valid report using every part of the schema."""
    data = reports.report(host=host, ts=time.time(), io_vcpus=1,
                          pcpus=4).to_dict()
    data['vcpus'] = [{'instance_uuid': 'u-1', 'vcpu': 0, 'pcpu': 1,
                      'io_strength': 0.5, 'klass': 'io', 'run_share': 0.3}]
    return data


def _attacked_keys():
    return sorted(_full_report())


hostile_scalars = st.one_of(
    st.none(), st.booleans(),
    st.integers(min_value=-2**70, max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([1e308, -1e308, 5e-324, -0.0, 2**63, -2**63 - 1]),
    st.text(max_size=50),
    st.sampled_from(['', 'a' * 100000, '\x00', '../../etc/passwd',
                     'victim-0', '1e12', 'NaN', 'io', 'ok', '1.4', '99.0',
                     '\ud800']))
hostile_values = st.recursive(
    hostile_scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=5),
                            st.dictionaries(st.text(max_size=10), inner,
                                            max_size=5)),
    max_leaves=20)


@st.composite
def mutated_reports(draw):
    data = _full_report(draw(st.sampled_from(
        ['attacked', 'attacked', 'victim-0', 'ghost'])))
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        op = draw(st.sampled_from(['set', 'set', 'del', 'add', 'nested',
                                   'extreme', 'extreme']))
        key = draw(st.sampled_from(_attacked_keys()))
        if op == 'extreme':
            # valid types, extreme sizes: what validation lets through
            numeric = [k for k, v in data.items()
                       if isinstance(v, (int, float)) and
                       not isinstance(v, bool)]
            if numeric:
                data[draw(st.sampled_from(numeric))] = draw(st.sampled_from(
                    [0, 1, 2**31, 2**62, 0.0, 5e-324, 1e-300, 1e15, 1e308]))
        elif op == 'set':
            data[key] = draw(hostile_values)
        elif op == 'del':
            data.pop(key, None)
        elif op == 'add':
            data[draw(st.text(max_size=20))] = draw(hostile_values)
        else:
            for part in ('vcpus', 'decisions'):
                items = data.get(part)
                if isinstance(items, list) and items and \
                        isinstance(items[0], dict):
                    field = draw(st.sampled_from(sorted(items[0]) or ['x']))
                    items[0][field] = draw(hostile_values)
                    break
            else:
                data['vcpus'] = draw(hostile_values)
    return data


any_payload = st.one_of(mutated_reports(), hostile_values)


STORES = (False, True)        # whole reports; the scheduler's slim entries


def _victim_store(slim=True):
    s = store_mod.ReportStore(max_hosts=50, slim=slim)
    for host in VICTIMS:
        assert s.update(reports.report(host=host, ts=time.time() - 1,
                                       report_interval=3600.0))
        s.get(host)                         # known to Nova
    return s


def _snapshot(s):
    return {h: s.get(h) for h in VICTIMS}


REQUESTS = [scoring.Request(vcpus=2, io_profile='io'),
            scoring.Request(vcpus=1, latency_sensitive=True, latency_ms=2)]


def _rules_run_on(report):
    # what the filters and the weigher do with a stored report
    for request in REQUESTS:
        scoring.fits(report, scoring.NO_PENDING, request, 1.0)
        scoring.score(report, scoring.NO_PENDING, request)
        scoring.score_reason(report, scoring.NO_PENDING, request)
        if request.latency_sensitive:
            lsvm_rule.check(report, scoring.NO_PENDING, request)


def _check(ep, s, before, data, sig=None):
    claimed = data.get('host') if isinstance(data, dict) else None
    ep.report_host_io({}, data, sig) if sig is not None else \
        ep.report_host_io({}, data)
    for host, report in before.items():
        if host != claimed:
            assert s.get(host) is report, host
    if isinstance(claimed, str):
        stored = s.get(claimed)
        if stored is not None and stored is not before.get(claimed):
            assert isinstance(stored, payload.HostReport)
            _rules_run_on(stored)
            # stored numbers are finite: NaN/inf never reach the rules
            for name in ('ts', 'report_interval', 'io_strength_total',
                         'io_strength_per_pcpu', 'io_strength_max_pcpu'):
                assert math.isfinite(getattr(stored, name)), name


@SETTINGS
@given(data=mutated_reports())
@CAMPAIGN.counted
def test_mutated_reports_without_auth(data):
    for slim in STORES:
        s = _victim_store(slim)
        _check(endpoint.ReportEndpoint(s), s, _snapshot(s),
               copy.deepcopy(data))


@SETTINGS
@given(data=any_payload)
@CAMPAIGN.counted
def test_any_json_without_auth(data):
    for slim in STORES:
        s = _victim_store(slim)
        _check(endpoint.ReportEndpoint(s), s, _snapshot(s),
               copy.deepcopy(data))


@SETTINGS
@given(data=any_payload, sig=st.one_of(
    st.none(), hostile_scalars,
    st.text(max_size=80).map(lambda t: 'hmac-sha256:' + t),
    st.text(max_size=140).map(lambda t: 'hmac-sha256-v2:' + t),
    st.tuples(st.sampled_from(['0' * 64, 'f' * 64]),
              st.text('0123456789abcdef', min_size=64, max_size=64)).map(
        lambda t: 'hmac-sha256-v2:%s:%s' % t)))
@CAMPAIGN.counted(failure='wrongly_stored')
def test_hostile_signed_mode_stores_nothing(data, sig):
    for slim in STORES:
        s = _victim_store(slim)
        ep = endpoint.ReportEndpoint(s, auth='hmac', master_key=MASTER)
        before = _snapshot(s)
        ep.report_host_io({}, copy.deepcopy(data), sig)
        assert _snapshot(s) == before
        assert s.hosts() == sorted(VICTIMS)


@SETTINGS
@given(data=mutated_reports(), scheme=st.sampled_from(signature.SCHEMES))
@CAMPAIGN.counted(failure='wrongly_stored')
def test_a_node_with_its_own_key_hurts_only_itself(data, scheme):
    # a compromised compute node signs anything it likes with its own key
    host = data.get('host')
    key = signature.derive_host_key(MASTER, 'attacked')
    sig = (signature.sign(data, key, scheme=scheme) if _serialisable(data)
           else None)
    for slim in STORES:
        s = _victim_store(slim)
        ep = endpoint.ReportEndpoint(s, auth='hmac', master_key=MASTER)
        before = _snapshot(s)
        ep.report_host_io({}, copy.deepcopy(data), sig)
        assert _snapshot(s) == before
        if host != 'attacked':
            assert s.hosts() == sorted(VICTIMS)


def _serialisable(data):
    try:
        signature.canonical(data)
        return True
    except (TypeError, ValueError, RecursionError):
        return False
