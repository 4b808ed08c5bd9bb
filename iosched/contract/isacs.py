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
"""ISACS's equations (seed 000, sections 2.2-2.6), once, as pure functions.

The agent (``iosched.host_agent.collectors`` for Eqs. 1-2,
``iosched.host_agent.policies. isacs`` for Eqs. 3-4 on KVM) and the simulator's
Credit2 model (``iosched.simulator.xen.isacs_math``) both call these;
docs/isacs.md explains the readings. No clock, no I/O; any credit unit (the
simulator works in microseconds, Xen in ns, the agent in shares of a window).

Guards, one set for every caller (the two copies disagreed: the agent's
IVCredit with consumed = -1 was -6.67, the simulator's 0.0; an unset
I_bar raised in the agent's and was 0 in the simulator's). A credit is
never negative, so an input that cannot give a positive credit gives 0.0:

* I/O strength is 0 with no event, an unset or zero I_bar (None: no
  usable interval, Eq. 1) or a window <= 0;
* IVCredit (Eq. 2) is 0 when the strength, the consumed credit or the
  run-queue's mean consumed credit is <= 0 (a counter that went backwards
  is no consumption); ``cap`` > 0 clamps it (Gap 4: the paper has none);
* CVCredit (Eq. 4) is 0 for an empty CPU-BOOST group, a default credit
  <= 0 or a consumed credit <= 0.
"""

import itertools
import math
import operator

# Eq. 3's "+1" is 1 ns of credit against Credit2's 10 ms default credit:
# a division guard, scaled with the unit (guard = this x default credit).
GUARD_PER_DEFAULT_CREDIT = 1e-7

# The agent's I/O signal (issue 28): a vCPU's I/O events E_n are its
# wake-ups, unless it woke fewer than this many times per completed I/O
# request of its VM (per vCPU) in the window; then the requests are E_n.
# A vCPU that sleeps between requests wakes about once per request (>= 1;
# batched completions: fewer, so 0.5 leaves headroom for two requests per
# interrupt); one that never sleeps (a busy hybrid guest) wakes about 0
# times per request and its I/O was invisible.
MIN_WAKEUPS_PER_REQUEST = 0.5


# Eq. 1 (EVENT CHECKER), one I/O response event at time t:
#   I_e = t - t_prev;  Ibar = w * I_e + (1 - w) * Ibar   (w = 0.9: the
#   printed constant weighs the NEWEST interval; kept, configurable).
# Readings (Gap 3):
# * an event at the same time as the previous one is the same delivery
#   (an event channel's pending bit, a virtio interrupt handing over every
#   completed request of the used ring): not counted, no interval (zero
#   gaps would drive Ibar to ~0 for throttled disks whose completions come
#   in clumps: on the embedded default a 970 IOPS vCPU was classed idle);
# * every other event counts in E_n, also after a long silence;
# * an interval > cutoff (10 ms) is not used and the clock restarts
#   (t_prev = t), so sparse events give Ibar = None and no IVCredit;
# * Ibar starts unset (None); the first usable interval seeds it (starting
#   at 0 would report 0.9 of the gap for a window with two events).
def observe(events, t_prev, ibar, t, weight=0.9, cutoff=10000):
    """One event at t. Return the new (events, t_prev, ibar)."""
    if t_prev is not None and t == t_prev:
        return events, t_prev, ibar
    if t_prev is not None:
        gap = t - t_prev
        if 0 < gap <= cutoff:
            ibar = gap if ibar is None else weight * gap + (1 - weight) * ibar
    return events + 1, t, ibar


def ema_gap(times, weight=0.9, cutoff=10000, scale=1, events=None):
    """Eq. 1 over a window's event times, from a fresh start (ISACS
    re-initialises the event data at every reallocation): (E_n, Ibar), with
    Ibar 0.0 when no interval was usable. ``scale`` converts the times'
    unit to ``cutoff``'s and Ibar's (the simulator's us to the agent's ns:
    1000), so a driver hands its timestamps over unconverted. ``events``:
    E_n when the producer counted it as the times came (as here: each time
    that differs from the one before it; the simulator does), else None.

    The same figures as ``observe()`` folded over ``times`` (any order:
    an event equal to the previous one is the same delivery; a negative
    or long gap is not an interval), computed from what they depend on:
    E_n is 1 + the number of times that differ from their predecessor (a
    C-level count, no Python loop per event), and Ibar, an EMA that keeps
    (1 - w)^k of the interval k places back, only from the newest
    ``ema_tail_length()`` usable intervals (a few dozen at w = 0.9): the
    older ones weigh less than EMA_TAIL_REL_ERROR of the result. All
    intervals are used when there are no more than that (then the result
    is bit for bit observe()'s) or when w <= 0 (nothing is forgotten).
    """
    n = len(times)
    if n < 2:
        return n, 0.0
    if events is None:
        events = 1 + sum(map(operator.ne, itertools.islice(times, 1, None),
                             times))
    gaps = _tail_gaps(times, weight, cutoff, scale)
    if not gaps:
        return events, 0.0
    keep = 1.0 - weight
    ibar = gaps[0]
    for gap in itertools.islice(gaps, 1, None):
        ibar = weight * gap + keep * ibar
    return events, ibar


# Eq. 1's EMA after K intervals, seeded with the K-th newest interval
# instead of the EMA before it, is off by at most (1 - w)^K * cutoff (both
# lie in (0, cutoff]); the EMA is at least w * g (g: the newest interval).
# K is the least with (1 - w)^K * cutoff <= EMA_TAIL_REL_ERROR * w * g,
# plus one; None (all intervals) when w <= 0 or w > 1. The bound is 2^-27
# of a double's rounding (2^-53): the two sums then round alike, and once
# alike stay alike, so the figure is observe()'s bit for bit but for a
# chance of about 1e-8 (then it differs in its last bit).
EMA_TAIL_REL_ERROR = 2.0 ** -80


def ema_tail_length(weight, cutoff, newest_gap):
    """The number of newest usable intervals that fix Eq. 1's EMA."""
    keep = 1.0 - weight
    if not 0.0 <= keep < 1.0 or newest_gap <= 0 or cutoff <= 0:
        return None
    if keep == 0.0:
        return 1
    ratio = EMA_TAIL_REL_ERROR * weight * min(newest_gap, cutoff) / cutoff
    if ratio <= 0.0:        # a gap so small the bound underflows: all
        return None
    return max(2, int(math.ceil(math.log(ratio) / math.log(keep))) + 1)


def _tail_gaps(times, weight, cutoff, scale):
    """The usable intervals (0 < gap <= cutoff) of ``times``, oldest first:
    the newest ``ema_tail_length()`` of them, or all. Reads the window
    backwards from its newest time and stops there: the newest usable
    interval sets the length (a few dozen times at w = 0.9, whatever the
    window holds; measured at 200 vCPUs, half the cost of reading it in
    C-level chunks).
    """
    gaps = []
    it = reversed(times)
    t_next = next(it, None)
    need = None
    for t in it:
        gap = (t_next - t) * scale
        t_next = t
        if 0 < gap <= cutoff:
            gaps.append(gap)
            if need is None:
                need = ema_tail_length(weight, cutoff, gap) or len(times)
            if len(gaps) >= need:
                break
    gaps.reverse()
    return gaps


# I/O strength, the numerator of Eq. 2: E_n * Ibar, divided by the window.
# window = 1 keeps the paper's credit units (the simulator); the agent
# divides by the window, so that strength and IVCredit are shares (0..~1:
# the fraction of the window the vCPU was receiving I/O response events).
def io_strength(events, ibar, window=1):
    if not ibar or events <= 0 or window <= 0:
        return 0.0
    return events * ibar / window


# Eq. 2: IVCredit = E_n * Ibar * consumed / (sum_i cc_i / n)
#        = io_strength * consumed / mean consumed credit of the run-queue
# Reading: the garbled denominator "sum cc_i / n" is the run-queue's MEAN
# consumed credit. Gap 4: ``cap`` > 0 clamps IVCredit to [0, cap].
def ivcredit(strength, consumed, mean_consumed, cap=0):
    if strength <= 0 or consumed <= 0 or mean_consumed <= 0:
        return 0.0
    v = strength * consumed / mean_consumed
    return min(v, cap) if cap > 0 else v


# Eq. 3: c joins the CPU-BOOST group iff
#   (sum_i IVCredit_i / k) * 1 / (IVCredit_c + guard) > 1,
#   k = number of vCPUs of the run-queue with IVCredit > 0.
# Gap 6: k = 0 means no I/O vCPU, so nobody joins (no CPU-BOOST phase).
# Compared as mean > IVCredit_c + guard: the same test without division
# (so guard = 0 is allowed).
def boost_members(ivcredits, guard):
    """Eq. 3 for every vCPU of a run-queue: a list of bools."""
    k = sum(1 for x in ivcredits if x > 0)
    if k == 0:
        return [False] * len(ivcredits)
    mean = sum(ivcredits) / k
    return [mean > x + guard for x in ivcredits]


# Eq. 4: CVCredit = (sum_i IVCredit_i / j) * consumed / default_credit,
#   j = CPU-BOOST group size. Gap 6: j is the FINAL size, so membership
# (Eq. 3) is decided for all vCPUs first (two passes). No cap (paper).
# ``total``: sum(ivcredits) when the caller has it (a run-queue's members
# share it: summing once per tick keeps a tick linear in its vCPUs).
def cvcredit(ivcredits, group_size, consumed, default_credit, total=None):
    if group_size <= 0 or default_credit <= 0 or consumed <= 0:
        return 0.0
    if total is None:
        total = sum(ivcredits)
    return total / group_size * consumed / default_credit


# Credit concealing (2.6): credit = default + IVCredit and endcredit =
# IVCredit, ASSIGNED (no carry-over, Gap 8). A round ends for the vCPU when
# credit < endcredit, so the usable credit, credit - endcredit, is the
# default for every vCPU: IVCredit buys order, not time.
# concealed=False is the naive variant (endcredit 0: IVCredit is extra time).
def conceal(default_credit, ivc, concealed=True):
    """Return (credit, endcredit) after a reallocation."""
    return default_credit + ivc, (ivc if concealed else 0)
