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
"""Wake-to-run delays as a log-linear histogram (vSlicer's seen W).

Description:
    A delay of ``d`` ns falls in bucket ``d`` while ``d < 2 ** (BITS +
    1)``; above, bucket ``(e - BITS + 1) << BITS | m``, with ``e`` the
    position of d's top bit and ``m`` the ``BITS`` bits below it: 16
    buckets per power of two, each at most 1/16 (6.25 %) of its lower
    bound wide. The last bucket also takes every longer delay (>= 2 ** 35
    ns, 34 s). The libvirt driver's eBPF tracer bins in the kernel with
    this rule (``drivers/libvirt/bpf_tracer``); a driver that has the
    delays themselves bins them with ``bucket``. A histogram travels as
    ``((bucket, count), ...)``, the non-empty buckets ascending.

    ``quantile`` reads the nearest-rank q-quantile (``stats.rank``) of a
    histogram as the largest delay its bucket holds: never below the
    exact nearest-rank figure of the same delays, at most 6.25 % above it
    (exact below 32 ns).

Requirements:
    Standard library only; no I/O, no clock.
"""

import operator

from iosched.contract import stats

BITS = 4
BUCKETS = 512
_EXACT = 1 << (BITS + 1)
_MASK = (1 << BITS) - 1
_COUNT = operator.itemgetter(1)


def bucket(ns):
    """The bucket of a delay (ns, an int >= 0; negative: bucket 0)."""
    d = int(ns)
    if d < _EXACT:
        return max(d, 0)
    e = d.bit_length() - 1
    k = ((e - BITS + 1) << BITS) | ((d >> (e - BITS)) & _MASK)
    return min(k, BUCKETS - 1)


def upper_ns(k):
    """The largest delay (ns) bucket ``k`` holds (the last: its range's)."""
    if k < _EXACT:
        return k
    e = (k >> BITS) + BITS - 1
    shift = e - BITS
    return ((((1 << BITS) | (k & _MASK)) + 1) << shift) - 1


def of_delays(delays_ns):
    """The sparse histogram of some delays (ns)."""
    counts = {}
    for d in delays_ns:
        k = bucket(d)
        counts[k] = counts.get(k, 0) + 1
    return tuple(sorted(counts.items()))


def total(hist):
    """The delays in a sparse histogram."""
    return sum(map(_COUNT, hist))


def quantile(counts, q, n=None):
    """The nearest-rank q-quantile (ns) of dense ``counts`` (a count per
    bucket, ``n`` their sum if known), as its bucket's largest delay; None
    when empty.
    """
    if n is None:
        n = sum(counts)
    if n <= 0:
        return None
    r = stats.rank(q, n)
    seen = 0
    for k, c in enumerate(counts):
        seen += c
        if seen >= r:
            return upper_ns(k)
    return upper_ns(len(counts) - 1)
