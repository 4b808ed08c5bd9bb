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
"""vSlicer (seed 001 ch. 2): Credit plus differentiated-frequency slicing.

A vCPU with a microslice T_m is an LSVM vCPU, without one an NLSVM vCPU
(``VSlicerSpec.microslices`` per VM, or ``SimHost.set_vcpu_slice``: a
slice below T_NLSVM = ``tslice_us`` makes the vCPU an LSVM with that
T_m, a slice of T_NLSVM or more makes it an NLSVM again). Per pCPU, m and
n count the LSVM and NLSVM vCPUs assigned to it (blocked ones included)
and T_n = T_NLSVM / n (Eq. 2.12) is recomputed whenever that set changes
(a vCPU placed, stolen, re-pinned, removed or re-classified).

Algorithm 1, at every ``do_schedule`` of a still-runnable current vCPU
(slice or microslice expiry, preemption), after burning its credit:

1. an NLSVM goes to the tail of the queue;
2. an LSVM has its micro-credit reduced by the time it just ran, then
   (a) credit > 0 and micro-credit > 0: it goes before the first NLSVM of
   the queue (it runs again in this micro-round); (b) credit > 0 and
   micro-credit <= 0: it goes before the second NLSVM (after the next
   NLSVM and after the LSVMs already waiting for that micro-round), or to
   the tail; (c) credit <= 0: to the tail;
3. the head runs T_NLSVM if an NLSVM, T_m if an LSVM.

Choices for what the paper leaves open (seed 001 section 6.1):

* *micro-credit refill* (item 1): every LSVM of a pCPU gets T_n of
  micro-credit each time an NLSVM stops running there (its slice is over,
  it blocked or was preempted): that starts the next micro-round;
* *case (b) placement* (garbled): "just after the next NLSVM" read
  literally swaps the LSVMs' order every micro-round, which makes gaps of
  T_NLSVM + 2 (m - 1) T_m, above the paper's own worst case T_NLSVM +
  (m - 1) T_m and against Fig. 2.7 ("[same micro-round]"); so an LSVM
  joins the next micro-round behind those already queued for it;
* *LSVM that blocks early* (item 2): micro-credit is charged by exact run
  time (not one whole T_m per dispatch), so an I/O-bound LSVM keeps the
  rest of its micro-round; on wake-up an LSVM is placed by the same
  rules (a)-(c), an NLSVM at the tail;
* *BOOST* (item 2): kept as in Credit (``VSlicerSpec.boost``): an UNDER
  vCPU that wakes becomes BOOST, goes ahead of every non-BOOST vCPU and
  preempts a lower-priority running one. UNDER/OVER do not reorder the
  queue (no ``runq_sort``): Algorithm 1 sets the order; the credit sign
  acts through rule (c) and through Credit's work stealing;
* *work conservation* (item 3): a pCPU never idles while a vCPU is
  runnable; with no NLSVM assigned (n = 0) or none queued, LSVMs
  round-robin in microslices (rules (a)/(b) fall back to the tail);
  caps are not modelled (as in ``credit``);
* *mixed T_m and non-divisors* (item 4): each LSVM runs its own T_m;
  every LSVM gets the same T_n per micro-round (fairness first), and the
  last microslice of a micro-round is cut to the micro-credit left, so a
  T_m that does not divide T_n (e.g. T_n = 7.5 ms with T_m = 5 ms) still
  gives exactly T_n; T_n is rounded down to a whole microsecond;
* *preconditions* (at least one NLSVM and three VMs): with n >= 1 the
  rules above apply for any m and any total (the equations hold for two
  VMs too); with n = 0 see work conservation; with m = 0 the pCPU
  behaves as Credit (NLSVMs at the tail, 30 ms slices);
* *multicore* (item 5): per pCPU as in the paper; Credit's stealing moves
  vCPUs between pCPUs and the parameters follow.
"""

from iosched.simulator.xen import credit
from iosched.simulator.xen import credit_accounting


class LVcpu(credit.Vcpu):
    """A vCPU with its microslice (0: NLSVM) and micro-credit (us)."""
    __slots__ = ('microslice', 'micro')

    def __init__(self, eid, vm, index, weight, microslice):
        super().__init__(eid, vm, index, weight)
        self.microslice = microslice
        self.micro = 0


class VSlicerScheduler(credit.CreditScheduler):
    name = 'vslicer'
    knobs = ('slice', 'weight', 'affinity')

    def __init__(self, loop, pcpus, switch_cost_us, spec):
        super().__init__(loop, pcpus, switch_cost_us, spec)
        self.static = dict(spec.microslices)
        self.lsvms = [[] for _ in range(pcpus)]     # LSVM vCPUs per pCPU
        self.n_nlsvm = [0] * pcpus
        self.t_n = [None] * pcpus                   # None while n = 0
        self.n_rounds = 0

    # -- per-pCPU parameters --------------------------------------------------
    def _recompute(self, p):
        n = self.n_nlsvm[p.id]
        # Eq. 2.12: T_n = T_NLSVM / n (whole microseconds).
        self.t_n[p.id] = self.tslice // n if n else None

    def _home_changed(self, e, old, new):
        if old is not None:
            self._unassign(e, old)
        if new is not None:
            self._assign(e, new)

    def _unassign(self, e, p):
        if e.microslice:
            self.lsvms[p.id].remove(e)
        else:
            self.n_nlsvm[p.id] -= 1
        self._recompute(p)

    def _assign(self, e, p):
        if e.microslice:
            self.lsvms[p.id].append(e)
        else:
            self.n_nlsvm[p.id] += 1
        self._recompute(p)
        if e.microslice:
            t_n = self.t_n[p.id]
            e.micro = t_n if t_n is not None else e.microslice

    # -- Algorithm 1 ----------------------------------------------------------
    def _update_curr(self, p, now):
        d = now - p.last_update
        super()._update_curr(p, now)
        if d > 0:
            e = p.curr
            if e.microslice:
                e.micro -= d

    def _slice_us(self, p, e):
        t_m = e.microslice
        if not t_m:
            return p.tslice
        if self.t_n[p.id] is not None and 0 < e.micro < t_m:
            return e.micro              # the rest of this micro-round
        return t_m

    def _descheduled(self, p, e, now):
        if not e.microslice:
            t_n = self.t_n[p.id]
            if t_n is not None and self.lsvms[p.id]:
                self.n_rounds += 1
                for x in self.lsvms[p.id]:
                    x.micro = t_n

    def _place(self, p, e):
        """Rules 1-2 of Algorithm 1 (BOOST vCPUs stay ahead)."""
        q = p.runq
        if (not e.microslice or e.credit <= 0
                or self.t_n[p.id] is None):
            q.append(e)                 # NLSVM, rule (c), or no NLSVM
            return
        nth = 1 if e.micro > 0 else 2   # rule (a) or (b)
        seen = 0
        for i, x in enumerate(q):
            if x.pri != credit_accounting.BOOST and not x.microslice:
                seen += 1
                if seen == nth:
                    q.insert(i, e)
                    return
        q.append(e)

    def _requeue(self, p, e, now):
        if e.pri == credit_accounting.BOOST:
            self._insert(p, e)
        else:
            self._place(p, e)

    _enqueue_woken = _requeue

    @staticmethod
    def _sort_runq(p):
        """Algorithm 1 orders the queue; UNDER/OVER do not reorder it."""

    # -- knobs ----------------------------------------------------------------
    def new_entity(self, eid, vm, index, weight):
        return LVcpu(eid, vm, index, weight,
                     self.static.get(getattr(vm, 'uuid', None), 0))

    def set_slice(self, e, slice_us, now):
        t_m = slice_us if slice_us < self.tslice else 0
        if t_m == e.microslice:
            return
        p = e.home
        if p is not None:
            if e.on_rq:
                self._settle(p, now)
            self._unassign(e, p)
        e.microslice = t_m
        if p is not None:
            self._assign(e, p)

    def get_slice(self, e):
        return e.microslice or self.tslice

    def stats(self):
        out = super().stats()
        out['micro_rounds'] = self.n_rounds
        out['cores'] = [{'m': len(self.lsvms[i]), 'n': self.n_nlsvm[i],
                         't_n_us': self.t_n[i]}
                        for i in range(len(self.cpus))]
        return out
