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
"""The wake-up self-test's sleeper (and busy loop): a child process.

``python -m iosched.host_agent.linux.wakeup_sleeper --wakes N --period-us P
--work-us W`` sets its timer slack to 1 ns, prints ``ready`` and waits for
``go`` on stdin; the parent meanwhile gives it its scheduling class or
cgroup. Any other line makes it answer ``ready`` again: a blocked task
stays on its old CPU's runqueue after an affinity change until it wakes,
and ``sched_setattr(SCHED_DEADLINE)`` checks the root domain of that
runqueue, so the parent wakes it once after pinning it. Then it wakes every P
us on an absolute ``clock_nanosleep`` (CLOCK_MONOTONIC, TIMER_ABSTIME),
measures how late each wake-up is (now - the time it asked for), spins W us as
a vCPU would handle an interrupt, and finally prints ``{"lateness_us": [...]}``
(one JSON line). The first ``WARMUP`` wakes are not reported. ``--budget-ms``
bounds the run on a starved host (late wakes skip periods): it then reports
fewer wakes.

Why timer slack 1 ns: a SCHED_OTHER thread's timers may fire up to its
slack (50 us by default) late, to batch wake-ups. A vCPU is woken by an
eventfd or an IPI, not by its own timer, so the default slack would add
50 us to every sample that the vCPU never pays (the issue's table shows
it as the 50-60 us p50 of SCHED_OTHER). RT and deadline threads have no
slack, so 1 ns keeps the cases comparable.

``--share-ms S`` adds a CPU-bound phase after the wakes: it spins for a
100-ms warm-up and then S ms of wall time and reports ``share``, its CPU
time over those S ms (what the mechanism lets a guest that turns CPU-bound
take).

``--hog`` makes a busy loop instead (the self-test's CPU burners). Both
ask the kernel to kill them when their parent dies
(``PR_SET_PDEATHSIG``), so an interrupted self-test leaves no spinner.

Only the standard library: this runs in a fresh interpreter per case and
must start fast.
"""

import argparse
import ctypes
import json
import os
import signal
import sys
import time

PR_SET_PDEATHSIG = 1
PR_SET_TIMERSLACK = 29
CLOCK_MONOTONIC = 1
TIMER_ABSTIME = 1
EINTR = 4
WARMUP = 10          # wakes dropped at the start (caches, first migration)


class _Timespec(ctypes.Structure):
    _fields_ = [('tv_sec', ctypes.c_long), ('tv_nsec', ctypes.c_long)]


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def _die_with_parent(libc, parent):
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:       # the parent died before prctl
        os._exit(1)


def hog(parent):
    _die_with_parent(_libc(), parent)
    while True:
        pass


SHARE_WARMUP_MS = 100   # one CFS quota period (the weight case's cap)


def spin_share(ms, clock=time.monotonic, cpu=time.thread_time,
               warmup_ms=SHARE_WARMUP_MS):
    """Spin ``warmup_ms``, then ``ms`` of wall time: CPU time / wall time
    over the second part. The warm-up uses up what is left of a CFS quota
    period, so a capped sleeper next runs when a period starts: the window
    then spans whole periods (a window starting mid-period could take the
    rest of that period's quota and more: 0.47 of a CPU measured under a
    0.33 cap over 200 ms without it).
    """
    if ms <= 0:
        return 0.0
    end = clock() + warmup_ms / 1000.0
    while clock() < end:
        pass
    w0, c0 = clock(), cpu()
    end = w0 + ms / 1000.0
    while clock() < end:
        pass
    wall = clock() - w0
    return (cpu() - c0) / wall if wall > 0 else 0.0


def sleep(wakes, period_us, work_us, parent, stdin=None, stdout=None,
          budget_ms=0, share_ms=0):
    stdin = stdin or sys.stdin
    stdout = stdout or sys.stdout
    libc = _libc()
    _die_with_parent(libc, parent)
    if libc.prctl(PR_SET_TIMERSLACK, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), 'prctl(PR_SET_TIMERSLACK, 1)')
    while True:
        stdout.write('ready\n')
        stdout.flush()
        line = stdin.readline()
        if not line:
            return 1                 # the parent gave up
        if line.strip() == 'go':
            break
        # Any other line: wake up (and so move to a CPU of a new
        # affinity) and wait again.
    clock = time.clock_gettime_ns
    nanosleep = libc.clock_nanosleep
    ts = _Timespec()
    ref = ctypes.byref(ts)
    period = period_us * 1000
    work = work_us * 1000
    out = []
    target = clock(CLOCK_MONOTONIC) + period
    stop = target + budget_ms * 1000000 if budget_ms > 0 else None
    for _ in range(WARMUP + wakes):
        if stop is not None and target > stop:
            break                    # starved: report what we have
        ts.tv_sec, ts.tv_nsec = divmod(target, 1000000000)
        while True:
            err = nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, ref, None)
            if err != EINTR:
                break
        now = clock(CLOCK_MONOTONIC)
        out.append(now - target)
        end = now + work
        while clock(CLOCK_MONOTONIC) < end:
            pass
        target += period
        now = clock(CLOCK_MONOTONIC)
        while target <= now:         # overran a period: skip, no burst
            target += period
    share = spin_share(share_ms)
    stdout.write(json.dumps({'lateness_us': [
        round(ns / 1000.0, 1) for ns in out[WARMUP:]],
        'share': round(share, 4)}) + '\n')
    stdout.flush()
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('--hog', action='store_true')
    p.add_argument('--wakes', type=int, default=300)
    p.add_argument('--period-us', type=int, default=2000)
    p.add_argument('--work-us', type=int, default=50)
    p.add_argument('--budget-ms', type=int, default=0,
                   help='stop after this long even if fewer wakes ran '
                        '(0: no limit)')
    p.add_argument('--share-ms', type=int, default=0,
                   help='a CPU-bound phase of this many ms after the wakes '
                        '(0: none)')
    p.add_argument('--parent', type=int, default=os.getppid())
    args = p.parse_args(argv)
    if args.hog:
        hog(args.parent)
    return sleep(args.wakes, args.period_us, args.work_us, args.parent,
                 budget_ms=args.budget_ms, share_ms=args.share_ms)


if __name__ == '__main__':
    sys.exit(main())
