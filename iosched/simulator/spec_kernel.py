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
"""What the host's Linux kernel does when a fair task wakes: ``KernelSpec``.

``HostSpec.kernel`` selects how the EEVDF model (``iosched.simulator.cpu``)
treats slice ends, wake-up placement and wake-up preemption. Two named kernels
(``KERNELS``; pick one with ``HostSpec(kernel=spec_kernel.kernel('<name>'))``):

``linux-6.12-hrtick`` (the default, ``KernelSpec()``): the model the
simulator always had. Slice ends, CFS quota ends and SCHED_DEADLINE runtime
ends are exact events (as with HRTICK), a woken entity is placed with zero
lag, and PREEMPT_SHORT (6.12's rule) lets a woken entity with a shorter
custom slice, eligible and with an earlier deadline, end the running one's
RUN_TO_PARITY protection for its whole request. It promises that an EEVDF
custom slice shortens wake-up latency (embedded default LSVM p50 2.1 ->
0.2 ms).

``linux-6.18-hz250`` (``LINUX_6_18_HZ250``): calibrated on this project's
machine (6.18, ``CONFIG_HZ=250``, ``PREEMPT_NONE``, EEVDF), with the wake-up
probe of ``docs/status.md`` and issue 10 (a C sleeper waking every 3 ms
for 50 us of work among busy loops on one CPU, lateness p50/p99). Each
field and the measured row it comes from:

* ``hz=250``, ``hrtick=False``: a slice end (and a CFS quota end, and a
  deadline task's runtime end: HRTICK_DL is off by default) is acted on at
  the next tick, every 4 ms; a request that ended between ticks is renewed
  at the next wake-up (6.18 ``update_curr``), which then re-picks. Row "3
  hogs, default": p99 3.9 ms, one tick: a woken task that cannot preempt
  waits for the running hog's tick;
* ``place_lag=True``: a woken entity keeps the lag it slept with (clamped
  to max(2 slices, 1 tick)) and is placed with the kernel's load
  inflation (``place_entity``); negative lag decays while asleep as
  DELAY_DEQUEUE lets it. It is what makes a woken fair task wait or not:
  it preempts when it is what pick_eevdf returns, i.e. when the running
  entity is past its request or no longer eligible, and no waiting entity
  has an earlier deadline. Rows "3 hogs, default" p50 55 us (without
  place_lag the model waits ~3 ms at the median) and "cpu.shares 65536
  vs 1024" / "nice -20" (p99 63 / 58-60 us): a heavy waker's inflated lag
  moves V below a running hog that was close to it, which then loses its
  protection (on the probe's 3 ms grid; at a 3.3 ms period the model's
  heavy waker with an equal slice waits for the tick in some phases, p99
  3.8 ms). The clamp is 6.6's; 6.18-stable clamps at the queue's largest
  slice + a tick (``entity_lag``), a little wider;
* ``preempt_short=True``, ``protect_min_slice=True``: the 6.17+ wake-up
  rules of 6.18 (``kernel/sched/fair.c``; PREEMPT_SHORT and RUN_TO_PARITY
  are on by default). A picked entity is protected for min(its slice, the
  shortest slice queued) of run (``set_protect_slice``); a woken entity
  with a shorter slice than the running one is picked against it without
  that protection (``__pick_eevdf(protect=false)``) and, when it does not
  win, shrinks the protection to the shortest queued slice from now
  (``update_protect_slice``); a protection that ends between ticks is a
  resched at the next tick. A shorter slice alone seldom wins: the waker
  needs the earliest virtual deadline, v + slice x 1024 / weight, and a
  running hog's is often earlier. Rows: "EEVDF custom slice 100 us" p50
  55 us, p99 4.8 ms (no gain; model 52 us / 4.0 ms), and the LSVM
  testbed's slice phase (T_m 1 ms beside burners at 3 ms: no gain). With
  the VM weight boost the deadline is v + 10 us at 100x, so the boosted
  LSVM with its microslice wakes at once: the testbed's weight phase
  (weight 10000, cap, slice T_m: p99 0.39-0.53x stock on real guests; the
  model 0.37-0.42x, ``bench/model_validation.py``). Without these rules
  (the calibration before that phase) a hog picked at a tick kept its
  protection against the boosted LSVM: 9 % of Poisson wake-ups waited for
  the tick (p99 as stock at 200 us requests);
* ``idle_exit_us=15``: extra latency of a wake-up onto an idle pCPU (C-state
  exit and the idle loop). Row "no hogs": p50 68 us against 55 us with
  hogs (both include the 50 us timer slack);
* ``timer_slack_us=50``: the default timer slack of a fair task's timer
  (deadline and RT tasks have none); only ``spec.Sleeper`` uses it. The
  55 us p50 of every SCHED_OTHER row; deadline row p50 5 us.

The rows are reproduced by ``tests/unit/simulator/test_kernel.py`` with
the machine's base slice (``HostSpec.default_slice_us=1400``: 700 us x (1
+ log2 2 CPUs), see ``base_slice_us``), the wake-up rules by
``tests/unit/simulator/test_kernel_preempt.py``. A caveat the model
makes visible: a probe sleeper on a fixed grid against the 4 ms tick
(3 ms or the self-test's 2 ms) meets the hogs in a few phases only, so
its rows are phase-locked: shifting the 2 ms sleeper by 3 us takes the
model's slice row from a tick to 2 us (real self-test rows: 1.6 and
3.9 ms). Poisson wake-ups (``bench/model_validation.py``) do not have it.

What the calibrated kernel does not model: the real probe's cgroup
bandwidth overhead (row "25 % CFS quota": p99 86-381 us against 63 us
without the quota; in the model the sleeper never reaches its quota, so
the cap costs nothing), the 5 ms bandwidth slice a run-queue borrows
from its group's pool (one pool per VM here), the fair server
(dl_server), DELAY_DEQUEUE's keeping a sleeper with negative lag in its
run-queue's average (the model only keeps its vruntime), and the
hierarchy of group entities (one entity per vCPU: see
``SimHost.set_vm_weight``).

The other fields: ``dl_bw_limit`` the share of every CPU SCHED_DEADLINE
may reserve (``sched_rt_runtime_us / sched_rt_period_us``, 0.95);
``cfs_period_us`` the CFS bandwidth period of a VM cap (libvirt's
default ``vcpu_period``/``cpu.cfs_period_us``, 100 ms).
"""

import dataclasses

from iosched.simulator import checks


@dataclasses.dataclass(frozen=True)
class KernelSpec:
    """How the host kernel schedules fair wake-ups (see module doc)."""
    name: str = 'linux-6.12-hrtick'
    hz: int = 1000
    hrtick: bool = True
    preempt_short: bool = True
    protect_min_slice: bool = False
    place_lag: bool = False
    idle_exit_us: int = 0
    timer_slack_us: int = 50
    dl_bw_limit: float = 0.95
    cfs_period_us: int = 100000

    def __post_init__(self):
        checks.name('KernelSpec.name', self.name)
        checks.int_range('KernelSpec.hz', self.hz, 1, 100000)
        for field in ('hrtick', 'preempt_short', 'protect_min_slice',
                      'place_lag'):
            if not isinstance(getattr(self, field), bool):
                raise ValueError('KernelSpec.%s: %r is invalid; accepted: '
                                 'True or False'
                                 % (field, getattr(self, field)))
        checks.int_range('KernelSpec.idle_exit_us', self.idle_exit_us, 0,
                         100000)
        checks.int_range('KernelSpec.timer_slack_us', self.timer_slack_us,
                         0, 100000)
        checks.number_range('KernelSpec.dl_bw_limit', self.dl_bw_limit, 0,
                            1, lo_open=True)
        checks.int_range('KernelSpec.cfs_period_us', self.cfs_period_us,
                         1000, 1000000)

    @property
    def tick_us(self):
        return 1000000 // self.hz


LINUX_6_12 = KernelSpec()
LINUX_6_18_HZ250 = KernelSpec(name='linux-6.18-hz250', hz=250, hrtick=False,
                              preempt_short=True, protect_min_slice=True,
                              place_lag=True, idle_exit_us=15)
KERNELS = {k.name: k for k in (LINUX_6_12, LINUX_6_18_HZ250)}


def base_slice_us(pcpus, base_us=700):
    """The kernel's default EEVDF slice on a host of ``pcpus`` CPUs:
    ``sysctl_sched_base_slice`` (700 us) x (1 + log2(min(pcpus, 8)))
    (SCHED_TUNABLESCALING_LOG), for ``HostSpec.default_slice_us``.
    """
    n = min(max(1, int(pcpus)), 8)
    return base_us * (1 + n.bit_length() - 1)


def kernel(name):
    """The named ``KernelSpec`` (``KERNELS``), e.g. for a scenario file."""
    try:
        return KERNELS[name]
    except (KeyError, TypeError):
        raise ValueError('kernel: %r is invalid; accepted: one of %s'
                         % (name, ', '.join(sorted(KERNELS))))
