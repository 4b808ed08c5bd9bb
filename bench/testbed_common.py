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
"""Shared parts of the real-guest benchmarks (``bench/testbed_*.py``).

* ``boot``: start libvirtd if needed, build (cached), remove this prefix's
  leftovers, boot guests pinned to one pCPU; ``pin_guest`` moves one.
* ``Probe``: CPU time of each guest's vCPU threads and of its other QEMU
  threads (emulator, RCU, workers) straight from procfs, so measuring never
  shares the agent's driver (its tracer and inventory).
* ``measure`` / ``pool``: one phase of request/response traffic with the
  burn rates sampled every second and CPU shares over the phase; rounds of
  one arm pooled (RTTs together, shares and rates averaged). The rr client
  runs where ``client`` says (``iosched.testbed.rr_client``: a SCHED_FIFO
  child by default in the LSVM benches, so the host-side client's own
  wake-ups stay out of the server's RTT; ``add_client_arg``).
* ``interleave``: arms run in ABBA order over the rounds, so a shared
  machine's drift hits every arm alike.
* ``ScopedDriver`` and ``AgentThread``: the host agent with the given
  ``[host_agent] policies``, ticking in a thread, seeing only this
  testbed's domains (other helpers' guests on the same host are left
  alone), and restoring every knob it changed on exit.
* ``ratio``, ``write_json``, ``progress``.
"""

import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))

from iosched.contract import stats  # noqa: E402
from iosched.host_agent.drivers.libvirt import \
    driver as lv_driver  # noqa: E402
from iosched.host_agent.drivers.libvirt import threads  # noqa: E402
from iosched.testbed import burn_sampler  # noqa: E402
from iosched.testbed import rr_client  # noqa: E402

RUN_DIR = '/run/libvirt/qemu'
PROC = '/proc'


def progress(msg):
    """A progress line on stderr (stdout holds the table)."""
    print(msg, file=sys.stderr, flush=True)


def rounded_us(values, q):
    """The q-quantile of ``values`` (``iosched.contract.stats``) rounded to
    0.1 (us); 0.0 without any.
    """
    return round(stats.percentile(values, q) or 0.0, 1)


def ratio(a, b, nd=3):
    """a / b rounded, or None when b is 0 or either is missing."""
    if a is None or b is None or not b:
        return None
    return round(a / b, nd)


def setup_conf(conf, overrides=()):
    """Parse no files and no argv; no persistent journal (the agent's
    ``shutdown()`` restores from memory); then ``(group, name, value)``
    overrides, e.g. ``('host_agent', 'policies', ['isacs'])``.
    """
    conf([], project='iosched', default_config_files=[])
    conf.set_override('journal_path', '', 'host_agent')
    for group, name, value in overrides:
        conf.set_override(name, value, group)
    return conf


# -- guests ---------------------------------------------------------------
def boot(specs, prefix, pin, log=progress):
    """Boot ``specs`` (``GuestSpec`` list) pinned to pCPU ``pin``; returns
    (Testbed, {name: Guest}, libvirtd_started). The caller runs
    ``shutdown(tb, started)`` in a ``finally``.
    """
    from iosched.testbed import daemons
    from iosched.testbed import testbed
    started = daemons.ensure_libvirtd()
    tb = testbed.Testbed(prefix=prefix, log=log)
    try:
        tb.build()
        tb.down()
        log('booting %d tiny guests (TCG) pinned to pCPU %d: %s'
            % (len(specs), pin, ', '.join('%s:%s' % (s.name, s.mode)
                                          for s in specs)))
        guests = tb.up(specs, pin=pin)
    except BaseException:
        shutdown(tb, started)
        raise
    return tb, {g.name: g for g in guests}, started


def shutdown(tb, libvirtd_started):
    """Remove this prefix's guests; stop libvirtd only if ``boot`` started
    it.
    """
    from iosched.testbed import daemons
    try:
        tb.down()
    finally:
        tb.close()
        if libvirtd_started:
            daemons.stop_libvirtd()


def pin_guest(guest, cpus, vcpus=True, emulator=True):
    """Pin a guest's vCPUs and/or emulator threads (live) to ``cpus``."""
    dom = guest.domain
    ncpu = len(dom.emulatorPinInfo(0))
    cpumap = tuple(i in cpus for i in range(ncpu))
    if vcpus:
        for v in range(len(dom.vcpuPinInfo(0))):
            dom.pinVcpuFlags(v, cpumap, 1)       # VIR_DOMAIN_AFFECT_LIVE
    if emulator:
        dom.pinEmulator(cpumap, 1)


def cpus_of(cpumap):
    return tuple(i for i, on in enumerate(cpumap) if on)


# -- CPU time from procfs -------------------------------------------------
def _run_ns(pid, tid):
    with open('%s/%d/task/%d/schedstat' % (PROC, pid, tid)) as fh:
        return int(fh.read().split()[0])


class Probe:
    """Cumulative CPU ns of each guest's vCPU threads and of its other
    QEMU threads, read from procfs (no libvirt, no shared driver).
    """

    def __init__(self, guests):
        self.guests = dict(guests)
        self._pids = {}

    def _pid(self, g):
        pid = self._pids.get(g.name)
        if pid is None:
            pid = self._pids[g.name] = threads.qemu_pid(RUN_DIR,
                                                        g.domain_name)
        return pid

    def sample(self):
        """{name: (vcpu_ns, other_ns)}."""
        out = {}
        for name, g in self.guests.items():
            pid = self._pid(g)
            vcpus = set(threads.vcpu_tids(PROC, pid).values())
            v = o = 0
            for t in os.listdir('%s/%d/task' % (PROC, pid)):
                try:
                    ns = _run_ns(pid, int(t))
                except (OSError, ValueError):
                    continue              # the thread just exited
                if int(t) in vcpus:
                    v += ns
                else:
                    o += ns
            out[name] = (v, o)
        return out


def cpu_times():
    """{cpu: (busy, total)} jiffies from /proc/stat."""
    out = {}
    with open(PROC + '/stat') as fh:
        for line in fh:
            f = line.split()
            if f and f[0].startswith('cpu') and f[0] != 'cpu':
                vals = [int(x) for x in f[1:]]
                idle = vals[3] + (vals[4] if len(vals) > 4 else 0)
                out[int(f[0][3:])] = (sum(vals) - idle, sum(vals))
    return out


def cpu_busy(before, after):
    """{'cpu': busy fraction} between two ``cpu_times`` samples (string
    keys, as the JSON keeps them).
    """
    return {str(c): round((after[c][0] - before[c][0]) /
                     max(1, after[c][1] - before[c][1]), 3)
            for c in after if c in before}


def thread_waits(guest):
    """{'vcpu' | 'other': (wait ns, runs)} summed over a guest's vCPU
    threads and its other QEMU threads (schedstat fields 2 and 3: time
    runnable but waiting, timeslices).
    """
    pid = threads.qemu_pid(RUN_DIR, guest.domain_name)
    vcpus = set(threads.vcpu_tids(PROC, pid).values())
    out = {'vcpu': (0, 0), 'other': (0, 0)}
    for t in os.listdir('%s/%d/task' % (PROC, pid)):
        key = 'vcpu' if int(t) in vcpus else 'other'
        try:
            with open('%s/%d/task/%s/schedstat' % (PROC, pid, t)) as fh:
                f = fh.read().split()
            w, r = out[key]
            out[key] = (w + int(f[1]), r + int(f[2]))
        except (OSError, ValueError, IndexError):
            continue                  # the thread just exited
    return out


def wait_us_per_run(before, after):
    """Mean wait (µs) per timeslice between two ``other_waits``."""
    runs = after[1] - before[1]
    return round((after[0] - before[0]) / 1e3 / runs, 1) if runs > 0 \
        else None


# the per-second burn rates (one definition, shared with rr_client)
BurnSampler = burn_sampler.BurnSampler


def add_client_arg(parser, default='fifo'):
    """``--client``: where the rr client runs (``rr_client.CLIENTS``)."""
    parser.add_argument(
        '--client', choices=rr_client.CLIENTS, default=default,
        help='where the LSVM\'s request client runs: fifo = a child '
             'process at SCHED_FIFO (a remote client\'s stand-in: its own '
             'wake-ups stay out of the RTT), other = a child at the '
             'normal policy, inline = a thread of this process, beside '
             'the agent (default: %(default)s)')


def measure(rr_guest, guests, seconds, rate, burst_us, label,
            client='inline'):
    """One phase: ``rate`` req/s for ``seconds`` to ``rr_guest`` (an rr or
    hybrid guest; ``client`` as ``rr_client.run`` takes it: a child
    process needs an rr guest) while burn rates are sampled. Returns RTT
    p50/p99 and the
    RTTs, each guest's vCPU CPU share and other-QEMU-thread CPU share over
    the phase (CPU seconds per wall second), and mean burn rates.
    """
    probe = Probe({g.name: g for g in guests})
    count = max(1, int(rate * seconds))
    progress('%s: %d requests at %d/s, burst %d us' % (label, count, rate,
                                                       burst_us))
    t0 = time.monotonic()
    run0 = probe.sample()
    apart = client != 'inline'
    with BurnSampler([g for g in guests if not (apart and g is rr_guest)]
                     ) as sampler:
        answer = rr_client.session(rr_guest, count, rate, burst_us, client)
    rtts = answer['rtts']
    if apart and rr_guest.mode in burn_sampler.BURN_MODES:
        # its reports reached the child that held the channel
        sampler.rates[rr_guest.name] = answer['burn_rates']
    run1 = probe.sample()
    wall = time.monotonic() - t0
    out = {'rtt_p50_us': rounded_us(rtts, 0.5),
           'rtt_p99_us': rounded_us(rtts, 0.99),
           'requests': len(rtts), 'wall_s': round(wall, 2),
           'client': client,
           'cpu_share': {n: round((run1[n][0] - run0[n][0]) / 1e9 / wall, 4)
                         for n in run0},
           'qemu_other_share': {
               n: round((run1[n][1] - run0[n][1]) / 1e9 / wall, 4)
               for n in run0},
           'burn_iter_per_s': sampler.means(), 'rtts': rtts}
    # All the guests' QEMU threads together: on one shared pCPU about 1.0
    # when nothing outside the benchmark ran there (a noise indicator).
    out['guests_cpu_total'] = round(sum(out['cpu_share'].values()) + sum(
        out['qemu_other_share'].values()), 3)
    progress('%s: p50 %.0f us, p99 %.0f us, shares %s, guests total %.3f' % (
        label, out['rtt_p50_us'], out['rtt_p99_us'],
        ' '.join('%s=%.3f' % kv for kv in sorted(out['cpu_share'].items())),
        out['guests_cpu_total']))
    return out


def _mean(values):
    return sum(values) / len(values) if values else 0.0


def pool(rounds):
    """Pool the rounds of one arm: RTTs together (percentiles of the pooled
    samples, plus each round's), shares and burn rates averaged.
    """
    rtts = [r for x in rounds for r in x['rtts']]
    first = rounds[0]
    out = {'rtt_p50_us': rounded_us(rtts, 0.5),
           'rtt_p99_us': rounded_us(rtts, 0.99),
           'requests': len(rtts), 'rounds': len(rounds),
           'rounds_p50_us': [x['rtt_p50_us'] for x in rounds],
           'rounds_p99_us': [x['rtt_p99_us'] for x in rounds],
           'rounds_guests_cpu_total': [x.get('guests_cpu_total')
                                       for x in rounds],
           'rounds_cpu_share': [x.get('cpu_share') for x in rounds]}
    if any('lsvm_knobs' in x for x in rounds):
        # where the LSVM competed in each round (bench.lsvm_knob_snapshot)
        out['rounds_lsvm_knobs'] = [x.get('lsvm_knobs') for x in rounds]
    for key, nd in (('cpu_share', 4), ('qemu_other_share', 4),
                    ('loops_share', 4), ('burn_iter_per_s', 0)):
        out[key] = {n: round(_mean([x[key][n] for x in rounds]), nd)
                    for n in first.get(key, {})}
    out['burn_iter_per_s'] = {n: int(v) for n, v in
                              out['burn_iter_per_s'].items()}
    return out


def median(values):
    vals = sorted(v for v in values if v is not None)
    if not vals:
        return None
    mid = len(vals) // 2
    return vals[mid] if len(vals) % 2 else (vals[mid - 1] + vals[mid]) / 2


def round_ratios(arm_rounds, base_rounds, key):
    """Per round, ``arm[key] / base[key]`` (same round: adjacent in time
    under ABBA) and their median, robust to a round in which the shared
    machine was busy for both.
    """
    per = [ratio(a[key], b[key]) for a, b in zip(arm_rounds, base_rounds)]
    m = median(per)
    return {'per_round': per, 'median': None if m is None else round(m, 3)}


def interleave(rounds, arms):
    """Run ``arms`` ([(label, fn(round_index, label) -> result)]) for
    ``rounds`` rounds in ABBA order (even rounds in the given order, odd
    rounds reversed). Returns {label: [result per round]}.
    """
    out = {label: [] for label, _ in arms}
    for n in range(rounds):
        order = arms if n % 2 == 0 else list(reversed(arms))
        for label, fn in order:
            out[label].append(fn(n, '%s round %d/%d' % (label, n + 1,
                                                        rounds)))
    return out


def knob_view(guests):
    """What the kernel and libvirt hold now, per guest: the vCPU 0 and
    emulator (main loop) threads' slices in us, and the vCPU 0 and
    emulator pins. For showing that a knob was applied and restored.
    """
    from iosched.host_agent.linux import sched
    out = {}
    for name, g in sorted(guests.items()):
        pid = threads.qemu_pid(RUN_DIR, g.domain_name)
        tid = threads.vcpu_tids(PROC, pid)[0]
        dom = g.domain
        out[name] = {'vcpu_slice_us': sched.get_slice_us(tid),
                     'emulator_slice_us': sched.get_slice_us(pid),
                     'vcpu_pin': list(cpus_of(dom.vcpuPinInfo(0)[0])),
                     'emulator_pin': list(cpus_of(dom.emulatorPinInfo(0)))}
    return out


# -- the agent --------------------------------------------------------------
class ScopedDriver(lv_driver.LibvirtDriver):
    """The libvirt driver, seeing only domains named ``<prefix>*``: a
    benchmark's agent must not touch other testbeds on a shared host.
    """

    prefix = ''

    @classmethod
    def for_prefix(cls, conf, prefix):
        d = cls.from_conf(conf)
        d.prefix = prefix
        return d

    def list_instances(self):
        return [i for i in super().list_instances()
                if i.name.startswith(self.prefix)]


class AgentThread:
    """The host agent ticking every ``interval`` s in a thread, with the
    policies named in ``[host_agent] policies`` (or ``policies``, a list
    of policy objects). ``on_tick(agent)`` runs after each tick (e.g. to
    record ``agent.last_plan``). On exit the loop stops and ``shutdown()``
    restores every knob the agent changed; ``restored`` holds the count.
    A driver is made (and closed) unless one is given.
    """

    def __init__(self, conf, prefix, policies=None, interval=1.0,
                 on_tick=None, driver=None):
        self.conf, self.prefix, self.interval = conf, prefix, interval
        self.on_tick = on_tick
        self._policies = policies
        self._own_driver = driver is None
        self.driver = driver
        self.agent = None
        self.ticks = 0
        self.cpu_s = 0.0
        self.restored = None
        self.errors = []
        self._stop = threading.Event()
        self._th = None

    def __enter__(self):
        from iosched.host_agent import assembly
        from iosched.host_agent import privsep
        privsep.ensure_started(self.conf)
        if self.driver is None:
            self.driver = ScopedDriver.for_prefix(self.conf, self.prefix)
        self.agent = assembly.build_agent(
            self.conf, self.driver, policies=self._policies,
            journal_path='')
        self._th = threading.Thread(target=self._loop, daemon=True,
                                    name='agent-' + self.prefix)
        self._th.start()
        return self

    def _loop(self):
        while not self._stop.is_set():
            t = time.thread_time()
            self.agent.tick()
            self.cpu_s += time.thread_time() - t
            self.ticks += 1
            for e in getattr(self.agent.actuator, 'errors', ()):
                if e not in self.errors:
                    self.errors.append(e)
            if self.on_tick is not None:
                try:
                    self.on_tick(self.agent)
                except Exception as e:      # a recorder must not stop it
                    progress('on_tick failed: %s' % e)
            self._stop.wait(self.interval)

    def wait_ticks(self, n, timeout=60.0):
        """Block until ``n`` more ticks have run."""
        target = self.ticks + n
        deadline = time.monotonic() + timeout
        while self.ticks < target:
            if time.monotonic() > deadline:
                raise TimeoutError('agent: %d ticks in %.0f s' % (
                    self.ticks, timeout))
            time.sleep(0.05)

    def __exit__(self, *exc):
        self._stop.set()
        if self._th is not None:
            self._th.join()
        try:
            self.restored = self.agent.shutdown()
        finally:
            if self._own_driver and self.driver is not None:
                self.driver.close()
                self.driver = None

    @property
    def cpu_ms_per_tick(self):
        return round(self.cpu_s / max(1, self.ticks) * 1e3, 3)


class AgentTotals:
    """Agent CPU time, ticks and distinct actuator errors over many arms."""

    def __init__(self):
        self.cpu_s, self.ticks, self.errors = 0.0, 0, []

    def add(self, at):
        self.cpu_s += at.cpu_s
        self.ticks += at.ticks
        self.errors.extend(e for e in at.errors if e not in self.errors)

    @property
    def cpu_ms_per_tick(self):
        return round(self.cpu_s / max(1, self.ticks) * 1e3, 3)


def agent_arm(conf, prefix, run, policies=None, on_tick=None,
              settle_ticks=2, totals=None, during=None):
    """An ``interleave`` arm: ``run(n, label)`` with an ``AgentThread``
    (``policies`` objects, or ``[host_agent] policies``) that has ticked
    ``settle_ticks`` times (its plan applied) and is restored afterwards.
    ``during(label)`` runs after ``run`` while the agent still holds its
    knobs (e.g. ``knob_view``); ``totals`` (``AgentTotals``) adds up the
    agent's CPU time and errors.
    """
    def arm(n, label):
        with AgentThread(conf, prefix, policies=policies,
                         on_tick=on_tick) as at:
            at.wait_ticks(settle_ticks)
            out = run(n, label)
            if during is not None:
                during(label)
        if totals is not None:
            totals.add(at)
        return out
    return arm


# -- output -----------------------------------------------------------------
def write_json(results, output_dir, name):
    """``<output_dir>/<name>.json``; returns the path."""
    os.makedirs(output_dir, exist_ok=True)
    path = os.path.join(output_dir, name + '.json')
    with open(path + '.tmp', 'w') as fh:
        json.dump(results, fh, indent=2, sort_keys=True)
    os.replace(path + '.tmp', path)
    return path


def strip_samples(arm_rounds):
    """Rounds without their raw RTT lists (kept out of the JSON)."""
    return [{k: v for k, v in r.items() if k != 'rtts'} for r in arm_rounds]
