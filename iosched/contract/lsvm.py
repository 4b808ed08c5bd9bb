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
"""The LSVM bound: an LSVM vCPU's worst-case wait, T_m, and the shares.

Description:
    vSlicer's worst case for a woken latency-sensitive vCPU with k LSVM
    vCPUs per pCPU, ``W + (k - 1) * T_m``, per mechanism (``deadline``,
    ``weight``, ``slice``), the microslice T_m chosen for a bound L, and
    the fair and SCHED_DEADLINE shares. The host agent's vSlicer policy
    (``iosched.host_agent.policies.vslicer``, ``lsvm_mechanisms``,
    ``lsvm_bounds``) plans with it and reports the bound; the Nova
    ``LsvmFilter`` (``iosched.nova_plugin.lsvm_rule``) applies it to a host's
    report with one more VM. One definition, so the two cannot drift.

Requirements:
    Standard library only; no I/O, no clock. ``Slicing`` holds what the
    bound depends on: the agent fills it from its ``[host_agent_policy.
    vslicer]`` options, the filter from the host's report (``lsvm``).

Limitations:
    The (k - 1) * T_m term assumes slices cut turns short; on a
    PREEMPT_NONE kernel that happens on the tick, which the measured W
    (the self-test's p99 under the mechanism) accounts for.

Spec URL:
    ../shared/seeds/001-vslicer-vturbo-vread.md section 2.1 (eqs. 2.11,
    2.12, the crest T_NLSVM + (m - 1) * T_m); docs/nova.md "LsvmFilter".
"""

import dataclasses
import math

# How a host shortens an LSVM's wait for a CPU (the report's
# lsvm.mechanism, [host_agent_policy.vslicer] mechanism).
MECH_DEADLINE = 'deadline'   # SCHED_DEADLINE reservations (sched_setattr)
MECH_WEIGHT = 'weight'       # VM-level cgroup weight boost + CFS quota cap
MECH_SLICE = 'slice'         # EEVDF custom slice (sched_runtime)
MECHANISMS = (MECH_DEADLINE, MECH_WEIGHT, MECH_SLICE)
# The wake-up self-test's rows (the report's lsvm.probes): the reference
# row with no mechanism (stock SCHED_OTHER), then each mechanism.
PROBE_STOCK = 'stock'
PROBE_CASES = (PROBE_STOCK,) + MECHANISMS

# The kernel's range of a custom slice (sched_runtime), as applied to T_m.
KERNEL_MIN_SLICE_US = 100
KERNEL_MAX_SLICE_US = 100000
# How much more CPU than its fair-share limit an LSVM may take under a
# mechanism (a fraction): the self-test's share check for ``auto`` and the
# real-guest benchmark's share target (bench/testbed_lsvm_report.py).
SHARE_TOLERANCE = 0.05
# The LSVM vCPUs' own wake-to-run delays (the agent's sched_switch trace)
# are the measured W of the mechanism in force, in place of the self-test's
# probe, once this many were seen within the vSlicer window
# (seen_window_s): with 200 delays the p99 is the second largest, a figure
# that a single outlier cannot set.
SEEN_MIN_WAKES = 200
# The seen W in use changes only when the window's p99 moved by more than
# this fraction of it: T_m and the bound (sched_setattr writes, refusal
# notes) do not follow every tick's sample.
SEEN_HYSTERESIS = 0.25
# A tick in which an LSVM vCPU ran this share of the tick or more is a busy
# tick: its delays are left out of the seen W. A vCPU that busy waits on
# its own CPU use (its SCHED_DEADLINE runtime spent until the next
# replenishment, its cap's quota, its EEVDF lag), not on the host: a TCG
# guest booting under a 1 ms reservation ran 0.41 of each tick and waited
# 14-17 ms per wake-up for 16 s, which set the seen W of an idle host to
# 16-48 ms for a minute and turned LSVMs away (the cloud, 2026-11-29). An
# LSVM serving requests runs a few % of a tick.
SEEN_BUSY_RUN_SHARE = 0.2
# Tolerances: a bound "holds" at worst <= L + BOUND_EPSILON_US; a deadline
# reservation fits at need <= room + BW_EPSILON (CPUs).
# The weight of each LSVM's own group inside the top-level LSVM parent
# (knob lsvm_group): the default, as every LSVM there is equal; the
# parent's weight ([host_agent_policy.vslicer] weight_group_weight) is the
# one that competes with libvirt's machine group and the host's load.
GROUP_VM_WEIGHT = 100
BOUND_EPSILON_US = 1e-6
BW_EPSILON = 1e-9


@dataclasses.dataclass(frozen=True)
class Slicing:
    """What the bound of one host depends on (defaults: the agent's)."""

    mechanism: str = MECH_SLICE
    measured_us: float = 0.0         # W_meas: the self-test's p99, 0: none
    nlsvm_slice_us: float = 3000     # T_NLSVM
    wakeup_preemption: bool = True   # slice: W = T_m (else T_NLSVM)
    max_slice_us: float = 1000       # lsvm_max_slice: T_m's ceiling
    min_slice_us: float = 100        # min_slice: T_m's floor


def _clamp(v, lo, hi):
    return max(lo, min(hi, v))


# k(m, P) := max(1, ceil(m / P)): LSVM vCPUs per pCPU when m LSVM vCPUs
# float over P pCPUs.
def per_pcpu(m, pcpus):
    return max(1, math.ceil(m / float(max(1, pcpus))))


# W(T_m): how long a woken LSVM vCPU may wait before it first runs.
#   slice, wakeup_preemption:  max(T_m, W_meas)   (EEVDF PREEMPT_SHORT; the
#                              measured wake-up term when it is longer)
#   slice, round robin:        max(T_NLSVM, W_meas)
#   weight, deadline:          W_meas, the self-test's p99 under the
#                              mechanism (it preempts at wake-up whatever
#                              the slices); T_m when not measured (0)
def wait_us(t_m_us, s):
    """W for a microslice ``t_m_us`` on a host of ``Slicing`` ``s``."""
    if s.mechanism == MECH_SLICE:
        base = t_m_us if s.wakeup_preemption else s.nlsvm_slice_us
        return max(base, s.measured_us)
    return s.measured_us if s.measured_us > 0 else t_m_us


# worst(k, T_m) := W(T_m) + (k - 1) * T   (k LSVM vCPUs per pCPU; vSlicer's
#                  crest T_NLSVM + (m - 1) * T_m is the round-robin case)
#   T := T_m, or max(T_m, term_us): a deadline host's largest runtime Q
#        (each other LSVM of the pCPU may use its whole Q first)
def worst_case_us(k, t_m_us, s, term_us=None):
    """W + (k - 1) * T in microseconds."""
    term = t_m_us if term_us is None else max(t_m_us, term_us)
    return wait_us(t_m_us, s) + (k - 1) * term


# Largest T_m keeping worst(k, T_m) <= L (may be below min_slice, or
# negative when W alone exceeds L):
#   W grows with T_m (slice with wakeup_preemption; weight/deadline not
#   measured):  min(L / k, (L - W_meas) / (k - 1)); L / k when k = 1
#   W fixed (round robin: max(T_NLSVM, W_meas); weight/deadline measured):
#               (L - W_fixed) / (k - 1), unbounded when k = 1
def budget_us(lat_ms, k, s):
    lat_us = lat_ms * 1000.0
    grows = ((s.mechanism == MECH_SLICE and s.wakeup_preemption)
             or (s.mechanism != MECH_SLICE and s.measured_us <= 0))
    if grows:
        if k <= 1:
            return lat_us
        return min(lat_us / k, (lat_us - s.measured_us) / (k - 1))
    fixed = (max(s.nlsvm_slice_us, s.measured_us)
             if s.mechanism == MECH_SLICE else s.measured_us)
    if k <= 1:
        return float('inf')
    return (lat_us - fixed) / (k - 1)


# T_m(L, k) := clamp(min(max_slice, budget(L, k)),
#                    max(min_slice, KERNEL_MIN_SLICE_US), KERNEL_MAX_SLICE_US)
#              truncated to whole microseconds
def microslice_us(lat_ms, k, s):
    """``(T_m, wanted T_m)``: the microslice set, and the unclamped one."""
    want = min(s.max_slice_us, budget_us(lat_ms, k, s))
    floor = max(s.min_slice_us, KERNEL_MIN_SLICE_US)
    return int(_clamp(want, floor, KERNEL_MAX_SLICE_US)), want


# holds(worst, L) := worst <= L + BOUND_EPSILON_US
def holds(worst_us, lat_ms):
    """Whether a worst case (us) is within the bound L (ms)."""
    return worst_us <= lat_ms * 1000.0 + BOUND_EPSILON_US


def formula(s):
    """The worst-case rule in words, for reasons and notes."""
    if s.mechanism == MECH_SLICE:
        wait = 'T_m' if s.wakeup_preemption else 'T_NLSVM'
    else:
        wait = 'T_m'
    if s.measured_us > 0:
        wait = ('max(%s,W=%dus)' % (wait, s.measured_us)
                if s.mechanism == MECH_SLICE else 'W=%dus' % s.measured_us)
    return '%s+(k-1)*T_m' % wait


# Fair share of one vCPU when N vCPUs float over P pCPUs with equal
# weights: min(1, P / N). A SCHED_DEADLINE reservation is capped lower
# (deadline_max_share): it is not work-conserving.
def fair_share(pcpus, vcpus):
    return min(1.0, float(max(1, pcpus)) / max(1, vcpus))


def deadline_share(pcpus, vcpus, max_share):
    return min(max_share, fair_share(pcpus, vcpus))


# share_within(share, limit, stock) := share <= max(limit, stock) *
#   (1 + SHARE_TOLERANCE): a CPU-bound LSVM under a mechanism takes no more
#   than its fair-share limit (the cap the mechanism sets), or than stock
#   gives it where stock already gives more; share 0 = not measured: holds.
def share_within(share, limit, stock=0.0):
    """Whether a measured CPU-bound share respects the fair-share limit."""
    if share <= 0:
        return True
    return share <= max(limit, stock) * (1.0 + SHARE_TOLERANCE)


# share_excess(share, stock, limit) := max(1 - share / stock,
#   share / max(limit, stock) - 1): how far (a fraction) a guest's CPU
#   share under a mechanism lies outside [stock, max(limit, stock)], the
#   band share_within's ceiling and "no guest loses CPU" draw; <= 0 inside.
#   A guest is kept fair when share_excess <= SHARE_TOLERANCE. Gaining
#   below the limit is not excess: what the guests gain together comes from
#   the host's processes outside the VMs (measured beside it). A guest whose
#   share is its demand (an LSVM serving a fixed request load: served
#   faster, it may use less) has the ceiling only (floor=False).
def share_excess(share, stock, limit, floor=True):
    """How far a share lies outside its fair band (<= 0: inside)."""
    if stock <= 0:
        return 0.0
    over = share / max(limit, stock) - 1.0
    return max(1.0 - share / stock, over) if floor else over


# admits(need, room) := need <= room + BW_EPSILON, room = the kernel's
# limit - the bandwidth threads that are not VMs' hold (CPUs).
def admits(need, room):
    """Whether SCHED_DEADLINE reservations of ``need`` CPUs fit."""
    return need <= room + BW_EPSILON
