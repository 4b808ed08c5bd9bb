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
"""SCHED_DEADLINE bookkeeping: parameters and the CBS rules (pure math).

A deadline entity has (runtime Q, relative deadline D, period P), integer
us, 1 <= Q <= D <= P, as ``sched_setattr(SCHED_DEADLINE)`` accepts (P in
100 us .. 4 s, the kernel's ``sched_deadline_period_{min,max}_us``
defaults). Its state is the remaining runtime ``left`` and the absolute
deadline ``abs_dl`` of the current reservation; the reservation's period
started at ``abs_dl - D`` and ends at ``abs_dl - D + P``.

The constant bandwidth server, as ``kernel/sched/deadline.c``:

* wake-up (``update_dl_entity``): if the deadline has passed, or the
  remaining runtime would overflow the reserved density before it
  (``left / (abs_dl - now) > Q / D``), start a new reservation: ``abs_dl
  = now + D``, ``left = Q``. A constrained entity (D < P) whose deadline
  has not passed gets the revised rule instead: ``left = Q/D x (abs_dl -
  now)``, same deadline (``update_dl_revised_wakeup``);
* constrained wake-up after its deadline but before its period ends
  (``dl_check_constrained_dl``): throttled until the period end, then
  replenished (no bandwidth beyond Q per P);
* runtime spent (``left <= 0``): throttled until the period end
  (``start_dl_timer``), then ``replenish``: ``abs_dl += P``, ``left +=
  Q`` until ``left > 0`` (an overrun is paid back); a deadline still in
  the past after that restarts at ``now`` (``abs_dl = now + D``, ``left =
  Q``). There is no fallback to the fair class while throttled.
"""

from iosched.contract import knob_kinds

PERIOD_MIN_US = 100
PERIOD_MAX_US = 4000000


def validate(value, field='deadline'):
    """None, or a dict of ``knob_kinds.DEADLINE_KEYS`` -> (Q, D, P) ints;
    else ValueError.
    """
    if value is None:
        return None
    accepted = ('None (SCHED_OTHER) or a dict {runtime_us, deadline_us, '
                'period_us} of integers with 1 <= runtime_us <= deadline_us '
                '<= period_us and period_us in %d..%d'
                % (PERIOD_MIN_US, PERIOD_MAX_US))
    if not hasattr(value, 'items'):
        raise ValueError('%s: %r is invalid; accepted: %s'
                         % (field, value, accepted))
    unknown = sorted(set(value) - set(knob_kinds.DEADLINE_KEYS))
    missing = [k for k in knob_kinds.DEADLINE_KEYS if k not in value]
    if unknown or missing:
        raise ValueError('%s: %r is invalid (%s); accepted: %s' % (
            field, value, ', '.join(
                ['unknown key %r' % k for k in unknown]
                + ['missing key %r' % k for k in missing]), accepted))
    out = []
    for k in knob_kinds.DEADLINE_KEYS:
        v = value[k]
        if isinstance(v, bool) or not isinstance(v, int):
            raise ValueError('%s.%s: %r is invalid; accepted: an integer'
                             % (field, k, v))
        out.append(v)
    q, d, p = out
    if not (1 <= q <= d <= p) or not PERIOD_MIN_US <= p <= PERIOD_MAX_US:
        raise ValueError('%s: %r is invalid; accepted: %s'
                         % (field, dict(value), accepted))
    return q, d, p


def as_dict(params):
    """(Q, D, P) -> the knob's dict form."""
    return dict(zip(knob_kinds.DEADLINE_KEYS, params))


class DlState:
    """One deadline entity's reservation (see module doc)."""
    __slots__ = ('q', 'd', 'p', 'left', 'abs_dl', 'throttled', 'gen',
                 'running', 'since', 'cpu')

    def __init__(self, params):
        self.q, self.d, self.p = params
        self.left = 0
        self.abs_dl = 0             # 0: no reservation yet
        self.throttled = False
        self.gen = 0                # invalidates a pending replenishment
        self.running = False
        self.since = 0              # run time is charged from here
        self.cpu = None             # PCpu it runs on

    @property
    def bw(self):
        return self.q / self.p

    def period_end(self):
        return self.abs_dl - self.d + self.p

    def set_params(self, params):
        """New (Q, D, P): applied from the next reservation; the runtime
        left is clamped to the new Q.
        """
        self.q, self.d, self.p = params
        if self.left > self.q:
            self.left = self.q

    def new_reservation(self, now):
        self.abs_dl = now + self.d
        self.left = self.q

    def on_wakeup(self, now):
        """Apply the CBS wake-up rule; True if it must wait (throttled
        until ``period_end()``, constrained deadline).
        """
        if not self.abs_dl:
            self.new_reservation(now)
            return False
        if self.d < self.p and (
                self.abs_dl < now < self.period_end()):
            self.left = 0
            return True
        if self.abs_dl < now or self._overflow(now):
            if self.d < self.p and self.abs_dl >= now:
                self.left = self.q * (self.abs_dl - now) // self.d
            else:
                self.new_reservation(now)
        return self.left <= 0

    def _overflow(self, now):
        # left / (abs_dl - now) > Q / D, without division
        return self.left * self.d > self.q * (self.abs_dl - now)

    def replenish(self, now):
        """Refill after throttling (``replenish_dl_entity``)."""
        if not self.abs_dl:
            self.new_reservation(now)
            return
        while self.left <= 0:
            self.abs_dl += self.p
            self.left += self.q
        if self.abs_dl < now:
            self.new_reservation(now)
