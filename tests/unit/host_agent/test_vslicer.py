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
"""Table-driven tests of the vSlicer-on-EEVDF policy (pure)."""

import dataclasses

import pytest

from iosched.contract import knob_kinds
from iosched.host_agent import model
from iosched.host_agent.policies import vslicer
from iosched.host_agent.policies import vslicer_bound
from iosched.host_agent import policy_params

P = policy_params.params_for(
    'vslicer', nlsvm_slice_us=12000, lsvm_max_slice_us=1000,
    min_slice_us=100, default_latency_ms=2.0, max_lsvm_per_pcpu=3,
    vcpu_weight=100)


def inst(uuid, vcpus=1, lsvm=False, latency_ms=None):
    specs = {}
    if lsvm:
        specs['iosched:latency_sensitive'] = 'true'
    if latency_ms is not None:
        specs['iosched:latency_ms'] = str(latency_ms)
    return model.InstanceInfo(uuid=uuid, name=uuid, vcpus=vcpus,
                              extra_specs=specs)


def slices(actions):
    return {(a.instance_uuid, a.target): a.value for a in actions
            if a.kind == knob_kinds.VCPU_SLICE}


# name, instances, pcpus, want slices, want (count, capacity, bound_ms),
# want number of refusal notes
CASES = [
    ('no LSVM: every vCPU gets T_NLSVM',
     [inst('a', 2), inst('b')], (0, 1),
     {('a', '0'): 12000, ('a', '1'): 12000, ('b', '0'): 12000},
     (0, 6, 0.0), 0),
    ('one LSVM, L=2ms, k=1: T_m = min(1000, 2000) = 1000',
     [inst('l', lsvm=True, latency_ms=2), inst('c', 2)], (0, 1),
     {('l', '0'): 1000, ('c', '0'): 12000, ('c', '1'): 12000},
     (1, 5, 1.0), 0),
    # (iosched:latency_ms is whole milliseconds, iosched.contract.flavor)
    ('tight bound: L=1ms, k=2: T_m = 500',
     [inst('l', 2, lsvm=True, latency_ms=1)], (0,),
     {('l', '0'): 500, ('l', '1'): 500}, (2, 1, 1.0), 0),
    ('5 LSVM vCPUs on 2 pCPUs: k=3, L=1ms: T_m = int(1000/3) = 333',
     [inst('l1', 2, True, 1), inst('l2', 3, True, 1)], (0, 1),
     {('l1', '0'): 333, ('l1', '1'): 333, ('l2', '0'): 333,
      ('l2', '1'): 333, ('l2', '2'): 333}, (5, 1, 0.999), 0),
    ('default latency when the flavor has none',
     [inst('l', lsvm=True)], (0,), {('l', '0'): 1000}, (1, 2, 1.0), 0),
    ('impossible bound: L=1ms with k=11 -> min slice and a refusal',
     [inst('l', 11, True, 1)], (0,),
     {('l', str(v)): 100 for v in range(11)}, (11, 0, 1.1), 1),
]


@pytest.mark.parametrize('name,instances,pcpus,want,state,notes', CASES,
                         ids=[c[0] for c in CASES])
def test_plan_slices(name, instances, pcpus, want, state, notes):
    actions, got_notes, lsvm = vslicer.plan_slices(instances, pcpus, P)
    assert slices(actions) == want
    assert (lsvm.count, lsvm.capacity, lsvm.latency_bound_ms) == \
        pytest.approx(state)
    assert len(got_notes) == notes
    # Equal weights for every vCPU: no extra share for anyone.
    weights = {a.value for a in actions
               if a.kind == knob_kinds.VCPU_WEIGHT}
    assert weights <= {100}
    # Every action carries its explanation.
    assert all(a.rule and a.reason for a in actions)
    # LSVMs' I/O (emulator) threads get their microslice too.
    emu = {a.instance_uuid: a.value for a in actions
           if a.kind == knob_kinds.EMULATOR_SLICE}
    assert emu == {u: v for (u, t), v in want.items()
                   if t == '0' and u.startswith('l')}


def test_bound_never_exceeds_latency_when_feasible():
    for m in range(1, 10):
        for n_pcpus in (1, 2, 4):
            for lat in (0.5, 1, 2, 5, 20):
                # L by the policy's default (a flavor's is whole ms)
                params = dataclasses.replace(P, default_latency_ms=lat)
                insts = [inst('l%d' % i, 1, True) for i in range(m)]
                _, notes, st = vslicer.plan_slices(
                    insts, tuple(range(n_pcpus)), params)
                if not notes:
                    assert st.latency_bound_ms <= lat + 1e-9


def test_policy_is_pure_and_deterministic():
    insts = [inst('b'), inst('a', 1, True, 2)]
    a1 = vslicer.plan_slices(insts, (0, 1), P)
    a2 = vslicer.plan_slices(list(reversed(insts)), (0, 1), P)
    assert a1 == a2


PIN = policy_params.params_for(
    'vslicer', nlsvm_slice_us=12000, lsvm_max_slice_us=1000,
    min_slice_us=100, default_latency_ms=2.0, max_lsvm_per_pcpu=3,
    vcpu_weight=100, pin_lsvms=True)


def pins(actions):
    return {(a.instance_uuid, a.target): a.value for a in actions
            if a.kind == knob_kinds.VCPU_PIN}


# name, instances, pcpus, want pins, want slices, want per-pCPU
# (pcpu, m, T_m, bound_ms, holds), want refused uuids
PIN_CASES = [
    ('strictest first, fewest LSVMs per pCPU; per-pCPU T_m',
     [inst('a', 1, True, 2), inst('b', 1, True, 1), inst('c', 1, True, 3),
      inst('n', 2)], (0, 1),
     {('b', '0'): (0,), ('a', '0'): (1,), ('c', '0'): (0,)},
     {('b', '0'): 500, ('c', '0'): 500, ('a', '0'): 1000,
      ('n', '0'): 12000, ('n', '1'): 12000},
     [(0, 2, 500, 1.0, True), (1, 1, 1000, 1.0, True)], ()),
    ('11 LSVMs L=1ms on 1 pCPU: T_m=100us, bound 1.1ms > L: refused',
     [inst('l%02d' % i, 1, True, 1) for i in range(11)], (0,),
     {('l%02d' % i, '0'): (0,) for i in range(11)},
     {('l%02d' % i, '0'): 100 for i in range(11)},
     [(0, 11, 100, 1.1, False)], tuple('l%02d' % i for i in range(11))),
    ('a 2-vCPU LSVM is split over 2 pCPUs',
     [inst('l', 2, True, 2)], (0, 1),
     {('l', '0'): (0,), ('l', '1'): (1,)},
     {('l', '0'): 1000, ('l', '1'): 1000},
     [(0, 1, 1000, 1.0, True), (1, 1, 1000, 1.0, True)], ()),
]


@pytest.mark.parametrize('name,instances,pcpus,want_pins,want_slices,'
                         'want_plan,want_refused', PIN_CASES,
                         ids=[c[0] for c in PIN_CASES])
def test_pinned_per_pcpu_plan(name, instances, pcpus, want_pins,
                              want_slices, want_plan, want_refused):
    actions, notes, lsvm = vslicer.plan_slices(instances, pcpus, PIN)
    assert pins(actions) == want_pins
    assert slices(actions) == want_slices
    assert [(p.pcpu, p.m, p.microslice_us, p.bound_ms, p.holds)
            for p in lsvm.pcpus] == want_plan
    assert lsvm.refused == want_refused
    assert len(notes) == len(want_refused)
    for note in notes:
        assert note.startswith('refused latency bound') and 'Fix:' in note


def test_dedicated_flavors_are_never_repinned():
    i = model.InstanceInfo(uuid='d', name='d', vcpus=1, extra_specs={
        'iosched:latency_sensitive': 'true', 'hw:cpu_policy': 'dedicated'})
    actions, _, _ = vslicer.plan_slices([i], (0, 1), PIN)
    assert pins(actions) == {}


RR = policy_params.params_for(
    'vslicer', nlsvm_slice_us=3000, lsvm_max_slice_us=1000,
    min_slice_us=100, default_latency_ms=2.0, max_lsvm_per_pcpu=3,
    vcpu_weight=100, wakeup_preemption=False)

# name, instances, pcpus, want T_m per LSVM vCPU, want bound_ms, refused
# Round robin (wakeup_preemption=False): worst = T_NLSVM + (k-1)*T_m,
# T_m = clamp(min(1000, (L - T_NLSVM)/(k-1)), 100, 100000).
RR_CASES = [
    ('k=1, L=5ms: T_m = max slice 1000us, bound T_NLSVM = 3ms',
     [inst('l', 1, True, 5), inst('c', 2)], (0,), 1000, 3.0, ()),
    ('k=1, L=2ms < T_NLSVM = 3ms: bound 3ms cannot hold: refused',
     [inst('l', 1, True, 2)], (0,), 1000, 3.0, ('l',)),
    ('k=3, L=5ms: (5000-3000)/2 = 1000us, bound 3 + 2*1 = 5ms',
     [inst('l', 3, True, 5)], (0,), 1000, 5.0, ()),
    ('k=3, L=4ms: (4000-3000)/2 = 500us, bound 3 + 2*0.5 = 4ms',
     [inst('a', 1, True, 4), inst('b', 1, True, 4), inst('d', 1, True, 4)],
     (0,), 500, 4.0, ()),
    ('k=12, L=4ms: budget 1000/11 = 91us < 100us minimum: refused, '
     'bound 3 + 11*0.1 = 4.1ms',
     [inst('l', 12, True, 4)], (0,), 100, 4.1, ('l',)),
]


@pytest.mark.parametrize('name,instances,pcpus,t_m,bound,refused', RR_CASES,
                         ids=[c[0] for c in RR_CASES])
def test_round_robin_bound(name, instances, pcpus, t_m, bound, refused):
    actions, notes, lsvm = vslicer.plan_slices(instances, pcpus, RR)
    got = {v for (u, _), v in slices(actions).items() if u != 'c'}
    assert got == {t_m}
    assert lsvm.latency_bound_ms == pytest.approx(bound)
    assert lsvm.refused == refused
    assert len(notes) == len(refused)
    for note in notes:
        assert 'T_NLSVM+(k-1)*T_m' in note and 'Fix:' in note
    assert [p.bound_ms for p in lsvm.pcpus] == pytest.approx([bound])


@pytest.mark.parametrize('k,t_m,preempt,want', [
    (1, 1000, True, 1000), (3, 500, True, 1500),
    (1, 1000, False, 3000), (3, 500, False, 4000),
])
def test_bound_us(k, t_m, preempt, want):
    params = policy_params.params_for('vslicer', nlsvm_slice_us=3000,
                                      wakeup_preemption=preempt)
    assert vslicer_bound.bound_us(k, t_m, params) == want


def test_facts_carry_what_the_report_needs():
    insts = [inst('a', 1, True, 5), inst('b', 2, True), inst('c', 3)]
    _, _, lsvm = vslicer.plan_slices(insts, (0, 1), P)
    # L: a = 5, b = default 2.0 -> strictest 2.0; n = 3 non-LSVM vCPUs
    assert (lsvm.min_latency_ms, lsvm.nlsvm_vcpus, lsvm.params) == \
        (2.0, 3, P)
    _, _, none = vslicer.plan_slices([inst('c', 3)], (0, 1), P)
    assert (none.min_latency_ms, none.nlsvm_vcpus) == (0.0, 3)
