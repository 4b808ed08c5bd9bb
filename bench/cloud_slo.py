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
"""SLO volumes on the cloud's Ceph, Nova-created guests: none, Nova's
iotune, the cloud's agent (``make bench-cloud``, after the LSVM part).

``bench/testbed_slo.py``'s experiment on the one-machine cloud that
``iosched-cloud up`` runs, through the ``openstack`` CLI:

* two SLO volume types made as admin with ``openstack volume slo type
  create`` (``lat``: a latency-class SLO, ``tput``: a throughput-class
  one); three 1 GiB volumes created by Cinder on the cloud's Ceph (``lat``
  and ``tput`` of those types, ``noisy`` of the default type), each written
  through once before use (RBD reads of never-written objects reach no
  device);
* three servers (flavor ``bench.disk``, made as admin if missing; images
  ``iosched-guest-slo-<role>``, whose kernel command line runs the guest
  program's disk mode on ``vdb``), each volume attached by Nova (``server
  add volume``): Nova writes the types' front-end QoS into the domain's
  ``<iotune>``. The SLO guests send open-loop reads of the SLOs' reference
  size at a little above B; the neighbour is closed-loop (``qd`` large
  reads outstanding) and takes whatever the device leaves;
* the device: the one OSD keeps BlueStore on a file of the host's disk
  (reads uncached: ``bluestore_default_buffered_read = false`` in the
  cloud's ceph.conf); for the run its process is put in a blkio group with
  a read limit on that disk (``--capacity-mib``), so the three volumes
  share one known capacity, as on testbed_slo's loop device.

Arms, in ABBA order over the rounds, each after a drain (the neighbour
held at 1 MiB/s) and a settle (not measured):

* ``none``: the cloud's agent stopped, the volumes' iotune cleared;
* ``nova``: the agent stopped, Nova's iotune as written at attach
  (testbed_slo's ``static``);
* ``agent``: the cloud's agent running as the cloud runs it (policies
  from the DevStack plugin), with ``[host_agent] disk_capacity_iops`` =
  the capacity measured at the start, written into its host-agent.conf
  for the run and put back at the end.

Per volume the share of the guest's own 1-second windows meeting B, L and
both (``testbed_slo_report``), the neighbour's throughput against 0.9 x
(C - sum of B), the device's from the blkio group's counters. JSON:
``out/bench/cloud_slo.json``. Needs root and the cloud up; ``--quick``:
2 rounds x 10 s. The servers, volumes and types are deleted at the end.
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))

from bench import cloud_common as cc  # noqa: E402
from bench import cloud_slo_host as host  # noqa: E402
from bench import testbed_common as common  # noqa: E402
from bench import testbed_slo as tb_slo  # noqa: E402
from bench import testbed_slo_report as report  # noqa: E402
from iosched.contract import slo as slo_mod  # noqa: E402

PREFIX = 'bench-slo-'
NEIGHBOUR = 'noisy'
TARGET = 'vdb'                 # the volume, after the root disk vda
REF = slo_mod.DEFAULT_REF_IO_BYTES
ARMS = ('none', 'nova', 'agent')
progress = common.progress


def parse_args(argv):
    p = argparse.ArgumentParser(
        description=__doc__.split('\n\n')[0],
        epilog='Arms and figures: bench/README.md (cloud_slo.py).')
    p.add_argument('--rounds', type=int, default=4)
    p.add_argument('--seconds', type=int, default=20,
                   help='measured seconds per arm and round')
    p.add_argument('--settle', type=int, default=8,
                   help='seconds not measured at the start of each arm')
    p.add_argument('--drain', type=int, default=4,
                   help='seconds before each arm with the neighbour held '
                        'at 1 MiB/s')
    p.add_argument('--capacity-mib', type=float, default=16.0,
                   help='the OSD\'s read limit on its disk, MiB/s')
    tb_slo.workload_args(p)
    p.add_argument('--flavor', default='bench.disk',
                   help='the servers\' flavor, made (admin) if missing')
    p.add_argument('--state-dir', default=cc.STATE_DIR)
    p.add_argument('--openstack', default=cc.CLI)
    p.add_argument('--keep', action='store_true',
                   help='keep servers, volumes and types')
    p.add_argument('--quick', action='store_true',
                   help='2 rounds x 10 s, 5 s settle, 2 s drain')
    p.add_argument('-o', '--output-dir', default='out/bench')
    args = p.parse_args(argv)
    if args.quick:
        args.rounds, args.seconds, args.settle, args.drain = 2, 10, 5, 2
    if not os.path.exists(os.path.join(args.state_dir, 'clouds.yaml')):
        p.error('no cloud at %s (iosched-cloud up)' % args.state_dir)
    return args


def guest_opts(args, slos):
    """{role: guest program opts}: what each image's command line runs."""
    out = {role: {'dev': TARGET, 'bs': str(s.ref_io_bytes), 'qd': '8',
                  'arrival': 'fixed',
                  'rate': str(int(round(s.min_iops * args.offer)))}
           for role, s in slos.items()}
    out[NEIGHBOUR] = {'dev': TARGET, 'bs': str(args.neighbour_bs),
                      'qd': str(args.neighbour_qd)}
    return out


def measure(b, label):
    """Settle, then ``seconds`` of the guests' windows and the device's."""
    args = b.args
    progress('%s: %d s settle + %d s' % (label, args.settle, args.seconds))
    time.sleep(args.settle)
    t0, dev0 = time.monotonic(), b.osd.serviced()
    time.sleep(args.seconds + 0.5)
    t1, dev1 = time.monotonic(), b.osd.serviced()
    dev_iops = (dev1 - dev0) / REF / (t1 - t0)
    out = {'windows': {}, 'device_iops_ref': round(dev_iops, 1),
           'device_util': round(dev_iops / b.cap['iops_ref'], 3),
           'iotune': {n: b.iotune_now(n) for n in b.guests}}
    for n, g in b.guests.items():
        out['windows'][n] = [report.window(r, b.bss[n], b.slos.get(n))
                             for r in g.disk_reports(since=t0, until=t1)]
    summary = ' '.join('%s=%s' % (n, report.attainment(ws).get(
        'met', '%.0f IOPS' % (report.attainment(ws)['iops_ref_mean'] or 0)))
        for n, ws in out['windows'].items())
    progress('%s: met %s, device %.0f IOPS (16K)' % (label, summary,
                                                     dev_iops))
    return out


def run_arms(b):
    def none_arm(n, label):
        b.drain()
        return measure(b, label)

    def nova_arm(n, label):
        b.drain()
        b.set_nova_iotune()
        return measure(b, label)

    def agent_arm(n, label):
        b.drain()
        b.set_nova_iotune()          # what the agent finds, as on a cloud
        offset = b.agent.log_offset()
        b.agent.start()
        try:
            out = measure(b, label)
        finally:
            stop_s = b.agent.stop()
        info = cc.parse_agent_log(b.agent.log_since(offset))
        ids = {g.uuid for g in b.guests.values()}
        out['agent'] = {
            'iotune_sets': sum(1 for d in info['sets']
                               if d.instance_uuid in ids),
            'stop_s': stop_s,
            'iotune_after_stop': {n: b.iotune_now(n) for n in b.guests}}
        return out

    fns = {'none': none_arm, 'nova': nova_arm, 'agent': agent_arm}
    return common.interleave(b.args.rounds,
                             [(a, fns[a]) for a in ARMS])


def result(b, rounds):
    args, sum_b = b.args, sum(s.min_iops for s in b.slos.values())
    return {
        'bench': 'cloud_slo', 'when': time.strftime(
            '%Y-%m-%d %H:%M:%S UTC', time.gmtime()),
        'device': {'text': 'Ceph OSD (BlueStore on a file of %s), its '
                   'process in blkio group %s' % (b.osd.devno, b.osd.name),
                   'read_bps': int(args.capacity_mib * 2**20)},
        'capacity': b.cap, 'slos': {'lat': args.lat_slo,
                                    'tput': args.tput_slo},
        'volumes': b.volumes, 'nova_iotune': b.nova_iotune,
        'guest_opts': b.opts, 'sum_b': sum_b, 'neighbour': NEIGHBOUR,
        'neighbour_target_iops': round(0.9 * (b.cap['iops_ref'] - sum_b), 1),
        'rounds': args.rounds, 'seconds': args.seconds,
        'settle_s': args.settle, 'drain_s': args.drain, 'arms': list(ARMS),
        'pooled': {a: report.pool_arm(rounds[a]) for a in ARMS},
        'per_round': rounds, 'agent_capacity_conf': b.cap['iops_ref'],
        'agent_was_running': b.agent_was_running}


def main(argv=None):
    args = parse_args(argv)
    slos = {'lat': slo_mod.parse(args.lat_slo),
            'tput': slo_mod.parse(args.tput_slo)}
    b = host.SloCloud(args, slos, guest_opts(args, slos), PREFIX, TARGET)
    t0 = time.monotonic()
    try:
        b.setup()
        rounds = run_arms(b)
        res = result(b, rounds)
    finally:
        b.teardown()
    res['wall_s'] = round(time.monotonic() - t0, 1)
    report.print_table(res)
    path = common.write_json(res, args.output_dir, 'cloud_slo')
    print('wrote %s (%.0f s)' % (path, res['wall_s']))
    return 0


if __name__ == '__main__':
    sys.exit(main())
