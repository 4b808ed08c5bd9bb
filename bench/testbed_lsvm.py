#!/usr/bin/env python3
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
"""LSVM on a shared pCPU, real guests: stock vs each LSVM mechanism.

One latency-sensitive guest (request/response, 50 req/s of 200 us) and
three CPU-bound guests share one pCPU (vCPUs and emulator threads pinned
there); the other pCPU carries three host busy loops, so an LSVM whose
threads the agent unpins (mechanism ``deadline``) finds no idle CPU
either. Phases, interleaved over ``--rounds`` (the order of the non-idle
phases rotates each round, so drift of a shared machine hits all):

* idle: the LSVM alone on the other pCPU, busy loops stopped (the floor);
* stock: no agent;
* slice / weight / deadline: the host agent (vSlicer policy) with that
  mechanism, ticking every second; it restores everything afterwards.

The agent's wake-up self-test runs first, the way an agent restarting on
this host runs it (``lsvm_mechanism.resolve``: the guests up and busy, the
host busy loops and the outside load running, ``[libvirt] guest_pcpus`` =
the guests' pCPU as an operator sets it): its table, wall time, what auto
picks and the measurement it names. ``--outside-load N`` adds N busy loops
outside the VMs, in the root cgroup and free to run on any CPU (other
processes of a shared machine), for the whole run; the verdict line says
whether auto's choice met every target. Then, per mechanism, the LSVM
guest turns CPU-bound for a few seconds: its vCPU's CPU share under the
mechanism vs stock (a reservation or cap must hold it at its share).

Per phase: LSVM RTT p50/p99 (rounds pooled, and per round), every guest's
CPU share (vCPU thread run time / wall time), the burners' throughput.
Printed with the issue's targets (met or not) and written as JSON to
``out/bench/testbed_lsvm.json``.

Needs root, libvirt + QEMU and the testbed (python -m iosched.testbed
build). ``make bench-testbed`` runs it with the defaults (about 12 min);
``--quick`` is a 2-round smoke run.
"""

import argparse
import json
import os
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))

from bench import lsvm_knob_snapshot as knob_snap  # noqa: E402
from bench import testbed_common as common  # noqa: E402
from bench import testbed_lsvm_report as report  # noqa: E402
from iosched.contract import lsvm as lsvm_bound  # noqa: E402
from iosched.host_agent.actuators import host_knobs  # noqa: E402
from iosched.host_agent import assembly  # noqa: E402
from iosched.host_agent import conf as agent_conf  # noqa: E402
from iosched.host_agent.drivers.libvirt import threads  # noqa: E402
from iosched.host_agent import lsvm_mechanism  # noqa: E402
from iosched.host_agent import model  # noqa: E402
from iosched.host_agent.policies import vslicer  # noqa: E402
from iosched.host_agent import privsep  # noqa: E402

CONF = agent_conf.CONF
PREFIX = 'iosched-lsvm-'


def progress(msg):
    print(msg, file=sys.stderr, flush=True)


class HostHogs(object):
    """Busy loops on one CPU (started and stopped between phases)."""

    def __init__(self, cpu, count):
        self.cpu, self.count, self.procs = cpu, count, []

    def start(self):
        if self.procs or not self.count:
            return
        pin = (None if self.cpu is None else
               (lambda: os.sched_setaffinity(0, {self.cpu})))
        self.procs = [subprocess.Popen(
            [sys.executable, '-c', 'while 1: pass'], preexec_fn=pin)
            for _ in range(self.count)]

    def stop(self):
        for p in self.procs:
            p.kill()
            p.wait()
        self.procs = []

    def cpu_ns(self):
        """CPU time (ns) the running loops have had so far."""
        total = 0
        for p in self.procs:
            try:
                with open('/proc/%d/schedstat' % p.pid) as f:
                    total += int(f.read().split()[0])
            except (OSError, ValueError, IndexError):
                pass
        return total


def measure(guests, seconds, rate, burst_us, label, client='fifo',
            loops=None):
    """LSVM RTTs (the client where ``client`` says, see
    ``common.add_client_arg``), every guest's CPU share and the burners'
    throughput; with ``loops`` ({name: HostHogs}) their CPU share too
    (``loops_share``: who pays for what the guests gain).
    """
    loops = loops or {}
    knobs0 = lsvm_knobs(guests['lsvm'])
    c0, t0 = {n: h.cpu_ns() for n, h in loops.items()}, time.monotonic()
    out = common.measure(guests['lsvm'], list(guests.values()), seconds,
                         rate, burst_us, label, client=client)
    wall = time.monotonic() - t0
    out['loops_share'] = {n: round((h.cpu_ns() - c0[n]) / 1e9 / wall, 4)
                          for n, h in loops.items()}
    out['lsvm_knobs'] = knob_snap.delta(knobs0, lsvm_knobs(guests['lsvm']))
    return out


def lsvm_knobs(lsvm):
    """Where the LSVM's vCPU 0 competes now (``bench.lsvm_knob_snapshot``):
    its class, its cgroup and every ancestor's weight, cap and throttling.
    """
    try:
        pid = threads.qemu_pid(common.RUN_DIR, lsvm.domain_name)
        tid = threads.vcpu_tids(common.PROC, pid)[0]
    except (threads.ThreadError, KeyError, OSError) as e:
        return {'error': 'no vCPU 0 thread: %s' % e}
    return knob_snap.snapshot(pid, tid, proc=common.PROC,
                              cgroup_root=CONF.host_paths.cgroup_root)


class AgentRun(object):
    """The host agent with one mechanism, ticking in a thread."""

    def __init__(self, driver, sched, cpu):
        # The mechanism under test is fixed (host_sched), not resolved.
        self.agent = assembly.build_agent(
            CONF, driver, policies=[vslicer.VSlicerPolicy(CONF)],
            journal_path='', host_sched=sched)
        self.cpu = cpu
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self):
        while not self.stop.is_set():
            t = time.thread_time()
            self.agent.tick()
            self.cpu['s'] += time.thread_time() - t
            self.cpu['ticks'] += 1
            self.stop.wait(1.0)

    def __enter__(self):
        self.thread.start()
        time.sleep(2.5)                  # two ticks: the plan is applied
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()
        self.decisions = self.agent.actuator.decisions()
        self.agent.shutdown()            # restores: the next phase is stock


def resolve(driver):
    """The agent's own start-up choice (``lsvm_mechanism.resolve``), with
    the knob set that makes the top-level LSVM group, as the agent has.
    """
    return lsvm_mechanism.resolve(CONF, driver,
                                  host_knobs.HostKnobs(CONF, driver))


def sched_for(mech, probes, driver, weight_group=''):
    """The HostSched the agent would resolve for ``mech`` on this host."""
    chosen, p99, problem = lsvm_mechanism.choose(mech, probes, 10 ** 6)
    if problem:
        progress('mechanism %s: %s' % (mech, problem))
    return lsvm_mechanism.refresh_deadline(
        model.HostSched(mechanism=chosen, wakeup_p99_us=p99, probes=probes,
                        weight_group=weight_group),
        driver)


def pin_lsvm(guests, cpu):
    common.pin_guest(guests['lsvm'], {cpu})


def cpu_bound(guests, seconds, label):
    """The LSVM spins for ``seconds``: its vCPU threads' CPU share."""
    lsvm = guests['lsvm']
    probe = common.Probe({'lsvm': lsvm})
    r0, t0 = probe.sample()['lsvm'][0], time.monotonic()
    lsvm.rr(1, rate_per_s=1, burst_us=int(seconds * 1e6), spin='time',
            timeout=seconds * 4 + 10)
    share = ((probe.sample()['lsvm'][0] - r0) / 1e9 /
             (time.monotonic() - t0))
    progress('%s: LSVM CPU-bound share %.3f' % (label, share))
    return round(share, 4)


def main(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__.split('\n\n')[0],
        epilog='Phases and targets: see bench/README.md and docs/status.md.')
    p.add_argument('--seconds', type=int, default=10,
                   help='seconds per phase and round (default %(default)s)')
    p.add_argument('--rounds', type=int, default=5,
                   help='rounds of all phases, interleaved (default '
                   '%(default)s)')
    p.add_argument('--mechanisms', default='slice,weight,deadline',
                   help='agent phases (default %(default)s)')
    p.add_argument('--rate', type=int, default=50, help='LSVM requests/s')
    p.add_argument('--burst-us', type=int, default=200)
    p.add_argument('--shared-cpu', type=int, default=1)
    p.add_argument('--other-cpu', type=int, default=0)
    p.add_argument('--host-hogs', type=int, default=3,
                   help='busy loops on the other pCPU (default %(default)s)')
    p.add_argument('--outside-load', type=int, default=1,
                   help='busy loops outside the VMs, on any CPU, for the '
                   'whole run (default %(default)s: a loaded host)')
    common.add_client_arg(p)
    p.add_argument('--cpu-bound-seconds', type=int, default=4,
                   help='the CPU-bound LSVM check per mechanism (0: skip)')
    p.add_argument('--quick', action='store_true',
                   help='2 rounds of 5 s, 2 s CPU-bound checks')
    p.add_argument('-o', '--output-dir', default='out/bench')
    args = p.parse_args(argv)
    if args.quick:
        args.rounds, args.seconds, args.cpu_bound_seconds = 2, 5, 2
    mechs = [m for m in args.mechanisms.split(',') if m]
    bad = [m for m in mechs if m not in lsvm_bound.MECHANISMS]
    if bad:
        p.error('unknown mechanism(s) %s; accepted: %s' % (
            ','.join(bad), ','.join(lsvm_bound.MECHANISMS)))
    CONF([], project='iosched', default_config_files=[])
    CONF.set_override('journal_path', '', 'host_agent')
    # The guests run on the shared pCPU: the operator's guest_pcpus (what
    # the self-test loads and measures).
    CONF.set_override('guest_pcpus', str(args.shared_cpu), 'libvirt')
    # The measuring client shares the other pCPU with busy loops: nice -20
    # keeps its own wake-ups out of the RTTs (measured 58-60 us p99 there).
    os.setpriority(os.PRIO_PROCESS, 0, -20)

    from iosched.testbed import daemons
    from iosched.testbed import spec
    from iosched.testbed import testbed
    daemons.ensure_libvirtd()       # and /dev/kvm as udev sets it
    tb = testbed.Testbed(prefix=PREFIX)
    tb.build()
    tb.down()
    progress('booting 4 tiny guests (TCG) pinned to pCPU %d ...'
             % args.shared_cpu)
    started = tb.up([spec.GuestSpec('lsvm', 'rr'),
                     spec.GuestSpec('cpu1', 'burn'),
                     spec.GuestSpec('cpu2', 'burn'),
                     spec.GuestSpec('cpu3', 'burn')], pin=args.shared_cpu)
    guests = {g.name: g for g in started}
    privsep.ensure_started(CONF)    # fork it before any fd is open
    # The agent sees this bench's guests only (other testbeds may run).
    driver = common.ScopedDriver.for_prefix(CONF, PREFIX)
    hogs = HostHogs(args.other_cpu, args.host_hogs)
    outside = HostHogs(None, args.outside_load)
    loops = {'host_hogs': hogs, 'outside': outside}
    phases = {k: [] for k in ['idle', 'stock'] + mechs}
    results = {'config': dict(vars(args), mechanisms=mechs)}
    cpu = {'s': 0.0, 'ticks': 0}
    t_start = time.monotonic()
    try:
        time.sleep(3)
        driver.list_instances()
        outside.start()
        hogs.start()
        time.sleep(1)
        t0 = time.monotonic()
        chosen = resolve(driver)
        selftest_s = time.monotonic() - t0
        probes = chosen.probes
        results['selftest'] = {
            'seconds': round(selftest_s, 2), 'auto': chosen.mechanism,
            'measured_by': chosen.measured_by,
            'rows': [dict(r.__dict__) for r in probes]}
        progress('self-test %.1f s, auto picks %s (%s):\n%s' % (
            selftest_s, chosen.mechanism, chosen.measured_by,
            '\n'.join(lsvm_mechanism.format_table(probes))))
        scheds = {m: sched_for(m, probes, driver, chosen.weight_group)
                  for m in mechs}
        for r in range(args.rounds):
            tag = 'round %d/%d' % (r + 1, args.rounds)
            hogs.stop()
            outside.stop()          # the floor: nothing else on that core
            pin_lsvm(guests, args.other_cpu)
            phases['idle'].append(measure(guests, args.seconds,
                                          args.rate, args.burst_us,
                                          tag + ' idle', args.client,
                                          loops))
            pin_lsvm(guests, args.shared_cpu)
            outside.start()
            hogs.start()
            order = ['stock'] + mechs
            order = order[r % len(order):] + order[:r % len(order)]
            for phase in order:
                label = '%s %s' % (tag, phase)
                if phase == 'stock':
                    phases[phase].append(measure(
                        guests, args.seconds, args.rate,
                        args.burst_us, label, args.client, loops))
                    continue
                with AgentRun(driver, scheds[phase], cpu):
                    phases[phase].append(measure(
                        guests, args.seconds, args.rate,
                        args.burst_us, label, args.client, loops))
                pin_lsvm(guests, args.shared_cpu)
        if args.cpu_bound_seconds:
            bound = {'stock': cpu_bound(guests, args.cpu_bound_seconds,
                                        'stock')}
            for m in mechs:
                with AgentRun(driver, scheds[m], cpu) as run:
                    bound[m] = cpu_bound(guests, args.cpu_bound_seconds, m)
                bound[m + '_limit'] = report.share_limit(
                    run.decisions, guests['lsvm'].uuid)
                pin_lsvm(guests, args.shared_cpu)
            results['cpu_bound_share'] = bound
    finally:
        hogs.stop()
        outside.stop()
        driver.close()
        tb.down()
        tb.close()
    results['wall_s'] = round(time.monotonic() - t_start, 1)
    results['agent_cpu_ms_per_tick'] = round(
        cpu['s'] / max(1, cpu['ticks']) * 1e3, 3)
    for name, rounds in phases.items():
        results[name] = common.pool(rounds)
    results['targets'] = report.targets(results, mechs)
    print('\n'.join(report.table(results, mechs)))
    os.makedirs(args.output_dir, exist_ok=True)
    path = os.path.join(args.output_dir, 'testbed_lsvm.json')
    with open(path, 'w') as fh:
        json.dump(results, fh, indent=2, sort_keys=True)
    print('wrote %s (%.0f s)' % (path, results['wall_s']))
    return 0


if __name__ == '__main__':
    sys.exit(main())
