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
"""ISACS equations (seed 000, sections 2.2-2.8), pure functions.

No clock, no I/O: the scheduler model ``iosched.simulator.xen.isacs`` calls these
at each event and each credit reallocation. Every function works in one
credit unit (microseconds in the simulator; Xen uses ns). The readings
match the agent's KVM policy (``host_agent/policies/isacs.py``,
docs/isacs.md) where they apply; the simulator may not import it.
"""

# Eq. 3's "+1" is 1 ns of credit against Credit2's 10 ms default credit:
# a division guard, scaled with the unit (same reading as the agent).
GUARD_PER_DEFAULT_CREDIT = 1e-7


# Eq. 1 (EVENT CHECKER), one I/O response event at time t:
#   I_e = t - t_prev;  Ibar = w * I_e + (1 - w) * Ibar   (w = 0.9: the
#   printed constant weighs the NEWEST interval; kept, configurable).
# Readings (Gap 3), as the agent's collectors/rates.ema_gap:
# * an event at the same time as the previous one is the same delivery
#   (a pending event-channel bit): not counted, no interval;
# * every other event counts in E_n, also after a long silence;
# * an interval > cutoff (10 ms) is not used and the clock restarts
#   (t_prev = t), so sparse events give Ibar = None (0) and no IVCredit;
# * Ibar starts unset (None); the first usable interval seeds it.
def observe(events, t_prev, ibar, t, weight=0.9, cutoff=10000):
    """One event at t. Return the new (events, t_prev, ibar)."""
    if t_prev is not None and t == t_prev:
        return events, t_prev, ibar
    if t_prev is not None:
        gap = t - t_prev
        if 0 < gap <= cutoff:
            ibar = gap if ibar is None else weight * gap + (1 - weight) * ibar
    return events + 1, t, ibar


# Eq. 2: IVCredit = E_n * Ibar * consumed / (sum_i cc_i / n)
# Readings: the garbled denominator is the run-queue's MEAN consumed credit
# (as the agent); a mean <= 0 gives 0; Ibar None (no usable interval) is 0.
# Gap 4: the paper has no cap; ``cap`` > 0 clamps IVCredit to [0, cap]
# (the model's default cap is one default credit, 10 ms).
def ivcredit(events, ibar, consumed, mean_consumed, cap=0):
    if mean_consumed <= 0 or not ibar or events <= 0 or consumed <= 0:
        return 0.0
    v = events * ibar * consumed / mean_consumed
    return min(v, cap) if cap > 0 else v


# Eq. 3: c joins the CPU-BOOST group iff
#   (sum_i IVCredit_i / k) * 1 / (IVCredit_c + guard) > 1,
#   k = number of vCPUs of the run-queue with IVCredit > 0.
# Gap 6: k = 0 means no I/O vCPU, so nobody joins (no CPU-BOOST phase).
# Compared as mean > IVCredit_c + guard: the same test without division.
def boost_members(ivcredits, guard):
    """Eq. 3 for every vCPU of a run-queue: a list of bools."""
    k = sum(1 for x in ivcredits if x > 0)
    if k == 0:
        return [False] * len(ivcredits)
    mean = sum(ivcredits) / k
    return [mean > x + guard for x in ivcredits]


# Eq. 4: CVCredit = (sum_i IVCredit_i / j) * consumed / default_credit,
#   j = CPU-BOOST group size. Gap 6: j is the FINAL size, so membership
# (Eq. 3) is decided for all vCPUs first (two passes); j = 0 or a default
# credit <= 0 gives 0.
def cvcredit(ivcredits, group_size, consumed, default_credit):
    if group_size <= 0 or default_credit <= 0 or consumed <= 0:
        return 0.0
    return sum(ivcredits) / group_size * consumed / default_credit


# Credit concealing (2.6): credit = default + IVCredit and endcredit =
# IVCredit, ASSIGNED (no carry-over, Gap 8). The usable credit, credit -
# endcredit, is the default for every vCPU: IVCredit buys order, not time.
# conceal=False is the naive variant (endcredit 0: IVCredit is extra time).
def conceal(default_credit, ivc, concealed=True):
    """Return (credit, endcredit) after a reallocation."""
    return default_credit + ivc, (ivc if concealed else 0)


def reallocate(rows, default_credit, cap=0, guard=None):
    """Eqs. 2-4 for one run-queue at a reallocation.

    ``rows``: (E_n, Ibar or None, consumed credit) per vCPU assigned to
    the run-queue (n counts blocked vCPUs too, as Credit2's svc list).
    Return (ivcredits, members, cvcredits, io_load).
    """
    n = len(rows)
    if guard is None:
        guard = GUARD_PER_DEFAULT_CREDIT * default_credit
    mean = sum(r[2] for r in rows) / n if n else 0.0
    ivcs = [ivcredit(ev, ib, cc, mean, cap) for ev, ib, cc in rows]
    members = boost_members(ivcs, guard)
    j = sum(members)
    cvcs = [cvcredit(ivcs, j, r[2], default_credit) if m else 0.0
            for r, m in zip(rows, members)]
    return ivcs, members, cvcs, sum(ivcs)


# Algorithm 2, step 1: RunQ_d = the LAST run-queue i != s (in id order)
# with IOevent_i < IOevent_s (the loop overwrites: last wins, as printed);
# none qualifying leaves RunQ_d unset: None, no migration (Gap 12).
def pick_destination(src_id, io_events):
    """io_events: [(rq_id, IOevent), ...] in id order, incl. the source."""
    src = dict(io_events)[src_id]
    dest = None
    for rq_id, ev in io_events:
        if rq_id != src_id and ev < src:
            dest = rq_id
    return dest


# Algorithm 2, step 2: vCPU_m = the LAST vCPU j of RunQ_s (svc order) with
#   IOload_d + IVCredit_j < IOload_s - IVCredit_j   (IVC_j < gap / 2),
# restricted to IVCredit_j > 0 (as the agent: moving a CPU-bound vCPU
# leaves both IOloads as they are, so it cannot serve the algorithm) and
# to vCPUs allowed on the destination. None: no migration.
def pick_migrant(load_s, load_d, candidates):
    """candidates: [(key, IVCredit), ...] in svc order; return a key."""
    chosen = None
    for key, ivc in candidates:
        if ivc > 0 and load_d + ivc < load_s - ivc:
            chosen = key
    return chosen
