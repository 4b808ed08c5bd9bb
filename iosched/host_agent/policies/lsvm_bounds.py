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
"""Pure: the agent's side of the LSVM bound, and its SCHED_DEADLINE sizing.

The bound itself (W, T_m's budget, ``W + (k - 1) * T_m``, the shares) is
``iosched.contract.lsvm``, which the Nova ``LsvmFilter``
(``iosched/nova_plugin/lsvm_rule.py``) applies too; ``slicing()`` gives it the
vSlicer policy's parameters. What only the agent does is here: the runtime,
deadline and period of an LSVM's SCHED_DEADLINE reservations.

Standard library and ``iosched.contract`` only; no I/O, no clock.
"""

import math

from iosched.contract import lsvm

# The kernel's SCHED_DEADLINE period range (sched_deadline_period_min_us /
# _max_us defaults).
DL_PERIOD_MIN_US = 100
DL_PERIOD_MAX_US = 4194304
# the kernel needs >= 1024 ns (sched.check_deadline)
MIN_RUNTIME_US = 2


def slicing(params, mechanism=lsvm.MECH_SLICE, measured_us=0.0):
    """The contract's ``lsvm.Slicing`` of vSlicer ``params`` under
    ``mechanism`` with its measured wake-up p99 (0: not measured).
    """
    return lsvm.Slicing(
        mechanism=mechanism, measured_us=measured_us,
        nlsvm_slice_us=params.nlsvm_slice_us,
        wakeup_preemption=params.wakeup_preemption,
        max_slice_us=params.lsvm_max_slice_us,
        min_slice_us=params.min_slice_us)


# Runtime of an LSVM vCPU's SCHED_DEADLINE reservation: it must cover the
# vCPU's bursts (CPU time per activation, measured and smoothed by the
# collector), or the kernel throttles the burst half-way until the next
# period:
#   Q = clamp(ceil(headroom * burst / 500 us) * 500 us, T_m, max_runtime)
#   (Q = T_m before any burst is measured)
# The 500 us step keeps a noisy burst from changing the reservation every
# tick. With k LSVM vCPUs per pCPU the wait for the others is (k - 1) * Q.
RUNTIME_STEP_US = 500


def burst_runtime_us(burst_us, headroom, max_runtime_us):
    """The burst term of Q: min(max_runtime, ceil(headroom * burst))."""
    want = math.ceil(headroom * max(0.0, burst_us) / RUNTIME_STEP_US) * (
        RUNTIME_STEP_US)
    return int(min(max_runtime_us, want))


def deadline_runtime_us(t_m_us, burst_us, headroom, max_runtime_us):
    """Q = max(T_m, the burst term)."""
    return int(max(t_m_us, burst_runtime_us(burst_us, headroom,
                                            max_runtime_us)))


# SCHED_DEADLINE reservation of an LSVM with v vCPUs and n I/O-path
# threads (vSlicer's differentiated frequency: a short runtime, often, at
# the VM's fair share):
#   runtime  = T_m per vCPU thread, Q_io per I/O-path thread
#   period   = ceil((v * T_m + n * Q_io) / (v * s)), within the kernel's range
#   deadline = period (an implicit deadline)
# so the v vCPU reservations and the n I/O-path ones (io_thread_deadline
# reserves each of them: the QEMU main loop, its iothreads, vhost
# workers; InstanceInfo.io_threads) together hold v * s of a CPU, the
# VM's fair share and what admission counts (lsvm_mechanisms
# .admit_deadline): no extra CPU for the LSVM, and a guest that turns
# CPU-bound is throttled there. Past the kernel's longest period every
# runtime is scaled down by the same factor; runtimes never go below
# MIN_RUNTIME_US. The latency bound is not the deadline: a woken
# reservation preempts fair-class work at once (the measured W).
# *Decision:* deadline = period, not L: with a constrained deadline (D <
# P) the kernel throttles a task that wakes after its deadline but before
# its period ends until the period ends (dl_check_constrained_dl), which
# delayed ~2 % of Poisson wake-ups by up to P - D in the simulator's model
# of that rule.
def reservation(vcpus, t_m_us, lat_ms, share, io_runtime_us, io_threads):
    """(vCPU reservation, I/O-thread reservation) as knob values, for
    ``io_threads`` threads on the I/O path (at least 1: the main loop).

    ``lat_ms`` is not used (see the decision above); kept so that callers
    name what the reservation serves.
    """
    v = max(1, vcpus)
    n_io = max(1, io_threads)
    work = v * t_m_us + n_io * io_runtime_us
    period = math.ceil(work / (v * share))
    scale = 1.0
    if period > DL_PERIOD_MAX_US:
        # The kernel's longest period: shorter runtimes keep the share.
        period = DL_PERIOD_MAX_US
        scale = v * share * period / work
    period = max(DL_PERIOD_MIN_US, period)
    vcpu = {'runtime_us': max(MIN_RUNTIME_US,
                              int(min(t_m_us, period) * scale)),
            'deadline_us': period, 'period_us': period}
    io = {'runtime_us': max(MIN_RUNTIME_US,
                            int(min(io_runtime_us, period) * scale)),
          'deadline_us': period, 'period_us': period}
    return vcpu, io


def reserved_cpus(vcpus, io_threads, vcpu_res, io_res):
    """CPUs the reservations hold: (v * Q + n * Q_io) / period."""
    return (max(1, vcpus) * vcpu_res['runtime_us'] + max(1, io_threads) *
            io_res['runtime_us']) / float(vcpu_res['period_us'])
