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
"""vSlicer's one-core scheduling model (seed 001, Eqs. 2.1-2.12), pure.

m LSVMs and n NLSVMs share one pCPU; an NLSVM runs T_NLSVM (one regular
slice) per round; every NLSVM slice is preceded by a micro-round T_S in
which each LSVM runs T_n, in r microslices of T_m, round-robin. All
functions take and return times in one unit of the caller's choice (the
tests use ms), have no side effects and raise ValueError for input out of
their domain.

The mean waits are for an arrival at a uniformly random time at an LSVM
(or a VM under credit) that is always runnable: it waits for the next
time its VM runs, and a gap of length g between two runs is hit with
probability g / T_P and waits g / 2 on average, so mean = sum(g^2) /
(2 T_P) (the "[derived]" closed forms of digest claim C4).
"""


def _count(field, value, lo, what):
    if isinstance(value, bool) or not isinstance(value, int) or value < lo:
        raise ValueError('%s: %r is invalid; accepted: an integer >= %d (%s)'
                         % (field, value, lo, what))


def _check_mn(m, n, need_m=0):
    _count('m', m, need_m, 'LSVMs on the core')
    _count('n', n, 1, 'NLSVMs on the core')


def _check_pos(field, value):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (
            value <= 0):
        raise ValueError('%s: %r is invalid; accepted: a number > 0'
                         % (field, value))


# Eq. 2.12: n T_S + n T_NLSVM = (m + n) T_NLSVM  =>  T_n = T_NLSVM / n.
def lsvm_time_per_micro_round(t_nlsvm, n):
    """T_n: the CPU time of one LSVM in one micro-round."""
    _check_pos('t_nlsvm', t_nlsvm)
    _check_mn(0, n)
    return t_nlsvm / n


# Eq. 2.12 with Eq. 2.5 (T_S = m T_n): T_S = m T_NLSVM / n.
def micro_round(t_nlsvm, m, n):
    """T_S: the length of one micro-round (all LSVMs' turns)."""
    _check_pos('t_nlsvm', t_nlsvm)
    _check_mn(m, n)
    return m * t_nlsvm / n


# Eqs. 2.7-2.10: T_P = m T_LSVM + n T_NLSVM = (m + n) T_NLSVM.
def period(t_nlsvm, m, n):
    """T_P: one scheduling round; every VM gets T_NLSVM of it (Eq. 2.1)."""
    _check_pos('t_nlsvm', t_nlsvm)
    _check_mn(m, n)
    return (m + n) * t_nlsvm


# Eq. 2.1 / C3: each of the m + n VMs gets T_NLSVM per T_P.
def round_share(m, n):
    """The CPU fraction of each VM, LSVM or NLSVM: 1 / (m + n)."""
    _check_mn(m, n)
    return 1.0 / (m + n)


# Eq. 2.12: r T_m = T_NLSVM / n, with r a whole number of microslices.
def microslices_per_round(t_nlsvm, n, t_m):
    """r: microslices per LSVM per micro-round (T_m must divide T_n)."""
    _check_pos('t_m', t_m)
    t_n = lsvm_time_per_micro_round(t_nlsvm, n)
    r = t_n / t_m
    if abs(r - round(r)) > 1e-9 or round(r) < 1:
        raise ValueError('t_m: %r is invalid; accepted: a whole divisor of '
                         'T_NLSVM / n = %g' % (t_m, t_n))
    return int(round(r))


def is_valid_microslice(t_nlsvm, n, t_m):
    """True when T_m is a whole divisor of T_n = T_NLSVM / n."""
    try:
        microslices_per_round(t_nlsvm, n, t_m)
    except ValueError:
        return False
    return True


def microslice_choices(t_nlsvm, n, unit=1, minimum=1):
    """The valid T_m >= minimum on a grid of ``unit``, largest first."""
    _check_pos('unit', unit)
    t_n = lsvm_time_per_micro_round(t_nlsvm, n)
    out = []
    k = 1
    while t_n / k >= minimum:
        t_m = t_n / k
        if abs(t_m / unit - round(t_m / unit)) < 1e-9:
            out.append(t_m)
        k += 1
    return out


# Latency target inside a micro-round: (m - 1) T_m <= T_l.
def max_microslice(t_l, m):
    """floor(T_l / (m - 1)); None when m = 1 (no other LSVM to wait for)."""
    _check_pos('t_l', t_l)
    _count('m', m, 1, 'LSVMs on the core')
    if m == 1:
        return None
    return t_l // (m - 1)


# Crest of the "wavy line": the NLSVM slice plus the other LSVMs' turns.
def worst_wait(t_nlsvm, m, t_m):
    """Worst-case LSVM wait: T_NLSVM + (m - 1) T_m."""
    _check_pos('t_nlsvm', t_nlsvm)
    _check_pos('t_m', t_m)
    _count('m', m, 1, 'LSVMs on the core')
    return t_nlsvm + (m - 1) * t_m


def best_wait(m, t_m):
    """Best-case LSVM wait (inside a micro-round): (m - 1) T_m."""
    _check_pos('t_m', t_m)
    _count('m', m, 1, 'LSVMs on the core')
    return (m - 1) * t_m


# C1: round-robin of N always-runnable VMs with slice T.
def credit_worst_wait(n_vms, t_slice):
    """(N - 1) T: a VM waits for every other VM's slice."""
    _check_pos('t_slice', t_slice)
    _count('n_vms', n_vms, 1, 'VMs sharing the core')
    return (n_vms - 1) * t_slice


def credit_mean_wait(n_vms, t_slice):
    """(N - 1)^2 T / (2 N): one gap of (N - 1) T per round of N T."""
    _check_pos('t_slice', t_slice)
    _count('n_vms', n_vms, 1, 'VMs sharing the core')
    return (n_vms - 1) ** 2 * t_slice / (2.0 * n_vms)


def vslicer_mean_wait(t_nlsvm, m, n, t_m):
    """Mean wait of an LSVM under the ideal vSlicer schedule.

    Per period: n (r - 1) gaps of (m - 1) T_m inside micro-rounds and n
    gaps of T_NLSVM + (m - 1) T_m across the NLSVM slices, so
    mean = n [(r - 1) ((m - 1) T_m)^2 + (T_NLSVM + (m - 1) T_m)^2]
           / (2 (m + n) T_NLSVM).
    """
    _check_mn(m, n, need_m=1)
    r = microslices_per_round(t_nlsvm, n, t_m)
    inner = (m - 1) * t_m
    across = t_nlsvm + inner
    return n * ((r - 1) * inner ** 2 + across ** 2) / (
        2.0 * (m + n) * t_nlsvm)


# Context switches per period: every microslice of an LSVM when m >= 2
# (consecutive microslices of a lone LSVM are one run), plus every NLSVM
# slice; credit switches once per VM per period.
def switches_per_period(m, n, r):
    """Context switches per T_P under vSlicer (m >= 1, r >= 1)."""
    _check_mn(m, n, need_m=1)
    _count('r', r, 1, 'microslices per micro-round')
    per_round = m * r if m >= 2 else 1
    return n * (per_round + 1)
