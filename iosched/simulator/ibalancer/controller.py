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
"""I-Balancer's tracking and control (ITM, RTM, Algorithm 3) for the model.

One ``Tracker`` per vCPU is the paper's tCPU record plus its mCPU
snapshot; ``Controller`` holds the pools and runs the stages:

* ITM (``on_event``, Algorithm 1): an I/O event to dom0 from a
  NON-MASKING vCPU joins it to TRACK-POOL, counts it (EN) and updates
  EI = EWMA(inter-event interval, w). Returns the vCPU's current delay,
  which the host applies as a non-blocking deferral of the event;
* RTM (``on_segment``, Algorithm 2, corrected): at every scheduling point
  of a tracked NON-MASKING vCPU, the run time since the last point
  (``run_mark``: the accounted-until mark, so continue_running is not
  counted twice) is added to PR, and to VR iff the vCPU sent >= 1 event
  since the last point (``lastEventCount < eventCount``; then
  ``lastEventCount = eventCount``). PR >= one slice: MASKING;
* every period (Eq. 3, S x |TRACK-POOL|) ``evaluate``: every MASKING
  vCPU is copied into its snapshot and reset to NON-MASKING (EN, PR, VR,
  EI zeroed; ``lastSendTime`` kept so the first new interval is real);
  CONTROL-POOL is rebuilt from the snapshots typed I/O by Eq. 1; Eq. 2
  decides; on a trigger the pool is sorted by EI, paired, and the
  floor(n/2) targets get Eq. 5 delays; otherwise every delay is 0
  (termination). Mode ``tav`` evaluates and counts only.

vCPUs that did not fill a window in a period keep their last snapshot
(Algorithm 3 copies MASKING vCPUs only).
"""

from iosched.simulator.ibalancer import equations as eq

MODES = ('off', 'tav', 'ib')


class Tracker:
    """tCPU[dom][vcpu] and its mCPU snapshot."""
    __slots__ = ('key', 'en', 'last_en', 'ei', 'last_send', 'pr', 'vr',
                 'masked', 'tracked', 'run_mark', 'snap', 'delay',
                 'windows')

    def __init__(self, key):
        self.key = key
        self.en = 0
        self.last_en = 0
        self.ei = None
        self.last_send = None
        self.pr = 0
        self.vr = 0
        self.masked = False
        self.tracked = False
        self.run_mark = 0
        self.snap = None            # (EN, EI, PR, VR, is_io)
        self.delay = 0.0            # us per event while a target
        self.windows = 0


class Controller:
    """The pools and the periodic control of one host."""

    def __init__(self, mode='ib', slice_us=30000, w=0.25, beta=10.0,
                 alpha=eq.ALPHA, base_us=eq.BASE_DELAY_US):
        if mode not in MODES:
            raise ValueError('I-Balancer mode: %r is invalid; accepted: %s'
                             % (mode, ', '.join(MODES)))
        if not 0.0 < w <= 1.0:
            raise ValueError('I-Balancer w: %r is invalid; accepted: '
                             '0 < w <= 1' % (w,))
        if beta < 0:
            raise ValueError('I-Balancer beta: %r is invalid; accepted: '
                             '>= 0 (percent)' % (beta,))
        self.mode = mode
        self.slice_us = slice_us
        self.w = w
        self.beta = beta
        self.alpha = alpha
        self.base_us = base_us
        self.track = []             # TRACK-POOL, in joining order
        self.control = []           # CONTROL-POOL of the last period
        self.triggers = []          # (time us, D, triggered)
        self.delay_log = []         # (time us, [delays of targets])

    # -- ITM ------------------------------------------------------------------
    def on_event(self, t, now):
        """An I/O event of tracker t to dom0: count it, return its delay."""
        if self.mode == 'off':
            return 0.0
        if not t.masked:
            if not t.tracked:
                t.tracked = True
                self.track.append(t)
            t.en += 1
            if t.last_send is not None:
                t.ei = eq.ewma(t.ei, now - t.last_send, self.w)
            t.last_send = now
        return t.delay

    # -- RTM ------------------------------------------------------------------
    def on_segment(self, t, run_us):
        """A scheduling point of t's vCPU; run_us its total run time."""
        seg = run_us - t.run_mark
        t.run_mark = run_us
        if self.mode == 'off' or not t.tracked or t.masked or seg <= 0:
            return
        t.pr += seg
        if t.last_en < t.en:
            t.vr += seg
            t.last_en = t.en
        if t.pr >= self.slice_us:
            t.masked = True

    # -- Algorithm 3 ----------------------------------------------------------
    def period_us(self):
        return eq.period_us(self.slice_us, len(self.track))

    def evaluate(self, now, run_of=None):
        """One control period; returns the next period's length (us).

        ``run_of(t)``: the vCPU's run time now, so a window reset while
        the vCPU runs starts counting from now (accounted-until mark).
        """
        for t in self.track:
            if t.masked:
                if run_of is not None:
                    t.run_mark = run_of(t)
                t.snap = (t.en, t.ei, t.pr, t.vr,
                          eq.io_intensive(t.vr, t.pr, self.alpha))
                t.windows += 1
                t.en = t.last_en = 0
                t.pr = t.vr = 0
                t.ei = None
                t.masked = False
        pool = [t for t in self.track
                if t.snap is not None and t.snap[4] and t.snap[1] is not None]
        self.control = pool
        d = eq.deviation([t.snap[0] for t in pool])
        fire = d > self.beta and len(pool) >= 2
        self.triggers.append((now, d, fire))
        for t in self.track:
            t.delay = 0.0
        if fire and self.mode == 'ib':
            ei = {i: t.snap[1] for i, t in enumerate(pool)}
            order, pairs = eq.sort_and_pair(ei)
            ds = eq.delays([ei[i] for i in order], self.base_us)
            for (i, _), dl in zip(pairs, ds):
                pool[i].delay = dl
            self.delay_log.append((now, ds))
        return self.period_us()

    def counts(self, t0=0, t1=None):
        """(triggers, no-triggers) among evaluations in [t0, t1)."""
        fired = sum(1 for t, _, f in self.triggers
                    if t >= t0 and (t1 is None or t < t1) and f)
        total = sum(1 for t, _, _ in self.triggers
                    if t >= t0 and (t1 is None or t < t1))
        return fired, total - fired
