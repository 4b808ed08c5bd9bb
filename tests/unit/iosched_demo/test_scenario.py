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
"""Scenario files: the embedded default loads; bad input is refused with
the path of the field, what it got and what is accepted.
"""

import copy

import pytest

from iosched.demo import scenario
from tests import fixtures

GOOD = {
    'hosts': [{'name': 'h1', 'pcpus': 2, 'ram_mb': 4096}],
    'flavors': {'f': {'vcpus': 1, 'ram_mb': 512,
                      'extra_specs': {'iosched:latency_sensitive': True}}},
    'volume_types': {'gold': {'slo': '100iops,10ms'}},
    'servers': [{'name': 'web', 'count': 2, 'flavor': 'f',
                 'workload': {'type': 'request_response',
                              'rate_per_s': 100, 'burst_us': 100}},
                {'name': 'db', 'flavor': 'f', 'volume_type': 'gold',
                 'workload': {'type': 'disk_closed_loop', 'outstanding': 2}}],
}


def test_embedded_default_loads():
    sc = scenario.load()
    assert sc.name == 'embedded-default'
    assert len(sc.hosts) == 3 and len(sc.servers) == 14
    assert sc.volume_types == {'slo-gold': '500iops,20ms,p99,qd=4'}
    assert sc.policies == ('vslicer', 'isacs', 'slo')


def test_good_expands_counts_and_normalises_specs():
    sc = scenario.parse(copy.deepcopy(GOOD))
    assert [s.name for s in sc.servers] == ['web-1', 'web-2', 'db']
    assert sc.flavors['f'].extra_specs == {
        'iosched:latency_sensitive': 'true'}
    # no default_slice_ms: the kernel's base slice for 2 CPUs (1.4 ms)
    assert sc.hosts[0].default_slice_us == 1400
    assert sc.hosts[0].kernel == scenario.DEFAULT_KERNEL


def _set(path, value):
    return fixtures.mutated(GOOD, path, value)


@pytest.mark.parametrize('path,value,field,says', [
    (('hosts',), [], 'hosts', 'at least one host'),
    (('hosts', 0, 'pcpus'), 0, 'hosts[0].pcpus', '>= 1'),
    (('hosts', 0, 'pcpus'), 'two', 'hosts[0].pcpus', 'expected int'),
    (('hosts', 0, 'kernel'), 'linux-2.4', 'hosts[0].kernel',
     'linux-6.18-hz250'),
    (('hosts', 0, 'name'), KeyError, 'hosts[0].name', 'missing'),
    (('hosts', 0, 'default_slice_ms'), 0.01, 'hosts[0].default_slice_ms',
     '>= 0.1'),
    (('flavors', 'f', 'vcpus'), True, 'flavors.f.vcpus', 'expected int'),
    (('servers', 0, 'flavor'), 'nope', 'servers[0].flavor', 'accepted: f'),
    (('servers', 1, 'volume_type'), 'silver', 'servers[1].volume_type',
     'accepted: gold'),
    (('servers', 0, 'workload', 'type'), 'ping', 'servers[0].workload.type',
     'accepted: cpu, disk_closed_loop'),
    (('servers', 0, 'workload', 'rate'), 5, 'servers[0].workload.rate',
     'accepted: rate_per_s'),
    (('servers', 0, 'workload', 'rate_per_s'), -1,
     'servers[0].workload.rate_per_s', '>= 0'),
    (('servers', 0, 'count'), 0, 'servers[0].count', '>= 1'),
    (('servers', 1, 'name'), 'web-1', 'servers', 'unique'),
    (('measure_s',), 0, 'measure_s', '>= 0.1'),
])
def test_bad_field_is_named(path, value, field, says):
    with pytest.raises(scenario.ScenarioError) as exc:
        scenario.parse(_set(path, value))
    msg = str(exc.value)
    assert 'scenario field %s:' % field in msg
    assert says in msg


def test_unreadable_and_invalid_yaml(tmp_path):
    with pytest.raises(scenario.ScenarioError, match='cannot read'):
        scenario.load(str(tmp_path / 'missing.yaml'))
    bad = tmp_path / 'bad.yaml'
    bad.write_text('hosts: [\n')
    with pytest.raises(scenario.ScenarioError, match='not valid YAML'):
        scenario.load(str(bad))
