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
"""The LSVM trait publisher against a fake Placement (no Nova).

``FakePlacement`` is a tiny keystoneauth1-Adapter double holding providers,
their traits and generations; it can fake a concurrent writer (409), a
missing provider, HTTP errors and connection failures. One test goes
through the real keystoneauth1 Session/Adapter built from ``[placement]``
options, with requests_mock answering.
"""

import json
import logging
import os
import subprocess
import sys
import threading
import types
import urllib.parse

from keystoneauth1 import exceptions as ks_exc
from oslo_config import cfg
import pytest
import requests_mock

from iosched.host_agent.conf import placement as placement_conf
from iosched.host_agent import placement_trait as pt
from tests import fixtures
from tests.unit.nova_plugin import reports

TRAIT = 'CUSTOM_IOSCHED_LSVM'
RP = 'rp-uuid-1'


class Resp:
    def __init__(self, status_code, body=None):
        self.status_code = status_code
        self._body = body
        self.text = json.dumps(body) if body is not None else ''

    def json(self):
        return self._body


class FakePlacement:
    """Placement's trait API for one process, behind Adapter.get/put."""

    def __init__(self, providers=None, traits=None):
        self.lock = threading.Lock()
        self.providers = dict({'host1': RP} if providers is None
                              else providers)   # name -> uuid
        self.traits = {u: set(traits or ()) for u in self.providers.values()}
        self.generation = {u: 1 for u in self.providers.values()}
        self.known = {'COMPUTE_NET_VIF_MODEL_VIRTIO', 'HW_CPU_X86_AVX',
                      'COMPUTE_STATUS_DISABLED'}
        self.calls = []            # (method, url)
        self.microversions = set()
        self.conflicts = 0         # next N trait PUTs lose to a writer
        self.fail = None           # status code every call answers
        self.raise_exc = None      # exception every call raises

    def add_provider(self, name, uuid):
        with self.lock:
            self.providers[name] = uuid
            self.traits[uuid] = set()
            self.generation[uuid] = 1

    def writes(self):
        return [c for c in self.calls if c[0] == 'put']

    def get(self, url, microversion=None, **kw):
        return self._serve('get', url, microversion, kw)

    def put(self, url, microversion=None, **kw):
        return self._serve('put', url, microversion, kw)

    def _serve(self, method, url, microversion, kw):
        with self.lock:
            self.calls.append((method, url))
            self.microversions.add(microversion)
            if self.raise_exc is not None:
                raise self.raise_exc
            if self.fail is not None:
                return Resp(self.fail, {'errors': [{'detail': 'boom'}]})
            return self._route(method, url, kw.get('json'))

    def _route(self, method, url, body):
        if method == 'get' and url.startswith('/resource_providers?name='):
            name = url.split('=', 1)[1]
            rps = ([{'uuid': self.providers[name], 'name': name}]
                   if name in self.providers else [])
            return Resp(200, {'resource_providers': rps})
        if method == 'put' and url.startswith('/traits/'):
            name = url[len('/traits/'):]
            if name in self.known:
                return Resp(204)
            self.known.add(name)
            return Resp(201)
        uuid = url.split('/')[2]
        if uuid not in self.traits:
            return Resp(404)
        if method == 'get':
            return Resp(200, {'traits': sorted(self.traits[uuid]),
                              'resource_provider_generation':
                                  self.generation[uuid]})
        if self.conflicts:
            self.conflicts -= 1
            self.generation[uuid] += 1          # nova-compute wrote first
            self.traits[uuid].add('COMPUTE_STATUS_DISABLED')
            return Resp(409)
        if body['resource_provider_generation'] != self.generation[uuid]:
            return Resp(409)
        unknown = set(body['traits']) - self.known
        if unknown:
            return Resp(400, {'errors': [{'detail': 'No such trait(s): %s'
                                          % ','.join(sorted(unknown))}]})
        self.traits[uuid] = set(body['traits'])
        self.generation[uuid] += 1
        return Resp(200)


def publisher(fake, **kw):
    kw.setdefault('retry_initial', 2.0)
    kw.setdefault('retry_max', 300.0)
    return pt.TraitPublisher(lambda: pt.PlacementTraits(fake), 'host1', **kw)


class Clock:
    def __init__(self, now=1000.0):
        self.now = now

    def __call__(self):
        return self.now


# -- pure functions ---------------------------------------------------------

@pytest.mark.parametrize('current, present, expected', [
    ({'A'}, True, {'A', TRAIT}),
    ({'A', TRAIT}, True, None),
    ({'A', TRAIT}, False, {'A'}),
    ({'A'}, False, None),
    (set(), True, {TRAIT}),
    ({TRAIT}, False, set()),
])
def test_traits_to_put_keeps_other_traits(current, present, expected):
    assert pt.traits_to_put(current, TRAIT, present) == expected


@pytest.mark.parametrize('failures, expected', [
    (1, 2.0), (2, 4.0), (3, 8.0), (8, 256.0), (9, 300.0), (50, 300.0),
    (0, 2.0),
])
def test_retry_delay_doubles_up_to_the_cap(failures, expected):
    assert pt.retry_delay(failures, 2.0, 300.0) == expected


@pytest.mark.parametrize(
    'wanted, confirmed, failures, last, now, expected', [
        (None, None, 0, 0.0, 100.0, None),     # no report yet: nothing
        (True, None, 0, 0.0, 100.0, 0.0),      # first report: at once
        (False, True, 0, 99.0, 100.0, 0.0),    # a change: at once
        (True, True, 0, 100.0, 100.0, 60.0),   # settled: recheck later
        (True, True, 0, 0.0, 100.0, 0.0),      # recheck due
        (True, None, 1, 100.0, 100.0, 2.0),    # failed once: back off
        (True, None, 3, 100.0, 105.0, 3.0),    # failed 3 times: 8 s
        (False, True, 2, 100.0, 100.0, 4.0),   # failing: a change waits too
        (True, None, 20, 100.0, 100.0, 30.0),  # capped
    ])
def test_next_attempt(wanted, confirmed, failures, last, now, expected):
    assert pt.next_attempt(wanted, confirmed, failures, last, now,
                           recheck=60.0, initial=2.0, cap=30.0) == expected


@pytest.mark.parametrize('name', [
    'CUSTOM_IOSCHED_LSVM', 'CUSTOM_X', 'CUSTOM_A1_B2', 'CUSTOM_' + 'A' * 248])
def test_valid_trait_names(name):
    assert placement_conf.validate_trait_name(name) == name


@pytest.mark.parametrize('name', [
    'IOSCHED_LSVM', 'custom_iosched_lsvm', 'CUSTOM_', 'CUSTOM_LSVM-1',
    'CUSTOM_LSVM ', 'HW_CPU_X86_AVX', '', 'CUSTOM_' + 'A' * 249, None])
def test_invalid_trait_names_say_what_is_accepted(name):
    with pytest.raises(ValueError) as e:
        placement_conf.validate_trait_name(name)
    assert repr(name) in str(e.value)
    assert 'CUSTOM_' in str(e.value) and 'A-Z' in str(e.value)


def test_bad_trait_name_in_the_config_file_is_refused(tmp_path):
    conf = cfg.ConfigOpts()
    placement_conf.register_opts(conf)
    path = tmp_path / 'agent.conf'
    path.write_text('[lsvm_trait]\ntrait_name = iosched-lsvm\n')
    conf([], default_config_files=[str(path)])
    with pytest.raises(cfg.ConfigFileValueError) as e:
        conf.lsvm_trait.trait_name
    assert 'accepted is a custom trait name' in str(e.value)


# -- one attempt (set_trait) ------------------------------------------------

def test_adds_the_trait_keeping_the_others_and_creates_it():
    fake = FakePlacement(traits={'COMPUTE_NET_VIF_MODEL_VIRTIO'})
    assert pt.set_trait(pt.PlacementTraits(fake), 'host1', TRAIT, True)
    assert fake.traits[RP] == {'COMPUTE_NET_VIF_MODEL_VIRTIO', TRAIT}
    assert TRAIT in fake.known
    assert fake.microversions == {'1.6'}
    assert fake.writes() == [
        ('put', '/traits/' + TRAIT),
        ('put', '/resource_providers/%s/traits' % RP)]


def test_removes_the_trait_keeping_the_others_without_creating_it():
    fake = FakePlacement(traits={'HW_CPU_X86_AVX'})
    fake.known.add(TRAIT)
    fake.traits[RP].add(TRAIT)
    assert pt.set_trait(pt.PlacementTraits(fake), 'host1', TRAIT, False)
    assert fake.traits[RP] == {'HW_CPU_X86_AVX'}
    assert fake.writes() == [('put', '/resource_providers/%s/traits' % RP)]


@pytest.mark.parametrize('present', [True, False])
def test_no_write_when_already_right(present):
    fake = FakePlacement(traits={TRAIT} if present else ())
    fake.known.add(TRAIT)
    assert not pt.set_trait(pt.PlacementTraits(fake), 'host1', TRAIT,
                            present)
    assert fake.writes() == []
    assert fake.generation[RP] == 1


def test_a_conflict_is_retried_with_the_new_generation():
    fake = FakePlacement(traits={'HW_CPU_X86_AVX'})
    fake.conflicts = 2
    assert pt.set_trait(pt.PlacementTraits(fake), 'host1', TRAIT, True)
    # the concurrent writer's trait is kept, ours added on the third PUT
    assert fake.traits[RP] == {'HW_CPU_X86_AVX', 'COMPUTE_STATUS_DISABLED',
                               TRAIT}
    reads = [c for c in fake.calls if c == ('get', '/resource_providers/%s/'
                                                   'traits' % RP)]
    assert len(reads) == 3
    assert fake.writes().count(('put', '/traits/' + TRAIT)) == 1


def test_endless_conflicts_give_up_after_max_conflicts():
    fake = FakePlacement()
    fake.conflicts = 100
    with pytest.raises(pt.GenerationConflict):
        pt.set_trait(pt.PlacementTraits(fake), 'host1', TRAIT, True,
                     max_conflicts=3)
    assert fake.conflicts == 97
    assert TRAIT not in fake.traits[RP]


@pytest.mark.parametrize('setup, error, text', [
    (lambda f: f.providers.clear(), pt.ProviderNotFound,
     "no resource provider named 'host1'"),
    (lambda f: setattr(f, 'fail', 503), pt.PlacementError, 'HTTP 503'),
    (lambda f: setattr(f, 'fail', 403), pt.PlacementError, 'HTTP 403'),
])
def test_errors_name_the_problem(setup, error, text):
    fake = FakePlacement()
    setup(fake)
    with pytest.raises(error) as e:
        pt.set_trait(pt.PlacementTraits(fake), 'host1', TRAIT, True)
    assert text in str(e.value)


# -- the publisher's state machine (sync in the test's thread) --------------

def test_sync_waits_for_the_provider_backs_off_then_sets_it(caplog):
    fake = FakePlacement(providers={})
    clock = Clock()
    pub = publisher(fake, clock=clock)
    pub.report_host_io(reports.report())       # lsvm.supported: False
    pub.want(True)
    with caplog.at_level(logging.INFO, logger=pt.__name__):
        assert pub.sync() is False
        assert pub.sync() is False
    assert pub.state.failures == 2
    assert 'ProviderNotFound' in pub.state.last_error
    warnings = [r.getMessage() for r in caplog.records
                if r.levelno == logging.WARNING]
    assert len(warnings) == 2 and 'has nova-compute started' in warnings[0]
    assert 'retrying in 2 s' in warnings[0]
    assert 'retrying in 4 s' in warnings[1]
    assert pub._delay() == 4.0
    clock.now += 4.0
    assert pub._delay() == 0.0
    fake.add_provider('host1', RP)              # nova-compute started
    caplog.clear()
    with caplog.at_level(logging.INFO, logger=pt.__name__):
        assert pub.sync() is True
    assert TRAIT in fake.traits[RP]
    assert pub.state.failures == 0 and pub.state.confirmed is True
    assert ['LSVM trait: added CUSTOM_IOSCHED_LSVM to resource provider '
            "'host1' (the agent reports this host supports LSVMs)"] == [
        r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert pub._delay() == 300.0                # settled: recheck later


@pytest.mark.parametrize('break_it', [
    lambda f: setattr(f, 'raise_exc', ks_exc.ConnectFailure('refused')),
    lambda f: setattr(f, 'raise_exc', ks_exc.Unauthorized('bad password')),
    lambda f: setattr(f, 'raise_exc', RuntimeError('anything')),
    lambda f: setattr(f, 'fail', 500),
])
def test_sync_never_raises(break_it):
    fake = FakePlacement()
    break_it(fake)
    pub = publisher(fake)
    pub.want(True)
    assert pub.sync() is False
    assert pub.state.failures == 1 and pub.state.confirmed is None


def test_a_broken_configuration_is_a_retried_failure_not_a_crash():
    calls = []

    def factory():
        calls.append(1)
        raise ValueError('[placement] auth_type is not set')

    pub = pt.TraitPublisher(factory, 'host1')
    pub.want(True)
    assert pub.sync() is False and pub.sync() is False
    assert len(calls) == 2 and 'auth_type' in pub.state.last_error


@pytest.mark.parametrize('report', [
    None, object(), types.SimpleNamespace(lsvm=None)])
def test_a_malformed_report_does_not_raise(report):
    pub = publisher(FakePlacement())
    pub.report_host_io(report)
    assert pub.state.wanted is None


def test_unsupported_removes_and_rechecks_are_read_only():
    fake = FakePlacement(traits={'HW_CPU_X86_AVX'})
    pub = publisher(fake)
    pub.want(True)
    assert pub.sync() and TRAIT in fake.traits[RP]
    n = len(fake.writes())
    assert pub.sync() and pub.sync()              # rechecks: no writes
    assert len(fake.writes()) == n
    pub.want(False)                               # vslicer switched off
    assert pub._delay() == 0.0
    assert pub.sync()
    assert fake.traits[RP] == {'HW_CPU_X86_AVX'}
    assert pub.state.changes == 2


def test_a_recheck_puts_back_a_trait_someone_removed():
    fake = FakePlacement()
    pub = publisher(fake)
    pub.want(True)
    assert pub.sync()
    fake.traits[RP].discard(TRAIT)               # removed by hand
    assert pub.sync() and TRAIT in fake.traits[RP]
    assert pub.state.changes == 2


def test_constructor_refuses_bad_input():
    with pytest.raises(ValueError, match='accepted is a custom trait name'):
        pt.TraitPublisher(lambda: None, 'host1', trait='LSVM')
    with pytest.raises(ValueError, match='provider_name is empty'):
        pt.TraitPublisher(lambda: None, '')


# -- the background thread -------------------------------------------------

def test_thread_follows_the_reports_and_stops():
    fake = FakePlacement(providers={})
    pub = publisher(fake, retry_initial=0.01, retry_max=0.02,
                    recheck_interval=3600).start()
    try:
        pub.report_host_io(types.SimpleNamespace(
            lsvm=types.SimpleNamespace(supported=True)))
        # no provider yet: the thread keeps retrying with backoff
        fake.add_provider('host1', RP)
        assert pub.wait_settled(30)
        assert TRAIT in fake.traits[RP]
        pub.want(False)
        assert pub.wait_settled(30)
        assert TRAIT not in fake.traits[RP]
    finally:
        pub.stop()
    assert not pub._thread.is_alive()
    assert TRAIT not in fake.traits[RP]


def test_stop_leaves_the_trait_and_works_before_any_report():
    fake = FakePlacement()
    idle = publisher(fake).start()
    idle.stop()
    assert not idle._thread.is_alive() and fake.calls == []
    pub = publisher(fake).start()
    pub.want(True)
    assert pub.wait_settled(30)
    pub.stop()
    assert not pub._thread.is_alive()
    assert TRAIT in fake.traits[RP]


# -- wiring -----------------------------------------------------------------

class Recorder:
    def __init__(self, fail=False):
        self.reports, self.fail = [], fail

    def report_host_io(self, report):
        self.reports.append(report)
        if self.fail:
            raise RuntimeError('bus down')


def test_fanout_gives_the_publisher_the_report_even_if_rpc_fails():
    pub = publisher(FakePlacement())
    rpc = Recorder(fail=True)
    fan = pt.with_publisher(rpc, pub)
    with pytest.raises(RuntimeError):       # the agent logs and retries
        fan.report_host_io(types.SimpleNamespace(
            lsvm=types.SimpleNamespace(supported=True)))
    assert pub.state.wanted is True and len(rpc.reports) == 1
    assert pt.with_publisher(rpc, None) is rpc
    assert pt.with_publisher(None, None) is None
    assert pt.with_publisher(None, pub).reporters == [pub]


def test_the_real_agent_on_a_simulated_host_wants_the_trait():
    sim, driver = fixtures.sim_host_with_vms()
    fake = FakePlacement(providers={'compute-1': RP})
    pub = pt.TraitPublisher(lambda: pt.PlacementTraits(fake), 'compute-1')
    agent = fixtures.make_agent(driver, reporter=pt.with_publisher(None, pub))
    fixtures.run_ticks(sim, agent, 2)
    assert agent.last_report.lsvm.supported
    assert pub.state.wanted is True and fake.calls == []   # no HTTP on tick
    assert pub.sync() and TRAIT in fake.traits[RP]


def _conf(tmp_path, **trait_opts):
    """A conf from a file (set_override would leak into later tests: the
    registered groups' copies share their options' state).
    """
    path = tmp_path / 'agent.conf'
    path.write_text('[lsvm_trait]\n' + ''.join(
        '%s = %s\n' % kv for kv in trait_opts.items()))
    conf = cfg.ConfigOpts()
    placement_conf.register_opts(conf)
    conf([], default_config_files=[str(path)])
    return conf


def test_start_from_conf_is_off_by_default(tmp_path):
    assert pt.start_from_conf(_conf(tmp_path), 'host1') is None


def test_start_from_conf_defaults_the_provider_to_the_host(tmp_path):
    conf = _conf(tmp_path, publish=True, recheck_interval=42.0)
    pub = pt.start_from_conf(conf, 'compute-7')
    try:
        assert pub.provider_name == 'compute-7' and pub.trait == TRAIT
        assert pub.recheck_interval == 42.0
    finally:
        pub.stop()
    conf = _conf(tmp_path, publish=True,
                 provider_name='compute-7.example.org')
    pub = pt.start_from_conf(conf, 'compute-7')
    pub.stop()
    assert pub.provider_name == 'compute-7.example.org'


def test_missing_auth_type_says_what_to_set(tmp_path):
    with pytest.raises(ValueError, match=r'\[placement\] auth_type is not '
                       'set: accepted are keystoneauth1 plugin names'):
        pt.placement_adapter(_conf(tmp_path))


# -- the real keystoneauth1 path, requests_mock answering --------------------

ENDPOINT = 'http://placement.example.org/placement'


def test_real_keystoneauth_adapter_from_conf(tmp_path):
    path = tmp_path / 'agent.conf'
    path.write_text('[lsvm_trait]\npublish = true\n'
                    '[placement]\nauth_type = admin_token\n'
                    'endpoint = %s\ntoken = secret-token\n' % ENDPOINT)
    conf = cfg.ConfigOpts()
    placement_conf.register_opts(conf)
    conf([], default_config_files=[str(path)])
    with requests_mock.Mocker() as m:
        m.get(ENDPOINT + '/resource_providers?name=host1',
              json={'resource_providers': [{'uuid': RP, 'name': 'host1'}]})
        m.get(ENDPOINT + '/resource_providers/%s/traits' % RP,
              json={'traits': ['HW_CPU_X86_AVX'],
                    'resource_provider_generation': 5})
        m.put(ENDPOINT + '/traits/' + TRAIT, status_code=201)
        m.put(ENDPOINT + '/resource_providers/%s/traits' % RP,
              json={'traits': ['HW_CPU_X86_AVX', TRAIT],
                    'resource_provider_generation': 6})
        pub = pt.TraitPublisher(
            lambda: pt.PlacementTraits(pt.placement_adapter(conf)), 'host1')
        pub.want(True)
        assert pub.sync(), pub.state.last_error
        history = m.request_history
    assert [(r.method, urllib.parse.urlparse(r.url).path)
            for r in history] == [
        ('GET', '/placement/resource_providers'),
        ('GET', '/placement/resource_providers/%s/traits' % RP),
        ('PUT', '/placement/traits/' + TRAIT),
        ('PUT', '/placement/resource_providers/%s/traits' % RP)]
    assert history[0].qs == {'name': ['host1']}
    for r in history:
        assert r.headers['OpenStack-API-Version'] == 'placement 1.6'
        assert r.headers['X-Auth-Token'] == 'secret-token'
    assert history[-1].json() == {
        'traits': [TRAIT, 'HW_CPU_X86_AVX'],        # sorted
        'resource_provider_generation': 5}


# -- io-host-agent's main() wiring, in a subprocess (it parses global CONF) --

MAIN_SCRIPT = '''
import json, sys
from iosched.host_agent import agent as agent_mod
from iosched.host_agent.cmd import agent as cmd
from iosched.host_agent import placement_trait as pt
from tests import fixtures
from tests.unit.host_agent.test_placement_trait import FakePlacement

sim, driver = fixtures.sim_host_with_vms()
fixtures.use_driver_in_main(driver)
fake = FakePlacement(providers={'compute-1': 'rp-1'})
pt.placement_adapter = lambda conf: fake
seen = {}

def run(agent):
    fixtures.run_ticks(sim, agent, 2)
    publisher = agent.reporter.reporters[0]
    seen['settled'] = publisher.wait_settled(60)
    seen['reporters'] = [type(r).__name__ for r in agent.reporter.reporters]
    seen['publisher'] = publisher

agent_mod.Agent.run = run
rc = cmd.main(['--config-file', sys.argv[1]])
print(json.dumps({'rc': rc, 'settled': seen['settled'],
                  'reporters': seen['reporters'],
                  'alive': seen['publisher']._thread.is_alive(),
                  'traits': sorted(fake.traits['rp-1'])}))
'''


@pytest.mark.parametrize('reporter_conf, reporters', [
    ('transport_url = fake:/', ['TraitPublisher', 'ReportAPI']),
    ('enabled = false', ['TraitPublisher']),      # a trait, no RPC reports
])
def test_io_host_agent_main_publishes_and_stops_the_publisher(
        tmp_path, reporter_conf, reporters):
    path = tmp_path / 'host-agent.conf'
    path.write_text(
        '[host_agent]\njournal_path = %s\n[reporter]\n%s\n'
        '[lsvm_trait]\npublish = true\n'
        % (tmp_path / 'journal.jsonl', reporter_conf))
    root = os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.dirname(os.path.abspath(__file__)))))
    out = subprocess.run(
        [sys.executable, '-c', MAIN_SCRIPT, str(path)], cwd=root,
        capture_output=True, text=True, timeout=300,
        env=dict(os.environ, PYTHONPATH=root))
    assert out.returncode == 0, (out.stdout + out.stderr)[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result == {'rc': 0, 'settled': True,
                      'reporters': reporters,
                      'alive': False,
                      'traits': [TRAIT]}
