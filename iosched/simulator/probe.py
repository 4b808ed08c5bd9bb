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
"""The wake-up self-test, run inside a fresh simulated host.

The same scenario as the agent's self-test on a real host
(``iosched.host_agent.linux.wakeup_probe``): on a host like the given one
(pCPUs, default slice, switch cost, kernel), ``hogs_per_cpu`` CPU-bound threads
pinned to every pCPU and one ``spec.Sleeper`` allowed on every pCPU
(wakes every ``period_us`` on an absolute timer with ``timer_slack_us``
of slack, 0 like the self-test's 1 ns, ``work_us`` of work) whose
lateness is measured, per case:

* ``stock``: defaults;
* ``deadline``: SCHED_DEADLINE runtime ``DL_RUNTIME_US`` (300 us) /
  deadline ``DL_DEADLINE_US`` (1 ms) / period ``period_us``;
* ``weight``: VM-level weight ``lsvm_weight``, capped at its fair share
  (1 / (hogs_per_cpu + 1) of a CPU per 100 ms);
* ``slice``: EEVDF custom slice ``SLICE_US`` (100 us).

The first ``WARMUP`` wakes are not counted (as the self-test's sleeper);
p50 and p99 are ``iosched.contract.stats.percentile``'s, as the self-test's.
Deterministic: the scenario has no randomness; the sleeper's first
target is one period after the start, which is tick-aligned, like a real
sleeper that got its CPU at a tick among busy loops. A case the model
refuses is a row with ``ok`` False and the error. Rows are dicts
(``ROW_KEYS``), so the simulator stays free of the agent's types;
``SimulatedDriver.wakeup_probe`` turns them into ``model.WakeupProbe``.
Cost: a few ms of CPU per case (0.6 s simulated at the defaults).
"""

from iosched.contract import lsvm as lsvm_bound
from iosched.contract import stats
from iosched.simulator import host as sim_host
from iosched.simulator import spec

DL_RUNTIME_US = 300
DL_DEADLINE_US = 1000
SLICE_US = 100
WARMUP = 10
ROW_KEYS = ('mechanism', 'ok', 'p50_us', 'p99_us', 'samples', 'error')


def run_case(host_spec, case, wakes=300, hogs_per_cpu=2, lsvm_weight=10000,
             period_us=2000, work_us=50, timer_slack_us=0, seed=0):
    """One row: lateness p50/p99 of the sleeper under ``case``."""
    if case not in lsvm_bound.PROBE_CASES:
        raise ValueError('case: %r is invalid; accepted: one of %s'
                         % (case, ', '.join(lsvm_bound.PROBE_CASES)))
    probe_spec = spec.HostSpec(
        name='%s-probe' % host_spec.name, pcpus=host_spec.pcpus,
        default_slice_us=host_spec.default_slice_us,
        switch_cost_us=host_spec.switch_cost_us,
        balance_us=host_spec.balance_us, scheduler=host_spec.scheduler,
        kernel=host_spec.kernel)
    h = sim_host.SimHost(probe_spec, seed=seed)
    for cpu in range(host_spec.pcpus):
        for i in range(hogs_per_cpu):
            uuid = 'hog-%d-%d' % (cpu, i)
            h.add_vm(spec.VmSpec(uuid=uuid, name=uuid, disks=()))
            h.set_vcpu_affinity(uuid, 0, (cpu,))
    # The sleeper starts idle so that its knobs are set before it runs.
    h.add_vm(spec.VmSpec(uuid='sleeper', name='sleeper',
                         vcpus=(spec.Sleeper(period_us=period_us,
                                             work_us=work_us,
                                             timer_slack_us=timer_slack_us),),
                         disks=()))
    try:
        if case == lsvm_bound.MECH_DEADLINE:
            h.set_vcpu_deadline('sleeper', 0, {
                'runtime_us': DL_RUNTIME_US, 'deadline_us': DL_DEADLINE_US,
                'period_us': period_us})
        elif case == lsvm_bound.MECH_WEIGHT:
            h.set_vm_weight('sleeper', lsvm_weight)
            h.set_vm_cap('sleeper', 1.0 / (hogs_per_cpu + 1))
        elif case == lsvm_bound.MECH_SLICE:
            h.set_vcpu_slice('sleeper', 0, SLICE_US)
    except ValueError as e:
        return dict(mechanism=case, ok=False, p50_us=0.0, p99_us=0.0,
                    samples=0, error=str(e))
    # Until the wakes are measured; a starved case (late wakes skip
    # periods) stops at 1.25 x its nominal time, as the self-test does.
    horizon = int(1.25 * (WARMUP + wakes + 1) * period_us)
    step = 64 * period_us
    while (h.now_us < horizon and len(h.request_latencies_us('sleeper'))
           < WARMUP + wakes):
        h.run_until(min(horizon, h.now_us + step))
    lat = h.request_latencies_us('sleeper')[WARMUP:WARMUP + wakes]
    if not lat:
        return dict(mechanism=case, ok=False, p50_us=0.0, p99_us=0.0,
                    samples=0, error='no wake-up measured')
    return dict(mechanism=case, ok=True, p50_us=stats.percentile(lat, 0.5),
                p99_us=stats.percentile(lat, 0.99), samples=len(lat),
                error='')


def wakeup_probe(host_spec, cases=lsvm_bound.PROBE_CASES, wakes=300,
                 hogs_per_cpu=2,
                 lsvm_weight=10000, period_us=2000, work_us=50,
                 timer_slack_us=0, seed=0):
    """Rows (dicts, ``ROW_KEYS``) for ``cases``, in their order."""
    return tuple(run_case(host_spec, c, wakes, hogs_per_cpu, lsvm_weight,
                          period_us, work_us, timer_slack_us, seed)
                 for c in cases)
