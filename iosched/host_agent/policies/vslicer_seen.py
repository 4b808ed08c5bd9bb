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
"""What the LSVM vCPUs themselves waited: vSlicer's W, seen on the host.

The self-test predicts W from a probe thread; the LSVMs' own vCPU threads
show it. The libvirt driver pairs each traced wake-up of a vCPU thread
with its next switch-in (``tracing.run_delays``); this module keeps the
LSVM vCPUs' delays of the last ``seen_window_s`` seconds under the
mechanism in force (the vSlicer policy's ``State``) and, once
``lsvm.SEEN_MIN_WAKES`` were seen, their p99 as the W of that mechanism
(``Seen``; held until it moves by ``lsvm.SEEN_HYSTERESIS``). A busy tick
of a vCPU (run share at least ``lsvm.SEEN_BUSY_RUN_SHARE``) and the
ticks on either side of it add nothing: its waits are on its own CPU use.
Pure.
"""

import dataclasses

from iosched.contract import lsvm
from iosched.contract import stats
from iosched.host_agent.policies import vslicer_bound

# Memory bound of the window: the newest delays are kept (a 60 s window
# of an LSVM waking 800 times a second).
MAX_DELAYS = 50000


@dataclasses.dataclass(frozen=True)
class State:
    """The vSlicer policy's state: the window of seen delays."""
    mechanism: str = ''
    # ((ts, (instance uuid, vcpu), (delay us, ...)), ...), oldest first
    ticks: tuple = ()
    w_us: float = 0.0          # the seen W in use (0: not enough seen)
    busy: frozenset = frozenset()   # vCPUs busy in the last snapshot
    last_ts: float = 0.0       # that snapshot's time


@dataclasses.dataclass(frozen=True)
class Seen:
    w_us: float = 0.0          # the W in use; 0: fewer than SEEN_MIN_WAKES
    p99_us: float = 0.0        # the window's p99 now (0: too few)
    wakes: int = 0             # delays in the window
    window_s: int = 0


# Control law (the window W_t of the LSVM vCPUs' wake-to-run delays):
#   busy_t = {LSVM vCPUs whose run share in this snapshot is at least
#            SEEN_BUSY_RUN_SHARE}
#   W_t = W_{t-1}
#         + {delays of each LSVM vCPU in this snapshot, unless it is in
#            busy_t or busy_{t-1}}
#         - {its delays of the previous snapshot if it is in busy_t}
#         - the entries with ts <= t - seen_window_s;
#         empty when the mechanism in force changed (a new mechanism is a
#         new measurement); at most MAX_DELAYS, the newest kept
#   (a busy vCPU waits on its own CPU use, and the ticks on either side
#    of a busy one are part of the same burst: a boot's first and last
#    second)
#   p_t = p99(W_t) (stats.percentile) if |W_t| >= SEEN_MIN_WAKES, else 0
#   w_t = p_t          if w_{t-1} = 0 or p_t = 0
#                      or |p_t - w_{t-1}| > SEEN_HYSTERESIS * w_{t-1}
#         w_{t-1}      otherwise            (the seen W in use)
def update(state, snapshot, window_s):
    """The next ``State`` after ``snapshot`` (``model.HostSnapshot``)."""
    state = state or State()
    mech = snapshot.sched.mechanism
    same = state.mechanism == mech
    ticks = state.ticks if same else ()
    lsvms = {u for u, i in snapshot.instances.items()
             if i.latency_sensitive}
    mine = [v for v in snapshot.vcpus if v.instance_uuid in lsvms]
    busy = frozenset((v.instance_uuid, v.vcpu) for v in mine
                     if v.run_share >= lsvm.SEEN_BUSY_RUN_SHARE)
    if busy:
        ticks = tuple(t for t in ticks
                      if not (t[1] in busy and t[0] == state.last_ts))
    for v in mine:
        key = (v.instance_uuid, v.vcpu)
        if v.run_delays_ns and key not in busy and key not in state.busy:
            ticks += ((snapshot.ts, key,
                       tuple(d / 1000.0 for d in v.run_delays_ns)),)
    ticks = tuple(t for t in ticks if t[0] > snapshot.ts - window_s)
    total = sum(len(t[2]) for t in ticks)
    while total > MAX_DELAYS and len(ticks) > 1:
        total -= len(ticks[0][2])
        ticks = ticks[1:]
    p99 = _window_w(ticks)
    w = state.w_us if same else 0.0
    if (w <= 0 or p99 <= 0
            or abs(p99 - w) > lsvm.SEEN_HYSTERESIS * w):
        w = p99
    return State(mechanism=mech, ticks=ticks, w_us=w, busy=busy,
                 last_ts=snapshot.ts)


def _window_w(ticks):
    delays = [d for t in ticks for d in t[2]]
    if len(delays) < lsvm.SEEN_MIN_WAKES:
        return 0.0
    return stats.percentile(delays, 0.99)


def seen(state, window_s):
    """``Seen`` of a ``State``."""
    return Seen(w_us=state.w_us, p99_us=_window_w(state.ticks),
                wakes=sum(len(t[2]) for t in state.ticks),
                window_s=window_s)


def w_us(sched, mechanism, seen_, in_force):
    """The W to plan ``mechanism`` with: the seen one for the mechanism in
    force when there is one, else the self-test's
    (``vslicer_bound.measured_us`` of ``sched``).
    """
    if seen_ is not None and mechanism == in_force and seen_.w_us > 0:
        return seen_.w_us
    return vslicer_bound.measured_us(sched, mechanism)
