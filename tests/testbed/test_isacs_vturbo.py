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
"""ISACS and vTurbo on real guests (libvirt + QEMU TCG), no timing
assertions:

* the ``hybrid`` guest mode answers requests and reports its burn rate;
* a short agent run with ``policies = isacs`` puts its slices into the
  kernel and restores them;
* the ``vturbo`` policy pins the LSVM's emulator threads to the turbo pCPU
  (with the turbo slice) and restores both.

One module-scoped testbed (prefix ``iosched-ivt-``) boots an LSVM, a
hybrid and a burn guest pinned to the last host CPU; the agent sees only
this prefix's domains (``bench.testbed_common.ScopedDriver``). Skips
locally and fails in CI (CI=true) when libvirt/QEMU/root are missing.
"""

import os

import pytest

from bench import testbed_common as tc
from iosched.contract import knob_kinds
from iosched.host_agent.policies import isacs
from iosched.host_agent.policies import vturbo
from iosched.testbed import rr_client
from iosched.testbed import spec as spec_mod
from iosched.testbed import testbed as testbed_mod
from tests import fixtures
from tests.testbed import needs

CONF = fixtures.CONF
PREFIX = 'iosched-ivt-'
NCPU = os.cpu_count() or 1
PIN = NCPU - 1
SPECS = ['lsvm:rr', 'hyb:hybrid:duty_pct=50', 'cpu1:burn']


@pytest.fixture(scope='module')
def guests():
    tb, started = needs.start_testbed(PREFIX)
    tb.down()
    try:
        up = tb.up([spec_mod.parse_guest(s) for s in SPECS], pin=PIN)
        yield {g.name: g for g in up}
    finally:
        tc.shutdown(tb, started)


@pytest.fixture
def overrides():
    """set(group, name, value) for one test; cleared afterwards."""
    done = []

    def set_(group, name, value):
        CONF.set_override(name, value, group)
        done.append((group, name))
    yield set_
    for group, name in done:
        CONF.clear_override(name, group)


def test_hybrid_answers_requests_and_reports_burn(guests):
    hyb = guests['hyb']
    assert hyb.hello['mode'] == 'hybrid'
    rtts = hyb.rr(40, rate_per_s=100, burst_us=100)
    assert len(rtts) == 40 and min(rtts) > 0
    assert hyb.burn_rate(timeout=10) > 0
    side = testbed_mod.Testbed(prefix=PREFIX).sidecar(hyb.uuid)
    assert side['flavor'] == 'mixed.small'
    assert side['extra_specs'] == {'iosched:io_profile': 'mixed'}


def test_hybrid_through_the_separate_client(guests):
    """The benches' SCHED_FIFO client: RTTs and the hybrid's burn rates
    (its reports reach the child holding the channel).
    """
    hyb = guests['hyb']
    answer = rr_client.session(hyb, 150, 50, 100, 'fifo')
    assert len(answer['rtts']) == 150 and min(answer['rtts']) > 0
    assert answer['burn_rates'] and min(answer['burn_rates']) > 0
    assert hyb.burn_rate(timeout=10) > 0       # the parent has it back


def test_hybrid_spec_checks_options():
    with pytest.raises(spec_mod.SpecError, match='duty_pct'):
        spec_mod.parse_guest('h:hybrid:duty_pct=0')
    with pytest.raises(spec_mod.SpecError, match='burn_nice'):
        spec_mod.parse_guest('h:hybrid:burn_nice=x')
    assert spec_mod.parse_guest('h:hybrid:period_ms=20').opts_string == \
        'period_ms=20'


def _slices(guests):
    return {n: v['vcpu_slice_us'] for n, v in tc.knob_view(guests).items()}


def test_isacs_agent_applies_and_restores_slices(guests):
    before = _slices(guests)
    names = {g.uuid: n for n, g in guests.items()}
    with tc.AgentThread(CONF, PREFIX,
                        policies=[isacs.IsacsPolicy(CONF)]) as at:
        at.wait_ticks(3)
        plan = at.agent.last_plan
        during = _slices(guests)
        seen = {names[v.instance_uuid] for v in at.agent.last_snapshot.vcpus}
    assert seen == set(guests)            # this prefix's guests, no other
    slices = {names[a.instance_uuid]: a.value for a in plan.actions
              if a.kind == knob_kinds.VCPU_SLICE}
    # LSVMs are vSlicer's (leave_lsvms): ISACS slices the other two.
    assert set(slices) == {'hyb', 'cpu1'}
    for name, value in slices.items():
        assert during[name] == value
    assert during['lsvm'] == before['lsvm']
    assert at.errors == []
    assert at.restored >= 2
    assert _slices(guests) == before


def test_vturbo_pins_lsvm_emulator_to_turbo_pcpu_and_restores(guests,
                                                             overrides):
    fixtures.require('two host CPUs', NCPU >= 2, 'vTurbo needs a turbo '
                     'pCPU and a regular one; this host has %d' % NCPU)
    turbo = 0
    overrides('host_agent_policy.vturbo', 'turbo_pcpus', [turbo])
    before = tc.knob_view(guests)
    with tc.AgentThread(CONF, PREFIX,
                        policies=[vturbo.VTurboPolicy(CONF)]) as at:
        at.wait_ticks(2)
        during = tc.knob_view(guests)
    regular = [c for c in range(NCPU) if c != turbo]
    assert during['lsvm']['emulator_pin'] == [turbo]
    assert during['lsvm']['emulator_slice_us'] == 100
    for name in guests:                     # every vCPU in the regular pool
        assert during[name]['vcpu_pin'] == regular
    for name in ('hyb', 'cpu1'):            # not turbo VMs: untouched
        assert during[name]['emulator_pin'] == before[name]['emulator_pin']
    assert at.errors == []
    assert tc.knob_view(guests) == before
