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
"""The plugin's endpoint takes HostReport 1.0 (older agents) and 1.1
(with decisions) alike; a store of whole reports drops a 1.1 report with a
bad decision, the scheduler's slim store does not parse decisions.
"""

import json

from iosched.contract import payload_sections
from iosched.nova_plugin import endpoint
from iosched.nova_plugin import store
from tests.unit.nova_plugin import reports

DECISION = {'kind': 'vcpu_slice', 'instance_uuid': 'u1', 'target': '0',
            'before': 3000, 'after': 1000, 'rule': 'vslicer.lsvm_microslice',
            'reason': 'L=2ms, k=1', 'ts': 99.0}


def _wire(version, decisions):
    data = json.loads(json.dumps(reports.report(host='h-' + version)
                                 .to_dict()))
    data['version'] = version
    if decisions is None:
        del data['decisions']
    else:
        data['decisions'] = decisions
    return data


def test_endpoint_takes_1_0_and_1_1_and_drops_a_bad_decision():
    st = store.ReportStore()
    ep = endpoint.ReportEndpoint(st)
    ep.report_host_io({}, _wire('1.0', None))
    ep.report_host_io({}, _wire('1.1', [DECISION]))
    ep.report_host_io({}, _wire('1.1', [dict(DECISION, rule='')]))
    assert ep.counts == {'stored': 2, 'ignored': 0, 'dropped': 1}
    assert st.get('h-1.0').decisions == ()
    got = st.get('h-1.1').decisions
    assert got == (payload_sections.DecisionEntry(**DECISION),)
    # What scheduling reads is the same with or without decisions.
    assert st.get('h-1.0').io_strength_total == \
        st.get('h-1.1').io_strength_total


def test_the_scheduler_store_takes_1_0_to_1_4_without_parsing_decisions():
    st = store.ReportStore(slim=True)
    ep = endpoint.ReportEndpoint(st)
    ep.report_host_io({}, _wire('1.0', None))
    ep.report_host_io({}, _wire('1.1', [DECISION]))
    ep.report_host_io({}, _wire('1.4', [dict(DECISION, rule='')]))
    ep.report_host_io({}, _wire('1.9', 'not a list'))
    ep.report_host_io({}, _wire('2.0', [DECISION]))
    assert ep.counts == {'stored': 3, 'ignored': 0, 'dropped': 2}
    assert [st.get('h-%s' % v).decisions for v in ('1.0', '1.1', '1.4')] \
        == [()] * 3
