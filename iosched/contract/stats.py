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
"""The one percentile of iosched: of a list of samples, and of a histogram.

Every figure called p50, p99, ... (the agent's SLO statistics, the wake-up
self-test, the simulator's probe, the demo's headline, the reproductions,
the benches) comes from here.

Definition: nearest rank. ``q`` is a fraction in [0, 1] (p99 is
``q = 0.99``). Of ``n`` samples sorted ascending ``x_1 <= ... <= x_n``, the
q-quantile is ``x_r`` with

    r = min(n, max(1, ceil(q * n)))

so it is always an observed sample, q = 0 is the smallest and q = 1 the
largest, and the p99 of 1..100 is 99 (the 99th of 100). ``q * n`` is taken
with a relative tolerance of 1e-12, so that a product a rounding error
above a whole number counts as that number (0.07 * 100 is
7.000000000000001 in floating point; p7 of 1..100 is 7, not 8).

Why nearest rank and not linear interpolation: it is what the agent, the
wake-up self-test and ``make demo``'s headline already used, so neither
changes; linear interpolation would have moved every one of them. The
copies it replaces disagreed: ``int(q * n)`` (the simulated self-test, the
scale bench: p99 of 1..100 = 100) and ``round(p * (n - 1))`` (the
side-by-side reproduction: p99 of 1..100 = 99 as here, but p99 of 1..160 =
158 where nearest rank gives 159).

A histogram (``hist_quantile``) has the same rank, placed linearly inside
the bucket that holds it: with ``seen`` requests below the bucket and
``c`` in it, ``lo + (hi - lo) * (r - seen) / c``. q = 1 gives the upper
bound of the highest non-empty bucket; the overflow bucket (above the last
bound) is valued at the last bound.

Inputs, one behaviour for every caller:

* no samples (or a histogram with no count): ``None``, "not measured";
  the caller decides what to show (the demo prints 0.0);
* a NaN sample or count, a negative count: ``ValueError`` naming it;
* ``q`` not a number, NaN, or outside [0, 1]: ``ValueError`` saying what
  is accepted (a percent such as 99 is refused, not read as 0.99).
"""

import math

# Relative tolerance on q * n (see the module docstring).
RANK_TOLERANCE = 1e-12


def _check_q(q):
    if isinstance(q, bool) or not isinstance(q, (int, float)):
        raise ValueError('q %r: not a number; accepted: a fraction in '
                         '[0, 1] (p99 is 0.99)' % (q,))
    if not 0.0 <= q <= 1.0:      # False for NaN too
        raise ValueError('q %r: outside [0, 1]; accepted: a fraction in '
                         '[0, 1] (p99 is 0.99, not 99)' % (q,))


def rank(q, n):
    """The nearest rank (1-based) of the q-quantile of ``n`` >= 1 items."""
    _check_q(q)
    return min(n, max(1, math.ceil(q * n * (1.0 - RANK_TOLERANCE))))


def percentile(samples, q):
    """The q-quantile (nearest rank, ``q`` in [0, 1]) of ``samples``, as a
    float; None when there are none. ``samples`` need not be sorted.
    """
    ordered = sorted(samples)
    _check_q(q)
    if not ordered:
        return None
    if any(v != v for v in ordered):
        raise ValueError('samples: NaN among %d samples; accepted: numbers'
                         % len(ordered))
    return float(ordered[rank(q, len(ordered)) - 1])


def hist_quantile(counts, q, bounds):
    """The q-quantile (``q`` in [0, 1]) of a histogram, in the unit of
    ``bounds``, interpolated inside its bucket; None when it is empty.

    ``bounds`` are the buckets' upper bounds, ascending; ``counts[k]``
    items fell in (bounds[k-1], bounds[k]] (bucket 0 from 0), and
    ``counts[len(bounds)]``, if present, above the last bound.
    """
    _check_q(q)
    if len(counts) > len(bounds) + 1:
        raise ValueError('counts: %d buckets for %d bounds; accepted: at '
                         'most one bucket per bound plus the overflow'
                         % (len(counts), len(bounds)))
    for k, c in enumerate(counts):
        if not c >= 0:           # negative or NaN
            raise ValueError('counts[%d] %r: accepted: a count >= 0'
                             % (k, c))
    n = sum(counts)
    if n <= 0:
        return None
    r = rank(q, n)
    seen = 0
    for k, c in enumerate(counts):
        if c <= 0:
            continue
        if seen + c >= r:
            if k >= len(bounds):
                return float(bounds[-1])
            hi = bounds[k]
            if q >= 1.0:
                return float(hi)
            lo = bounds[k - 1] if k > 0 else 0
            return lo + (hi - lo) * (r - seen) / float(c)
        seen += c
    return None
