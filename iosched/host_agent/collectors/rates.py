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
"""Pure helpers turning cumulative counters into rates, and vCPU classes.

No I/O, no clock: inputs are numbers and tuples, outputs are numbers.
ISACS's Eqs. 1-2 (E_n, I_bar, I/O strength, IVCredit) are
``iosched.contract.isacs``; what is here is the agent's own: counter
deltas, the estimate of E_n * I_bar from a wake-up count alone, which
count is E_n (wake-ups or the VM's requests), and the class of a vCPU.
"""

import math

from iosched.contract import isacs
from iosched.contract import payload_sections


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


# ISACS Eq. 1 estimated when only a wake-up counter exists (no timestamps
# for iosched.contract.isacs.ema_gap): assume the n events of the window
# arrived as a Poisson stream of rate lam = n / window.
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


def classify(strength, run_share, io_threshold, cpu_threshold,
             idle_threshold):
    """Class of a vCPU from its I/O strength and run share.

    io     strength >= io_threshold and run_share <  cpu_threshold
    mixed  strength >= io_threshold and run_share >= cpu_threshold
    cpu    strength <  io_threshold and run_share >= idle_threshold
    idle   otherwise
    """
    if strength >= io_threshold:
        return (payload_sections.KLASS_MIXED if run_share >= cpu_threshold
                else payload_sections.KLASS_IO)
    return (payload_sections.KLASS_CPU if run_share >= idle_threshold
            else payload_sections.KLASS_IDLE)


# The I/O events of one vCPU over a window (MIN_WAKEUPS_PER_REQUEST in
# iosched.contract.isacs, the one place of that constant):
#   r = VM requests / vCPUs of the VM
#   E_n = r          ('requests') if r > 0 and wakeups < MIN_W * r
#   E_n = wakeups    ('wakeups')  otherwise (also: no request count)
def request_events(wakeups, requests, n_vcpus,
                   min_wakeups=isacs.MIN_WAKEUPS_PER_REQUEST):
    """Return (events (int), source, requests per vCPU)."""
    if requests is None or requests <= 0 or n_vcpus <= 0:
        return wakeups, 'wakeups', 0.0
    per = requests / float(n_vcpus)
    if wakeups < min_wakeups * per:
        return int(round(per)), 'requests', per
    return wakeups, 'wakeups', per
