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
"""ISACS's run-queue readings for the Credit2 model, pure functions.

No clock, no I/O: the scheduler model ``iosched.simulator.xen.isacs`` calls
these at each credit reallocation and each Algorithm 2 round. The
equations themselves (Eq. 1's EMA, the I/O strength, IVCredit, CVCredit,
the CPU-BOOST test, concealing) and their guards are
``iosched.contract.isacs``, shared with the agent's KVM policy; what is
here is how the Xen model applies them to one run-queue (``reallocate``)
and Algorithm 2's literal choices (``pick_destination``, ``pick_migrant``),
which the agent reads differently (``iosched/host_agent/policies/isacs.py``).
Every function works in one credit unit (microseconds in the simulator).
"""

from iosched.contract import isacs


def reallocate(rows, default_credit, cap=0, guard=None):
    """Eqs. 2-4 for one run-queue at a reallocation.

    ``rows``: (E_n, Ibar or None, consumed credit) per vCPU assigned to
    the run-queue (n counts blocked vCPUs too, as Credit2's svc list).
    Return (ivcredits, members, cvcredits, io_load).
    """
    n = len(rows)
    if guard is None:
        guard = isacs.GUARD_PER_DEFAULT_CREDIT * default_credit
    mean = sum(r[2] for r in rows) / n if n else 0.0
    ivcs = [isacs.ivcredit(isacs.io_strength(ev, ib), cc, mean, cap)
            for ev, ib, cc in rows]
    members = isacs.boost_members(ivcs, guard)
    j = sum(members)
    total = sum(ivcs)
    cvcs = [isacs.cvcredit(ivcs, j, r[2], default_credit, total=total)
            if m else 0.0 for r, m in zip(rows, members)]
    return ivcs, members, cvcs, total


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
