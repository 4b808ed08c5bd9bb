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
"""The LSVM self-test on an idle host, beside busy guests and under outside
load, side by side: each mechanism's p99 wake-up, the CPU-bound share,
auto's choice, the measurement it names, and the bound it reports for a
2 ms LSVM flavor with 1-4 LSVM vCPUs per pCPU (what Nova's LsvmFilter
would admit).

Conditions (the guests of ``bench/testbed_lsvm.py``: 1 rr guest and 3
CPU-bound guests pinned to pCPU 1, ``[libvirt] guest_pcpus`` = 1):

* idle: no guest running;
* busy guests: the 4 guests up, 3 busy loops on pCPU 0 (the host's own);
* outside load: as busy guests, plus ``--outside`` busy loops in the root
  cgroup free to run on any CPU (other processes of a shared machine).

Each condition runs ``--repeats`` self-tests, the agent's own
(``lsvm_mechanism.resolve``). Needs root, libvirt + QEMU and the testbed;
about 2 min. ``make bench-selftest``; JSON in
``out/bench/selftest_conditions.json``.
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))

from bench import testbed_common as common  # noqa: E402
from bench.testbed_lsvm import HostHogs  # noqa: E402
from bench.testbed_lsvm import resolve  # noqa: E402
from iosched.contract import lsvm as lsvm_bound  # noqa: E402
from iosched.host_agent import conf as agent_conf  # noqa: E402
from iosched.host_agent import privsep  # noqa: E402

CONF = agent_conf.CONF
PREFIX = 'iosched-stc-'
FLAVOR_MS = 2.0
KS = (1, 2, 3, 4)


# admitted(W, mech, L) := the k in KS for which the LSVM bound holds:
#   T_m = contract.lsvm.microslice_us(L, k, s), worst = worst_case_us(k,
#   T_m, s) <= L, s = Slicing(mech, measured_us=W) (the agent's default
#   slices otherwise)
def admitted(p99_us, mech, lat_ms=FLAVOR_MS):
    s = lsvm_bound.Slicing(mechanism=mech, measured_us=p99_us)
    out = []
    for k in KS:
        t_m, _ = lsvm_bound.microslice_us(lat_ms, k, s)
        if lsvm_bound.holds(lsvm_bound.worst_case_us(k, t_m, s), lat_ms):
            out.append(k)
    return out


def one(label, driver):
    t0 = time.monotonic()
    sched = resolve(driver)
    wall = time.monotonic() - t0
    rows = {r.mechanism: r for r in sched.probes}
    return {'condition': label, 'seconds': round(wall, 2),
            'auto': sched.mechanism, 'w_us': sched.wakeup_p99_us,
            'measured_by': sched.measured_by,
            'admits_k': admitted(sched.wakeup_p99_us, sched.mechanism),
            'rows': {m: {'ok': r.ok, 'p99_us': r.p99_us, 'share': r.share,
                         'p99s_us': list(r.p99s_us), 'error': r.error}
                     for m, r in rows.items()}}


def table(results):
    head = '%-14s %8s %8s %8s %8s  %-26s %-8s %7s %s' % (
        'condition', 'stock', 'deadline', 'weight', 'slice',
        'shares stk/dl/wt/sl', 'auto', 'W us', 'k admitted at 2 ms')
    lines = ['self-test p99 wake-up (us, median of the repeats)', head]
    for r in results:
        def cell(m):
            row = r['rows'].get(m)
            return '%8.0f' % row['p99_us'] if row and row['ok'] else \
                '%8s' % 'refused'

        shares = '/'.join('%.2f' % r['rows'][m]['share']
                          if m in r['rows'] else '-'
                          for m in lsvm_bound.PROBE_CASES)
        lines.append('%-14s %s %s %s %s  %-26s %-8s %7.0f %s' % (
            r['condition'], cell('stock'), cell('deadline'), cell('weight'),
            cell('slice'), shares, r['auto'], r['w_us'],
            ','.join(map(str, r['admits_k'])) or 'none'))
    return lines


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('--repeats', type=int, default=2,
                   help='self-tests per condition (default %(default)s)')
    p.add_argument('--outside', type=int, default=2,
                   help='busy loops outside the VMs (default %(default)s)')
    p.add_argument('--shared-cpu', type=int, default=1)
    p.add_argument('--other-cpu', type=int, default=0)
    p.add_argument('-o', '--output-dir', default='out/bench')
    args = p.parse_args(argv)
    common.setup_conf(CONF)
    CONF.set_override('guest_pcpus', str(args.shared_cpu), 'libvirt')
    privsep.ensure_started(CONF)
    from iosched.testbed import daemons
    from iosched.testbed import spec
    from iosched.testbed import testbed
    daemons.ensure_libvirtd()       # and /dev/kvm as udev sets it
    tb = testbed.Testbed(prefix=PREFIX)
    tb.build()
    tb.down()
    driver = common.ScopedDriver.for_prefix(CONF, PREFIX)
    hogs = HostHogs(args.other_cpu, 3)
    outside = HostHogs(None, args.outside)
    results = []
    try:
        for i in range(args.repeats):
            results.append(one('idle', driver))
            common.progress('idle %d/%d' % (i + 1, args.repeats))
        tb.up([spec.GuestSpec('lsvm', 'rr'), spec.GuestSpec('cpu1', 'burn'),
               spec.GuestSpec('cpu2', 'burn'),
               spec.GuestSpec('cpu3', 'burn')], pin=args.shared_cpu)
        time.sleep(3)
        hogs.start()
        for i in range(args.repeats):
            results.append(one('busy guests', driver))
            common.progress('busy guests %d/%d' % (i + 1, args.repeats))
        outside.start()
        time.sleep(1)
        for i in range(args.repeats):
            results.append(one('outside load', driver))
            common.progress('outside load %d/%d' % (i + 1, args.repeats))
    finally:
        outside.stop()
        hogs.stop()
        driver.close()
        tb.down()
        tb.close()
    print('\n'.join(table(results)))
    for r in results:
        print('%s: %s' % (r['condition'], r['measured_by']))
    print('wrote %s' % common.write_json(results, args.output_dir,
                                          'selftest_conditions'))
    return 0


if __name__ == '__main__':
    sys.exit(main())
