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
"""``HostReport.head_from_dict``, the scheduler's parser: the same checks
and messages as ``from_dict`` for every field a scheduler keeps, the
per-vCPU records counted but not parsed, the decisions not parsed.
"""

import json

import pytest

from bench.nova_scale import reports as fake_reports
from iosched.contract import payload
from iosched.contract import payload_check
from iosched.contract import payload_sections
from tests import fixtures


def _wire(**lsvm):
    data = json.loads(json.dumps(fake_reports.report_dict(
        5, vcpus=12, decisions=4)))
    data['lsvm'].update(lsvm)
    return data


def _error(parse, data):
    with pytest.raises(payload_check.PayloadError) as exc:
        parse(data)
    return exc.value.field, str(exc.value)


# Faults in what a scheduler keeps: both parsers refuse, same message.
@pytest.mark.parametrize('path,value', [
    (('host',), KeyError), (('host',), ''), (('host',), 7),
    (('version',), '2.0'), (('version',), KeyError), (('version',), 1.4),
    (('ts',), float('nan')), (('ts',), -1), (('ts',), '1e12'),
    (('seq',), -1), (('seq',), 1.5), (('seq',), True),
    (('report_interval',), 0), (('report_interval',), float('inf')),
    (('pcpus',), 0), (('pcpus',), None),
    (('io_vcpus',), -1), (('io_vcpus',), KeyError),
    (('io_strength_total',), -0.5), (('io_strength_per_pcpu',), 'x'),
    (('io_strength_max_pcpu',), float('-inf')),
    (('vcpus',), {}), (('vcpus',), None), (('vcpus',), KeyError),
    (('decisions',), 'many'), (('decisions',), None),
    (('decisions',), [{}] * (payload.MAX_DECISIONS + 1)),
    (('lsvm',), KeyError), (('lsvm',), []),
    (('lsvm', 'supported'), 'yes'), (('lsvm', 'count'), -1),
    (('lsvm', 'nlsvm_vcpus'), -2), (('lsvm', 'mechanism'), 'fifo'),
    (('lsvm', 'probes'), [{'mechanism': 'stock'}]),
    (('lsvm', 'probes'), [{}] * 17),
    (('disk',), KeyError), (('disk', 'capacity_iops'), float('nan')),
    (('disk', 'slo_met'), -1),
    (('health', 'status'), 'fine'), (('health', 'errors'), [3]),
])
def test_a_bad_kept_field_is_refused_with_from_dict_s_message(path, value):
    data = fixtures.mutated(_wire(), path, value)
    assert _error(payload.HostReport.head_from_dict, data) == \
        _error(payload.HostReport.from_dict, data)


# Faults inside the records a scheduler does not keep: from_dict refuses,
# head_from_dict takes the report (and counts the vCPU records).
@pytest.mark.parametrize('path,value', [
    (('vcpus', 0, 'klass'), 'heavy'),
    (('vcpus', 3), 'x'),
    (('vcpus', 1, 'run_share'), float('nan')),
    (('decisions', 0, 'rule'), ''),
    (('decisions', 2), None),
    (('decisions', 1, 'after'), float('inf')),
])
def test_records_are_not_parsed(path, value):
    data = fixtures.mutated(_wire(), path, value)
    with pytest.raises(payload_check.PayloadError):
        payload.HostReport.from_dict(data)
    head = payload.HostReport.head_from_dict(data)
    assert head.vcpus == () and head.decisions == ()
    assert head.lsvm.nlsvm_vcpus == 12 - head.lsvm.count


def test_head_is_the_whole_report_without_its_records():
    data = _wire(nlsvm_vcpus=None)
    whole = payload.HostReport.from_dict(data)
    head = payload.HostReport.head_from_dict(data)
    assert len(whole.vcpus) == 12 and len(whole.decisions) == 4
    assert head.lsvm.nlsvm_vcpus == len(whole.vcpus) - whole.lsvm.count
    assert head == payload.HostReport(**dict(
        vars(whole), vcpus=(), decisions=(),
        lsvm=payload_sections.LsvmState(**dict(
            vars(whole.lsvm), nlsvm_vcpus=head.lsvm.nlsvm_vcpus))))


@pytest.mark.parametrize('sent, vcpus, count, kept', [
    (None, 12, None, 12),     # an agent before 1.2: derived
    (None, 0, None, None),    # no records: the rule derives 0 from ()
    (7, 12, None, 7),         # the agent's own count wins
    (0, 12, None, 0),
    (None, 1, 3, 0),          # more LSVM vCPUs than records: not negative
])
def test_nlsvm_vcpus_kept(sent, vcpus, count, kept):
    data = _wire(nlsvm_vcpus=sent)
    data['vcpus'] = data['vcpus'][:vcpus]
    if count is not None:
        data['lsvm']['count'] = count
    assert payload.HostReport.head_from_dict(data).lsvm.nlsvm_vcpus == kept


def test_a_report_without_decisions_and_a_1_0_report():
    data = _wire()
    del data['decisions']
    data['version'] = '1.0'
    assert payload.HostReport.head_from_dict(data).decisions == ()


def test_not_a_dict():
    assert _error(payload.HostReport.head_from_dict, [1]) == \
        _error(payload.HostReport.from_dict, [1])
