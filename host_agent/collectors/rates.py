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
"""Pure helpers turning cumulative counters into rates and I/O strength.

No I/O, no clock: inputs are numbers and tuples, outputs are numbers.
"""

import math


def delta(prev, cur):
    """cur - prev, or None when the counter went backwards (VM restart)."""
    if prev is None or cur is None or cur < prev:
        return None
    return cur - prev


def rate(prev, cur, dt):
    """Per-second rate of a cumulative counter; None when undefined."""
    d = delta(prev, cur)
    if d is None or dt <= 0:
        return None
    return d / dt


# ISACS Eq. 1 (seed 000, 2.2), per window:
#   I_e   = t_e - t_{e-1}                      (gap between response events)
#   I_bar = w * I_e + (1 - w) * I_bar          (w = 0.9: newest weighs most)
#   a gap > cutoff (10 ms) is not used, and the interval clock restarts at t_e
#   E_n   = number of events in the window (all of them)
# NOTE(iosched): events with the same timestamp are one delivery: a Xen
# event channel is a pending bit (notifications coalesce until the upcall)
# and a virtio interrupt hands over every completed request of the used
# ring. Counting them apart adds zero gaps that, at w = 0.9, drive I_bar to
# ~0 for throttled disks whose completions arrive in clumps (measured on the
# embedded default: a 970 IOPS vCPU classed idle).
# NOTE(iosched): the paper leaves I_bar's start value unstated; starting at 0
# would report 0.9 of the gap for a window with two events, so the first
# usable gap seeds the average. The window restarts the average, as ISACS
# re-initialises the event data at every credit reallocation.
def ema_gap(events_ns, weight=0.9, cutoff_ns=10_000_000):
    """Return (E_n, I_bar in ns) for sorted event timestamps of a window."""
    n = 0
    ibar = None
    last = None
    for t in events_ns:
        if t == last:
            continue          # same delivery
        n += 1
        if last is not None:
            gap = t - last
            if 0 < gap <= cutoff_ns:
                ibar = gap if ibar is None else (
                    weight * gap + (1.0 - weight) * ibar)
        last = t
    return n, (ibar or 0.0)


# Estimator when only a wake-up counter exists (no timestamps): assume the n
# events of the window arrived as a Poisson stream of rate lam = n / window.
# The expected gap, given it is kept (<= cutoff c), is
#   E[g | g <= c] = 1/lam - c * exp(-lam c) / (1 - exp(-lam c))
# and E_n * I_bar is estimated as n * E[g | g <= c]. For a steady stream
# this matches the exact definition; bursty streams are underestimated.
def estimate_ema_gap(n, window_ns, cutoff_ns=10_000_000):
    """Return (E_n, estimated I_bar in ns) from an event count alone."""
    if n <= 1 or window_ns <= 0:
        return n, 0.0
    lam = n / window_ns
    x = lam * cutoff_ns
    if x < 1e-9:
        return n, 0.0
    tail = math.exp(-x)
    kept_mean = 1.0 / lam - cutoff_ns * tail / (1.0 - tail)
    return n, max(0.0, kept_mean)


def io_strength(events, ibar_ns, window_ns):
    """E_n * I_bar normalised by the window: fraction of the window the
    vCPU was receiving I/O response events (0..~1)."""
    if window_ns <= 0:
        return 0.0
    return events * ibar_ns / window_ns


# ISACS Eq. 2: IVCredit = E_n * I_bar * consumed_i / mean(consumed).
# We keep io_strength's normalisation, so IVCredit is dimensionless too.
def ivcredit(strength, consumed, mean_consumed):
    if mean_consumed <= 0:
        return 0.0
    return strength * consumed / mean_consumed


def classify(strength, run_share, io_threshold, cpu_threshold,
             idle_threshold):
    """Class of a vCPU from its I/O strength and run share.

    io     strength >= io_threshold and run_share <  cpu_threshold
    mixed  strength >= io_threshold and run_share >= cpu_threshold
    cpu    strength <  io_threshold and run_share >= idle_threshold
    idle   otherwise
    """
    if strength >= io_threshold:
        return 'mixed' if run_share >= cpu_threshold else 'io'
    return 'cpu' if run_share >= idle_threshold else 'idle'


def percentile(values, p):
    """Nearest-rank percentile (p in 0..100) of a sequence; 0.0 if empty."""
    if not values:
        return 0.0
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, math.ceil(p / 100.0 * len(ordered)) - 1))
    return float(ordered[k])
