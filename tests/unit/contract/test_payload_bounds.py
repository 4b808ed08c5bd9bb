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
"""The bounds on what a HostReport may claim (``payload_bounds``), checked
by the parsers and, before the signature, by the scheduler's endpoint;
table-driven. Every refused case was parsed and stored before issue 27.
"""

import pytest

from iosched.contract import payload
from iosched.contract import payload_bounds as bounds
from iosched.contract import payload_check
from iosched.contract import signature
from iosched.nova_plugin import endpoint
from iosched.nova_plugin import metrics
from iosched.nova_plugin import state
from tests import fault_tally
from tests.unit.nova_plugin import captured

T0 = 1.8e9
PCPUS = 8


def _vcpus(n):
    return [dict(instance_uuid='u%d' % (i // 2), vcpu=i % 2, pcpu=0,
                 io_strength=0.0, klass='idle', run_share=0.0)
            for i in range(n)]


def _extra(n):
    def change(d):
        d.update(('x%d' % i, i) for i in range(n))
    return change


# (case, change to a valid report dict, the field the error names or None
# when accepted)
CASES = [
    ('interval that never goes stale',
     lambda d: d.update(report_interval=1e300), 'report_interval'),
    ('interval beyond the agent options',
     lambda d: d.update(report_interval=bounds.REPORT_INTERVAL_MAX * 1.01),
     'report_interval'),
    ('interval below a tick',
     lambda d: d.update(report_interval=bounds.REPORT_INTERVAL_MIN / 2),
     'report_interval'),
    ('longest agent interval',
     lambda d: d.update(report_interval=bounds.REPORT_INTERVAL_MAX), None),
    ('shortest agent interval',
     lambda d: d.update(report_interval=bounds.REPORT_INTERVAL_MIN), None),
    ('70,000 vCPU records on 8 pCPUs',
     lambda d: d.update(vcpus=_vcpus(70000)), 'vcpus'),
    ('one vCPU record too many',
     lambda d: d.update(vcpus=_vcpus(bounds.MAX_VCPUS_PER_PCPU * PCPUS + 1)),
     'vcpus'),
    ('as many vCPU records as accepted',
     lambda d: d.update(vcpus=_vcpus(bounds.MAX_VCPUS_PER_PCPU * PCPUS)),
     None),
    ('io_vcpus beyond the pCPUs',
     lambda d: d.update(io_vcpus=bounds.MAX_VCPUS_PER_PCPU * PCPUS + 1),
     'io_vcpus'),
    ('pCPUs beyond any kernel',
     lambda d: d.update(pcpus=bounds.MAX_PCPUS + 1), 'pcpus'),
    ('host name of 256 characters',
     lambda d: d.update(host='h' * (bounds.MAX_HOST_CHARS + 1)), 'host'),
    ('host name of 255 characters',
     lambda d: d.update(host='h' * bounds.MAX_HOST_CHARS), None),
    ('thousands of unknown fields', _extra(5000), '<root>'),
]
REFUSED = [c for c in CASES if c[2] is not None]


def _wire(host='c1'):
    sent = captured.capture(host, ts=T0, seq=1, pcpus=PCPUS,
                            whole=True)
    return sent['report']


@pytest.mark.parametrize('change, field', [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
@pytest.mark.parametrize('parse', [payload.HostReport.from_dict,
                                   payload.HostReport.head_from_dict],
                         ids=['from_dict', 'head_from_dict'])
def test_parsers_apply_the_bounds(parse, change, field):
    data = _wire()
    change(data)
    if field is None:
        parse(data)
        return
    with pytest.raises(payload_check.Implausible) as caught:
        parse(data)
    assert caught.value.field == field
    assert 'accepted' in str(caught.value)


def test_bounds_leave_wrong_types_to_the_parser():
    for change in (lambda d: d.update(pcpus='8'),
                   lambda d: d.update(report_interval=None),
                   lambda d: d.update(vcpus={}), lambda d: d.update(host=7)):
        data = _wire()
        change(data)
        bounds.check(data)          # no error here: the parser names it
        with pytest.raises(payload_check.PayloadError) as caught:
            payload.HostReport.from_dict(data)
        assert not isinstance(caught.value, payload_check.Implausible)


def test_the_agent_options_are_declared_with_the_bounds():
    from iosched.host_agent.conf import agent as agent_conf
    opts = {o.name: o for o in agent_conf.OPTS}
    tick = opts['tick_interval'].type
    every = opts['report_every_ticks'].type
    assert tick.min * every.min == bounds.REPORT_INTERVAL_MIN
    assert tick.max * every.max == bounds.REPORT_INTERVAL_MAX


@pytest.mark.parametrize('change, field', [c[1:] for c in REFUSED],
                         ids=[c[0] for c in REFUSED])
def test_signed_implausible_report_is_refused_by_the_endpoint(change, field,
                                                               caplog):
    # signed by the host's own key after the change: a leaked key or a
    # buggy agent
    host = 'c1'
    sent = captured.capture(host, ts=T0, seq=1, pcpus=PCPUS,
                            whole=True)
    data = sent['report']
    change(data)
    worker = state.SchedulerState(clock=lambda: T0)
    ep = endpoint.ReportEndpoint(worker.store, auth='hmac',
                                 master_key=captured.MASTER,
                                 metrics=worker.metrics)
    key = signature.derive_host_key(captured.MASTER, data['host'])
    ep.report_host_io({}, data, signature.sign(
        data, key, scheme=signature.SCHEME_V2))
    stored = len(worker.store.hosts())
    assert stored == 0
    assert worker.metrics.registry.get_sample_value(
        metrics.PREFIX + 'reports_dropped_total',
        {'reason': metrics.DROP_IMPLAUSIBLE}) == 1
    assert any('implausible' in r.getMessage() and "'%s'" % field
               in r.getMessage() for r in caplog.records), caplog.text
    fault_tally.note('replayed and implausible reports', cases=1,
                     wrongly_stored=stored)


@pytest.mark.parametrize('field', ['io_vcpus', 'pcpus', 'report_interval'])
@pytest.mark.parametrize('value', [float('inf'), float('-inf'),
                                   float('nan')])
def test_a_number_that_is_not_finite_is_left_to_the_parser(field, value):
    """Found by the hostile-payload campaign: ``io_vcpus = inf`` raised
    OverflowError formatting the refusal; NaN pCPUs, ValueError.
    """
    data = _wire()
    data[field] = value
    bounds.check(data)              # no bound judged: not a number
    with pytest.raises(payload_check.PayloadError) as caught:
        payload.HostReport.from_dict(data)
    assert not isinstance(caught.value, payload_check.Implausible)
