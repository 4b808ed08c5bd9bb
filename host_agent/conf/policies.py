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
"""Options of the agent's policies, one group per policy."""

from oslo_config import cfg

VSLICER_GROUP = cfg.OptGroup(
    'host_agent_policy.vslicer', title='vSlicer-style slicing policy',
    help='Short, frequent slices for latency-sensitive VMs (LSVMs), long '
         'slices for the others, equal weights.')

VSLICER_OPTS = [
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
