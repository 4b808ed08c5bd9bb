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
"""SLO volumes on one shared device, real guests (``make bench-slo``).

Two guests with SLO volumes (``lat``: a latency-class SLO, ``tput``: a
throughput-class one) and a noisy neighbour without an SLO (``noisy``)
have their disks on one loop device whose capacity is a blk-throttle
limit (``iosched.testbed.shared_disk``; docs/testbed.md, "SLO volumes on
a shared device"). The SLO guests send open-loop reads of the SLOs'
reference size at a little above B; the neighbour is closed-loop (``qd``
large reads outstanding), so it takes whatever the device leaves.

Arms, in ABBA order over the rounds, each after a drain (``--drain`` s
with the neighbour held at 1 MiB/s, so the SLO guests' backlogs from the
previous arm are gone and every arm starts alike) and a settle (``--settle``
s, not measured):

* ``none``: no iotune on any disk.
* ``static``: each SLO volume's front-end keys of
  ``iosched.cinder_qos.translate.translate(slo.parse(text))`` set with
  ``setBlockIoTune`` (what Nova writes; the neighbour has no QoS).
* ``agent``: the host agent with ``[host_agent] policies = slo``, its
  ``volume_qos_file`` written from the guests' sidecars (serial -> QoS
  keys) and ``disk_capacity_iops`` the capacity measured at the start;
  it restores every iotune when it stops.

Per volume the share of the guest's own 1-second windows meeting B, L and
both (``testbed_slo_report``), the neighbour's throughput against
0.9 x (C - sum of B), the device's throughput from blk-throttle's
counters, and per second the host's view (libvirt block stats and the
iotune in force). JSON: ``out/bench/testbed_slo.json`` (``--record``:
also ``docs/data/testbed_slo.json``).
"""

import argparse
import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import testbed_common as tc  # noqa: E402
import testbed_slo_report as report  # noqa: E402

from iosched.cinder_qos import translate  # noqa: E402
from iosched.contract import qos_keys  # noqa: E402
from iosched.contract import slo as slo_mod  # noqa: E402
from iosched.host_agent import conf as agent_conf  # noqa: E402

CONF = agent_conf.CONF
PREFIX = 'iosched-slo-'
DISK_NAME = 'iosched-slo-disk'
NEIGHBOUR = 'noisy'
REF = 16384
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ARMS = ('none', 'static', 'agent')


def workload_args(p):
    """The SLOs and what the guests send (bench/cloud_slo.py too)."""
    p.add_argument('--lat-slo', default='150iops,10ms,class=latency')
    p.add_argument('--tput-slo', default='300iops,50ms,class=throughput')
    p.add_argument('--offer', type=float, default=1.05,
                   help='SLO guests send this x B requests/s')
    p.add_argument('--neighbour-qd', type=int, default=8)
    p.add_argument('--neighbour-bs', type=int, default=65536)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('--rounds', type=int, default=4)
    p.add_argument('--seconds', type=int, default=30,
                   help='measured seconds per arm and round')
    p.add_argument('--settle', type=int, default=8,
                   help='seconds discarded at the start of each arm-round')
    p.add_argument('--drain', type=int, default=4,
                   help='seconds before each arm-round with the neighbour '
                        'held at 1 MiB/s, so backlogs of the previous arm '
                        'drain')
    p.add_argument('--quick', action='store_true',
                   help='smoke run: 2 rounds x 8 s, 4 s settle')
    p.add_argument('--capacity-mib', type=float, default=16.0,
                   help='the device limit, MiB/s of reads')
    workload_args(p)
    p.add_argument('--arms', default=','.join(ARMS))
    p.add_argument('--output-dir', default=os.path.join(ROOT, 'out',
                                                        'bench'))
    p.add_argument('--record', action='store_true',
                   help='also write docs/data/testbed_slo.json')
    args = p.parse_args(argv)
    if args.quick:
        args.rounds, args.seconds, args.settle, args.drain = 2, 8, 4, 2
    args.arms = [a for a in args.arms.split(',') if a]
    bad = set(args.arms) - set(ARMS)
    if bad:
        p.error('unknown arms %s' % sorted(bad))
    return args


def guest_specs(args, slos):
    from iosched.testbed import spec

    def slo_guest(name, slo):
        return spec.GuestSpec(name, 'disk', opts={
            'bs': str(slo.ref_io_bytes), 'qd': '8', 'arrival': 'fixed',
            'rate': str(int(round(slo.min_iops * args.offer)))},
            volume_qos=translate.translate(slo))
    return [slo_guest('lat', slos['lat']), slo_guest('tput', slos['tput']),
            spec.GuestSpec(NEIGHBOUR, 'disk', opts={
                'bs': str(args.neighbour_bs),
                'qd': str(args.neighbour_qd)})]


# -- iotune -----------------------------------------------------------------
IOTUNE_ZERO = {k: 0 for k in qos_keys.FRONTEND_KEYS}


def frontend(qos):
    """The front-end keys of a QoS spec as libvirt iotune ints."""
    return {k: int(v) for k, v in qos.items() if k in qos_keys.FRONTEND_KEYS}


def set_iotune(guest, params):
    guest.domain.setBlockIoTune('vda', dict(params), 1)   # AFFECT_LIVE


def iotune_now(guest):
    """The iotune limits in force (non-zero only)."""
    got = guest.domain.blockIoTune('vda', 1)
    return {k: v for k, v in got.items()
            if v and k.endswith(('_sec', '_sec_max'))}


def clear_all(guests):
    for g in guests.values():
        set_iotune(g, IOTUNE_ZERO)


# -- host-side sampling -----------------------------------------------------
class HostSampler:
    """Every second, per guest: libvirt block stats (IOPS, mean latency as
    QEMU sees it) and the iotune in force; and the device's counters.
    """

    def __init__(self, guests, disk, period=1.0):
        self.guests, self.disk, self.period = guests, disk, period
        self.rows = []
        self._stop = threading.Event()
        self._th = threading.Thread(target=self._loop, daemon=True,
                                    name='slo-host-sampler')

    def _stats(self):
        out = {}
        for n, g in self.guests.items():
            s = g.domain.blockStatsFlags('vda', 0)
            out[n] = (s.get('rd_operations', 0) + s.get('wr_operations', 0),
                      s.get('rd_total_times', 0) + s.get('wr_total_times', 0),
                      s.get('rd_bytes', 0) + s.get('wr_bytes', 0))
        return out

    def _loop(self):
        prev, t_prev, dev_prev = self._stats(), time.monotonic(), \
            self.disk.serviced()
        while not self._stop.wait(self.period):
            cur, t, dev = self._stats(), time.monotonic(), \
                self.disk.serviced()
            dt = t - t_prev
            row = {'ts': round(t, 3), 'device_iops_ref': round(
                (dev[1] - dev_prev[1]) / REF / dt, 1), 'guests': {}}
            for n, (ops, ns, nbytes) in cur.items():
                d_ops = ops - prev[n][0]
                row['guests'][n] = {
                    'iops_ref': round((nbytes - prev[n][2]) / REF / dt, 1),
                    'mean_ms': (round((ns - prev[n][1]) / d_ops / 1e6, 3)
                                if d_ops else None),
                    'iotune': iotune_now(self.guests[n])}
            self.rows.append(row)
            prev, t_prev, dev_prev = cur, t, dev

    def __enter__(self):
        self._th.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._th.join()


# -- one arm-round ----------------------------------------------------------
def measure(guests, disk, slos, bss, seconds, settle, label, capacity):
    """Settle, then ``seconds`` of the guests' windows and the host's."""
    tc.progress('%s: %d s settle + %d s' % (label, settle, seconds))
    time.sleep(settle)
    with HostSampler(guests, disk) as hs:
        t0, dev0 = time.monotonic(), disk.serviced()
        time.sleep(seconds + 0.5)
        t1, dev1 = time.monotonic(), disk.serviced()
    dev_iops = (dev1[1] - dev0[1]) / REF / (t1 - t0)
    out = {'windows': {}, 'host': hs.rows,
           'device_iops_ref': round(dev_iops, 1),
           'device_util': round(dev_iops / capacity, 3) if capacity else None}
    for n, g in guests.items():
        out['windows'][n] = [report.window(r, bss[n], slos.get(n))
                             for r in g.disk_reports(since=t0, until=t1)]
    summary = ' '.join('%s=%s' % (n, report.attainment(ws).get(
        'met', '%.0f IOPS' % (report.attainment(ws)['iops_ref_mean'] or 0)))
        for n, ws in out['windows'].items())
    tc.progress('%s: met %s, device %.0f IOPS (16K)' % (label, summary,
                                                        dev_iops))
    return out


def drain(guests, seconds):
    """Let the SLO guests' backlogs of the previous arm drain (the
    neighbour held at 1 MiB/s, nothing else limited), so each arm starts
    from the same state; then clear every iotune.
    """
    clear_all(guests)
    set_iotune(guests[NEIGHBOUR], {'total_bytes_sec': 2**20})
    time.sleep(seconds)
    clear_all(guests)


def measure_capacity(guests, disk, seconds=8):
    """The device's capacity through the guests: everything at once, no
    limits (the neighbour alone keeps the device busy): bytes per second
    serviced, from blk-throttle's counters of the guests' group.
    """
    clear_all(guests)
    time.sleep(3)
    t0, (_, b0) = time.monotonic(), disk.serviced()
    time.sleep(seconds)
    t1, (_, b1) = time.monotonic(), disk.serviced()
    bps = (b1 - b0) / (t1 - t0)
    return {'mib_s': round(bps / 2**20, 2), 'iops_ref': round(bps / REF, 1),
            'seconds': seconds}


def write_qos_file(tb, guests, path):
    """{serial: QoS keys} of the guests whose volume has QoS specs."""
    out = {}
    for g in guests.values():
        for vol in (tb.sidecar(g.uuid) or {}).get('volumes', ()):
            if vol.get('qos'):
                out[vol['serial']] = vol['qos']
    with open(path, 'w') as fh:
        json.dump(out, fh, indent=1, sort_keys=True)
    return out


def main(argv=None):
    args = parse_args(argv)
    slos = {'lat': slo_mod.parse(args.lat_slo),
            'tput': slo_mod.parse(args.tput_slo)}
    from iosched.host_agent.drivers.libvirt import threads
    from iosched.host_agent import privsep
    from iosched.testbed import daemons
    from iosched.testbed import shared_disk
    from iosched.testbed import testbed
    specs = guest_specs(args, slos)
    bss = {s.name: int(s.opts['bs']) for s in specs}
    workdir = testbed.DEFAULT_WORKDIR
    qos_path = os.path.join(workdir, 'shared', PREFIX + 'volume-qos.json')
    tc.setup_conf(CONF, [('host_agent', 'policies', ['slo']),
                         ('host_agent', 'volume_qos_file', qos_path)])
    privsep.ensure_started(CONF)       # fork it before guest sockets open
    started = daemons.ensure_libvirtd()
    disk = shared_disk.SharedDisk(workdir, DISK_NAME,
                                  [s.disk_mib for s in specs])
    tb = testbed.Testbed(workdir=workdir, prefix=PREFIX, log=tc.progress)
    try:
        tb.build()
        tb.down()
        disk.create()
        disk.set_capacity(read_bps=int(args.capacity_mib * 2**20))
        specs = disk.place(specs)
        tc.progress('shared device %s (%s), limit %.1f MiB/s; booting %s'
                    % (disk.loop, disk.devno, args.capacity_mib,
                       ', '.join(s.name for s in specs)))
        guests = {g.name: g for g in tb.up(specs)}
        for g in guests.values():
            disk.attach(threads.qemu_pid(tc.RUN_DIR, g.domain_name))
        cap = measure_capacity(guests, disk)
        tc.progress('capacity through the guests: %.2f MiB/s = %.0f IOPS of '
                    '16 KiB' % (cap['mib_s'], cap['iops_ref']))
        qos = write_qos_file(tb, guests, qos_path)
        CONF.set_override('disk_capacity_iops', cap['iops_ref'],
                          'host_agent')
        ticks = []
        by_uuid = {g.uuid: n for n, g in guests.items()}

        def on_tick(agent):
            plan = agent.last_plan
            if plan is None:
                return
            ticks.append({'ts': round(time.monotonic(), 3),
                          'actions': [[by_uuid.get(a.instance_uuid),
                                       a.target, a.value]
                                      for a in plan.actions],
                          'notes': list(plan.notes),
                          'facts': repr(plan.facts.get('slo'))[:2000]})

        def run(n, label):
            return measure(guests, disk, slos, bss, args.seconds,
                           args.settle, label, cap['iops_ref'])

        def none_arm(n, label):
            drain(guests, args.drain)
            return run(n, label)

        def static_arm(n, label):
            drain(guests, args.drain)
            for name, g in guests.items():
                keys = frontend(specs_by_name[name].volume_qos)
                if keys:
                    set_iotune(g, keys)
            try:
                return run(n, label)
            finally:
                clear_all(guests)

        restored = []
        totals = tc.AgentTotals()

        def agent_arm(n, label):
            drain(guests, args.drain)
            with tc.AgentThread(CONF, PREFIX, on_tick=on_tick) as at:
                out = run(n, label)
            totals.add(at)
            left = {name: iotune_now(g) for name, g in guests.items()}
            restored.append({'label': label, 'restored': at.restored,
                             'iotune_after': left})
            # The agent leaves the SLO volumes' static ceilings (it writes
            # them at first sight, as Nova would at attach): clear them so
            # the next arm starts from none.
            clear_all(guests)
            return out

        specs_by_name = {s.name: s for s in specs}
        fns = {'none': none_arm, 'static': static_arm, 'agent': agent_arm}
        rounds = tc.interleave(args.rounds, [(a, fns[a]) for a in args.arms])
        sum_b = sum(s.min_iops for s in slos.values())
        res = {
            'bench': 'testbed_slo', 'when': time.strftime(
                '%Y-%m-%d %H:%M:%S UTC', time.gmtime()),
            'device': {'loop': disk.loop, 'read_bps': disk.limits[
                'read_bps'], 'regions': disk.regions,
                'note': 'loop device (direct I/O) over a file on the host '
                        'disk; capacity = blk-throttle limit of the one '
                        'blkio group holding every guest QEMU'},
            'capacity': cap, 'slos': {n: t for n, t in (
                ('lat', args.lat_slo), ('tput', args.tput_slo))},
            'volume_qos': qos, 'guest_opts': {s.name: dict(s.opts)
                                              for s in specs},
            'sum_b': sum_b, 'neighbour': NEIGHBOUR,
            'neighbour_target_iops': round(0.9 * (cap['iops_ref'] - sum_b),
                                           1),
            'rounds': args.rounds, 'seconds': args.seconds,
            'settle_s': args.settle, 'drain_s': args.drain,
            'arms': args.arms,
            'pooled': {a: report.pool_arm(rounds[a]) for a in args.arms},
            'per_round': rounds, 'agent_ticks': ticks,
            'agent_restore': restored,
            'agent_cpu_ms_per_tick': totals.cpu_ms_per_tick,
            'agent_errors': totals.errors}
        report.print_table(res)
        path = tc.write_json(res, args.output_dir, 'testbed_slo')
        tc.progress('wrote %s' % path)
        if args.record:
            tc.progress('wrote %s' % tc.write_json(
                res, os.path.join(ROOT, 'docs', 'data'), 'testbed_slo'))
        return 0
    finally:
        try:
            tb.down()
        finally:
            tb.close()
            disk.close()
            if os.path.exists(qos_path):
                os.unlink(qos_path)
            if started:
                daemons.stop_libvirtd()


if __name__ == '__main__':
    sys.exit(main())
