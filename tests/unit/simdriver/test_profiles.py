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
"""``[host_agent] simulated_profile``: each profile's simulated host (the
pure mapping), the daemon's host under it, and what an agent on it
reports to the Nova plugin's rules (what the mixed cloud relies on).
"""

import types

import pytest

from iosched.host_agent import conf as agent_conf
from iosched.host_agent.policies import slo
from iosched.host_agent.policies import vslicer
from iosched.nova_plugin.cmd import placement_rules as rules_mod
from iosched.nova_plugin import scoring
from iosched.simdriver import daemon as sim_daemon
from iosched.simdriver import profiles
from tests import fixtures


def _conf(profile, host='h'):
    return types.SimpleNamespace(host_agent=types.SimpleNamespace(
        host=host, simulated_state_file='', simulated_profile=profile))


# (profile, pCPUs, {VM: (vCPUs, extra specs)})
SHAPES = [
    ('light', 4, {'cpu-1': (2, {'iosched:io_profile': 'cpu'})}),
    ('busy', 4, {'io-1': (2, {'iosched:io_profile': 'io'}),
                 'cpu-1': (2, {'iosched:io_profile': 'cpu'})}),
    ('loaded', 2, {'lsvm-1': (6, {'iosched:latency_sensitive': 'true',
                                  'iosched:latency_ms': '2'}),
                   'io-1': (2, {'iosched:io_profile': 'io'})}),
    ('example', 2, {'lsvm-1': (1, profiles.EXAMPLE_LSVM_SPECS),
                    'cpu-1': (3, {'iosched:io_profile': 'cpu'}),
                    'db-1': (1, {'iosched:io_profile': 'io'})}),
    ('', 2, {'lsvm-1': (1, profiles.EXAMPLE_LSVM_SPECS),
             'cpu-1': (3, {'iosched:io_profile': 'cpu'}),
             'db-1': (1, {'iosched:io_profile': 'io'})}),
]


@pytest.mark.parametrize('name,pcpus,shape', SHAPES,
                         ids=[s[0] or 'default' for s in SHAPES])
def test_profile_maps_to_the_simulators_host(name, pcpus, shape):
    profile = profiles.get(name)
    assert profiles.host_spec('h', profile).pcpus == pcpus
    got = {vm.info.uuid: (vm.info.vcpus, dict(vm.info.extra_specs))
           for vm in profiles.vms(profile)}
    assert got == shape
    for vm in profiles.vms(profile):
        assert len(vm.spec.vcpus) == vm.info.vcpus


@pytest.mark.parametrize('name,pcpus,shape', SHAPES,
                         ids=[s[0] or 'default' for s in SHAPES])
def test_the_daemon_boots_the_profile(name, pcpus, shape):
    driver = sim_daemon.build(_conf(name, host='fake-1'), clock=lambda: 0.0)
    assert driver.host_name() == 'fake-1'
    assert len(driver.pcpus()) == pcpus
    assert {i.uuid: i.vcpus for i in driver.list_instances()} == {
        uuid: vcpus for uuid, (vcpus, _) in shape.items()}


def test_the_default_is_the_example_set_of_the_tests():
    _, driver = fixtures.sim_host_with_vms()
    assert ({i.uuid for i in driver.list_instances()}
            == {vm.info.uuid for vm in profiles.vms(profiles.get(''))})


@pytest.mark.parametrize('name', ['heavy', 'Light', ' light'])
def test_unknown_profile_names_the_accepted_ones(name):
    with pytest.raises(ValueError) as err:
        sim_daemon.build(_conf(name))
    assert repr(name) in str(err.value)
    assert 'accepted: busy, example, light, loaded' in str(err.value)


def test_the_option_help_lists_every_profile():
    opt = next(o for o in agent_conf.agent.OPTS
               if o.name == 'simulated_profile')
    for name in profiles.PROFILES:
        assert '``%s``' % name in opt.help, name


def _report(name, ticks=30):
    """An agent (vSlicer and SLO, as the cloud's) on the wall-clock host
    of ``name``, after ``ticks`` one-second ticks: its last report.
    """
    now = [1000.0]
    driver = sim_daemon.build(_conf(name, host=name), clock=lambda: now[0])
    conf = fixtures.CONF
    agent = fixtures.make_agent(driver, policies=[
        vslicer.VSlicerPolicy(conf), slo.SloPolicy(conf)])
    agent.start()
    for _ in range(ticks):
        now[0] += 1.0
        agent.tick()
    return agent.last_report


IO_FLAVOR = scoring.Request.from_extra_specs(2, {'iosched:io_profile': 'io'})
LSVM_FLAVOR = scoring.Request.from_extra_specs(1, {
    'iosched:latency_sensitive': 'true', 'iosched:latency_ms': '5'})
PLAIN_FLAVOR = scoring.Request.from_extra_specs(1, {})


@pytest.fixture(scope='module')
def reports():
    return {name: _report(name) for name in ('light', 'busy', 'loaded')}


def _verdicts(reports, request):
    results = rules_mod.evaluate(reports, rules_mod.Query(request),
                                 rules_mod.Thresholds())
    return {r.host: (r.rank, r.failed) for r in results}


def test_the_reports_differ_as_the_profiles_say(reports):
    light, busy, loaded = reports['light'], reports['busy'], reports['loaded']
    assert (light.pcpus, light.io_vcpus, light.lsvm.count) == (4, 0, 0)
    assert (busy.pcpus, busy.lsvm.count) == (4, 0)
    assert 1 <= busy.io_vcpus <= 2
    assert (loaded.pcpus, loaded.lsvm.count) == (2, 6)
    assert loaded.io_vcpus >= 2
    assert light.io_strength_total < busy.io_strength_total
    assert all(r.lsvm.supported for r in reports.values())


# (request, {host: (rank, failed filters)}) with the Nova plugin's
# defaults (max_io_vcpus_per_pcpu 1, vSlicer's max_per_pcpu 3)
PLACEMENTS = [
    ('io', IO_FLAVOR, {'light': (1, []), 'busy': (2, []),
                       'loaded': (None, ['io_density'])}),
    ('lsvm', LSVM_FLAVOR, {'light': (1, []), 'busy': (2, []),
                           'loaded': (None, ['lsvm'])}),
]


@pytest.mark.parametrize('what,request_,expected', PLACEMENTS,
                         ids=[p[0] for p in PLACEMENTS])
def test_the_nova_plugin_refuses_the_loaded_host(reports, what, request_,
                                                 expected):
    got = _verdicts(reports, request_)
    if what == 'lsvm':      # the weigher is indifferent: ranks are a tie
        got = {h: (None if r is None else 1, f) for h, (r, f) in got.items()}
        expected = {h: (None if r is None else 1, f)
                    for h, (r, f) in expected.items()}
    assert got == expected


def test_a_plain_flavor_may_go_anywhere(reports):
    results = rules_mod.evaluate(reports, rules_mod.Query(PLAIN_FLAVOR),
                                 rules_mod.Thresholds())
    assert all(r.candidate and r.weighted == 0.0 for r in results)
