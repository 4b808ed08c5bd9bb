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
"""I-Balancer's equations (seed 003, digest sections 2.3-2.9), pure.

Readings of the paper's gaps (digest section 6), each one a choice:

* EI is an EWMA of the inter-event *interval* in us (weight ``w`` on the
  newest sample, initialised at the first interval); sorting by
  ascending EI is sorting by descending event frequency;
* Eq. 2 is normalised per vCPU: D = 100 * mean|EN_i - mean(EN)| / mean(EN)
  (the printed sum grows with n for the same imbalance);
* Eq. 4 is the difference of the group means ("period difference");
  the printed product is dimensionally wrong (us^2);
* n odd: floor(n/2) targets, the median vCPU is left alone; DRV <= 0
  (no heavier group) gives no delay.
"""

ALPHA = 30.0            # Eq. 1 threshold (percent), the paper's value
BASE_DELAY_US = 200.0   # Eq. 5 base constant, the paper's value


def ewma(prev, sample, w):
    """EI update: EI <- EI + w * (interval - EI); the first sample seeds it.

    ``w`` in (0, 1]; ``prev`` None means no interval seen yet.
    """
    if not 0.0 < w <= 1.0:
        raise ValueError('EWMA weight w: %r is invalid; accepted: '
                         '0 < w <= 1' % (w,))
    if prev is None:
        return float(sample)
    return prev + w * (sample - prev)


def io_intensive(vr_us, pr_us, alpha=ALPHA):
    """Eq. 1: type = I/O iff 100 * VR / PR >= alpha (PR = 0: CPU)."""
    if pr_us <= 0:
        return False
    return 100.0 * vr_us / pr_us >= alpha


def deviation(counts):
    """Eq. 2, normalised: D = 100 * (1/n) * sum|EN_i - mean| / mean.

    The paper's printed D (a sum over i) is ``n * deviation(counts)``.
    Empty or all-zero counts give 0 (nothing to balance).
    """
    n = len(counts)
    if n == 0:
        return 0.0
    m = sum(counts) / n
    if m <= 0:
        return 0.0
    return 100.0 * sum(abs(c - m) for c in counts) / n / m


def trigger(counts, beta):
    """Eq. 2: Trigger = 1 iff D > beta (normalised D, see ``deviation``)."""
    return deviation(counts) > beta


def period_us(slice_us, n):
    """Eq. 3: control period = DEFAULT_TIMESLICE x n (n >= 1)."""
    return slice_us * max(1, n)


def sort_and_pair(ei):
    """Stage 2: order by event frequency, highest first (ascending EI).

    ``ei`` maps key -> EI (us). Returns (order, pairs) with
    pairs = [(V_i, V_{n-i+1}) for i = 1..floor(n/2)]; the first of each
    pair is a target. Ties break by key so a run is deterministic.
    """
    order = sorted(ei, key=lambda k: (ei[k], k))
    n = len(order)
    pairs = [(order[i], order[n - 1 - i]) for i in range(n // 2)]
    return order, pairs


def drv(ei_sorted):
    """Eq. 4, difference reading: mean(EI of non-targets) - mean(EI of
    targets), over the floor(n/2) top and bottom (median left out).
    """
    n = len(ei_sorted)
    h = n // 2
    if h == 0:
        return 0.0
    top = ei_sorted[:h]
    bottom = ei_sorted[n - h:]
    return sum(bottom) / h - sum(top) / h


def drv_product(ei_sorted):
    """Eq. 4 as printed (product of the group means, us^2): for the
    record and the tests only; its delays are sub-microsecond.
    """
    n = len(ei_sorted)
    h = n // 2
    if h == 0:
        return 0.0
    return (sum(ei_sorted[:h]) / h) * (sum(ei_sorted[n - h:]) / h)


def delays(ei_sorted, base_us=BASE_DELAY_US):
    """Eq. 5: delay_i = base * (EI_{n-i+1} - EI_i) / DRV, i = 1..n/2.

    ``ei_sorted`` ascending (most frequent first). Returns the list of
    floor(n/2) target delays (us); all zero when DRV <= 0. Their mean is
    ``base_us`` whenever DRV > 0 (sum of pair gaps = (n/2) * DRV).
    """
    n = len(ei_sorted)
    h = n // 2
    d = drv(ei_sorted)
    if d <= 0:
        return [0.0] * h
    return [base_us * (ei_sorted[n - 1 - i] - ei_sorted[i]) / d
            for i in range(h)]
