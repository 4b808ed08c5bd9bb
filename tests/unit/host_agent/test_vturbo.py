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
"""Table-driven tests of the vTurbo host-half policy (pure)."""

import dataclasses

from oslo_config import cfg
import pytest

from iosched.contract import knob_kinds
from iosched.host_agent.conf import vturbo as vturbo_conf
from iosched.host_agent import model
from iosched.host_agent.policies import vturbo
from iosched.host_agent import policy_params


def inst(uuid, vcpus=1, lsvm=False, **specs):
    extra = {k.replace('_', ':', 1): v for k, v in specs.items()}
    if lsvm:
        extra['iosched:latency_sensitive'] = 'true'
    return model.InstanceInfo(uuid=uuid, name=uuid, vcpus=vcpus,
                              extra_specs=extra)


def of(actions, kind):
    return {(a.instance_uuid, a.target): a.value for a in actions
            if a.kind == kind}


OFF = policy_params.params_for('vturbo')   # the options' defaults
ON = dataclasses.replace(OFF, turbo_pcpus=(3,))

# name, instances, pcpus, params, want emulator pins, want vCPU pins,
# want number of notes
CASES = [
    ('off by default: no action, no note',
     [inst('l', lsvm=True), inst('c', 2)], (0, 1, 2, 3), OFF,
     {}, {}, 0),
    ('LSVM I/O thread on the turbo pCPU, every vCPU on the regular pool',
     [inst('l', lsvm=True), inst('c', 2)], (0, 1, 2, 3), ON,
     {('l', ''): (3,)},
     {('l', '0'): (0, 1, 2), ('c', '0'): (0, 1, 2), ('c', '1'): (0, 1, 2)},
     0),
    ('iosched:turbo=true flavors are turbo VMs too',
     [inst('t', iosched_turbo='true'), inst('c')], (0, 1), dataclasses.replace(
         OFF, turbo_pcpus=(1,)),
     {('t', ''): (1,)}, {('t', '0'): (0,), ('c', '0'): (0,)}, 0),
    ('dedicated flavors keep Nova\'s pinning',
     [inst('d', 2, hw_cpu_policy='dedicated')], (0, 1, 2, 3), ON,
     {}, {}, 0),
    ('turbo pCPUs = all pCPUs: off with a note',
     [inst('l', lsvm=True)], (0, 1),
     dataclasses.replace(OFF, turbo_pcpus=(0, 1)),
     {}, {}, 1),
    ('turbo pCPU not on this host: off with a note',
     [inst('l', lsvm=True)], (0, 1),
     dataclasses.replace(OFF, turbo_pcpus=(7,)),
     {}, {}, 1),
    ('no vCPU pinning when pin_regular_vcpus is off',
     [inst('l', lsvm=True)], (0, 1, 2, 3),
     dataclasses.replace(ON, pin_regular_vcpus=False),
     {('l', ''): (3,)}, {}, 0),
]


@pytest.mark.parametrize('name,instances,pcpus,params,want_emu,want_pin,'
                         'notes', CASES, ids=[c[0] for c in CASES])
def test_plan_turbo(name, instances, pcpus, params, want_emu, want_pin,
                    notes):
    actions, got_notes, state = vturbo.plan_turbo(instances, pcpus, params)
    assert of(actions, knob_kinds.EMULATOR_PIN) == want_emu
    assert of(actions, knob_kinds.VCPU_PIN) == want_pin
    assert len(got_notes) == notes
    # Turbo VMs' I/O threads get the 0.1 ms turbo quantum.
    assert of(actions, knob_kinds.EMULATOR_SLICE) == {
        k: 100 for k in want_emu}
    assert state.turbo_instances == tuple(u for u, _ in sorted(want_emu))
    assert all(a.rule.startswith('vturbo.') and a.reason for a in actions)


def test_the_policy_reads_every_option_of_its_group():
    conf = cfg.ConfigOpts()
    vturbo_conf.register_opts(conf)
    conf([])
    assert vturbo.VTurboPolicy(conf).params() == OFF
    conf.set_override('turbo_pcpus', [3], 'host_agent_policy.vturbo')
    assert vturbo.VTurboPolicy(conf).params() == ON
