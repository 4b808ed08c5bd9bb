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
"""Specs that select the Credit2 and ISACS models for a ``HostSpec``.

``HostSpec(scheduler=Credit2Spec())`` or ``IsacsSpec()``; frozen and
validated, ``build(loop, host_spec)`` returns the scheduler. Fields:

* ``runqueue``: 'all' (one run-queue, Xen 4.12's per-socket default on a
  one-socket host) or 'cpu' (one per pCPU);
* ``ratelimit_us``: sched_ratelimit_us (0 = off; Xen: 100..500000);
* ``migrate_resist_us``: sched_credit2_migrate_resist;
* ``balance``: Credit2's native balance_load between run-queues.

ISACS adds (docs/reproduction_models.md, "Credit2 and ISACS"):

* ``ema_weight`` (Eq. 1, weight of the newest interval, paper 0.9),
  ``cutoff_us`` (Eq. 1's 10 ms cut-off);
* ``ivcredit_cap_us``: upper bound of IVCredit (0 = none; the paper has
  none; default 2 ms, a fifth of the default credit: see isacs.py);
* ``trigger``: 'head' (the paper's Algorithm 1: the CPU-BOOST phase
  starts when the highest-credit vCPU is at or below its endcredit) or
  'all' (when no runnable vCPU has credit above its endcredit; Gap 9);
* ``boost_wake``: 'preempt' (a vCPU that wakes up during the CPU-BOOST
  phase with credit above its endcredit runs before the group) or 'wait'
  (literal: only members run during the phase);
* ``conceal``: credit concealing (endcredit = IVCredit); False is the
  naive variant (endcredit 0: IVCredit is extra CPU time);
* ``io_balance``: Algorithm 2 after each reallocation;
* ``event_tickle``: an I/O response event that reaches a waiting
  (runnable, not running) vCPU tickles a pCPU for it as a wake-up does,
  so it may preempt a running vCPU with less credit. Default False: Xen's
  vcpu_kick does nothing for a runnable vCPU and the paper does not say
  that EVENT CHECKER does; a candidate for the mixed environment's gains
  (issue 30), measured by the ``isacs_mixed`` rows.
"""

import dataclasses

from iosched.simulator import checks
from iosched.simulator.xen import credit2
from iosched.simulator.xen import isacs

TRIGGERS = ('head', 'all')
BOOST_WAKES = ('preempt', 'wait')


def _bool(field, value):
    if not isinstance(value, bool):
        raise ValueError('%s: %r is invalid; accepted: True or False'
                         % (field, value))


def _check_credit2(spec, cls):
    checks.choice(cls + '.runqueue', spec.runqueue, credit2.RUNQUEUES)
    if spec.ratelimit_us != 0:
        checks.int_range(cls + '.ratelimit_us', spec.ratelimit_us,
                         100, 500000)
    checks.int_range(cls + '.migrate_resist_us', spec.migrate_resist_us,
                     0, 100000)
    _bool(cls + '.balance', spec.balance)


@dataclasses.dataclass(frozen=True)
class Credit2Spec:
    """Xen Credit2 (4.12), ``iosched.simulator.xen.credit2``."""
    runqueue: str = 'all'
    ratelimit_us: int = 1000
    migrate_resist_us: int = 500
    balance: bool = True

    def __post_init__(self):
        _check_credit2(self, 'Credit2Spec')

    def build(self, loop, host_spec):
        return credit2.Credit2(loop, host_spec.pcpus,
                               host_spec.switch_cost_us,
                               runqueue=self.runqueue,
                               ratelimit_us=self.ratelimit_us,
                               migrate_resist_us=self.migrate_resist_us,
                               balance=self.balance)


@dataclasses.dataclass(frozen=True)
class IsacsSpec:
    """ISACS on Credit2 (seed 000), ``iosched.simulator.xen.isacs``."""
    runqueue: str = 'all'
    ratelimit_us: int = 1000
    migrate_resist_us: int = 500
    balance: bool = True
    ema_weight: float = 0.9
    cutoff_us: int = 10000
    ivcredit_cap_us: int = isacs.DEFAULT_IVCREDIT_CAP_US
    trigger: str = 'head'
    boost_wake: str = 'preempt'
    conceal: bool = True
    io_balance: bool = True
    event_tickle: bool = False

    def __post_init__(self):
        _check_credit2(self, 'IsacsSpec')
        checks.number_range('IsacsSpec.ema_weight', self.ema_weight, 0, 1,
                            lo_open=True)
        checks.int_range('IsacsSpec.cutoff_us', self.cutoff_us, 1)
        checks.int_range('IsacsSpec.ivcredit_cap_us', self.ivcredit_cap_us,
                         0)
        checks.choice('IsacsSpec.trigger', self.trigger, TRIGGERS)
        checks.choice('IsacsSpec.boost_wake', self.boost_wake, BOOST_WAKES)
        _bool('IsacsSpec.conceal', self.conceal)
        _bool('IsacsSpec.io_balance', self.io_balance)
        _bool('IsacsSpec.event_tickle', self.event_tickle)

    def build(self, loop, host_spec):
        return isacs.Isacs(loop, host_spec.pcpus, host_spec.switch_cost_us,
                           self)
