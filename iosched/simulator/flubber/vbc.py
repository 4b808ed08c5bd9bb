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
"""Flubber's VBC: credit rounds, Eq. 1 ratios, the Eq. 2-4 feedback.

The math is pure functions (``ratios``, ``credits``, ``indicator``,
``feedback``); ``Vbc`` is the controller between the guests and the low
level. Decisions on the paper's gaps (digest 002 section 7, docs/
reproduction_models.md "Flubber"):

* Eq. 1 in lowest terms: c_i = round(B_i / min B) reduced by their gcd
  (1000:120 -> 8.33:1 -> 8:1, the paper's choice; 1200:600 -> 2:1;
  1000:1200:100 -> 10:12:1).
* Eq. 3 on real numbers: weights w_i = max(1, a_i + Ind_i * beta) with
  Ind clamped to [-1, 1] (the latency term is unbounded); negative Ind is
  applied (Fig. 4: an over-served VM loses credits) but only when some
  VM violates (Ind > 0), as the text says. The new credits keep the round
  size beta * sum(c^0) (Eq. 4's cap max_interval applies on top) split in
  proportion to w, rounded, at least 1 each. No lowest-terms reduction:
  it has no meaning for reals and literally would grow credits by beta.
* The feedback runs at a replenishment once at least ``fb_min_ms`` (250
  ms, one beta = 32 round) has passed since the last one, over the
  rounds in between (short rounds give noisy b and l).
* Replenishment events: (1) every VM in the round has used its credits
  (``on_completion=True``: and every credited request has completed, the
  reading under which the paper's beta = 1 row comes out: 8 SeqR + 1 RndR
  per round of ~17 ms);
  (2) "idle": no credited VM request is queued anywhere (the low level
  holds none and every VM with credits has an empty dispatching queue)
  while some VM is blocked on credits: the disk would otherwise idle,
  and this also closes the stall of section 7 item 10; (3) a VM joins or
  leaves (a guest whose work is done leaves). Left-over credits are
  reset, not carried over.
* max_interval = 1152 requests (default): the read pair's measured
  capacity, 1153 IOPS, times 1 s; every swept beta fits (128 x 9).
"""

import math


def ratios(bs):
    """Eq. 1 proportions c_i in lowest integer terms (see module doc)."""
    lo = min(bs)
    c = [max(1, int(math.floor(b / lo + 0.5))) for b in bs]
    g = 0
    for x in c:
        g = math.gcd(g, x)
    return [x // g for x in c]


def credits(c, beta, max_interval):
    """Eq. 4: a_i = c_i * beta, or max_interval * c_i / sum(c) if the
    round beta * sum(c) would reach max_interval (at least 1 each).
    """
    tot = sum(c)
    if tot * beta < max_interval:
        return [max(1, int(round(x * beta))) for x in c]
    return [max(1, int(round(max_interval * x / tot))) for x in c]


def indicator(b_target, b, l_target, l):
    """Eq. 2: Ind = max((B - b) / B, (l - L) / L); l None: no latency."""
    ind = (b_target - b) / b_target
    if l is not None:
        ind = max(ind, (l - l_target) / l_target)
    return ind


def feedback(a, inds, beta, round_size, max_interval, clamp=1.0):
    """Eqs. 3-4 on real weights: the next credits, or ``a`` unchanged
    when no VM violates (every Ind <= 0).
    """
    if not any(i > 0 for i in inds):
        return list(a)
    w = [max(1.0, ak + max(-clamp, min(clamp, i)) * beta)
         for ak, i in zip(a, inds)]
    size = min(round_size, max_interval)
    tot = sum(w)
    return [max(1, int(round(size * x / tot))) for x in w]


class Vbc:
    """Credit rounds between the guests and the low level.

    ``slos``: {vm: (B iops, L ms)}; ``ratio`` ({vm: c}) overrides Eq. 1
    (an imposed starting split); ``on_completion``: a turn also waits for
    the round's requests to complete; ``idle_ms``: event 2 needs the disk
    idle of credited work that long (0: at once). ``forward(req)`` hands a
    credited request down; ``pending_vm()`` says whether the low level still
    holds VM requests (for event 2).
    """

    def __init__(self, slos, beta=32, max_interval=1152, feedback_on=True,
                 fb_min_ms=250.0, clamp=1.0, ratio=None, on_completion=False,
                 idle_ms=0.0):
        self.slos = dict(slos)
        self.vms = list(slos)
        self.beta = beta
        self.max_interval = max_interval
        self.feedback_on = feedback_on
        self.fb_min_ms = fb_min_ms
        self.clamp = clamp
        self.ratio = dict(ratio) if ratio else None
        self.on_completion = on_completion
        self.idle_ms = idle_ms
        self.inflight = {v: 0 for v in slos}
        self._idle_since = None
        self.wake = None               # wake(t): ask for an idle_check at t
        self._reset_shares()
        self.left = dict(self.a)
        self.queue = {v: [] for v in self.vms}
        self.qhead = {v: 0 for v in self.vms}
        self.forward = None
        self.now = lambda: 0.0
        self.rounds = 0
        self.events = {'turn': 0, 'idle': 0, 'member': 0}
        self.trace = []            # (t, {vm: a}, {vm: ind}, {vm: b}, {vm: l})
        self._fb_t = 0.0
        self._n = {v: 0 for v in self.vms}
        self._lat = {v: 0.0 for v in self.vms}
        self._busy = False

    def _reset_shares(self):
        if self.ratio and all(v in self.ratio for v in self.vms):
            c = [self.ratio[v] for v in self.vms]
        else:
            c = ratios([self.slos[v][0] for v in self.vms]) if self.vms \
                else []
        self.c0 = dict(zip(self.vms, c))
        self.round_size = self.beta * sum(c)
        self.a = dict(zip(self.vms, credits(c, self.beta,
                                            self.max_interval)))

    # -- the data path ---------------------------------------------------

    def _fwd(self, req):
        if req.vm in self.inflight:
            self.inflight[req.vm] += 1
        self.forward(req)

    def has_credit(self, vm):
        return vm not in self.left or self.left[vm] > 0

    def blocked(self, vm):
        return len(self.queue[vm]) > self.qhead[vm]

    def submit(self, req):
        vm = req.vm
        if vm not in self.left:
            self.forward(req)
            return
        if self.left[vm] > 0 and not self.blocked(vm):
            self.left[vm] -= 1
            self._fwd(req)
            if self.left[vm] == 0:
                self._maybe_turn()
        else:
            self.queue[vm].append(req)

    def on_complete(self, req, latency):
        if req.vm in self._n:
            self._n[req.vm] += 1
            self._lat[req.vm] += latency
        if req.vm in self.inflight:
            self.inflight[req.vm] -= 1
            if self.on_completion:
                self._maybe_turn()

    def idle_check(self, low_level_has_vm):
        """Event 2, called when the disk is free and looks for work:
        after ``idle_ms`` with no credited request to serve while some VM
        is blocked on credits.
        """
        if self._busy:
            return
        if low_level_has_vm or not any(self.blocked(v) for v in self.vms) \
                or any(self.left[v] > 0 and self.blocked(v)
                       for v in self.vms):
            self._idle_since = None
            return
        now = self.now()
        if self._idle_since is None:
            self._idle_since = now
        if now - self._idle_since >= self.idle_ms:
            self._idle_since = None
            self.replenish('idle')
        elif self.wake is not None:
            self.wake(self._idle_since + self.idle_ms)

    def leave(self, vm):
        """Event 3: a VM leaves (its queued requests pass uncounted)."""
        if vm not in self.slos:
            return
        rest = self.queue[vm][self.qhead[vm]:]
        del self.slos[vm]
        self.vms.remove(vm)
        for d in (self.left, self.queue, self.qhead, self._n, self._lat,
                  self.inflight):
            del d[vm]
        self._reset_shares()
        self.replenish('member')
        for r in rest:
            self.forward(r)

    # -- rounds ----------------------------------------------------------

    def _spent(self):
        return all(self.left[v] == 0 for v in self.vms) and (
            not self.on_completion or not any(self.inflight.values()))

    def _maybe_turn(self):
        if not self._busy and self._spent():
            self.replenish('turn')

    def replenish(self, why):
        if self._busy:
            return
        self._busy = True
        try:
            while True:
                self.events[why] += 1
                self.rounds += 1
                self._maybe_feedback()
                self.left = dict(self.a)
                for v in self.vms:
                    q = self.queue[v]
                    while self.left[v] > 0 and self.qhead[v] < len(q):
                        r = q[self.qhead[v]]
                        self.qhead[v] += 1
                        self.left[v] -= 1
                        self._fwd(r)
                    if self.qhead[v] == len(q):
                        self.queue[v] = []
                        self.qhead[v] = 0
                if self.vms and self._spent():
                    why = 'turn'
                    continue
                break
        finally:
            self._busy = False

    def _maybe_feedback(self):
        now = self.now()
        dt = now - self._fb_t
        if not self.feedback_on or dt < self.fb_min_ms or not self.vms:
            return
        b, lat, inds = {}, {}, []
        for v in self.vms:
            n = self._n[v]
            b[v] = n * 1000.0 / dt
            lat[v] = self._lat[v] / n if n else None
            B, L = self.slos[v]
            inds.append(indicator(B, b[v], L, lat[v]))
        new = feedback([self.a[v] for v in self.vms], inds, self.beta,
                       self.round_size, self.max_interval, self.clamp)
        self.a = dict(zip(self.vms, new))
        self.trace.append((now, dict(self.a), dict(zip(self.vms, inds)),
                           b, lat))
        self._fb_t = now
        self._n = {v: 0 for v in self.vms}
        self._lat = {v: 0.0 for v in self.vms}
