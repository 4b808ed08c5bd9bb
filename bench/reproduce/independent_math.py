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
"""Closed forms derived by hand from the seed papers' own equations.

The independent checks (``bench.reproduce.independent``) compare these
with what the simulator measures in the same setting. Nothing here
imports the simulator or its models: each function restates a paper's
equation (number cited) and the algebra for one scenario, so a bug in a
model's transcription of the equation shows up as a mismatch instead of
being repeated on both sides. Units are those of each docstring.
"""

import math

# Xen Credit's slice (seeds 001 and 003): T_NLSVM = 30 ms.
CREDIT_SLICE_MS = 30.0


# -- seed 001, vSlicer (ch. 2) ------------------------------------------------

def credit_mean_wait_ms(n_vms, slice_ms=CREDIT_SLICE_MS):
    """Credit, Fig. 2.2: N always-runnable VMs take turns of one slice T.

    A request at a uniformly random time finds its VM running with
    probability 1/N (no wait); otherwise the VM's next turn starts
    uniformly within the (N - 1) T it waits, mean (N - 1) T / 2. Mean wait
    = (N - 1)^2 T / (2 N).
    """
    return (n_vms - 1) ** 2 * slice_ms / (2.0 * n_vms)


def vslicer_worst_wait_ms(m, t_m_ms, t_nlsvm_ms=CREDIT_SLICE_MS):
    """vSlicer, Eq. 2.12 and the "wavy line" crest: after its last
    microslice of a micro-round an LSVM waits for the m - 1 other LSVMs'
    microslices and one NLSVM slice: T_NLSVM + (m - 1) T_m.
    """
    return t_nlsvm_ms + (m - 1) * t_m_ms


def vslicer_best_wait_ms(m, t_m_ms):
    """vSlicer inside a micro-round (round robin of m LSVMs in
    microslices): (m - 1) T_m, the paper's latency bound T_l.
    """
    return (m - 1) * t_m_ms


def vslicer_mean_wait_ms(m, n, t_m_ms, t_nlsvm_ms=CREDIT_SLICE_MS):
    """vSlicer's mean wait of an always-runnable LSVM for a request at a
    uniformly random time (Eqs. 2.4-2.12, the schedule of Figs. 2.6-2.7).

    One micro-round plus one NLSVM slice is a block of m T_n + T_NLSVM
    (T_n = T_NLSVM / n = r T_m). In it the LSVM runs r microslices; the
    gaps between them are r - 1 of (m - 1) T_m and one of (m - 1) T_m +
    T_NLSVM (the NLSVM slice). A uniform arrival lands in a gap of length
    g with probability g / block and then waits g / 2 on average: mean =
    sum g^2 / (2 block). m = 1: the microslices run back to back (one gap
    of T_NLSVM), 15 n / (n + 1) ms.
    """
    t_n = t_nlsvm_ms / n
    if m == 1:
        gaps = [t_nlsvm_ms]
    else:
        r = int(round(t_n / t_m_ms))
        gaps = [(m - 1) * t_m_ms] * (r - 1) + [(m - 1) * t_m_ms + t_nlsvm_ms]
    block = m * t_n + t_nlsvm_ms
    return sum(g * g for g in gaps) / (2.0 * block)


def vslicer_share(m, n):
    """vSlicer, Eqs. 2.1 and 2.7-2.10: T_LSVM = T_NLSVM and T_P =
    (m + n) T_NLSVM, so every VM gets 1 / (m + n) of the core.
    """
    return 1.0 / (m + n)


def vslicer_microslice_valid(n, t_m_ms, t_nlsvm_ms=CREDIT_SLICE_MS):
    """Eq. 2.12's constraint: T_m divides T_n = T_NLSVM / n."""
    t_n = t_nlsvm_ms / n
    r = t_n / t_m_ms
    return t_m_ms > 0 and abs(r - round(r)) < 1e-9 and round(r) >= 1


# -- seed 001, vTurbo (ch. 3, section 3.3.1) ----------------------------------

def vturbo_regular_shares(turbo_used, regular_used, weights=None):
    """vTurbo's two-pool fair share (section 3.3.1) for one period.

    ``turbo_used`` td_i and ``regular_used`` rd_i (% of a core, measured
    in the previous period): C_tot = sum rd + sum td, FS_i = C_tot wt_i /
    sum wt, FS^R_i = FS_i - td_i. Returns [FS^R_i]: with every VM's
    regular demand above its FS^R (CPU-bound regular vCPUs), each one's
    regular consumption in steady state.
    """
    n = len(turbo_used)
    w = list(weights) if weights is not None else [1.0] * n
    c_tot = sum(regular_used) + sum(turbo_used)
    return [c_tot * wi / sum(w) - td for wi, td in zip(w, turbo_used)]


def vturbo_udp_mbps(line_mbps, sock_bytes, regular_share,
                    slice_ms=CREDIT_SLICE_MS):
    """Section 3.3.2's buffer law below B x delay.

    The turbo core moves every packet into the guest's socket buffer at
    once; the application on the regular vCPU drains it only while that
    vCPU runs, one slice T per turn, a share f of the core: one turn every
    T / f. During a turn nothing is lost (the buffer empties and arrivals
    are read); between turns the buffer fills at line rate B and what
    exceeds its size S is dropped. Per cycle min(B T / f, S + B T) is
    delivered: throughput min(B, (S + B T) f / T). With f = 1 / k this
    needs S >= B (k - 1) T, the paper's B_min.
    """
    b_bytes_ms = line_mbps * 1e6 / 8.0 / 1000.0
    per_cycle = sock_bytes + b_bytes_ms * slice_ms
    return min(line_mbps, per_cycle * regular_share / slice_ms
               * 8.0 * 1000.0 / 1e6)


# -- seed 000, ISACS ----------------------------------------------------------

def isacs_strength_per_round_us(round_us, period_us, cutoff_us=10000):
    """ISACS Eq. 1 for a periodic trace: E_n events (round / period) at
    constant interval I_e = period; the EMA of a constant is the constant,
    so I_e-bar = period and E_n x I_e-bar = the round length. An interval
    above the 10 ms cut-off is never used: strength 0.
    """
    if period_us > cutoff_us:
        return 0.0
    return (round_us / period_us) * period_us


def isacs_ivcredit_per_round_us(n_vcpus, rho, round_us):
    """ISACS Eq. 2 for one I/O vCPU on a run-queue kept busy by n_vcpus.

    IVCredit = E_n I-bar x consumed / (sum cc_i / n). With a busy pCPU
    the run-queue's vCPUs consume the whole round: sum cc_i = round, so
    the mean is round / n. A vCPU that wakes every period for burst us of
    CPU consumes rho x round (rho = burst / period). With E_n I-bar =
    round (Eq. 1 above): IVCredit = round x rho round / (round / n) =
    n rho round (other I/O vCPUs enter only through n).
    """
    return n_vcpus * rho * round_us


def isacs_boost_members(ivcredits):
    """ISACS Eq. 3: c joins the CPU-BOOST group iff (sum IVCredit / k) /
    (IVCredit_c + 1) > 1, k = vCPUs with IVCredit > 0 (credit in us; the
    +1 is a division guard, negligible). Returns the member count.
    """
    pos = [x for x in ivcredits if x > 0]
    if not pos:
        return 0
    mean = sum(pos) / len(pos)
    return sum(1 for x in ivcredits if mean / (x + 1e-3) > 1.0)


def isacs_fixed_point(k_cpu, rho, default_us=10000.0, iters=200):
    """ISACS Eqs. 1-4 for one I/O vCPU (CPU share rho = burst / period)
    and k CPU-bound vCPUs on one busy pCPU, with ideal accounting (every
    vCPU burns exactly what the equations grant).

    Per round each CPU-bound vCPU burns its usable default credit D
    (concealing, section 2.6) and its CVCredit x in the CPU-BOOST phase;
    the I/O vCPU rho R: R = k (D + x) + rho R. Eqs. 1-2 give IVCredit =
    (k + 1) rho R (see ``isacs_ivcredit_per_round_us``); Eq. 3 puts the k
    CPU-bound vCPUs in the group; Eq. 4 gives x = IVCredit / k x (D + x)
    / D (consumed: the round's whole consumption). Returns (R, IVCredit,
    k x) in us, or None when the iteration diverges (more CVCredit, more
    consumption, more IVCredit: no finite round).
    """
    x = 0.0
    r_us = ivc = 0.0
    for _ in range(iters):
        r_us = k_cpu * (default_us + x) / (1.0 - rho)
        ivc = (k_cpu + 1) * rho * r_us
        nxt = ivc / k_cpu * (default_us + x) / default_us
        if nxt > 100 * default_us:
            return None
        if abs(nxt - x) < 1e-9:
            x = nxt
            break
        x = nxt
    return r_us, ivc, k_cpu * x


def isacs_max_io_share(k_cpu):
    """The largest CPU share rho of the I/O vCPU for which
    ``isacs_fixed_point`` has a finite round.

    With y = D + x the fixed point reads a y^2 - y + D = 0, a = (k + 1)
    rho / (D (1 - rho)): a real root needs 4 a D <= 1, i.e. (k + 1) rho /
    (1 - rho) <= 1/4, rho <= 1 / (4 k + 5). Beyond it the uncapped
    IVCredit (the paper states no cap) and a consumption that counts the
    CPU-BOOST phase feed each other and every round is longer than the
    last.
    """
    return 1.0 / (4 * k_cpu + 5)


def isacs_cvcredit_over_ivcredit(consumed_us, default_us=10000.0):
    """ISACS Eq. 4 summed over a CPU-BOOST group of j members that each
    consumed the same credit c in the round: sum_j (sum IVC / j) c / D =
    sum IVC x c / D. The ratio sum CVCredit / sum IVCredit is c / D.
    """
    return consumed_us / default_us


# -- seed 002, Flubber --------------------------------------------------------

def flubber_proportions(b_iops):
    """Flubber Eq. 1: c_i / c_j = B_i / B_j in lowest terms (integer B)."""
    g = 0
    for b in b_iops:
        g = math.gcd(g, int(b))
    return [int(b) // g for b in b_iops]


def flubber_shares(b_iops):
    """Eq. 1 with replenishment on turn-round (section 2.3.2, event 1):
    every backlogged VM dispatches exactly a_i = beta c_i per round, so
    its share of the requests is c_i / sum c (beta cancels).
    """
    c = flubber_proportions(b_iops)
    return [x / float(sum(c)) for x in c]


def flubber_bd_burst_ms(l_other_ms, svc_ms, m_ms=9.0, tail_ms=0.45,
                        think_ms=0.1):
    """BD-EDF (Eqs. 5-6, Algorithm 2) with two one-thread VMs.

    While VM X is served, the other VM's queued request waits until its
    deadline t + L - M (Eq. 5) minus max_size / Trans (Eq. 6, 44 KiB at
    100 MB/s: 0.45 ms), since X's next request always comes from the same
    VM (a wait success). That request arrived ``think_ms`` after X's burst
    began; X's request in service when the window closes still completes
    (on average half a cycle of svc + think later). X's burst lasts
    think + L_other - M - tail + (svc + think) / 2.
    """
    return (think_ms + l_other_ms - m_ms - tail_ms
            + (svc_ms + think_ms) / 2.0)


def flubber_bd_completions(l_other_ms, svc_ms, switch_ms, think_ms=0.1):
    """Requests of X per burst: the first (queued, dispatched at once,
    with the long seek into X's image: ``switch_ms``), then one per
    svc + think (the next request is issued after a think time).
    """
    burst = flubber_bd_burst_ms(l_other_ms, svc_ms, think_ms=think_ms)
    return 1.0 + (burst - switch_ms) / (svc_ms + think_ms)


def flubber_bd_iops_ratio(l_a_ms, l_b_ms, svc_ms, switch_ms):
    """Completions of A over B: requests per burst of A (which lasts
    while B's request waits, so set by L_B) over those of B.
    """
    return (flubber_bd_completions(l_b_ms, svc_ms, switch_ms)
            / flubber_bd_completions(l_a_ms, svc_ms, switch_ms))


def flubber_bd_max_latency_ms(l_ms, svc_max_ms, m_ms=9.0, tail_ms=0.45,
                              think_ms=0.1):
    """A bound on a VM's latency under the same schedule: its waiting
    request is held until deadline - tail (L - M - tail after arrival),
    then for the other VM's request in service and its think time, then
    its own service: L - M - tail + think + 2 svc_max.
    """
    return l_ms - m_ms - tail_ms + think_ms + 2.0 * svc_max_ms


# -- seed 003, I-Balancer -----------------------------------------------------

def ibalancer_delay_example():
    """Eq. 5 (difference reading of Eq. 4), the digest's worked example:
    periods 100, 150, 300, 450 us; targets V1, V2; DRV = (300 + 450) / 2 -
    (100 + 150) / 2 = 250 us; delay_1 = 200 (450 - 100) / 250 = 280 us,
    delay_2 = 200 (300 - 150) / 250 = 120 us.
    """
    ei = [100.0, 150.0, 300.0, 450.0]
    drv = (ei[2] + ei[3]) / 2.0 - (ei[0] + ei[1]) / 2.0
    return [200.0 * (ei[3] - ei[0]) / drv, 200.0 * (ei[2] - ei[1]) / drv]


def ibalancer_window_mb_s(delay_us, window, cpu_us, rtt_us, kb):
    """Algorithm 3 step 6 on Fig. 8's iperf sender (no CPU contention).

    Each event is computed (``cpu_us`` of the sender's CPU), sent, held
    ``delay_us`` before it reaches dom0, and holds one of ``window``
    slots until its completion is handled (``rtt_us``: dom0, wire, IRQ).
    A slot freed while the window is full lets the sender start the next
    event, so a slot cycles in cpu + delay + rtt: the rate is
    min(1 / cpu, window / (cpu + delay + rtt)) events per us, kb KiB each;
    MB/s (10^6 bytes).
    """
    per_us = min(1.0 / cpu_us,
                 window / float(cpu_us + rtt_us + delay_us))
    return per_us * kb * 1024.0


def ibalancer_busy_mb_s(delay_us, cpu_us, kb):
    """The other reading of step 6: the sender's vCPU spins for the delay
    after each send, so an event costs cpu + delay of its CPU; with a
    window wide enough (window / (cpu + delay + rtt) above it) the rate
    is 1 / (cpu + delay) events per us. MB/s.
    """
    return kb * 1024.0 / (cpu_us + delay_us)


def ibalancer_events_per_window(slice_us, cpu_us, busy_us=0):
    """Algorithms 1-2: EN counts the events a vCPU sends until its pure
    run time PR reaches one slice (then it is MASKING). A sender whose
    run time is all event work spends cpu (+ a busy delay) per event:
    EN = slice / (cpu + busy). A non-blocking delay does not enter: the
    sender sleeps, its PR does not grow, so EN is the same.
    """
    return slice_us / float(cpu_us + busy_us)


def ibalancer_deviation(counts):
    """Eq. 2's D in the per-vCPU reading: 100 mean|EN_i - mean| / mean
    (the printed sum is n times this).
    """
    mean = sum(counts) / float(len(counts))
    return 100.0 * sum(abs(c - mean) for c in counts) / len(counts) / mean


# -- seed 004, VA-CFQ ---------------------------------------------------------

def va_fair_share(n_vms):
    """VA-CFQ (section 2.6): one integrated queue per VM, served round
    robin with the same per-turn allowance: each of n backlogged VMs
    gets 1 / n of the disk's dispatches.
    """
    return 1.0 / n_vms


def va_finish_ratio(n_vms):
    """With equal shares and equal work (one dd of the same size each),
    every VM finishes in the same turn: slowest / fastest = 1 (the
    paper's fairness measures, section 2.7: SD 0, ratio 1).
    """
    del n_vms
    return 1.0
