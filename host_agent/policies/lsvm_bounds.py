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
"""Pure: an LSVM vCPU's worst-case wait, per mechanism, and the shares.

The vSlicer policy (``vslicer.py``) chooses the microslice T_m with these
rules and reports the bound; the Nova ``LsvmFilter``
(``nova_plugin/lsvm_rule.py``) redoes them from the HostReport for one
more VM. ``tests/unit/nova_plugin/test_lsvm_rule.py`` checks that both
agree; change them together.

Standard library and ``host_agent.model`` only; no I/O, no clock.
"""

import math

from host_agent import model

# The kernel's SCHED_DEADLINE period range (sched_deadline_period_min_us /
# _max_us defaults).
DL_PERIOD_MIN_US = 100
DL_PERIOD_MAX_US = 4194304
MIN_RUNTIME_US = 2          # the kernel needs >= 1024 ns (sched.check_deadline)


# W(T_m): how long a woken LSVM vCPU may wait before it first runs.
#   slice, wakeup_preemption:  max(T_m, W_meas)   (EEVDF PREEMPT_SHORT; the
#                              measured wake-up term when it is longer)
#   slice, round robin:        max(T_NLSVM, W_meas)
#   weight, deadline:          W_meas, the self-test's p99 under the
#                              mechanism (it preempts at wake-up whatever
#                              the slices); T_m when not measured (0)
# worst(k, T_m) = W(T_m) + (k - 1) * T_m   (k LSVM vCPUs per pCPU; vSlicer's
#                 crest T_NLSVM + (m - 1) * T_m is the round-robin case)
def wait_us(t_m_us, params, mechanism=model.MECH_SLICE, measured_us=0.0):
    """W for a microslice ``t_m_us`` (see the rule above)."""
    if mechanism == model.MECH_SLICE:
        base = t_m_us if params.wakeup_preemption else params.nlsvm_slice_us
        return max(base, measured_us)
    return measured_us if measured_us > 0 else t_m_us


def worst_case_us(k, t_m_us, params, mechanism=model.MECH_SLICE,
                  measured_us=0.0, term_us=None):
    """W + (k - 1) * T_m in microseconds (``term_us`` instead of T_m in the
    second term: a deadline host's largest runtime)."""
    term = t_m_us if term_us is None else max(t_m_us, term_us)
    return wait_us(t_m_us, params, mechanism, measured_us) + (k - 1) * term


# Largest T_m keeping worst(k, T_m) <= L (may be below min_slice, or
# negative when W alone exceeds L):
#   W grows with T_m (slice with wakeup_preemption; weight/deadline not
#   measured):  min(L / k, (L - W_meas) / (k - 1)); L / k when k = 1
#   W fixed (round robin: T_NLSVM or W_meas; weight/deadline measured):
#               (L - W_fixed) / (k - 1), unbounded when k = 1
def budget_us(lat_ms, k, params, mechanism=model.MECH_SLICE,
              measured_us=0.0):
    lat_us = lat_ms * 1000.0
    grows = ((mechanism == model.MECH_SLICE and params.wakeup_preemption)
             or (mechanism != model.MECH_SLICE and measured_us <= 0))
    if grows:
        if k <= 1:
            return lat_us
        return min(lat_us / k, (lat_us - measured_us) / (k - 1))
    fixed = (max(params.nlsvm_slice_us, measured_us)
             if mechanism == model.MECH_SLICE else measured_us)
    if k <= 1:
        return float('inf')
    return (lat_us - fixed) / (k - 1)


def formula(params, mechanism=model.MECH_SLICE, measured_us=0.0):
    """The worst-case rule in words, for reasons and notes."""
    if mechanism == model.MECH_SLICE:
        wait = 'T_m' if params.wakeup_preemption else 'T_NLSVM'
    else:
        wait = 'T_m'
    if measured_us > 0:
        wait = ('max(%s,W=%dus)' % (wait, measured_us)
                if mechanism == model.MECH_SLICE else 'W=%dus' % measured_us)
    return '%s+(k-1)*T_m' % wait


# Fair share of one vCPU when N vCPUs float over P pCPUs with equal
# weights: min(1, P / N). A SCHED_DEADLINE reservation is capped lower
# (deadline_max_share): it is not work-conserving.
def fair_share(pcpus, vcpus):
    return min(1.0, float(max(1, pcpus)) / max(1, vcpus))


def deadline_share(pcpus, vcpus, max_share):
    return min(max_share, fair_share(pcpus, vcpus))


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


# SCHED_DEADLINE reservation of an LSVM with v vCPUs (vSlicer's
# differentiated frequency: a short runtime, often, at the VM's fair share):
#   runtime  = T_m per vCPU thread, Q_io per I/O-path thread
#   period   = ceil((v * T_m + Q_io) / (v * s)), within the kernel's range
#   deadline = period (an implicit deadline)
# so the vCPU reservations and one I/O-thread reservation together hold
# v * s of a CPU, the VM's fair share: no extra CPU for the LSVM, and a
# guest that turns CPU-bound is throttled there. The latency bound is not
# the deadline: a woken reservation preempts fair-class work at once (the
# measured W). *Decision:* deadline = period, not L: with a constrained
# deadline (D < P) the kernel throttles a task that wakes after its
# deadline but before its period ends until the period ends
# (dl_check_constrained_dl), which delayed ~2 % of Poisson wake-ups by up
# to P - D in the simulator's model of that rule.
def reservation(vcpus, t_m_us, lat_ms, share, io_runtime_us):
    """(vCPU reservation, I/O-thread reservation) as knob values.

    ``lat_ms`` is not used (see the decision above); kept so that callers
    name what the reservation serves."""
    v = max(1, vcpus)
    work = v * t_m_us + io_runtime_us
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
