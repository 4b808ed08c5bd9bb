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
"""Live re-tune on a real guest (libvirt + QEMU TCG): Nova applies a
volume's QoS only at attach; after the volume's QoS spec changes (an
in-use retype, an extend with per-GB keys) the agent applies the new
limits to the attached disk within a tick, and they stay when it stops
(they are what Nova would apply now, not an agent decision to undo).

The volume's spec reaches the agent through ``[host_agent]
volume_qos_file`` here; from Cinder's API the same change arrives through
``iosched.host_agent.cinder_slo`` (tests/cinder/test_agent_slo_lookup.py).
Prefix ``iosched-rt-``; skips locally and fails in CI (CI=true) when
libvirt/QEMU/root are missing.
"""

import json

import pytest

from bench import testbed_common as tc
from iosched.cinder_qos import translate
from iosched.contract import qos_attach
from iosched.contract import qos_keys as qos_keys
from iosched.contract import slo as slo_mod
from iosched.testbed import spec as spec_mod
from tests import fixtures
from tests.testbed import needs

CONF = fixtures.CONF
PREFIX = 'iosched-rt-'
GOLD = translate.translate(slo_mod.parse('500iops,5ms,p99,qd=4'))
BRONZE = translate.translate(slo_mod.parse('100iops,50ms,class=throughput'))


@pytest.fixture(scope='module')
def guest():
    tb, started = needs.start_testbed(PREFIX)
    try:
        tb.down()
        (g,) = tb.up([spec_mod.GuestSpec('vol', 'disk', volume_qos=GOLD,
                                         opts={'bs': '16384'})])
        yield tb, g
    finally:
        tc.shutdown(tb, started)


def _iotune(g):
    got = g.domain.blockIoTune('vda', 1)
    return {k: int(v) for k, v in got.items()
            if v and k in qos_keys.FRONTEND_KEYS}


def test_changed_spec_is_applied_live_and_kept(guest, tmp_path):
    tb, g = guest
    serial = tb.sidecar(g.uuid)['volumes'][0]['serial']
    # what Nova applies at attach: the front-end keys of the type's spec
    g.domain.setBlockIoTune('vda', qos_attach.iotune(GOLD), 1)
    assert _iotune(g) == qos_attach.iotune(GOLD)
    path = tmp_path / 'volume-qos.json'
    path.write_text(json.dumps({serial: GOLD}))
    CONF.set_override('volume_qos_file', str(path), 'host_agent')
    try:
        with tc.AgentThread(CONF, PREFIX, policies=[]) as at:
            at.wait_ticks(2)
            assert _iotune(g) == qos_attach.iotune(GOLD)      # nothing to do
            # and nothing written: the live limits read back equal
            assert ('disk_iotune', g.uuid, 'vda') not in \
                at.agent.actuator.decisions()
            path.write_text(json.dumps({serial: BRONZE}))  # the retype
            at.wait_ticks(2)
            assert _iotune(g) == qos_attach.iotune(BRONZE)
            decision = at.agent.actuator.decisions()[
                ('disk_iotune', g.uuid, 'vda')]
            assert decision.rule == 'slo.retune'
            assert serial in decision.reason
    finally:
        CONF.clear_override('volume_qos_file', 'host_agent')
    assert at.errors == []
    assert at.restored == 0
    assert _iotune(g) == qos_attach.iotune(BRONZE)


def test_a_retype_while_the_agent_was_down_is_applied_at_start(guest,
                                                               tmp_path):
    tb, g = guest
    serial = tb.sidecar(g.uuid)['volumes'][0]['serial']
    # attach-time limits of the old type (every key: a partial set would
    # keep the first test's values beside them)
    g.domain.setBlockIoTune('vda', {k: qos_attach.iotune(GOLD).get(k, 0)
                                    for k in qos_keys.FRONTEND_KEYS}, 1)
    path = tmp_path / 'volume-qos.json'
    path.write_text(json.dumps({serial: BRONZE}))   # retyped meanwhile
    CONF.set_override('volume_qos_file', str(path), 'host_agent')
    try:
        with tc.AgentThread(CONF, PREFIX, policies=[]) as at:
            at.wait_ticks(2)
            assert _iotune(g) == qos_attach.iotune(BRONZE)
            decision = at.agent.actuator.decisions()[
                ('disk_iotune', g.uuid, 'vda')]
            assert decision.rule == 'slo.retune'
            assert 'first sight' in decision.reason
    finally:
        CONF.clear_override('volume_qos_file', 'host_agent')
    assert at.errors == []
    assert _iotune(g) == qos_attach.iotune(BRONZE)
