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
"""LSVM on a shared pCPU, Nova-created guests: stock vs the cloud's agent.

``bench/testbed_lsvm.py``'s experiment on the one-machine cloud that
``iosched-cloud up`` runs: as the tenant, through the ``openstack`` CLI,
one LSVM server (flavor ``lsvm.small``, image ``iosched-guest-rr``: 50
req/s of 200 us) and three CPU-bound servers (``bench.cpu``, a plain
1-vCPU flavor made as admin if missing; image ``iosched-guest-burn``), all
``--nic none``, named ``bench-*``. Each guest's libvirt domain is found by
the instance uuid, its workload program reached on its second TCP serial
port (ttyS1). The shared-pCPU condition is the testbed's: every guest's
vCPU, emulator and I/O threads pinned live (libvirt) to one pCPU, three
host busy loops on the other. (Nova's own way to keep guests on some
pCPUs is ``[compute] cpu_shared_set``; live pins keep the cloud's
nova.conf as it is and let the idle phase move the LSVM.)

Phases, interleaved over ``--rounds`` (the order of stock and agent
alternates):

* idle: the LSVM alone on the other pCPU, busy loops stopped, agent
  stopped (the floor);
* stock: the cloud's ``iosched-agent`` stopped (its SIGTERM restores every
  knob);
* agent: the cloud's agent started as the cloud runs it (its config: the
  policies and ``mechanism = auto`` there; the mechanism its self-test
  picked at that start is read from its log), measured once it has set a
  knob of the LSVM and ticked twice more.

Then the LSVM turns CPU-bound for a few seconds, stock and with the agent
(its vCPU's CPU share beside the limit the agent set). Figures, the
``targets`` table and the report are ``testbed_lsvm_report``'s; the agent
phase is named after the mechanism it picked. Written to
``out/bench/cloud_lsvm.json``, with each domain's XML/thread/cgroup facts
(``cloud_common.domain_facts``) and the other domains' CPU share per
phase (guests of the cloud's other users share the host).

The servers are deleted at the end and the agent left running if it ran.
Needs root and the cloud up; ``--quick``: 2 rounds of 5 s.
"""

import argparse
import os
import sys
import time
import types

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))

from bench import cloud_common as cc  # noqa: E402
from bench import testbed_common as common  # noqa: E402
from bench import testbed_lsvm as tb_lsvm  # noqa: E402
from bench import testbed_lsvm_report as report  # noqa: E402

PREFIX = 'bench-'
progress = common.progress


class Bench:
    """The servers, their guests and the agent across the phases."""

    def __init__(self, args, cloud, agent, hogs):
        self.args, self.cloud, self.agent = args, cloud, agent
        self.hogs = hogs
        self.ids = {}                 # name -> server id
        self.guests = {}              # short name -> Guest
        self.foreign = {}             # other domains on the host
        self.agent_runs = []
        self.leftovers = []           # threads a stopped agent left changed
        self.agent_cpu = {'s': 0.0, 'ticks': 0}

    # -- servers -------------------------------------------------------------
    def boot(self, conn):
        a = self.args
        stale = self.cloud.servers(PREFIX)
        if stale:
            progress('deleting leftover servers %s' % sorted(stale))
            self.cloud.delete(list(stale.values()))
        if self.cloud.ensure_flavor(a.cpu_flavor, 1, a.cpu_ram_mib, 1):
            progress('created flavor %s (1 vCPU, %d MiB, no extra specs)'
                     % (a.cpu_flavor, a.cpu_ram_mib))
        plan = [('lsvm', 'rr', a.lsvm_flavor, 'iosched-guest-rr')] + [
            ('cpu%d' % i, 'burn', a.cpu_flavor, 'iosched-guest-burn')
            for i in (1, 2, 3)]
        t0 = time.monotonic()
        for name, _, flavor, image in plan:
            self.ids[name] = self.cloud.boot(PREFIX + name, flavor, image)
        progress('booting %s ...' % ', '.join(
            '%s%s (%s)' % (PREFIX, n, self.ids[n]) for n, *_ in plan))
        self.cloud.wait_active(list(self.ids.values()))
        active_s = time.monotonic() - t0
        for name, mode, _, _ in plan:
            g = cc.nova_guest(conn, self.ids[name], name, mode)
            g.connect(timeout=60)
            self.guests[name] = g
        for g in self.guests.values():
            g.wait_hello(timeout=180)
        hello_s = time.monotonic() - t0
        progress('ACTIVE after %.0f s, every HELLO after %.0f s: %s' % (
            active_s, hello_s, ', '.join('%s=%s' % (n, g.domain_name)
                                         for n, g in self.guests.items())))
        ours = set(self.ids.values())
        for dom in conn.listAllDomains(1):           # active ones
            if dom.UUIDString() not in ours:
                self.foreign[dom.name()] = types.SimpleNamespace(
                    name=dom.name(), domain_name=dom.name())
        if self.foreign:
            progress('other domains on this host (measured as noise): %s'
                     % ', '.join(sorted(self.foreign)))
        return {'active_s': round(active_s, 1), 'hello_s': round(hello_s, 1)}

    def delete(self):
        for g in self.guests.values():
            g.close()
        if self.ids:
            progress('deleting %s' % ', '.join(PREFIX + n for n in self.ids))
            self.cloud.delete(list(self.ids.values()))

    # -- pins and phases -----------------------------------------------------
    def pin_shared(self):
        for g in self.guests.values():
            cc.pin_all(g, {self.args.shared_cpu}, self.args.pin_iothreads)

    def pin_lsvm(self, cpu):
        cc.pin_all(self.guests['lsvm'], {cpu}, self.args.pin_iothreads)

    def measure(self, label):
        """``testbed_lsvm.measure`` plus the other domains' CPU share and
        the host's (``cloud_common.HostProbe``).
        """
        probe = common.Probe(self.foreign)
        labels = {p.pid: 'host-hogs' for p in self.hogs.procs}
        labels[os.getpid()] = 'bench'
        host = cc.HostProbe(self.agent, labels)
        s0, h0, t0 = probe.sample(), host.sample(), time.monotonic()
        out = tb_lsvm.measure(self.guests, self.args.seconds, self.args.rate,
                              self.args.burst_us, label, self.args.client)
        s1, h1, wall = probe.sample(), host.sample(), time.monotonic() - t0
        out['host'] = host.diff(h0, h1)
        out['host']['foreign_domains'] = round(sum(
            sum(s1[n]) - sum(s0[n]) for n in s1) / 1e9 / wall, 4)
        progress('%s: pCPU busy %s; host processes %.3f: %s' % (
            label, out['host']['pcpu_busy'], out['host']['procs_total'],
            out['host']['procs']))
        return out

    def stop_agent(self, label):
        """Stop the cloud's agent; threads of ours it left off SCHED_OTHER
        are recorded and reset (libvirt cannot pin a SCHED_DEADLINE
        thread to fewer CPUs than its root domain: EBUSY).
        """
        took = self.agent.stop()
        for n, g in self.guests.items():
            left = cc.leftover_policies(g, reset=True)
            if left:
                progress('%s: the stopped agent left %s %s; reset' % (
                    label, n, left))
                self.leftovers.append({'label': label, 'guest': n,
                                       'threads': left})
        return took

    def with_agent(self, label, fn):
        """Start the cloud's agent, wait for its plan on the LSVM, run
        ``fn()``, stop it (it restores), re-pin the LSVM; the run's facts
        appended to ``agent_runs``.
        """
        off = self.agent.log_offset()
        t0 = time.monotonic()
        self.agent.start()
        start_s = time.monotonic() - t0
        info = self.agent.wait_plan(off, self.ids['lsvm'])
        progress('%s: agent up in %.1f s, mechanism %s (wanted %s), '
                 'self-test %s s' % (
                     label, info['ready_s'], info['mechanism'],
                     info['wanted'], (info['selftest'] or {}).get('seconds')))
        c0, k0 = self.agent.cpu_s(), self.agent.ticks()
        try:
            out = fn()
        finally:
            c1, k1 = self.agent.cpu_s(), self.agent.ticks()
            end = self.agent.log_offset()
            stop_s = self.stop_agent(label)
        log = cc.parse_agent_log(self.agent.log_since(off))
        during = cc.parse_agent_log(self.agent.log_since(off, end))
        ours = set(self.ids.values())
        if None not in (c0, c1, k0, k1) and k1 > k0:
            self.agent_cpu['s'] += c1 - c0
            self.agent_cpu['ticks'] += k1 - k0
        self.agent_runs.append({
            'label': label, 'mechanism': info['mechanism'],
            'wanted': info['wanted'],
            'wakeup_p99_us': info['wakeup_p99_us'],
            'selftest': info['selftest'], 'ready_s': info['ready_s'],
            'start_s': round(start_s, 2),
            'stop_s': stop_s,
            'ticks': None if None in (k0, k1) else k1 - k0,
            'cpu_s': None if None in (c0, c1) else round(c1 - c0, 3),
            'knobs_set': sorted({'%s %s/%s' % (
                self.name_of(d.instance_uuid), d.kind, d.target)
                for d in log['sets']}),
            'last_set': {'%s %s/%s' % (self.name_of(d.instance_uuid),
                                       d.kind, d.target): d.after
                         for d in during['decisions'].values()
                         if d.instance_uuid in ours},
            'restored_ours': len([r for r in log['restored']
                                  if r[1] in ours]),
            'restore_errors': log['restore_errors'],
            'restored_total': len(log['restored'])})
        self.run_decisions = during['decisions']
        self.pin_lsvm(self.args.shared_cpu)
        return out

    def name_of(self, uuid):
        for n, i in self.ids.items():
            if i == uuid:
                return n
        return uuid[:8]


def _mean(values):
    return sum(values) / len(values) if values else 0.0


def host_lines(results, mech, mechs_seen, b):
    """The mechanism the agent picked; per phase the pCPUs' busy fraction
    beside the guests' total, the CPU share of the host's processes.
    """
    lines = ['agent: %s (wanted %s) at every start, self-test %s s' % (
        ', '.join(mechs_seen), ', '.join(sorted(
            {str(r['wanted']) for r in b.agent_runs})),
        ' '.join(str(r['selftest']['seconds']) for r in b.agent_runs
                 if r['selftest']))]
    lines.append('host per phase (means over rounds): pCPU busy; guests\' '
                 'CPU total; CPU share of other domains; of host processes '
                 '(all, then the largest)')
    pooled = {'idle': 'idle', 'stock': 'stock', 'agent': mech}
    for phase, rounds in results['host'].items():
        if not rounds:
            continue
        totals = results[pooled[phase]]['rounds_guests_cpu_total']
        busy = {c: _mean([r['pcpu_busy'][c] for r in rounds])
                for c in rounds[0]['pcpu_busy']}
        names = {n for r in rounds for n in r['procs']}
        procs = sorted(((n, _mean([r['procs'].get(n, 0.0) for r in rounds]))
                        for n in names), key=lambda kv: -kv[1])[:8]
        lines.append('  %-6s %s; guests %.3f; domains %.3f; processes '
                     '%.3f: %s' % (
                         phase, ' '.join('cpu%s=%.3f' % kv
                                         for kv in sorted(busy.items())),
                         _mean([t for t in totals if t is not None]),
                         _mean([r['foreign_domains'] for r in rounds]),
                         _mean([r['procs_total'] for r in rounds]),
                         ' '.join('%s=%.3f' % kv for kv in procs)))
    return lines


def run(args, b, hogs):
    """The phases and the CPU-bound check; the results dict."""
    phases = {'idle': [], 'stock': [], 'agent': []}
    results = {}
    b.stop_agent('start')       # stock; its knobs restored before pinning
    b.pin_shared()
    time.sleep(2)
    results['domains'] = {n: cc.domain_facts(g.domain)
                          for n, g in b.guests.items()}
    host = {}
    for r in range(args.rounds):
        tag = 'round %d/%d' % (r + 1, args.rounds)
        hogs.stop()
        b.pin_lsvm(args.other_cpu)
        phases['idle'].append(b.measure(tag + ' idle'))
        b.pin_lsvm(args.shared_cpu)
        hogs.start()
        order = ['stock', 'agent'] if r % 2 == 0 else ['agent', 'stock']
        for phase in order:
            label = '%s %s' % (tag, phase)
            if phase == 'stock':
                phases[phase].append(b.measure(label))
            else:
                phases[phase].append(b.with_agent(
                    label, lambda: b.measure(label)))
    for name, rounds in phases.items():
        host[name] = [x.pop('host') for x in rounds]
    results['host'] = host
    if args.cpu_bound_seconds:
        bound = {'stock': tb_lsvm.cpu_bound(b.guests, args.cpu_bound_seconds,
                                            'stock')}
        got = b.with_agent('cpu-bound agent', lambda: tb_lsvm.cpu_bound(
            b.guests, args.cpu_bound_seconds, 'agent'))
        mech = b.agent_runs[-1]['mechanism'] or 'agent'
        bound[mech] = got
        bound[mech + '_limit'] = report.share_limit(b.run_decisions,
                                                    b.ids['lsvm'])
        results['cpu_bound_share'] = bound
    return phases, results


def main(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__.split('\n\n')[0],
        epilog='Phases and targets: bench/README.md (testbed_lsvm.py).')
    p.add_argument('--seconds', type=int, default=10,
                   help='seconds per phase and round (default %(default)s)')
    p.add_argument('--rounds', type=int, default=5,
                   help='rounds of all phases, interleaved (default '
                   '%(default)s)')
    p.add_argument('--rate', type=int, default=50, help='LSVM requests/s')
    p.add_argument('--burst-us', type=int, default=200)
    p.add_argument('--shared-cpu', type=int, default=1)
    p.add_argument('--other-cpu', type=int, default=0)
    p.add_argument('--host-hogs', type=int, default=3,
                   help='busy loops on the other pCPU (default %(default)s)')
    common.add_client_arg(p)
    p.add_argument('--cpu-bound-seconds', type=int, default=4,
                   help='the CPU-bound LSVM check (0: skip)')
    p.add_argument('--lsvm-flavor', default='lsvm.small')
    p.add_argument('--cpu-flavor', default='bench.cpu',
                   help='the burners\' flavor, made (admin) if missing')
    p.add_argument('--cpu-ram-mib', type=int, default=128)
    p.add_argument('--state-dir', default=cc.STATE_DIR)
    p.add_argument('--openstack', default=cc.CLI,
                   help='the openstack CLI (default: the cloud\'s venv)')
    p.add_argument('--pin-iothreads', action='store_true',
                   help='also pin the threads of Nova\'s <iothreads> (idle: '
                   'no disk uses them) to the shared pCPU; the agent widens '
                   'them with the emulator pin (libvirt pinIOThread) before '
                   'it reserves them')
    p.add_argument('--keep', action='store_true',
                   help='keep the servers (delete them yourself)')
    p.add_argument('--quick', action='store_true',
                   help='2 rounds of 5 s, 2 s CPU-bound checks')
    p.add_argument('-o', '--output-dir', default='out/bench')
    args = p.parse_args(argv)
    if args.quick:
        args.rounds, args.seconds, args.cpu_bound_seconds = 2, 5, 2
    if not os.path.exists(os.path.join(args.state_dir, 'clouds.yaml')):
        p.error('no cloud at %s (iosched-cloud up)' % args.state_dir)
    # The measuring client shares the other pCPU with busy loops (as in
    # testbed_lsvm): nice -20 keeps its own wake-ups out of the RTTs.
    os.setpriority(os.PRIO_PROCESS, 0, -20)

    import libvirt
    cloud = cc.OpenStack(args.state_dir, args.openstack)
    agent = cc.CloudAgent(args.state_dir)
    was_running = agent.running()
    if not was_running:
        progress('note: %s is not running; it runs in the agent phases '
                 'only and is left stopped' % cc.AGENT)
    results = {'config': dict(vars(args)), 'agent_was_running': was_running,
               'lsvm_flavor_specs': cloud.flavor_specs(args.lsvm_flavor)}
    conn = libvirt.open('qemu:///system')
    hogs = tb_lsvm.HostHogs(args.other_cpu, args.host_hogs)
    b = Bench(args, cloud, agent, hogs)
    t_start = time.monotonic()
    try:
        results['boot'] = b.boot(conn)
        phases, more = run(args, b, hogs)
        results.update(more)
    finally:
        hogs.stop()
        try:
            if not args.keep:
                b.delete()
        finally:
            if was_running and not agent.running():
                agent.start()
                progress('%s started again (as found)' % cc.AGENT)
            elif not was_running and agent.running():
                agent.stop()
            conn.close()
    results['wall_s'] = round(time.monotonic() - t_start, 1)
    results['agent_runs'] = b.agent_runs
    results['agent_leftovers'] = b.leftovers
    mechs_seen = sorted({r['mechanism'] for r in b.agent_runs
                         if r['label'] != 'cpu-bound agent'})
    mech = mechs_seen[0] if len(mechs_seen) == 1 else 'agent'
    results['agent_mechanism'] = mechs_seen
    results['agent_cpu_ms_per_tick'] = round(
        b.agent_cpu['s'] / max(1, b.agent_cpu['ticks']) * 1e3, 3)
    results['idle'] = common.pool(phases['idle'])
    results['stock'] = common.pool(phases['stock'])
    results[mech] = common.pool(phases['agent'])
    starts = [r['selftest'] for r in b.agent_runs if r['selftest']]
    if starts:
        worst = max(starts, key=lambda s: s['seconds'])
        results['selftest'] = {'seconds': worst['seconds'], 'auto': mech,
                               'rows': worst['rows'],
                               'per_start_s': [s['seconds'] for s in starts]}
    results['targets'] = report.targets(results, [mech])
    print('\n'.join(report.table(results, [mech])))
    print('\n'.join(host_lines(results, mech, mechs_seen, b)))
    path = common.write_json(results, args.output_dir, 'cloud_lsvm')
    print('wrote %s (%.0f s)' % (path, results['wall_s']))
    return 0


if __name__ == '__main__':
    sys.exit(main())
