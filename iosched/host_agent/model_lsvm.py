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
"""The host agent's LSVM mechanism types (re-exported by ``model``): the
wake-up self-test's rows (``WakeupProbe``), the SCHED_DEADLINE admission
figures (``DeadlineState``) and what the host gives LSVMs as measured
(``HostSched``, in every ``HostSnapshot``). Standard library and
``iosched.contract`` only.
"""

import dataclasses

from iosched.contract import lsvm as lsvm_bound


@dataclasses.dataclass(frozen=True)
class WakeupProbe:
    """One row of the wake-up self-test: a sleeper among busy loops."""
    mechanism: str                   # contract.lsvm.PROBE_CASES
    ok: bool                         # the kernel accepted the mechanism
    p50_us: float = 0.0              # wake lateness percentiles, us
    p99_us: float = 0.0
    samples: int = 0
    error: str = ''                  # why not ok (e.g. EPERM)
    # CPU share a CPU-bound sleeper got under the mechanism (its CPU time
    # / wall time over the self-test's share phase); 0 = not measured
    share: float = 0.0
    # each repeat's p99 (p50_us/p99_us are their medians); () = one run
    p99s_us: tuple = ()


@dataclasses.dataclass(frozen=True)
class DeadlineState:
    """SCHED_DEADLINE admission figures of a host (driver.deadline_state)."""
    cpus: tuple = ()                 # root domain's CPUs (affinity must span)
    # bandwidth the kernel admits there, CPUs (rt_runtime/period x cpus)
    limit: float = 0.0
    foreign: float = 0.0             # held by threads that are not VMs'
    reserved: float = 0.0            # held by threads of the VMs (ours)
    all_cpus: bool = False           # cpus = all (an affinity reads None)


@dataclasses.dataclass(frozen=True)
class HostSched:
    """What this host's kernel gives LSVMs, as measured at agent start.

    Filled by the agent (the self-test of
    ``iosched.host_agent.linux.wakeup_probe`` on a real host, the simulator's
    probe on a simulated one) and read by the pure vSlicer policy from every
    snapshot.
    """
    mechanism: str = lsvm_bound.MECH_SLICE  # in force (never 'auto')
    # measured p99 wake-up latency under ``mechanism``; 0 = not measured
    wakeup_p99_us: float = 0.0
    # SCHED_DEADLINE admission: CPUs of the root domain LSVM threads span
    # (their affinity must cover it), the kernel's limit (sched_rt_runtime
    # / sched_rt_period x len(dl_cpus)) and the bandwidth other threads
    # hold there (CPUs), all 0/() when deadline is not in use.
    dl_cpus: tuple = ()
    dl_all_cpus: bool = False        # dl_cpus are all the host's CPUs
    dl_bw_limit: float = 0.0
    dl_bw_foreign: float = 0.0
    probes: tuple = ()               # tuple[WakeupProbe], the self-test
    # the LSVM parent group at the top of the cpu hierarchy where the
    # weight mechanism puts LSVMs (knob lsvm_group) and the self-test
    # measured it; '': the weight goes to the VM's own group in libvirt's
    # machine group (knobs vm_weight, vm_cap)
    weight_group: str = ''
    # the measurement behind the choice, in words (lsvm_mechanism.describe)
    measured_by: str = ''
    # when (monotonic s) and beside how many guests and what 1-min load the
    # self-test ran (lsvm_mechanism.should_retest); None: it did not
    tested_at: float = None
    tested_guests: int = None
    tested_load: float = None
