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
"""Table-driven tests of the ISACS policy: slices, Algorithm 2 (the
equations: tests/unit/contract/test_isacs.py).
"""

import ast
import dataclasses
import random
import time
import types

from oslo_config import cfg
import pytest

from iosched.contract import knob_kinds
from iosched.contract import payload_sections
from iosched.host_agent.conf import isacs as isacs_conf
from iosched.host_agent import model
from iosched.host_agent.policies import isacs
from iosched.host_agent import policy_params

# base 3000, cpu 6000, alpha 2 (the options' defaults)
P = policy_params.params_for('isacs', min_io_slice_us=250)
PB = dataclasses.replace(P, balance=True)


def vc(uuid, ivc, run=0.1, pcpu=0, vcpu=0):
    return model.VcpuIoStrength(
        instance_uuid=uuid, vcpu=vcpu, pcpu=pcpu, events=0, mean_gap_ns=0.0,
        io_strength=ivc, ivcredit=ivc, run_share=run, wait_share=0.0,
        klass=(payload_sections.KLASS_IO if ivc
               else payload_sections.KLASS_CPU), exact=True)


def snap(vcpus, pcpus=(0, 1), ts=1000.0, specs=None):
    uuids = sorted({v.instance_uuid for v in vcpus})
    insts = {u: model.InstanceInfo(uuid=u, name=u,
                                   extra_specs=(specs or {}).get(u, {}))
             for u in uuids}
    return model.HostSnapshot(host='h', ts=ts, window_s=1.0, pcpus=pcpus,
                              instances=insts, vcpus=tuple(vcpus))


def by_kind(plan, kind):
    return {(a.instance_uuid, a.target): a.value for a in plan.actions
            if a.kind == kind}


# ---- the slice mapping --------------------------------------------------

@pytest.mark.parametrize('ivc,mean,params,want', [
    (1.0, 1.0, P, 1000), (2.0, 1.0, P, 600), (0.5, 1.0, P, 1500),
    (10.0, 1.0, P, 250), (0.0, 1.0, P, 3000),
    (1.0, 1.0, dataclasses.replace(P, alpha=0.0), 3000),
    (1.0, 1.0, dataclasses.replace(P, min_io_slice_us=50), 1000),
    (9.0, 1.0, dataclasses.replace(P, min_io_slice_us=5000), 3000),
], ids=['at mean: base/3', '2x mean: base/5', 'half mean: base/2',
        'floor min_io_slice', 'no ivcredit', 'alpha 0',
        'min below kernel', 'min above base'])
def test_io_slice(ivc, mean, params, want):
    assert isacs.io_slice_us(ivc, mean, params) == want


def test_io_slice_monotone_and_bounded():
    got = [isacs.io_slice_us(x / 10.0, 1.0, P) for x in range(1, 200)]
    assert all(a >= b for a, b in zip(got, got[1:]))
    assert all(P.min_io_slice_us <= s <= P.base_slice_us for s in got)


A = vc('a', 0.6, run=0.1, pcpu=0)        # strong I/O
B = vc('b', 0.2, run=0.3, pcpu=0)        # weak I/O (in the group too)
C = vc('c', 0.0, run=1.0, pcpu=1)        # CPU-bound
D = vc('d', 0.0, run=0.0, pcpu=1)        # idle
# n=4 on P=2: default credit 0.5; k=2, mean 0.4; group {b, c, d}, j=3.
HOST_CASES = [
    ('mixed host', [A, B, C, D], P,
     {'a': (750, 0.0, False), 'b': (1500, 0.16, True),
      'c': (6000, 0.8 / 3 * 2, True), 'd': (3000, 0.0, True)}),
    ('no I/O vCPU: stock', [C, D], P,
     {'c': (3000, 0.0, False), 'd': (3000, 0.0, False)}),
    ('all I/O', [A, B], P,
     {'a': (750, 0.0, False), 'b': (1500, 0.8 / 1 * 0.3 / 1.0, True)}),
    ('floor 0.25: b counts as CPU-bound', [A, B, C, D],
     dataclasses.replace(P, ivcredit_floor=0.25),
     {'a': (1000, 0.0, False), 'b': (6000, 0.12, True),
      'c': (6000, 0.4, True), 'd': (3000, 0.0, True)}),
]


@pytest.mark.parametrize('name,vcpus,params,want', HOST_CASES,
                         ids=[c[0] for c in HOST_CASES])
def test_host_plan(name, vcpus, params, want):
    plan = isacs.plan_isacs(snap(vcpus), params)
    slices = by_kind(plan, knob_kinds.VCPU_SLICE)
    assert {u: slices[(u, '0')] for u in want} == \
        {u: w[0] for u, w in want.items()}
    facts = {e.instance_uuid: e for e in plan.facts['isacs'].vcpus}
    assert {u: facts[u].cvcredit for u in want} == \
        pytest.approx({u: w[1] for u, w in want.items()})
    assert {u: facts[u].boost_group for u in want} == \
        {u: w[2] for u, w in want.items()}
    # Credit concealing: equal weights everywhere; everything explained.
    assert set(by_kind(plan, knob_kinds.VCPU_WEIGHT).values()) == {100}
    assert len(by_kind(plan, knob_kinds.VCPU_WEIGHT)) == len(vcpus)
    assert all(a.rule.startswith('isacs.') and a.reason
               for a in plan.actions)
    assert not by_kind(plan, knob_kinds.VCPU_PIN)   # balance off


# ---- Algorithm 2 --------------------------------------------------------

# pCPU0: x 0.5, y 0.3, z cpu-bound; pCPU1: w 0.1; pCPU2 empty.
BUSY = [vc('x', 0.5, pcpu=0), vc('y', 0.3, pcpu=0), vc('z', 0.0, 1.0, 0),
        vc('w', 0.1, pcpu=1)]
# Ties: pCPU0 and 1 both 0.6, pCPU2 and 3 both 0; b/0 and a/1 both 0.25.
TIES = [vc('b', 0.25, pcpu=0), vc('a', 0.25, pcpu=0, vcpu=1),
        vc('a', 0.1, pcpu=0, vcpu=2), vc('c', 0.6, pcpu=1)]
BALANCE_CASES = [
    ('busiest to least loaded, y fits gap/2', BUSY, (0, 1, 2), (), None,
     PB, {('y', '0'): (2,)}),
    ('deterministic ties: lowest pCPU ids, then (uuid, vcpu)', TIES,
     (0, 1, 2, 3), (), None, PB, {('a', '1'): (2,)}),
    ('inside the absolute band', [vc('p', 0.3, pcpu=0),
                                  vc('q', 0.15, pcpu=1)],
     (0, 1), (), None, PB, {}),
    ('inside the relative band', [vc('p', 1.0, pcpu=0),
                                  vc('p', 1.0, pcpu=0, vcpu=1),
                                  vc('q', 1.6, pcpu=1)],
     (0, 1), (), None, PB, {}),
    ('budget used in the last 60 s', BUSY, (0, 1, 2), (970.0,), None, PB,
     {}),
    ('old move outside 60 s', BUSY, (0, 1, 2), (939.0,), None, PB,
     {('y', '0'): (2,)}),
    ('budget 2: one more allowed', BUSY, (0, 1, 2), (970.0,), None,
     dataclasses.replace(PB, max_moves_per_minute=2), {('y', '0'): (2,)}),
    ('budget 0: never', BUSY, (0, 1, 2), (), None,
     dataclasses.replace(PB, max_moves_per_minute=0), {}),
    ('dedicated flavor is not moved', BUSY, (0, 1, 2), (),
     {'y': {'hw:cpu_policy': 'dedicated'}}, PB, {}),
    ('balance off', BUSY, (0, 1, 2), (), None, P, {}),
]


@pytest.mark.parametrize('name,vcpus,pcpus,recent,specs,params,want',
                         BALANCE_CASES, ids=[c[0] for c in BALANCE_CASES])
def test_balance(name, vcpus, pcpus, recent, specs, params, want):
    state = isacs.State(recent_moves=recent)
    plan = isacs.plan_isacs(snap(vcpus, pcpus, 1000.0, specs), params,
                            state)
    assert by_kind(plan, knob_kinds.VCPU_PIN) == want
    kept = tuple(t for t in recent if t > 940.0)
    new_state = plan.state
    assert new_state.recent_moves == (kept + (1000.0,) if want else kept)
    assert len(new_state.recent_moves) <= max(
        params.max_moves_per_minute, len(kept))
    pins = [a for a in plan.actions if a.kind == knob_kinds.VCPU_PIN]
    assert all(a.rule == 'isacs.io_balance' and 'gap' in a.reason
               and 'after' in a.reason for a in pins)


def test_balance_move_reason_numbers():
    plan = isacs.plan_isacs(snap(BUSY, (0, 1, 2)), PB)
    pin, = [a for a in plan.actions if a.kind == knob_kinds.VCPU_PIN]
    assert 'pCPU0=0.8' in pin.reason and 'pCPU2=0' in pin.reason
    assert 'after 0.5 / 0.3' in pin.reason
    assert plan.facts['isacs'].io_load == ((0, 0.8), (1, 0.1), (2, 0.0))


# ---- purity and the thin class -----------------------------------------

def test_pure_same_input_same_output_in_any_order(monkeypatch):
    s = snap(BUSY + [A, C], (0, 1, 2))
    first = isacs.plan_isacs(s, PB)
    for name in ('time', 'monotonic', 'perf_counter'):
        monkeypatch.setattr(time, name, lambda: pytest.fail('clock read'))
    for seed in range(5):
        shuffled = list(s.vcpus)
        random.Random(seed).shuffle(shuffled)
        again = isacs.plan_isacs(
            dataclasses.replace(s, vcpus=tuple(shuffled)), PB)
        assert again == first


def test_module_imports_no_clock():
    tree = ast.parse(open(isacs.__file__).read())
    names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import)
             for a in n.names}
    names |= {n.module for n in ast.walk(tree)
              if isinstance(n, ast.ImportFrom)}
    assert not names & {'time', 'datetime', 'random', 'os'}


def conf_for(params):
    return {'host_agent_policy.isacs':
            types.SimpleNamespace(**dataclasses.asdict(params))}


def test_state_fed_back_limits_the_moves():
    # The agent gives each decide the Plan.state of the previous one.
    policy = isacs.IsacsPolicy(conf_for(PB))
    pins, state = [], None
    for ts in (1000.0, 1030.0, 1061.0):
        plan = policy.decide(snap(BUSY, (0, 1, 2), ts), state)
        pins.append(bool(by_kind(plan, knob_kinds.VCPU_PIN)))
        state = plan.state
    assert pins == [True, False, True]
    assert state == isacs.State(recent_moves=(1061.0,))


def test_the_policy_reads_every_option_of_its_group():
    conf = cfg.ConfigOpts()
    isacs_conf.register_opts(conf)
    conf([])
    assert isacs.IsacsPolicy(conf).params() == policy_params.params_for(
        'isacs')
    names = {o.name for _, opts in isacs_conf.list_opts() for o in opts}
    assert names == {f.name for f in dataclasses.fields(isacs.Params)}


@pytest.mark.parametrize('leave,want_lsvm_actions,cpu_slice',
                         [(True, 0, 3000), (False, 2, 6000)])
def test_lsvms_are_left_to_vslicer(leave, want_lsvm_actions, cpu_slice):
    # 'l' is an LSVM doing I/O, 'c' a CPU-bound vCPU: both count in Eqs.
    # 2-4 (c joins the CPU-BOOST group because l has IVCredit), but with
    # leave_lsvms the LSVM gets no ISACS slice or weight.
    s = snap([vc('l', 0.5, pcpu=0), vc('c', 0.0, run=0.9, pcpu=0)],
             specs={'l': {'iosched:latency_sensitive': 'true'}})
    plan = isacs.plan_isacs(s, dataclasses.replace(P, leave_lsvms=leave))
    assert sum(a.instance_uuid == 'l' for a in plan.actions) == \
        want_lsvm_actions
    # CPU-BOOST slices stay <= base while LSVMs share the host.
    assert by_kind(plan, knob_kinds.VCPU_SLICE)[('c', '0')] == cpu_slice
    assert plan.facts['isacs'].k == 1
