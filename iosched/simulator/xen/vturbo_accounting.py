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
"""vTurbo's two-pool fair-share accounting (seed 001 section 3.3.1), pure.

l VMs with weights wt_i used rd_i of the regular pool and td_i of the
turbo pool in the previous period (any unit: % of a core in Table 3.1,
microseconds in the scheduler):

    C^R = sum rd_i,  C^T = sum td_i,  C_tot = C^R + C^T
    FS_i   = C_tot wt_i / sum wt          (each VM's fair share)
    FS^T_i = C^T wt_i / sum wt            (turbo pool first, fairly)
    FS^R_i = FS_i - td_i                  (the rest from the regular pool)

Algorithm 3 is read by intent: its printed getters are swapped
(``tcore_usage = get_rcore_usage()``); credits = wt (C^R + C^T) / sum wt;
tcredits = td_i (the VM's actual turbo usage) and rcredits = credits -
tcredits = FS^R_i; and the turbo vCPU earns ``vm_vcredits / ratio`` per
turbo quantum (ratio = 30 ms / 0.1 ms = 300), where ``vm_vcredits`` (a
typo) is read as the VM's turbo fair share FS^T_i: the text says FS^T_i
and FS^R_i set each VM's credits in the turbo and the regular pool, and
that the turbo pool is allocated "fairly" first so that no VM's IRQ work
starves. (Reading it as tcredits would hand each turbo vCPU back exactly
what it used, so its credit never moves and its priority is arbitrary.)

Choices:

* *no floor*: FS^R_i may be 0 (Table 3.1 scenario 2: a turbo-heavy VM
  gets no regular share) or negative (a debt); the pools are
  work-conserving, so a 0 share still runs on regular time the others
  leave idle. A floor would break the table and the fairness invariant
  (FS_i in total per VM);
* *Table 3.1's FS^T column is inconsistent*: scenarios 1, 3 and 4 print
  the formula (35/35 in scenario 4) but scenario 2 prints the measured td
  (0/100; the formula gives 50/50). ``allocate`` returns both (``fs_t``
  and ``tcredits``); the consumed columns come out the same either way.

``fluid_period`` is the one-period fluid model of what each VM then
consumes: each pool is shared in proportion to the allocations, capped
by demand, and what a VM leaves goes to the others (work conservation).
"""

import collections

# fs: FS_i; fs_t: FS^T_i; fs_r: FS^R_i (rcredits); tcredits: td_i;
# turbo_per_quantum: FS^T_i / ratio, the turbo vCPU's credit per quantum.
Allocation = collections.namedtuple(
    'Allocation', 'fs fs_t fs_r tcredits turbo_per_quantum')


def _weights(weights, names):
    for name in names:
        w = weights.get(name)
        if isinstance(w, bool) or not isinstance(w, (int, float)) or w <= 0:
            raise ValueError('weights[%r]: %r is invalid; accepted: a '
                             'number > 0' % (name, w))


def _usage(usage):
    for name, pair in usage.items():
        ok = isinstance(pair, tuple) and len(pair) == 2 and all(
            isinstance(v, (int, float)) and not isinstance(v, bool)
            and v >= 0 for v in pair)
        if not ok:
            raise ValueError('usage[%r]: %r is invalid; accepted: a pair '
                             '(regular used, turbo used) of numbers >= 0'
                             % (name, pair))


def allocate(usage, weights, ratio=300):
    """Per VM: FS_i, FS^T_i, FS^R_i, tcredits and turbo credit per quantum.

    ``usage`` maps a VM to (rd_i, td_i) of the previous period,
    ``weights`` a VM to wt_i; ``ratio`` is accounting period / turbo
    quantum. Returns {vm: Allocation}, in ``usage`` order.
    """
    _usage(usage)
    _weights(weights, usage)
    if isinstance(ratio, bool) or not isinstance(ratio, int) or ratio < 1:
        raise ValueError('ratio: %r is invalid; accepted: an integer >= 1 '
                         '(accounting period / turbo quantum)' % (ratio,))
    c_r = sum(rd for rd, _ in usage.values())
    c_t = sum(td for _, td in usage.values())
    w_sum = sum(weights[name] for name in usage)
    out = {}
    for name, (_rd, td) in usage.items():
        w = weights[name]
        fs = (c_r + c_t) * w / w_sum
        fs_t = c_t * w / w_sum
        out[name] = Allocation(fs=fs, fs_t=fs_t, fs_r=fs - td, tcredits=td,
                               turbo_per_quantum=fs_t / ratio)
    return out


# Work-conserving split of one pool: offers in proportion to the shares
# (equal when every share left is <= 0), capped by demand; what a VM does
# not take is offered again to the others until capacity or demand runs out.
def share_pool(capacity, demand, shares):
    """{vm: consumed} for ``capacity`` split by ``shares`` and ``demand``."""
    got = {name: 0.0 for name in demand}
    want = {name: float(d) for name, d in demand.items() if d > 0}
    left = float(capacity)
    while want and left > 1e-9:
        pos = {name: max(0.0, shares.get(name, 0.0)) for name in want}
        total = sum(pos.values())
        if total <= 0:
            pos = {name: 1.0 for name in want}
            total = float(len(want))
        offers = {name: left * pos[name] / total for name in want}
        capped = [name for name in want if want[name] <= offers[name]]
        if not capped:
            for name in want:
                got[name] += offers[name]
            break
        for name in capped:
            got[name] += want[name]
            left -= want[name]
            del want[name]
    return got


def fluid_period(demand, alloc, regular_capacity, turbo_capacity):
    """What each VM consumes in the period after ``alloc``.

    ``demand`` maps a VM to (regular demand, turbo demand); the regular
    pool is shared by FS^R, the turbo pool by FS^T.
    Returns {vm: (regular consumed, turbo consumed)}.
    """
    reg = share_pool(regular_capacity,
                     {k: d[0] for k, d in demand.items()},
                     {k: a.fs_r for k, a in alloc.items()})
    tur = share_pool(turbo_capacity,
                     {k: d[1] for k, d in demand.items()},
                     {k: a.fs_t for k, a in alloc.items()})
    return {k: (reg[k], tur[k]) for k in demand}


def fluid_run(demand, weights, measured, regular_capacity, turbo_capacity,
              periods=1):
    """Iterate allocate -> fluid_period with a one-period lag.

    ``measured`` is the usage of the period before the first; returns the
    list of (allocation, consumed) for each of ``periods`` periods.
    """
    out = []
    usage = dict(measured)
    for _ in range(periods):
        alloc = allocate(usage, weights)
        used = fluid_period(demand, alloc, regular_capacity, turbo_capacity)
        out.append((alloc, used))
        usage = used
    return out
