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
"""Credit2's native load balancer (``balance_load``, Xen 4.12), simplified.

Load figures as Xen keeps them, in floating point, in units of one
runnable vCPU:

* a run-queue's load is its number of runnable vCPUs (running ones
  included); its average decays linearly over a window of 2^20 us
  (Xen: 2^30 ns): ``avg += dt * (load - avg) / W``, and restarts at
  ``load`` after a gap longer than W (update_runq_load);
* a vCPU's average is the same over "runnable or not" (update_svc_load);
  a new vCPU starts at 0.5; assigning adds its average to the
  run-queue's, deassigning subtracts it.

``balance_load`` runs after each reset of run-queue L: the run-queue O
farthest from L's load is the partner; nothing happens unless the gap is
>= 1 vCPU when both are under capacity (load < pCPUs) or >= 1/8 over
capacity; then the push (L -> O), pull (O -> L) or swap that leaves the
smallest gap, if smaller than now, is done. Simplifications: no lock
failures (Xen's trylocks), the capacity test uses O's load (Xen 4.12
reads the last run-queue of its loop there), floating point instead of
Xen's fixed point.
"""

WINDOW_US = 1 << 20
UNDERLOAD_GAP = 1.0             # 1 << (P + opt_underload_balance_tolerance)
OVERLOAD_GAP = 0.125            # 1 << (P + opt_overload_balance_tolerance)


# Linear decay of Xen's update_*_load: avg += dt * (load - avg) / W,
# restarting at load after more than W without an update.
def decay(avg, load, dt, window=WINDOW_US):
    if dt > window:
        return float(load)
    if dt <= 0:
        return avg
    return avg + dt * (load - avg) / window


def update_rq_load(rq, now, change):
    rq.avgload = decay(rq.avgload, rq.load, now - rq.load_t)
    rq.load_t = now
    rq.load += change


def update_svc_load(e, now, runnable):
    e.avgload = decay(e.avgload, runnable, now - e.load_t)
    e.load_t = now


def assign_load(e, rq):
    rq.avgload += e.avgload


def deassign_load(e, rq):
    rq.avgload = max(0.0, rq.avgload - e.avgload)


def _migrateable(e, rq):
    return e.migrate_to is None and any(e.allows(p.id) for p in rq.cpus)


def balance_load(sched, lrq, now):
    """One push, pull or swap between lrq and its farthest run-queue."""
    update_rq_load(lrq, now, 0)
    orq, gap = None, 0.0
    for rq in sched.rqs:
        if rq is lrq:
            continue
        update_rq_load(rq, now, 0)
        d = abs(lrq.avgload - rq.avgload)
        if d > gap:
            orq, gap = rq, d
    if orq is None:
        return
    load_max = max(lrq.avgload, orq.avgload)
    cpus_max = max(len(lrq.cpus), len(orq.cpus))
    if gap < (UNDERLOAD_GAP if load_max < cpus_max else OVERLOAD_GAP):
        return
    for rq in (lrq, orq):
        for e in rq.svc:
            update_svc_load(e, now, 1 if e.on_rq else 0)
    best = [gap, None, None]
    lo, oo = lrq.avgload, orq.avgload

    def consider(push, pull):
        l_load, o_load = lo, oo
        if push is not None:
            l_load -= push.avgload
            o_load += push.avgload
        if pull is not None:
            l_load += pull.avgload
            o_load -= pull.avgload
        d = abs(l_load - o_load)
        if d < best[0]:
            best[:] = [d, push, pull]

    pulls = [e for e in orq.svc if _migrateable(e, lrq)]
    for push in lrq.svc:
        if not _migrateable(push, orq):
            continue
        for pull in pulls:
            consider(push, pull)
        consider(push, None)
    for pull in pulls:
        consider(None, pull)
    _, push, pull = best
    if push is not None:
        sched.migrate(push, orq, now)
    if pull is not None:
        sched.migrate(pull, lrq, now)
