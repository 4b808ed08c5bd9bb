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
"""HostReport 1.1: the decisions list, its validation, 1.0 still accepted,
and the cap the agent applies when building a report.
"""

import json
import types

import pytest

from iosched.contract import payload
from iosched.contract import payload_check
from iosched.contract import payload_sections
from iosched.host_agent import model
from iosched.host_agent.reporter import build
from tests import fixtures


def _entry(**kw):
    fields = dict(kind='vcpu_slice', instance_uuid='u1', target='0',
                  before=3000, after=1000, rule='vslicer.lsvm_microslice',
                  reason='L=2ms, k=1', ts=12.0)
    fields.update(kw)
    return payload_sections.DecisionEntry(**fields)


def _report(decisions=None):
    return payload.HostReport(
        host='compute-1', ts=100.5, seq=7, report_interval=1.0, pcpus=4,
        decisions=(_entry(), _entry(kind='vcpu_pin', before=None, after=(1,),
                                    rule='isacs.io_balance', reason='gap'),
                   _entry(kind='disk_iotune', target='vda', before={},
                          after={'total_iops_sec': 500.0},
                          applied=False, error='no such disk'))
        if decisions is None else decisions)


def test_version_is_1_2_and_decisions_round_trip_through_json():
    r = _report()
    d = json.loads(json.dumps(r.to_dict()))
    assert d['version'] == payload.VERSION == '1.5'
    assert d['decisions'][1]['after'] == [1]
    assert payload.HostReport.from_dict(d) == r


def test_1_0_report_without_decisions_is_accepted():
    d = _report(decisions=()).to_dict()
    del d['decisions']
    d['version'] = '1.0'
    r = payload.HostReport.from_dict(d)
    assert (r.version, r.decisions) == ('1.0', ())


def test_optional_decision_fields_default():
    d = _report().to_dict()
    for name in ('applied', 'error'):
        del d['decisions'][0][name]
    got = payload.HostReport.from_dict(d).decisions[0]
    assert (got.applied, got.error) == (True, '')


def _mutate(path, value):
    return fixtures.mutated(_report().to_dict(), path, value)


@pytest.mark.parametrize('path,value,field,says', [
    (('decisions',), {}, 'decisions', 'a list'),
    (('decisions',), None, 'decisions', 'a list'),
    (('decisions', 0), 'x', 'decisions[0]', 'an object'),
    (('decisions', 0, 'kind'), KeyError, 'decisions[0].kind', 'missing'),
    (('decisions', 0, 'kind'), '', 'decisions[0].kind', 'non-empty'),
    (('decisions', 1, 'instance_uuid'), 7, 'decisions[1].instance_uuid',
     'a string'),
    (('decisions', 0, 'target'), None, 'decisions[0].target', 'a string'),
    (('decisions', 0, 'before'), KeyError, 'decisions[0].before',
     'missing'),
    (('decisions', 0, 'after'), float('inf'), 'decisions[0].after',
     'a finite number'),
    (('decisions', 0, 'after'), [1, float('nan')], 'decisions[0].after',
     'a list or an object'),
    (('decisions', 2, 'rule'), '', 'decisions[2].rule', 'non-empty'),
    (('decisions', 0, 'reason'), ['x'], 'decisions[0].reason', 'a string'),
    (('decisions', 0, 'ts'), -1, 'decisions[0].ts', '>= 0'),
    (('decisions', 0, 'applied'), 'yes', 'decisions[0].applied',
     'true or false'),
    (('decisions', 2, 'error'), 3, 'decisions[2].error', 'a string'),
    (('decisions',), [{}] * (payload.MAX_DECISIONS + 1), 'decisions',
     'at most 1000'),
])
def test_bad_decision_is_rejected_naming_the_field(path, value, field, says):
    with pytest.raises(payload_check.PayloadError) as exc:
        payload.HostReport.from_dict(_mutate(path, value))
    assert exc.value.field == field
    assert says in str(exc.value)


def _decision(i, ts, reason='why'):
    return model.Decision(kind='vcpu_slice', instance_uuid='u%d' % i,
                          target='0', before=3000, after=1000, rule='r.x',
                          reason=reason, ts=ts)


def _snapshot():
    return model.HostSnapshot(host='h', ts=1.0, window_s=1.0, pcpus=(0,),
                              instances={}, vcpus=())


def test_report_carries_the_newest_decisions_up_to_the_cap():
    ds = [_decision(i, ts=float(i % 4)) for i in range(10)]
    conf = types.SimpleNamespace(
        reporter=types.SimpleNamespace(max_decisions=3))
    actuator = types.SimpleNamespace(
        decisions=lambda: {d.key: d for d in ds})
    picked = build.report_decisions(conf, actuator)
    assert [(d.ts, d.instance_uuid) for d in picked] == [
        (3.0, 'u3'), (3.0, 'u7'), (2.0, 'u2')]
    conf.reporter.max_decisions = 0
    assert build.report_decisions(conf, actuator) == []
    report = build.build_report(_snapshot(), 0, 1.0, decisions=ds)
    assert len(report.decisions) == 10
    payload.HostReport.from_dict(json.loads(json.dumps(report.to_dict())))


def test_report_entries_are_bounded_and_valid():
    long = _decision(0, 1.0, reason='x' * 5000)
    odd = model.Decision(kind='k', instance_uuid='u', target='', before=b'1',
                         after={1, 2}, rule='', reason='', ts=1.0,
                         applied=False, error='e' * 999)
    report = build.build_report(_snapshot(), 0, 1.0, decisions=[long, odd])
    a, b = report.decisions
    assert len(a.reason) == build.MAX_REASON_CHARS and a.reason[-3:] == '...'
    assert (b.before, b.rule, len(b.error)) == ("b'1'", 'unnamed', 200)
    back = payload.HostReport.from_dict(json.loads(json.dumps(
        report.to_dict())))
    assert back.decisions == report.decisions


def test_max_decisions_option_default():
    assert fixtures.CONF.reporter.max_decisions == 50
