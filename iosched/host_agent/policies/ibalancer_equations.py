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
"""I-Balancer's equations on KVM, one function each (seed 003).

Eq. 1 (VR/PR, the I/O-intensive class with hysteresis), the masked event
count EN, the EWMA of the inter-event interval EI, Eq. 2 per vCPU, Eqs.
4-5 (the delays of the pairs) and the delay read as a rate cap, which
``policies.ibalancer`` applies every tick. Pure, standard library only;
``params`` is the I-Balancer policy's ``Params``.
"""


# Eq. 1 (VR/PR, %) on KVM: VR is the runtime of run segments in which the
# vCPU handled an I/O event. Reading: each event takes one average run
# segment (CPU per activation, the collector's burst_us), so
# VR ~= min(PR, events x burst); without a burst figure a vCPU with events
# counts VR = PR. A pure I/O vCPU is ~100 %, a CPU burner with no events 0.
def vr_pr(events, pr_s, burst_us):
    if pr_s <= 0 or events <= 0:
        return 0.0
    if burst_us <= 0:
        return 100.0
    return min(100.0, 100.0 * events * burst_us * 1e-6 / pr_s)


# Eq. 1 with hysteresis: in the pool iff VR/PR >= alpha, and a vCPU
# already in it stays while VR/PR >= alpha - h (no flapping at alpha).
def classify(vrpr, was_io, params):
    limit = params.alpha - (params.alpha_hysteresis if was_io else 0.0)
    return vrpr >= limit


# Masking on KVM (window = the agent tick W, period P = S x n): the paper
# counts a vCPU's events until it has run S in the period. Reading
# (events spread evenly over its runtime): EN = events x min(S / PR,
# P / W), i.e. the events of min(S, its runtime in one period). S = 0:
# no masking, EN = events per second.
def masked_en(events, pr_s, window_s, s_ms, period_ms):
    if window_s <= 0:
        return 0.0
    if s_ms <= 0 or pr_s <= 0:
        return events / window_s
    return events * min(s_ms / 1e3 / pr_s, period_ms / 1e3 / window_s)


# EI: EWMA of the inter-event interval (us); a tick's sample is its mean
# interval W / events; the first sample seeds the average.
def ewma(prev, sample, weight):
    return sample if prev is None else weight * sample + (1 - weight) * prev


# Eq. 2, per-vCPU normalised (digest gap 1): D/n = 100 x sum|EN_i - m| /
# (m n) = the relative mean absolute deviation in %, so beta does not
# depend on the pool size. Fewer than 2 vCPUs or m = 0: 0.
def deviation(ens):
    n = len(ens)
    if n < 2:
        return 0.0
    m = sum(ens) / n
    if m <= 0:
        return 0.0
    return 100.0 * sum(abs(e - m) for e in ens) / (m * n)


# Eqs. 4-5, difference reading (digest 2.8): sort by ascending EI (most
# frequent first); targets = the first floor(n/2), references = the last
# floor(n/2) (odd n: the median is untouched); target i is paired with
# reference n-1-i;
#   DRV = mean(EI references) - mean(EI targets)
#   delay_i = base x (EI_(n-1-i) - EI_i) / DRV     (mean over targets = base)
# DRV <= 0 (no heavier group): no delays. Returns (DRV, [(i, j, delay)]).
def delays(eis, base_us):
    order = sorted(range(len(eis)), key=lambda k: (eis[k], k))
    half = len(eis) // 2
    if half == 0:
        return 0.0, []
    tgt = order[:half]
    ref = list(reversed(order))[:half]
    drv = (sum(eis[k] for k in ref) - sum(eis[k] for k in tgt)) / half
    if drv <= 0:
        return drv, []
    return drv, [(t, r, base_us * (eis[r] - eis[t]) / drv)
                 for t, r in zip(tgt, ref)]


# Delay to rate (digest 3): a closed-loop sender of r events/s whose every
# event waits d more sends r' = r / (1 + r d).
def delayed_rate(rate, delay_us):
    return rate / (1.0 + rate * delay_us * 1e-6)


# A VM's delay: its vCPUs' delays weighted by their events (a
# non-target's is 0), i.e. the mean delay of one of the VM's events.
def vm_delay(views):
    total = sum(v.events for v in views)
    if total <= 0:
        return 0.0
    return sum(v.events * v.delay_us for v in views) / total


# The VM's rate fraction for a disk whose natural request rate is r
# (digest 3, "iops x 1/(1 + iops d) for disk"): r'/r = 1 / (1 + r d).
def vm_fraction(rate, delay_us):
    if rate <= 0:
        return 1.0
    return delayed_rate(rate, delay_us) / rate
