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
"""Options of the vSlicer policy, ``[host_agent_policy.vslicer]``."""

from oslo_config import cfg

VSLICER_GROUP = cfg.OptGroup(
    'host_agent_policy.vslicer', title='vSlicer-style slicing policy',
    help='Short, frequent slices for latency-sensitive VMs (LSVMs), long '
         'slices for the others, equal weights.')

VSLICER_OPTS = [
    cfg.StrOpt('mechanism', default='auto',
               choices=[('auto', 'run the wake-up self-test at agent start '
                         'and use the first of weight, deadline, slice that '
                         'meets the bound'),
                        ('deadline', 'SCHED_DEADLINE reservations for the '
                         'LSVM vCPU and I/O threads'),
                        ('weight', 'boost the LSVM\'s VM-level cgroup '
                         'weight, capped at its fair share by a CFS quota'),
                        ('slice', 'EEVDF custom slices (vSlicer\'s '
                         'microslices; no wake-up effect on PREEMPT_NONE '
                         'HZ=250 kernels, measured)')],
               help="""
How the host shortens an LSVM's wait for a CPU.

The product's promise is a shorter wait for I/O with no CPU share taken
from anyone; which kernel lever delivers it depends on the kernel:

* ``deadline``: SCHED_DEADLINE for the LSVM's vCPU threads and the threads
  on its I/O path (QEMU main loop, iothreads, vhost): runtime = the
  microslice T_m, period chosen so that the reservation equals the VM's
  fair share (vSlicer's differentiated frequency), deadline = its latency
  bound. The threads' affinity is widened to the root domain (the kernel
  refuses SCHED_DEADLINE on narrower affinity), so LSVMs float; the
  host's deadline admission is checked before asking the kernel. A guest
  that turns CPU-bound is throttled at its reservation.
* ``weight``: the LSVM's VM-level cgroup gets ``lsvm_weight``, capped with
  a CFS quota at its fair share, so the boost never buys extra CPU.
* ``slice``: EEVDF custom slices (kept for kernels where they work).
* ``auto``: a self-test at agent start (a sleeper among busy loops, a few
  seconds, no VM; its cgroups are siblings of the guests' in libvirt's
  machine group, where an LSVM competes) measures each mechanism
  ``selftest_repeats`` times, logs the table, and picks the first of
  weight, deadline, slice whose median p99 wake-up latency is within
  ``selftest_target_us`` and whose CPU-bound share stays within the fair
  share; the report carries the mechanism and its measured latency, and it
  measures and chooses again when the host changes
  (``selftest_retest_min_interval``). The order comes from real guests
  (TCG testbed, LSVM p99 against stock: weight 0.39-0.53x, deadline
  0.61-0.87x, slice no gain). Drivers without the self-test use slice,
  not measured.

Related options:

* ``selftest_target_us``, ``selftest_repeats``, ``selftest_share_ms``,
  ``selftest_retest_min_interval``, ``lsvm_weight``,
  ``deadline_max_share``, ``io_thread_runtime_us``
"""),
    cfg.IntOpt('selftest_target_us', default=500, min=10, max=100000,
               help="""
p99 wake-up latency, microseconds, a mechanism must achieve in the start-up
self-test for ``mechanism = auto`` to choose it.

When none does, auto takes the mechanism with the lowest measured p99 and
logs a warning; the report carries the measured figure either way, so the
Nova LsvmFilter never promises less than the host measured.

Possible values:

* 10 to 100000.
"""),
    cfg.IntOpt('selftest_wakes', default=120, min=50, max=5000,
               help="""
Wake-ups the self-test measures per mechanism and repeat (every 2 ms, so
120 wakes take 0.24 s; with 3 repeats of the four rows and the share
phases about 5 s).

Possible values:

* 50 to 5000.
"""),
    cfg.IntOpt('selftest_repeats', default=3, min=1, max=9,
               help="""
Times the self-test measures every mechanism, interleaved (the order
rotates each repeat); a row's p50 and p99 are the medians of its repeats,
so one busy spell of the host (a burst of other processes) in one repeat
decides nothing. The log shows each repeat's p99.

Possible values:

* 1 to 9.
"""),
    cfg.IntOpt('selftest_share_ms', default=300, min=0, max=2000,
               help="""
Milliseconds of a CPU-bound phase that ends each mechanism's first repeat
(after a 100-ms warm-up that aligns it with the CFS quota periods): the
sleeper spins, and its CPU time over wall time is the share the
mechanism lets a guest that turns CPU-bound take. ``mechanism = auto``
skips a mechanism whose share exceeds the fair-share limit (one CPU shared
with ``selftest_hogs_per_cpu`` busy loops, or stock's share if larger) by
more than 5 %. 0 skips the phase (shares not checked).

Possible values:

* 0 to 2000.
"""),
    cfg.IntOpt('selftest_retest_min_interval', default=600, min=60,
               max=86400,
               help="""
Seconds that pass at least between two self-tests. With ``mechanism =
auto`` the agent measures and chooses again when the host changed since the
last self-test: the number of running guests, or the 1-minute load by
``selftest_retest_load_delta`` or more, or ``selftest_retest_interval``
elapsed. A re-test loads every guest pCPU for a few seconds; a new choice
restores the old mechanism's knobs and applies the new one.

Possible values:

* 60 to 86400.
"""),
    cfg.FloatOpt('selftest_retest_load_delta', default=1.0, min=0.1,
                 max=1000.0,
                 help="""
Change of the host's 1-minute load average (runnable threads) since the
last self-test that makes the agent measure and choose again (see
``selftest_retest_min_interval``).

Possible values:

* 0.1 to 1000.
"""),
    cfg.IntOpt('selftest_retest_interval', default=0, min=0, max=604800,
               help="""
Seconds after which the agent re-runs the self-test even if the host did
not change (0: only on a change; see ``selftest_retest_min_interval``).

Possible values:

* 0 (off), or up to 604800 (a week).
"""),
    cfg.IntOpt('selftest_hogs_per_cpu', default=2, min=1, max=8,
               help="""
Busy loops per CPU the self-test runs beside its sleeper (on every CPU of
the host's guest pCPUs, for the few seconds of the test).

Possible values:

* 1 to 8.
"""),
    cfg.IntOpt('lsvm_weight', default=10000, min=100, max=10000,
               help="""
VM-level CPU weight of an LSVM with ``mechanism = weight`` (cgroup v2
cpu.weight scale; 100 is the default, cgroup v1 cpu.shares = weight x
1024 / 100). The CFS quota caps the VM at its fair share, so a high weight
buys a prompt wake-up, not extra CPU.

Possible values:

* 100 to 10000.
"""),
    cfg.StrOpt('weight_group', default='iosched-lsvm',
               help="""
Parent cgroup, at the top of a cgroup v1 cpu hierarchy, of the groups
that hold LSVMs with ``mechanism = weight`` (one ``vm-<uuid>`` group per
LSVM with its vCPU and I/O-path threads, at ``lsvm_weight``, capped at
its fair share). There the LSVM is a sibling of libvirt's ``machine``
group and of everything else the host runs, so its weight also wins the
wake-ups that load outside the VMs would delay: measured with one busy
loop outside the VMs, p99 wake-up 0.12-0.20 ms against 6.2-8.0 ms with
the weight inside ``machine`` (issue 28, docs/testbed.md). The agent
creates it at start through its second privsep context
(``[host_agent_privsep_cgroup]``, CAP_DAC_OVERRIDE only). The self-test
measures the weight case there, so the choice and the bound describe it.

Possible values:

* A name starting with ``iosched`` (letters, digits, ``_.-``).
* Empty: LSVM threads stay in libvirt's groups; the weight goes to the
  VM's own group inside ``machine`` (the only way on cgroup v2, where a
  thread cannot leave its process's subtree).
"""),
    cfg.IntOpt('weight_group_weight', default=1000, min=1, max=10000,
               help="""
CPU weight (cgroup v2 scale, v1 cpu.shares = weight x 1024 / 100) of the
``weight_group`` parent, the entity that competes at the top of the
hierarchy with libvirt's machine group and the host's other load when an
LSVM wakes. Its children are capped at their fair share, so the weight
buys wake-ups, not CPU; but the load balancer counts a group's weight
times its runnable time, so a very high weight makes the LSVM's pCPU look
busy and moves other tasks off it. Measured on the project's host
(sleeper waking every 2 ms beside three busy guests and a busy loop
outside the VMs): p99 wake-up 0.09 ms at 10000, 0.20 ms at 1000, 1.9 ms
at 400, 3.9 ms at 200; at 10000 the bench's CPU-bound guests got twice
their stock share (other tasks moved off their pCPU).

Possible values:

* 1 to 10000.
"""),
    cfg.FloatOpt('deadline_max_share', default=0.5, min=0.01, max=0.95,
                 help="""
Largest CPU share one LSVM vCPU's SCHED_DEADLINE reservation may have
(``mechanism = deadline``).

An LSVM vCPU's reservation is its fair share, min(this, P / N) with P the
host's pCPUs and N all vCPUs on it. A reservation is not work-conserving:
an LSVM whose guest turns CPU-bound is held to it even on an idle host.

Possible values:

* 0.01 to 0.95.
"""),
    cfg.IntOpt('io_thread_runtime_us', default=1000, min=10, max=100000,
               help="""
SCHED_DEADLINE runtime per period of each I/O-path thread of an LSVM (QEMU
main loop, iothreads, vhost), microseconds, with ``mechanism = deadline``.
The VM's vCPU and I/O-thread reservations together equal its fair share.

Measured on the TCG testbed: with 200 us the main loop was throttled
half-way through requests (LSVM p99 12 ms against 6.3 ms stock), with
1000 us p99 was 2.1 ms. A runtime is a budget per period, not CPU used: a
larger one lengthens the period at the same share.

Possible values:

* 10 to 100000.
"""),
    cfg.FloatOpt('deadline_burst_headroom', default=4.0, min=1.0, max=100.0,
                 help="""
An LSVM vCPU's SCHED_DEADLINE runtime covers this many times its measured
CPU time per activation (smoothed over ticks), rounded up to 500 us and
never below the microslice T_m.

A runtime shorter than a burst throttles the vCPU half-way until the next
period (measured on the TCG testbed: 1 ms runtimes for ~0.5 ms mean bursts
gave LSVM p99 6.9 ms, 2 ms runtimes 2.1 ms).

Possible values:

* 1.0 to 100.0.
"""),
    cfg.IntOpt('deadline_max_runtime_us', default=10000, min=100,
               max=1000000, help="""
Largest SCHED_DEADLINE runtime of an LSVM vCPU, microseconds (the measured
burst term is capped here).

Possible values:

* 100 to 1000000.
"""),
    cfg.IntOpt('seen_window_s', default=60, min=5, max=3600, help="""
Seconds of the LSVM vCPUs' own wake-to-run delays (``sched_switch`` after
each ``sched_wakeup`` of their threads, ``[libvirt] trace_wakeups``) from
which the agent takes their p99, the W it has seen.

Once ``iosched.contract.lsvm.SEEN_MIN_WAKES`` delays were seen under the
mechanism in force, no LSVM's bound is reported below that p99 (the
self-test's figure is a prediction, this one is what the LSVMs got), and
the bound is refused when it exceeds the flavor's ``iosched:latency_ms``.
A new mechanism starts a new window.

Possible values:

* 5 to 3600.
"""),
    cfg.IntOpt('nlsvm_slice_us', default=3000, min=100, max=100000,
               help="""
EEVDF slice (request size) given to vCPUs of ordinary VMs, microseconds.

vSlicer's T_NLSVM. Longer slices mean fewer context switches for CPU-bound
vCPUs; the kernel clamps slices to 100..100000 us. The default, 3 ms, is
Linux's base slice on an 8-CPU host, so ordinary VMs keep stock behaviour.
vSlicer's 30 ms is Xen's credit slice: on EEVDF a long T_NLSVM is what an
LSVM waits for in the rare case it overran its microslice and became
ineligible (measured on the embedded default with 12 ms: LSVM p99 9.6 ms
against 5.1 ms stock).

Possible values:

* 100 to 100000.
"""),
    cfg.IntOpt('lsvm_max_slice_us', default=1000, min=100, max=100000,
               help="""
Largest microslice T_m given to an LSVM vCPU, microseconds.

The microslice is min(this, latency_ms / LSVM vCPUs per pCPU).

Possible values:

* 100 to 100000.
"""),
    cfg.IntOpt('min_slice_us', default=100, min=100, max=100000,
               help="""
Smallest slice ever set, microseconds (the kernel's lower clamp is 100).

Possible values:

* 100 to 100000.
"""),
    cfg.FloatOpt('default_latency_ms', default=2.0, min=0.1, max=1000.0,
                 help="""
Latency bound assumed for an LSVM flavor without ``iosched:latency_ms``.

Possible values:

* 0.1 to 1000 ms.
"""),
    cfg.IntOpt('max_lsvm_per_pcpu', default=3, min=1, max=64,
               help="""
LSVM vCPUs one pCPU may serve (vSlicer expects at most 3).

Used for the ``lsvm.capacity`` the agent reports to the Nova plugin.

Possible values:

* 1 to 64.
"""),
    cfg.BoolOpt('lsvm_io_threads', default=True,
                help="""
Give an LSVM's QEMU main-loop (emulator) thread the same microslice as its
vCPUs.

The main loop carries device emulation (virtio notifications, chardevs);
when it shares a pCPU with CPU-bound threads, the LSVM's I/O waits there
even if its vCPUs are served promptly. This is the host half of vTurbo in
part (no turbo pCPU). Drivers without the knob (the simulator) skip it.
"""),
    cfg.BoolOpt('pin_lsvms', default=False,
                help="""
Pin each LSVM vCPU to the pCPU of the per-pCPU plan (strictest latency
first, fewest LSVM vCPUs per pCPU) and give it that pCPU's microslice.

Off: LSVM vCPUs float and the plan's bound holds on average (Linux spreads
them). On: the per-core bound m_p * T_m holds as planned, at the cost of
overriding Linux's load balancing for LSVM vCPUs. Flavors with
hw:cpu_policy=dedicated are Nova's to pin and are left alone either way.
"""),
    cfg.BoolOpt('wakeup_preemption', default=True,
                help="""
Whether a woken LSVM vCPU preempts the running ordinary vCPU at once.

Sets the worst-case latency rule the microslice T_m is chosen by, the
refusal notes use and the HostReport carries (``lsvm.wakeup_preemption``)
so that the Nova ``LsvmFilter`` applies the same rule. With k LSVM vCPUs per
pCPU the worst case is W + (k - 1) * T_m:

* True (default): W = T_m, bound k * T_m, T_m = L / k. Linux EEVDF with
  PREEMPT_SHORT: a woken task with a shorter slice (earlier deadline)
  preempts a longer-slice one.
* False: W = T_NLSVM, vSlicer's round-robin bound T_NLSVM + (k - 1) * T_m,
  T_m = (L - T_NLSVM) / (k - 1). Use it on kernels without wake-up
  preemption by slice (e.g. before Linux 6.12, or PREEMPT_NONE builds):
  an LSVM that just missed its turn waits a whole ``nlsvm_slice_us``, so
  ``iosched:latency_ms`` must exceed it.

Related options:

* ``nlsvm_slice_us``, ``lsvm_max_slice_us``, ``min_slice_us``
"""),
    cfg.IntOpt('vcpu_weight', default=100, min=1, max=10000,
               help="""
Weight every vCPU gets (cgroup v2 cpu.weight scale; 100 is the kernel's
default). vSlicer keeps weights equal so that LSVMs get no extra share.

Possible values:

* 1 to 10000.
"""),
]


def register_opts(conf):
    conf.register_group(VSLICER_GROUP)
    conf.register_opts(VSLICER_OPTS, group=VSLICER_GROUP)


def list_opts():
    return [(VSLICER_GROUP, VSLICER_OPTS)]
