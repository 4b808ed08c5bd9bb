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
"""Reports bound to their sender: signatures, clock skew, eviction.

The attacks of issue 15, each as a test: a report for host X from someone
who is not X (unsigned, another host's key, a tampered copy), a report
stamped 1e12 that hid the host's genuine reports, a flood of invented
host names that evicted real ones. Direct endpoint calls and the agent's
own client over oslo.messaging's fake:/ bus. No nova import.
"""

import logging
import time

import oslo_messaging
import pytest

from iosched.contract import signature
from iosched.host_agent.cmd import agent as agent_cmd
from iosched.host_agent.reporter import rpcapi
from iosched.nova_plugin.cmd import report_key
from iosched.nova_plugin import endpoint
from iosched.nova_plugin import store
from tests.unit.nova_plugin import reports
from tests.unit.nova_plugin import test_endpoint

MASTER = 'f' * 16 + '0123456789abcdef' * 3


def _key(host):
    return signature.derive_host_key(MASTER, host)


def _signed(report, key=None):
    data = report.to_dict()
    return data, signature.sign(data, key or _key(report.host))


# ---------------------------------------------------------------- signature

def test_host_keys_are_per_host_and_deterministic():
    assert _key('c1') == _key('c1')
    assert _key('c1') != _key('c2')
    assert len(_key('c1')) == 64
    assert signature.derive_host_key(MASTER + 'x', 'c1') != _key('c1')


@pytest.mark.parametrize('master, host, message', [
    (None, 'c1', 'got none'),
    ('short', 'c1', 'got 5 characters'),
    (' ' * 40, 'c1', 'got 0 characters'),
    (MASTER, '', 'non-empty host name'),
    (MASTER, None, 'non-empty host name'),
])
def test_bad_keys_say_what_is_accepted(master, host, message):
    with pytest.raises(signature.BadKey) as e:
        signature.derive_host_key(master, host)
    assert message in str(e.value)


def _tamper(field, value):
    def change(data):
        data = dict(data)
        data[field] = value
        return data
    return change


@pytest.mark.parametrize('change, ok', [
    (lambda d: d, True),
    (lambda d: dict(reversed(list(d.items()))), True),   # key order
    (_tamper('io_vcpus', 9), False),
    (_tamper('ts', 1e12), False),
    (_tamper('host', 'c2'), False),
    (_tamper('extra', 1), False),
])
def test_signature_covers_every_field(change, ok):
    data, sig = _signed(reports.report(host='c1', io_vcpus=2))
    assert signature.verify(change(data), sig, _key('c1')) is ok


@pytest.mark.parametrize('sig', [
    None, 42, '', 'md5:00', 'hmac-sha256:' + '0' * 64, 'hmac-sha256:\u00e9'])
def test_malformed_signatures_do_not_verify(sig):
    data, _ = _signed(reports.report(host='c1'))
    assert not signature.verify(data, sig, _key('c1'))


def test_unserialisable_payload_does_not_verify():
    assert not signature.verify({'host': 'c1', 'x': object()},
                                'hmac-sha256:' + '0' * 64, _key('c1'))


# ---------------------------------------------------------------- endpoint

def _endpoint(st=None, auth='hmac'):
    return endpoint.ReportEndpoint(st or store.ReportStore(), auth=auth,
                                   master_key=MASTER)


@pytest.mark.parametrize('auth, master, message', [
    ('hmac', None, 'report_auth = hmac: the report master key'),
    ('hmac', 'short', 'at least 32 characters'),
    ('basic', MASTER, 'must be none or hmac'),
])
def test_endpoint_refuses_unusable_settings(auth, master, message):
    with pytest.raises(ValueError) as e:
        endpoint.ReportEndpoint(store.ReportStore(), auth=auth,
                                master_key=master)
    assert message in str(e.value)


def test_only_the_named_host_can_report_for_itself(caplog):
    st = store.ReportStore()
    ep = _endpoint(st)
    genuine = reports.report(host='c1', io_vcpus=1, ts=time.time())
    forged = reports.report(host='c1', io_vcpus=7, ts=time.time() + 1)
    with caplog.at_level(logging.WARNING,
                         logger='iosched.nova_plugin.endpoint'):
        ep.report_host_io({}, *_signed(genuine))
        # unsigned, another host's key, a tampered genuine signature
        ep.report_host_io({}, forged.to_dict())
        ep.report_host_io({}, *_signed(forged, key=_key('c2')))
        data, sig = _signed(genuine)
        data['io_vcpus'] = 7
        ep.report_host_io({}, data, sig)
        ep.report_host_io({}, 'not a dict', 'hmac-sha256:00')
    assert st.get('c1') == genuine
    assert ep.counts == {'stored': 1, 'ignored': 0, 'dropped': 4}
    messages = [r.getMessage() for r in caplog.records]
    assert sum('claiming to be from c1' in m for m in messages) == 3
    assert any('unsigned' in m for m in messages)
    assert sum('bad signature for host c1' in m for m in messages) == 2


def test_invented_hosts_cannot_report_at_all():
    st = store.ReportStore()
    ep = _endpoint(st)
    for i in range(50):
        r = reports.report(host='ghost-%d' % i, ts=time.time())
        ep.report_host_io({}, *_signed(r, key=_key('c1')))
    assert st.hosts() == []
    assert st.stats()['dropped'] == 50


def test_auth_none_still_takes_unsigned_and_signed_reports():
    st = store.ReportStore()
    ep = endpoint.ReportEndpoint(st)
    ep.report_host_io({}, reports.report(host='c1', ts=1.0).to_dict())
    ep.report_host_io({}, *_signed(reports.report(host='c2', ts=1.0)))
    assert st.hosts() == ['c1', 'c2']


# ------------------------------------------------------------- clock skew

def test_a_report_from_the_future_cannot_hide_the_genuine_ones(caplog):
    # The attack: ts = 1e12 was stored, and every later genuine
    # report of the host was ignored as older.
    clock = reports.FakeClock(now=1000.0)
    st = store.ReportStore(clock=clock, max_clock_skew=300.0)
    ep = endpoint.ReportEndpoint(st)      # auth none: the weakest setting
    with caplog.at_level(logging.WARNING,
                         logger='iosched.nova_plugin.endpoint'):
        ep.report_host_io({}, reports.report(host='c1', ts=1e12,
                                             io_vcpus=9).to_dict())
    assert st.get('c1') is None
    assert st.stats()['future'] == 1
    assert any('ahead of this scheduler' in r.getMessage()
               for r in caplog.records)
    genuine = reports.report(host='c1', ts=1000.0, io_vcpus=1)
    ep.report_host_io({}, genuine.to_dict())
    assert st.get('c1') == genuine


@pytest.mark.parametrize('ahead, stored', [
    (0.0, True), (299.0, True), (300.0, True), (301.0, False)])
def test_clock_skew_bound(ahead, stored):
    clock = reports.FakeClock(now=1000.0)
    st = store.ReportStore(clock=clock, max_clock_skew=300.0)
    assert st.update(reports.report(host='c1', ts=1000.0 + ahead)) is stored


def test_a_replayed_signed_report_is_older_and_ignored():
    clock = reports.FakeClock(now=1000.0)
    st = store.ReportStore(clock=clock)
    ep = _endpoint(st)
    old = _signed(reports.report(host='c1', ts=990.0, seq=1, io_vcpus=5))
    new = reports.report(host='c1', ts=1000.0, seq=2, io_vcpus=1)
    ep.report_host_io({}, *old)
    ep.report_host_io({}, *_signed(new))
    ep.report_host_io({}, *old)            # captured from the bus, replayed
    assert st.get('c1') == new
    assert ep.counts['ignored'] == 1


# ---------------------------------------------------------------- eviction

def test_a_flood_of_invented_hosts_cannot_evict_known_ones():
    clock = reports.FakeClock(now=1000.0)
    st = store.ReportStore(clock=clock, max_hosts=10)
    ep = endpoint.ReportEndpoint(st)      # auth none: names are free
    real = ['compute-%d' % i for i in range(6)]
    for host in real:
        ep.report_host_io({}, reports.report(host=host, ts=1000.0).to_dict())
        assert st.get(host) is not None   # a filter asked: Nova knows it
    for i in range(1000):
        clock.now += 0.001
        ep.report_host_io({}, reports.report(host='ghost-%d' % i,
                                             ts=clock.now).to_dict())
    held = st.hosts()
    assert set(real) <= set(held) and len(held) == 10
    # the ghosts took only the free room, newest kept
    assert 'ghost-999' in held and 'ghost-0' not in held
    assert st.stats()['evicted'] == 1000 - 4


def test_a_store_full_of_known_hosts_refuses_new_unknown_ones(caplog):
    clock = reports.FakeClock(now=1000.0)
    st = store.ReportStore(clock=clock, max_hosts=3)
    ep = endpoint.ReportEndpoint(st)
    for host in ('c1', 'c2', 'c3'):
        ep.report_host_io({}, reports.report(host=host, ts=1000.0).to_dict())
        st.get(host)
    with caplog.at_level(logging.WARNING,
                         logger='iosched.nova_plugin.endpoint'):
        ep.report_host_io({}, reports.report(host='ghost',
                                             ts=1000.0).to_dict())
    assert st.hosts() == ['c1', 'c2', 'c3']
    assert st.stats()['refused'] == 1
    assert any('store_max_hosts' in r.getMessage() for r in caplog.records)
    # a host Nova asks about before its first report is known already
    st.get('c4')
    ep.report_host_io({}, reports.report(host='c4', ts=1000.0).to_dict())
    assert 'c4' in st.hosts() and len(st.hosts()) == 3
    stats = st.stats()
    assert stats['received'] == 5 and stats['evicted'] == 1


# ----------------------------------------------- the agent's client, end to
# end

def test_agent_client_signs_and_the_listener_verifies(caplog):
    conf = test_endpoint._conf(report_auth='hmac', report_master_key=MASTER)
    st = store.ReportStore()
    server = endpoint.start_listener(conf, transport_url='fake:/', store=st,
                                     host='scheduler-1')
    try:
        good = rpcapi.ReportAPI(server.transport, 'iosched-reports',
                                key=_key('c1'))
        spoof = rpcapi.ReportAPI(server.transport, 'iosched-reports',
                                 key=_key('c2'))
        unsigned = rpcapi.ReportAPI(server.transport, 'iosched-reports')
        caplog.set_level(logging.WARNING,
                         logger='iosched.nova_plugin.endpoint')
        spoof.report_host_io(reports.report(host='c1', ts=time.time(),
                                            io_vcpus=7))
        unsigned.report_host_io(reports.report(host='c1', ts=time.time(),
                                               io_vcpus=8))
        r = reports.report(host='c1', ts=time.time(), io_vcpus=1)
        good.report_host_io(r)
        assert test_endpoint._wait_for(lambda: st.get('c1') is not None)
        assert test_endpoint._wait_for(lambda: st.stats()['dropped'] == 2)
        assert st.get('c1') == r
    finally:
        server.stop()
        server.wait()
        server.transport.cleanup()


@pytest.mark.parametrize('auth, warnings', [('none', 2), ('hmac', 0)])
def test_each_listener_warns_when_reports_are_not_authenticated(
        caplog, auth, warnings):
    """Once per listener started (a scheduler worker starts one: once per
    worker), never with signed reports.
    """
    conf = test_endpoint._conf(report_auth=auth, report_master_key=MASTER)
    with caplog.at_level(logging.WARNING,
                         logger='iosched.nova_plugin.endpoint'):
        for _ in range(2):
            server = endpoint.start_listener(conf, transport_url='fake:/',
                                             store=store.ReportStore(),
                                             host='scheduler-1')
            server.stop()
            server.wait()
            server.transport.cleanup()
    assert sum('report_auth = none' in r.getMessage()
               for r in caplog.records) == warnings


def test_old_clients_still_reach_a_new_listener():
    # RPC 1.0 (unsigned) casts from agents not yet upgraded
    conf = test_endpoint._conf()
    st = store.ReportStore()
    server = endpoint.start_listener(conf, transport_url='fake:/', store=st,
                                     host='scheduler-1')
    try:
        client = oslo_messaging.get_rpc_client(
            server.transport, oslo_messaging.Target(
                topic='iosched-reports', namespace='iosched',
                version='1.0'))
        client.prepare(fanout=True).cast(
            {}, 'report_host_io', report=reports.report(host='c9').to_dict())
        assert test_endpoint._wait_for(lambda: st.get('c9') is not None)
    finally:
        server.stop()
        server.wait()
        server.transport.cleanup()


# ---------------------------------------------------------------- the CLIs

@pytest.mark.parametrize('key, ok', [
    (None, True), ('', True), (_key('c1'), True),
    (_key('c1').upper(), False), ('abc', False), (_key('c1') + '0', False)])
def test_agent_checks_its_report_key(key, ok):
    if ok:
        agent_cmd.check_report_key(key)
    else:
        with pytest.raises(ValueError) as e:
            agent_cmd.check_report_key(key)
        assert 'iosched-report-key' in str(e.value)


def test_report_key_cli(tmp_path, capsys):
    conf = tmp_path / 'nova.conf'
    conf.write_text('[iosched]\nreport_master_key = %s\n' % MASTER)
    assert report_key.main(['--config-file', str(conf), '--host', 'c1']) == 0
    assert capsys.readouterr().out.strip() == _key('c1')
    assert report_key.main(['--config-file', str(conf), '--host', 'c1',
                            '--host', 'c2', '--format', 'ini']) == 0
    out = capsys.readouterr().out
    assert 'report_key = %s' % _key('c2') in out and '# c1' in out


@pytest.mark.parametrize('text, args, message', [
    ('[iosched]\n', ['--host', 'c1'], 'got none'),
    ('[iosched]\nreport_master_key = x\n', ['--host', 'c1'],
     'at least 32'),
    ('[iosched]\nreport_master_key = %s\n' % MASTER, ['--host', ' c1'],
     'without blanks'),
])
def test_report_key_cli_errors(tmp_path, capsys, text, args, message):
    conf = tmp_path / 'nova.conf'
    conf.write_text(text)
    assert report_key.main(['--config-file', str(conf)] + args) == 2
    assert message in capsys.readouterr().err
