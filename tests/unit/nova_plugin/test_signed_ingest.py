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
"""Signed reports into the scheduler's slim store (RPC 1.2): v1 and v2
signatures both taken; a v2 report is checked over its head only by a
store that drops the tail, over everything by one that keeps it
(``iosched-status``); the agent's client sends v2 at 1.2 and an RPC 1.1
client still reaches the listener. No nova import.
"""

import json
import time

import oslo_messaging
import pytest

from bench.nova_scale import reports as fake_reports
from iosched.contract import payload
from iosched.contract import rpc
from iosched.contract import signature
from iosched.host_agent.reporter import rpcapi
from iosched.nova_plugin import endpoint
from iosched.nova_plugin import store
from tests.unit.nova_plugin import reports
from tests.unit.nova_plugin import test_endpoint

MASTER = '0123456789abcdef' * 4


def _key(host):
    return signature.derive_host_key(MASTER, host)


def _wire(i=1, ts=None):
    data = json.loads(json.dumps(fake_reports.report_dict(
        i, ts=ts or time.time(), vcpus=8, decisions=5)))
    return data


def _endpoint(slim):
    st = store.ReportStore(slim=slim)
    return st, endpoint.ReportEndpoint(st, auth='hmac', master_key=MASTER)


@pytest.mark.parametrize('slim', [True, False])
@pytest.mark.parametrize('scheme', signature.SCHEMES)
def test_both_schemes_are_taken_by_both_stores(slim, scheme):
    st, ep = _endpoint(slim)
    data = _wire()
    ep.report_host_io({}, data, signature.sign(data, _key(data['host']),
                                               scheme=scheme))
    held = st.get(data['host'])
    whole = payload.HostReport.from_dict(data)
    assert held == (store.slim(whole) if slim else whole)


# A v2 report whose tail was changed after signing (its lengths kept):
# the slim store keeps nothing of the tail, so it takes the genuine head;
# a store that keeps the tail refuses it. Any change to the head, or to
# the tail's lengths, is refused by both.
@pytest.mark.parametrize('change, slim_takes', [
    (lambda d: d['vcpus'][0].update(klass='idle'), True),
    (lambda d: d['decisions'][0].update(reason='forged'), True),
    (lambda d: d['vcpus'].pop(), False),
    (lambda d: d.update(io_vcpus=d['io_vcpus'] + 1), False),
    (lambda d: d['lsvm'].update(count=d['lsvm']['count'] + 1), False),
])
def test_v2_tail_changes_matter_only_where_the_tail_is_kept(change,
                                                             slim_takes):
    for slim, taken in ((True, slim_takes), (False, False)):
        st, ep = _endpoint(slim)
        data = _wire()
        sig = signature.sign(data, _key(data['host']),
                             scheme=signature.SCHEME_V2)
        change(data)
        ep.report_host_io({}, data, sig)
        assert (st.get(data['host']) is not None) is taken, slim
        assert ep.counts['dropped'] == (0 if taken else 1)


def test_v2_binds_the_non_lsvm_count_the_slim_store_derives():
    st, ep = _endpoint(True)
    data = _wire()
    data['lsvm'].pop('nlsvm_vcpus', None)     # an agent before 1.2
    sig = signature.sign(data, _key(data['host']),
                         scheme=signature.SCHEME_V2)
    data['vcpus'] = data['vcpus'] * 3         # more non-LSVM vCPUs
    ep.report_host_io({}, data, sig)
    assert st.get(data['host']) is None


def test_agent_client_sends_v2_heads_at_1_3_to_the_scheduler_store(
        monkeypatch):
    conf = test_endpoint._conf(report_auth='hmac', report_master_key=MASTER)
    st = store.ReportStore(slim=True)
    server = endpoint.start_listener(conf, transport_url='fake:/', store=st,
                                     host='scheduler-1')
    sent = []
    real_sign = signature.sign

    def spy(data, key, scheme=signature.SCHEME):
        sent.append(scheme)
        return real_sign(data, key, scheme=scheme)

    monkeypatch.setattr(signature, 'sign', spy)
    try:
        good = rpcapi.ReportAPI(server.transport, 'iosched-reports',
                                key=_key('c1'))
        r = reports.report(host='c1', ts=time.time(), io_vcpus=1)
        good.report_host_io(r)
        assert test_endpoint._wait_for(lambda: st.get('c1') is not None)
        assert st.get('c1') == store.slim(r)
        assert sent == [signature.SCHEME_V2]
        # agents not yet upgraded, whole reports: RPC 1.1 with a v1
        # signature, 1.2 with a v2 one
        for host, version, scheme in (('c2', '1.1', signature.SCHEME),
                                      ('c3', '1.2', signature.SCHEME_V2)):
            old = oslo_messaging.get_rpc_client(
                server.transport, oslo_messaging.Target(
                    topic='iosched-reports', namespace='iosched',
                    version=version))
            data = reports.report(host=host, ts=time.time()).to_dict()
            old.prepare(fanout=True).cast(
                {}, 'report_host_io', report=data,
                signature=real_sign(data, _key(host), scheme))
            assert test_endpoint._wait_for(
                lambda: st.get(host) is not None), version
    finally:
        server.stop()
        server.wait()
        server.transport.cleanup()
    assert rpc.REPORT_VERSION == '1.3'
