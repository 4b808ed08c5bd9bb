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
"""HostReport round trip and rejection of malformed payloads."""

import ast
import copy
import json
import os

import pytest

from iosched.contract import payload
from iosched.contract import payload_check
from iosched.contract import payload_sections
from tests import fixtures


def _report():
    return payload.HostReport(
        host='compute-1', ts=100.5, seq=7, report_interval=1.0, pcpus=4,
        vcpus=(payload_sections.VcpuEntry('u1', 0, 2, 0.8, 'io', 0.05),
               payload_sections.VcpuEntry('u2', 1, None, 0.0, 'cpu', 0.97)),
        io_vcpus=1, io_strength_total=0.8, io_strength_per_pcpu=0.2,
        io_strength_max_pcpu=0.8,
        lsvm=payload_sections.LsvmState(
            True, 1, 0.25, 11, 1.0, nlsvm_slice_ms=3.0, min_slice_ms=0.1,
            max_slice_ms=1.0, max_per_pcpu=3, default_latency_ms=2.0,
            min_latency_ms=1.0, wakeup_preemption=False, nlsvm_vcpus=1),
        disk=payload_sections.DiskState(0.0, 500.0, 1.2, 4.5),
        health=payload_sections.Health('degraded', ('disk: vda: gone',)))


def test_round_trip_through_json():
    r = _report()
    assert payload.HostReport.from_dict(json.loads(json.dumps(
        r.to_dict()))) == r


def test_newer_minor_fields_are_ignored():
    d = _report().to_dict()
    d['version'] = '1.7'
    d['some_future_field'] = {'x': 1}
    assert payload.HostReport.from_dict(d).host == 'compute-1'


def _mutate(path, value):
    return fixtures.mutated(_report().to_dict(), path, value)


@pytest.mark.parametrize('path,value,field,says', [
    (('host',), KeyError, 'host', 'missing'),
    (('host',), '', 'host', 'non-empty'),
    (('version',), '2.0', 'version', '1.x'),
    (('seq',), -1, 'seq', '>= 0'),
    (('seq',), 1.5, 'seq', 'integer'),
    (('seq',), True, 'seq', 'integer'),
    (('pcpus',), 0, 'pcpus', '> 0'),
    (('ts',), float('nan'), 'ts', 'finite'),
    (('report_interval',), 0, 'report_interval', '> 0'),
    (('vcpus',), {}, 'vcpus', 'a list'),
    (('vcpus', 1, 'klass'), 'heavy', 'vcpus[1].klass',
     'io | cpu | mixed | idle'),
    (('vcpus', 0, 'run_share'), 1.5, 'vcpus[0].run_share', '[0, 1]'),
    (('vcpus', 0, 'instance_uuid'), KeyError, 'vcpus[0].instance_uuid',
     'missing'),
    (('vcpus', 0), 'x', 'vcpus[0]', 'object'),
    (('lsvm', 'supported'), 'yes', 'lsvm.supported', 'true or false'),
    (('disk', 'reserved_iops'), -3, 'disk.reserved_iops', '>= 0'),
    (('health', 'status'), 'fine', 'health.status', 'ok | degraded'),
    (('health', 'errors', 0), 3, 'health.errors[0]', 'string'),
    (('lsvm',), KeyError, 'lsvm', 'missing'),
    (('lsvm', 'nlsvm_slice_ms'), 0, 'lsvm.nlsvm_slice_ms', '> 0'),
    (('lsvm', 'max_per_pcpu'), 2.5, 'lsvm.max_per_pcpu', 'integer'),
    (('lsvm', 'max_per_pcpu'), 0, 'lsvm.max_per_pcpu', '> 0'),
    (('lsvm', 'min_latency_ms'), -1, 'lsvm.min_latency_ms', '>= 0'),
    (('lsvm', 'wakeup_preemption'), 1, 'lsvm.wakeup_preemption',
     'true or false'),
    (('lsvm', 'nlsvm_vcpus'), -2, 'lsvm.nlsvm_vcpus', '>= 0'),
])
def test_malformed_is_rejected_naming_the_field(path, value, field, says):
    with pytest.raises(payload_check.PayloadError) as exc:
        payload.HostReport.from_dict(_mutate(path, value))
    assert exc.value.field == field
    assert says in str(exc.value)


def test_not_a_dict():
    with pytest.raises(payload_check.PayloadError, match='expected an object'):
        payload.HostReport.from_dict([1, 2])


@pytest.mark.parametrize('module', [payload, payload_check,
                                    payload_sections])
def test_payload_modules_are_standard_library_only(module):
    """The payload's modules import the standard library and the
    contract only: nova-scheduler imports them without the agent.
    """
    tree = ast.parse(open(module.__file__).read())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(a.name.split('.')[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            # the contract's own modules (stdlib only themselves)
            if not (node.module or '').startswith('iosched.contract'):
                imported.add((node.module or '').split('.')[0])
    import sys
    assert imported <= set(sys.stdlib_module_names), imported
    assert os.path.basename(module.__file__).startswith('payload')


def test_to_dict_does_not_alias():
    r = _report()
    d = r.to_dict()
    d2 = copy.deepcopy(d)
    d['vcpus'][0]['klass'] = 'cpu'
    assert r.to_dict() == d2


def test_a_1_1_lsvm_object_reads_with_the_agent_defaults():
    d = _report().to_dict()
    d['version'] = '1.1'
    d['lsvm'] = {'supported': True, 'count': 2, 'per_pcpu': 0.5,
                 'capacity': 10, 'latency_bound_ms': 2.0}
    got = payload.HostReport.from_dict(d).lsvm
    assert got == payload_sections.LsvmState(True, 2, 0.5, 10, 2.0)
    assert (got.nlsvm_slice_ms, got.min_slice_ms, got.max_slice_ms,
            got.max_per_pcpu, got.default_latency_ms, got.min_latency_ms,
            got.wakeup_preemption, got.nlsvm_vcpus) == (
        3.0, 0.1, 1.0, 3, 2.0, 0.0, True, None)


def test_null_nlsvm_vcpus_means_unknown():
    d = _mutate(('lsvm', 'nlsvm_vcpus'), None)
    assert payload.HostReport.from_dict(d).lsvm.nlsvm_vcpus is None


def test_build_fills_the_1_2_lsvm_fields_from_vslicer_facts():
    from iosched.host_agent import model
    from iosched.host_agent.policies import vslicer
    from iosched.host_agent import policy_params
    from iosched.host_agent.reporter import build

    def inst(uuid, vcpus, specs):
        return model.InstanceInfo(uuid=uuid, name=uuid, vcpus=vcpus,
                                  extra_specs=specs)
    params = policy_params.params_for(
        'vslicer', nlsvm_slice_us=4000, lsvm_max_slice_us=800,
        min_slice_us=200, default_latency_ms=3.0, max_lsvm_per_pcpu=2,
        wakeup_preemption=False)
    lsvm = {'iosched:latency_sensitive': 'true'}
    _, _, facts = vslicer.plan_slices(
        [inst('l', 1, dict(lsvm, **{'iosched:latency_ms': '9'})),
         inst('c', 2, {})], (0, 1), params)
    got = build.lsvm_payload(facts)
    assert (got.supported, got.count, got.nlsvm_slice_ms, got.min_slice_ms,
            got.max_slice_ms, got.max_per_pcpu, got.default_latency_ms,
            got.min_latency_ms, got.wakeup_preemption, got.nlsvm_vcpus) == (
        True, 1, 4.0, 0.2, 0.8, 2, 3.0, 9.0, False, 2)
    # round robin, k = 1: the bound is T_NLSVM
    assert got.latency_bound_ms == 4.0
