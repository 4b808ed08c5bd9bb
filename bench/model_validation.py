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
"""The simulator's prediction for the LSVM testbed, beside the measurement.

The setup of ``bench/testbed_lsvm.py`` (``make bench-testbed``), simulated:
a 2-pCPU host; one LSVM (one vCPU, Poisson requests at ``--rate`` req/s,
``--burst-us`` of vCPU work each) and three CPU-bound guests pinned to the
shared pCPU; ``--host-hogs`` busy loops on the other pCPU. Phases:

* idle: the LSVM alone on the other pCPU, no busy loops (the floor);
* stock: defaults;
* slice: the LSVM vCPU's EEVDF slice = T_m (``--t-m-us``);
* weight: the LSVM's VM weight ``--lsvm-weight``, capped at its fair share
  (``lsvm_bounds.fair_share``: pCPUs / vCPUs of the host);
* deadline: the LSVM vCPU under SCHED_DEADLINE with the agent's
  reservation (``lsvm_bounds.reservation``: runtime T_m, period and
  deadline from the share and ``--latency-ms``), unpinned (the kernel
  requires it) so it may also run on the other pCPU.

The kernel is ``--kernel`` (default the one calibrated on this machine,
``linux-6.18-hz250``; ``linux-6.12-hrtick`` is the historical model).

The simulator has no QEMU: on TCG a request goes host socket -> QEMU main
loop -> virtio -> vCPU -> back, a fixed cost the model does not have. It is
modelled as one calibrated constant added to every simulated latency:
``path_us = real idle-core RTT p50 - simulated idle p50`` (the real idle
p50 from ``--real`` when present, else ``--real-idle-p50-us``, the
testbed's ~1.0 ms). The constant does not wait for a CPU, so the
contention of the main loop and of the other QEMU threads on the shared
pCPU is not in the prediction (the real tail should be heavier).

Prints per phase the predicted RTT p50/p99 and every guest's CPU share
(run time / wall time); with the testbed's results (``--real``, default
``out/bench/testbed_lsvm.json``: ``results[phase]['rtt_p50_us' |
'rtt_p99_us' | 'cpu_share']``, read defensively) also the real figures and
sim/real per phase. Writes ``model_validation.json`` to ``-o``.
Deterministic (seeded); about a second per phase at the defaults.

Usage: .venv/bin/python bench/model_validation.py [--seconds 30]
       [--kernel linux-6.18-hz250] [--real out/bench/testbed_lsvm.json]
"""

import argparse
import json
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))

from host_agent.policies import lsvm_bounds  # noqa: E402
from simulator import host as sim_host  # noqa: E402
from simulator import spec  # noqa: E402

PHASES = ('idle', 'stock', 'slice', 'weight', 'deadline')
GUESTS = ('lsvm', 'cpu1', 'cpu2', 'cpu3')
PCPUS = 2
WARMUP_US = 1000000


def pct(values, p):
    """Nearest-rank percentile (p in 0..100) of a non-empty list."""
    s = sorted(values)
    return s[min(len(s) - 1, int(math.ceil(p / 100.0 * len(s))) - 1)]


def reservation(args):
    share = lsvm_bounds.deadline_share(PCPUS, len(GUESTS),
                                       args.deadline_max_share)
    vcpu, _io = lsvm_bounds.reservation(1, args.t_m_us, args.latency_ms,
                                        share, args.io_runtime_us)
    return vcpu


def run_phase(phase, args):
    """One simulated phase: LSVM latencies and CPU shares."""
    host_spec = spec.HostSpec(name='testbed', pcpus=PCPUS,
                              default_slice_us=args.base_slice_us,
                              kernel=spec.kernel(args.kernel))
    h = sim_host.SimHost(host_spec, seed=args.seed)
    shared, other = args.shared_cpu, 1 - args.shared_cpu
    h.add_vm(spec.VmSpec(uuid='lsvm', name='lsvm', disks=(), vcpus=(
        spec.RequestResponse(rate_per_s=args.rate, burst_us=args.burst_us),)))
    h.set_vcpu_affinity('lsvm', 0, (other if phase == 'idle' else shared,))
    for name in GUESTS[1:]:
        h.add_vm(spec.VmSpec(uuid=name, name=name, disks=()))
        h.set_vcpu_affinity(name, 0, (shared,))
    if phase != 'idle':
        for i in range(args.host_hogs):
            uuid = 'host-hog-%d' % i
            h.add_vm(spec.VmSpec(uuid=uuid, name=uuid, disks=()))
            h.set_vcpu_affinity(uuid, 0, (other,))
    params = None
    if phase == 'slice':
        h.set_vcpu_slice('lsvm', 0, args.t_m_us)
    elif phase == 'weight':
        h.set_vm_weight('lsvm', args.lsvm_weight)
        h.set_vm_cap('lsvm', lsvm_bounds.fair_share(PCPUS, len(GUESTS)))
    elif phase == 'deadline':
        params = reservation(args)
        h.set_vcpu_affinity('lsvm', 0, None)
        h.set_vcpu_deadline('lsvm', 0, params)
    h.run_until(WARMUP_US)
    cpu0 = {g: h.cpu_run_us(g) for g in GUESTS}
    end = WARMUP_US + int(args.seconds * 1e6)
    h.run_until(end)
    lat = h.request_latencies_us('lsvm', since_us=WARMUP_US)
    wall = end - WARMUP_US
    return {'sim_p50_us': pct(lat, 50), 'sim_p99_us': pct(lat, 99),
            'requests': len(lat),
            'cpu_share': {g: round((h.cpu_run_us(g) - cpu0[g]) / wall, 4)
                          for g in GUESTS},
            'deadline': params}


def _number(x):
    return (isinstance(x, (int, float)) and not isinstance(x, bool)
            and math.isfinite(x) and x > 0)


def load_real(path):
    """{phase: {'rtt_p50_us', 'rtt_p99_us', 'cpu_share'}} from the testbed
    bench's JSON; phases without both numbers are left out; {} when the
    file is missing or unreadable (the reason is returned too)."""
    if not path or not os.path.exists(path):
        return {}, 'no file %s' % path
    try:
        with open(path) as fh:
            data = json.load(fh)
    except (OSError, ValueError) as e:
        return {}, 'unreadable %s: %s' % (path, e)
    if not isinstance(data, dict):
        return {}, '%s: not a JSON object' % path
    out = {}
    for phase in PHASES:
        r = data.get(phase)
        if not isinstance(r, dict):
            continue
        p50, p99 = r.get('rtt_p50_us'), r.get('rtt_p99_us')
        if not (_number(p50) and _number(p99)):
            continue
        share = r.get('cpu_share')
        out[phase] = {'rtt_p50_us': float(p50), 'rtt_p99_us': float(p99),
                      'cpu_share': share if isinstance(share, dict) else {}}
    return out, '' if out else '%s: no phase with rtt_p50_us/rtt_p99_us' % (
        path)


def _ratio(a, b):
    return round(a / b, 3) if a is not None and b else None


class _Help(argparse.ArgumentDefaultsHelpFormatter,
            argparse.RawDescriptionHelpFormatter):
    pass


def main(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__.split('\nUsage:')[0],
        epilog='The kernel models and what each parameter reproduces: '
        'simulator/spec_kernel.py and docs/architecture.md section 7.',
        formatter_class=_Help)
    p.add_argument('--seconds', type=float, default=30.0,
                   help='simulated seconds per phase after 1 s of warm-up')
    p.add_argument('--kernel', default='linux-6.18-hz250',
                   choices=sorted(spec.KERNELS),
                   help='kernel model (simulator/spec_kernel.py)')
    p.add_argument('--base-slice-us', type=int, default=1400,
                   help='EEVDF base slice: 700 us x (1 + log2 pCPUs), the '
                   'kernel default on the 2-pCPU testbed')
    p.add_argument('--rate', type=float, default=50.0,
                   help='LSVM requests per second (Poisson)')
    p.add_argument('--burst-us', type=int, default=None,
                   help='LSVM vCPU work per request (default: the real idle '
                   'phase\'s LSVM CPU share / rate when --real has it, else '
                   '200, the guest\'s nominal work)')
    p.add_argument('--host-hogs', type=int, default=3,
                   help='busy loops on the other pCPU outside the idle phase')
    p.add_argument('--shared-cpu', type=int, default=1, choices=(0, 1))
    p.add_argument('--t-m-us', type=int, default=1000,
                   help='microslice T_m: the slice phase\'s slice and the '
                   'deadline runtime')
    p.add_argument('--latency-ms', type=float, default=2.0,
                   help='the LSVM flavor\'s latency bound (deadline)')
    p.add_argument('--io-runtime-us', type=int, default=200,
                   help='[host_agent_policy.vslicer] io_thread_runtime_us, '
                   'in the period; the model has no I/O thread to reserve')
    p.add_argument('--deadline-max-share', type=float, default=0.5)
    p.add_argument('--lsvm-weight', type=int, default=10000)
    p.add_argument('--real', default='out/bench/testbed_lsvm.json',
                   help='the testbed bench\'s results, if present')
    p.add_argument('--real-idle-p50-us', type=float, default=1000.0,
                   help='idle-core RTT p50 used for the path constant when '
                   '--real has no idle phase')
    p.add_argument('--seed', type=int, default=1)
    p.add_argument('-o', '--output-dir', default='out/bench')
    args = p.parse_args(argv)
    if args.seconds <= 0:
        p.error('--seconds: %r is invalid; accepted: > 0' % args.seconds)

    real, why = load_real(args.real)
    burst_from = '--burst-us'
    if args.burst_us is None:
        share = real.get('idle', {}).get('cpu_share', {}).get('lsvm')
        if _number(share):
            args.burst_us = max(1, int(round(share * 1e6 / args.rate)))
            burst_from = 'real idle LSVM CPU share %.4f / rate' % share
        else:
            args.burst_us = 200
            burst_from = 'nominal (no real idle LSVM share)'
    t0 = time.perf_counter()
    sim = {ph: run_phase(ph, args) for ph in PHASES}
    wall = time.perf_counter() - t0
    idle_real = real.get('idle', {}).get('rtt_p50_us', args.real_idle_p50_us)
    path_us = idle_real - sim['idle']['sim_p50_us']
    out = {'kernel': args.kernel, 'config': vars(args),
           'path_us': round(path_us, 1),
           'path_from': 'real idle p50' if 'idle' in real else (
               '--real-idle-p50-us (%s)' % why),
           'burst_us': args.burst_us, 'burst_from': burst_from,
           'wall_s': round(wall, 2), 'phases': {}}
    print('LSVM RTT on the testbed setup, kernel %s; vCPU work %d us per '
          'request (%s); TCG path constant %.0f us (%s)'
          % (args.kernel, args.burst_us, burst_from, path_us,
             out['path_from']))
    head = ('%-9s %9s %9s  %9s %9s  %7s %7s  %s'
            % ('phase', 'sim p50', 'sim p99', 'real p50', 'real p99',
               'p50 s/r', 'p99 s/r', 'CPU share sim (real) lsvm cpu1..3'))
    print(head)
    for ph in PHASES:
        s = sim[ph]
        p50 = s['sim_p50_us'] + path_us
        p99 = s['sim_p99_us'] + path_us
        r = real.get(ph, {})
        row = {'pred_rtt_p50_us': round(p50, 1),
               'pred_rtt_p99_us': round(p99, 1),
               'sim_latency_p50_us': s['sim_p50_us'],
               'sim_latency_p99_us': s['sim_p99_us'],
               'requests': s['requests'], 'cpu_share': s['cpu_share'],
               'real_rtt_p50_us': r.get('rtt_p50_us'),
               'real_rtt_p99_us': r.get('rtt_p99_us'),
               'real_cpu_share': r.get('cpu_share') or None,
               'ratio_p50': _ratio(p50, r.get('rtt_p50_us')),
               'ratio_p99': _ratio(p99, r.get('rtt_p99_us'))}
        if s['deadline']:
            row['deadline'] = s['deadline']
        out['phases'][ph] = row
        shares = ' '.join(
            '%.3f%s' % (s['cpu_share'][g], '' if g not in (
                r.get('cpu_share') or {}) else '(%.3f)' % r['cpu_share'][g])
            for g in GUESTS)

        def fmt(x):
            return '%9s' % ('-' if x is None else '%.0f' % x)
        print('%-9s %9.0f %9.0f  %s %s  %7s %7s  %s' % (
            ph, p50, p99, fmt(row['real_rtt_p50_us']),
            fmt(row['real_rtt_p99_us']),
            '-' if row['ratio_p50'] is None else '%.2f' % row['ratio_p50'],
            '-' if row['ratio_p99'] is None else '%.2f' % row['ratio_p99'],
            shares))
    dl = sim['deadline']['deadline']
    print('deadline phase: runtime %d us / deadline %d us / period %d us '
          '(lsvm_bounds.reservation)' % (dl['runtime_us'], dl['deadline_us'],
                                         dl['period_us']))
    if not real:
        print('no testbed results to compare (%s): run make bench-testbed'
              % why)
    os.makedirs(args.output_dir, exist_ok=True)
    path = os.path.join(args.output_dir, 'model_validation.json')
    with open(path, 'w') as fh:
        json.dump(out, fh, indent=2, sort_keys=True)
    print('wrote %s (%.1f s)' % (path, wall))
    return 0


if __name__ == '__main__':
    sys.exit(main())
