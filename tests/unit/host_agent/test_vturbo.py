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


def io(uuid, share):
    return model.IoThreadRates(instance_uuid=uuid, cpu_share=share,
                               window_s=1.0)


def vc(uuid, share):
    return model.VcpuIoStrength(
        instance_uuid=uuid, vcpu=0, pcpu=0, events=0, mean_gap_ns=0.0,
        io_strength=0.0, ivcredit=0.0, run_share=share, wait_share=0.0,
        klass='cpu', exact=False)


# name, {uuid: vCPU share}, {uuid: I/O-thread CPUs}, turbo uuids,
# want {uuid: (weight, allowance, binds)}
CHARGE_CASES = [
    ('no I/O-thread figure (simulator): no charge',
     {'l': 0.1, 'c': 0.9}, {}, ('l',), {}),
    ('rr LSVM under its allowance: charged, does not bind',
     # used 0.1+0.05, 0.95+0.0: C = 1.1, FS 0.55; R = 0.5 -> w 91
     {'l': 0.1, 'c': 0.95}, {'l': 0.05, 'c': 0.0}, ('l',),
     {'l': (91, 0.5, False)}),
    ('busy turbo VM: allowance below its regular use, binds',
     # used 0.5+0.3, 0.5+0: C 1.3, FS 0.65; R = 0.35 < 0.5 -> w 54
     {'t': 0.5, 'c': 0.5}, {'t': 0.3, 'c': 0.0}, ('t',),
     {'t': (54, 0.35, True)}),
    ('turbo use above the fair share: weight floor 1',
     {'t': 0.0, 'c': 0.1}, {'t': 0.5, 'c': 0.0}, ('t',),
     {'t': (1, 0.0, False)}),
    ('a VM that is not a turbo VM is never charged',
     {'l': 0.1, 'c': 0.9}, {'l': 0.0, 'c': 0.2}, ('l',),
     {'l': (100, 0.6, False)}),
]


@pytest.mark.parametrize('name,vshare,ioshare,turbo,want', CHARGE_CASES,
                         ids=[c[0] for c in CHARGE_CASES])
def test_charge_turbo(name, vshare, ioshare, turbo, want):
    from iosched.host_agent.policies import vturbo_charge
    instances = {u: inst(u) for u in vshare}
    actions, charges = vturbo_charge.charge_turbo(
        instances, tuple(vc(u, s) for u, s in vshare.items()),
        tuple(io(u, s) for u, s in ioshare.items()), turbo, 100)
    got = {c.instance_uuid: (c.weight, c.regular_allowance, c.binds)
           for c in charges}
    assert got == want
    assert of(actions, knob_kinds.VM_WEIGHT) == {
        (u, ''): w[0] for u, w in want.items()}
    assert all(a.rule == 'vturbo.charge_turbo' and a.reason
               for a in actions)


def test_the_policy_charges_through_its_snapshot():
    snap = model.HostSnapshot(
        host='h', ts=1.0, window_s=1.0, pcpus=(0, 1),
        instances={'l': inst('l', lsvm=True), 'c': inst('c')},
        vcpus=(vc('l', 0.5), vc('c', 0.5)),
        io_threads=(io('l', 0.3), io('c', 0.0)))
    conf = cfg.ConfigOpts()
    vturbo_conf.register_opts(conf)
    conf([])
    conf.set_override('turbo_pcpus', [1], 'host_agent_policy.vturbo')
    plan = vturbo.VTurboPolicy(conf).decide(snap)
    assert of(plan.actions, knob_kinds.VM_WEIGHT) == {('l', ''): 54}
    assert plan.facts['vturbo'].charges[0].binds
    conf.set_override('charge_turbo', False, 'host_agent_policy.vturbo')
    plan = vturbo.VTurboPolicy(conf).decide(snap)
    assert of(plan.actions, knob_kinds.VM_WEIGHT) == {}
