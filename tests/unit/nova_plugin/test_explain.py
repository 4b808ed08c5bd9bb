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
"""Tests of iosched.nova_plugin.explain and iosched.nova_plugin.request_spec
(no nova).
"""

import types

from iosched.nova_plugin import explain
from iosched.nova_plugin import request_spec
from iosched.nova_plugin import scoring


def test_ring_is_bounded_and_filtered():
    ring = explain.Explainer(maxlen=3)
    for i in range(5):
        ring.record('filter', 'host%d' % (i % 2), 'req', passed=i % 2 == 0,
                    reason='r%d' % i)
    got = ring.recent()
    assert [d.seq for d in got] == [3, 4, 5]
    assert [d.reason for d in ring.recent(host='host0')] == ['r2', 'r4']
    assert ring.recent(limit=1)[0].seq == 5
    assert ring.recent(stage='weigher') == []
    ring.clear()
    assert ring.recent() == []


class _Obj(types.SimpleNamespace):
    """Mimics a Nova object: unset fields are not lazy-loaded."""

    def obj_attr_is_set(self, name):
        return name in self.__dict__


def test_request_spec_reading():
    flavor = _Obj(vcpus=4, name='io.large',
                  extra_specs={'iosched:io_profile': 'io'})
    spec = _Obj(flavor=flavor)
    assert request_spec.to_request(spec) == scoring.Request(4, 'io')
    assert request_spec.label(spec) == 'flavor:io.large'
    spec.instance_uuid = 'abc'
    assert request_spec.label(spec) == 'abc'
    # a flavor without extra_specs set, and no flavor at all
    assert request_spec.to_request(_Obj(flavor=_Obj(vcpus=2))) == (
        scoring.Request(2))
    assert request_spec.to_request(_Obj()) == scoring.Request(0)
    assert request_spec.label(_Obj()) == 'unknown'
