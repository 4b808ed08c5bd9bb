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
"""iosched.simdriver: SimulatedKnobs' LSVM knobs (deadline, VM weight, VM
cap, I/O weight), SimulatedDriver's wake-up self-test and deadline
admission figures, the knob state file and the wall-clock daemon host.
"""

import pytest

from iosched.contract import knob_kinds
from iosched.contract import lsvm as lsvm_bound
from iosched.host_agent.drivers import base
from iosched.host_agent import model
from iosched.simdriver import daemon as sim_daemon
from iosched.simdriver import driver as sim_driver
from iosched.simdriver import knobs as sim_knobs
from iosched.simdriver import state_file
from iosched.simulator import host as sim_host
from iosched.simulator import spec as sim_spec
from iosched.simulator import spec_kernel
from iosched.simulator import xen
from tests import fixtures

DL = {'runtime_us': 300, 'deadline_us': 1000, 'period_us': 2000}
ALL_CASES = (lsvm_bound.PROBE_STOCK,) + lsvm_bound.MECHANISMS


def driver_for(kernel=None, scheduler=None, pcpus=2, slice_us=1400):
    kw = {'kernel': spec_kernel.kernel(kernel)} if kernel else {}
    sim = sim_host.SimHost(sim_spec.HostSpec(
        name='h', pcpus=pcpus, default_slice_us=slice_us,
        scheduler=scheduler, **kw))
    sim.add_vm(sim_spec.VmSpec(uuid='u', name='u', disks=()))
    return sim_driver.SimulatedDriver(sim)


def knobs_for(**kw):
    return sim_knobs.SimulatedKnobs(driver_for(**kw))


def test_knobs_list_what_the_model_supports():
    _, d = fixtures.sim_host_with_vms()
    k = sim_knobs.SimulatedKnobs(d)
    assert k.knobs() == sim_knobs.SimulatedKnobs.KINDS
    assert set(k.knobs()) == {
        knob_kinds.VCPU_SLICE, knob_kinds.VCPU_WEIGHT,
        knob_kinds.VCPU_PIN, knob_kinds.DISK_IOTUNE,
        knob_kinds.VCPU_DEADLINE, knob_kinds.VM_WEIGHT,
        knob_kinds.VM_CAP, knob_kinds.VM_IO_WEIGHT}
    # no I/O or emulator threads in the simulator
    assert knob_kinds.IO_DEADLINE not in k.knobs()
    assert knob_kinds.EMULATOR_PIN not in k.knobs()
    xen_k = knobs_for(scheduler=xen.CreditSpec())
    assert knob_kinds.VCPU_DEADLINE not in xen_k.knobs()
    assert knob_kinds.VM_CAP not in xen_k.knobs()
    assert knob_kinds.VM_WEIGHT in xen_k.knobs()


def test_the_driver_only_reads():
    """Drivers have no knob methods: the knob set is the writer."""
    d = driver_for()
    for name in ('knobs', 'read_knob', 'write_knob'):
        assert not hasattr(d, name), name


@pytest.mark.parametrize('kind,target,default,value', [
    (knob_kinds.VCPU_DEADLINE, '0', None, DL),
    (knob_kinds.VM_WEIGHT, '', 100, 10000),
    (knob_kinds.VM_CAP, '', None, 0.25),
    (knob_kinds.VM_IO_WEIGHT, '', 100, 500),
])
def test_new_knobs_round_trip_and_restore(kind, target, default, value):
    d = knobs_for()
    assert d.read_knob(kind, 'u', target) == default
    d.write_knob(kind, 'u', target, value)
    assert d.read_knob(kind, 'u', target) == value
    d.write_knob(kind, 'u', target, default)
    assert d.read_knob(kind, 'u', target) == default


@pytest.mark.parametrize('kind,target,value,needle', [
    (knob_kinds.VCPU_DEADLINE, '0', {'runtime_us': 300}, 'missing key'),
    (knob_kinds.VCPU_DEADLINE, '0',
     {'runtime_us': 3000, 'deadline_us': 1000, 'period_us': 2000},
     'runtime_us <= deadline_us'),
    (knob_kinds.VCPU_DEADLINE, '0', 'fast', 'accepted: None'),
    (knob_kinds.VM_WEIGHT, '', 0, 'vm_weight'),
    (knob_kinds.VM_CAP, '', -1, 'vm_cap'),
    (knob_kinds.VM_CAP, '', 'a lot', 'accepted: a finite number'),
    (knob_kinds.IO_DEADLINE, '', DL, 'unknown knob'),
    (knob_kinds.EMULATOR_PIN, '', None, 'unknown knob'),
])
def test_bad_writes_are_driver_errors(kind, target, value, needle):
    d = knobs_for()
    with pytest.raises(base.DriverError) as err:
        d.write_knob(kind, 'u', target, value)
    assert needle in str(err.value)


def test_deadline_refused_on_a_pinned_vcpu_and_admission_state():
    d = driver_for()
    k = sim_knobs.SimulatedKnobs(d)
    k.write_knob(knob_kinds.VCPU_PIN, 'u', '0', (1,))
    with pytest.raises(base.DriverError) as err:
        k.write_knob(knob_kinds.VCPU_DEADLINE, 'u', '0', DL)
    assert 'EPERM' in str(err.value)
    k.write_knob(knob_kinds.VCPU_PIN, 'u', '0', None)
    k.write_knob(knob_kinds.VCPU_DEADLINE, 'u', '0', DL)
    assert d.deadline_state() == model.DeadlineState(
        cpus=(0, 1), limit=pytest.approx(1.9), foreign=0.0,
        reserved=pytest.approx(0.15), all_cpus=True)


def test_wakeup_probe_rows_in_order_with_the_hosts_kernel():
    d = driver_for(kernel='linux-6.18-hz250')
    rows = d.wakeup_probe(ALL_CASES)
    assert tuple(r.mechanism for r in rows) == ALL_CASES
    assert all(isinstance(r, model.WakeupProbe) and r.ok for r in rows)
    assert all(r.samples == 300 for r in rows)
    by = {r.mechanism: r for r in rows}
    # the calibrated kernel: deadline and weight wake at once, the stock
    # tail is about half a tick or a tick. The slice row is not asserted:
    # on this grid (a 2 ms sleeper against the 4 ms tick) it is phase-
    # locked in the model (a 3 us shift of the sleeper's phase takes it
    # from a tick to 2 us with or without PREEMPT_SHORT); the real rows
    # were 1.6 and 3.9 ms (bench/testbed_lsvm.py self-tests)
    assert by[lsvm_bound.MECH_DEADLINE].p99_us < 50
    assert by[lsvm_bound.MECH_WEIGHT].p99_us < 50
    assert by[lsvm_bound.PROBE_STOCK].p99_us >= 2000
    assert d.wakeup_probe(ALL_CASES) == rows          # deterministic


def test_wakeup_probe_on_the_historical_kernel_promises_slice():
    d = driver_for()
    by = {r.mechanism: r for r in d.wakeup_probe(
        (lsvm_bound.PROBE_STOCK, lsvm_bound.MECH_SLICE), wakes=100)}
    assert by[lsvm_bound.MECH_SLICE].p99_us < by[lsvm_bound.PROBE_STOCK].p50_us
    assert by[lsvm_bound.MECH_SLICE].samples == 100


def test_wakeup_probe_leaves_the_host_alone():
    sim, d = fixtures.sim_host_with_vms()
    sim.run_until(100000)
    before = (sim.now_us, sim.events_processed, sim.vm_uuids())
    d.wakeup_probe(ALL_CASES, wakes=50, hogs_per_cpu=1, lsvm_weight=5000)
    assert (sim.now_us, sim.events_processed, sim.vm_uuids()) == before


def test_wakeup_probe_failed_rows_and_bad_cases():
    d = driver_for(scheduler=xen.CreditSpec())
    rows = {r.mechanism: r for r in d.wakeup_probe(ALL_CASES, wakes=50)}
    assert rows[lsvm_bound.PROBE_STOCK].ok
    for mech in (lsvm_bound.MECH_DEADLINE, lsvm_bound.MECH_WEIGHT,
                 lsvm_bound.MECH_SLICE):
        assert not rows[mech].ok and rows[mech].error
        assert rows[mech].samples == 0
    with pytest.raises(base.DriverError) as err:
        d.wakeup_probe(('stock', 'auto'))
    assert "'auto'" in str(err.value) and 'accepted' in str(err.value)


def test_the_wall_clock_daemon_keeps_a_window_of_simulator_records():
    # a daemon runs for hours: the simulator's per-request records must
    # not grow with it (issue 15's load run found 0.5 MiB/s at 200 vCPUs)
    import types
    now = [1000.0]
    conf = types.SimpleNamespace(host_agent=types.SimpleNamespace(
        host='window', simulated_state_file='',
        simulated_profile=''))
    driver = sim_daemon.build(conf, clock=lambda: now[0])
    for _ in range(50):
        now[0] += 2.0
        driver.list_instances()
    sim_now = driver.sim.now_us
    assert sim_now >= 99_000_000
    kept = driver.sim.disk_completions_us('db-1', 'vda')
    window = sim_daemon.KEEP_RESULTS_US
    assert kept and min(kept) >= sim_now - window - window // 6 - (
        sim_daemon.MAX_STEP_S * 1_000_000)


def test_io_weights_belong_to_the_simulated_host():
    """Two knob sets over one SimHost (an agent and the next one, or a
    test reading what the agent wrote) see the same vm_io_weight, as
    two processes see one real host's cgroup files.
    """
    d = driver_for()
    sim_knobs.SimulatedKnobs(d).write_knob(knob_kinds.VM_IO_WEIGHT, 'u', '',
                                           300)
    assert sim_knobs.SimulatedKnobs(d).read_knob(
        knob_kinds.VM_IO_WEIGHT, 'u', '') == 300
    assert knobs_for().read_knob(knob_kinds.VM_IO_WEIGHT, 'u', '') == 100


def test_the_state_file_outlives_the_knob_set(tmp_path):
    import types
    path = str(tmp_path / 'state.json')
    conf = types.SimpleNamespace(host_agent=types.SimpleNamespace(
        host='h', simulated_state_file=path))
    first = sim_knobs.SimulatedKnobs.for_driver(conf, driver_for())
    first.write_knob(knob_kinds.VCPU_PIN, 'u', '0', (1,))
    first.write_knob(knob_kinds.VCPU_SLICE, 'u', '0', 700)
    assert state_file.load(path) == {
        (knob_kinds.VCPU_PIN, 'u', '0'): (1,),
        (knob_kinds.VCPU_SLICE, 'u', '0'): 700}
    # a new process: a fresh simulated host, the saved values put back
    second = sim_knobs.SimulatedKnobs.for_driver(conf, driver_for())
    assert second.read_knob(knob_kinds.VCPU_PIN, 'u', '0') == (1,)
    assert second.read_knob(knob_kinds.VCPU_SLICE, 'u', '0') == 700
    (tmp_path / 'state.json').write_text('{not json')
    with pytest.raises(ValueError, match='not a state file'):
        sim_knobs.SimulatedKnobs.for_driver(conf, driver_for())
