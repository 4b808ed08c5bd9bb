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
a 2-pCPU host; one LSVM (one vCPU, Poisson requests at ``--rate`` req/s)
and three CPU-bound guests pinned to the shared pCPU; ``--host-hogs``
busy loops on the other pCPU. Each phase sets the knobs the agent's
vSlicer policy sets for that mechanism (its options' defaults):

* idle: the LSVM alone on the other pCPU, no busy loops (the floor);
* stock: defaults;
* slice: the LSVM vCPU's EEVDF slice = T_m (``--t-m-us``), the burners'
  T_NLSVM (``--nlsvm-slice-us``);
* weight: the LSVM's VM weight ``--lsvm-weight``, capped at its fair share
  (``iosched.contract.lsvm.fair_share``), and its vCPU slice T_m (the weight
  mechanism keeps the LSVM's microslice);
* deadline: the LSVM vCPU under SCHED_DEADLINE with the agent's
  reservation: runtime Q = max(T_m, headroom x CPU per activation rounded
  up to 500 us) (``lsvm_bounds.deadline_runtime_us``), period and
  deadline = (Q + the I/O threads' ``--io-runtime-us``) / its share
  (``lsvm_bounds.reservation``), unpinned (the kernel requires it) so it
  may also run on the other pCPU.

The kernel is ``--kernel`` (default the one calibrated on this machine,
``linux-6.18-hz250``; ``linux-6.12-hrtick`` is the historical model);
``--kernel-set FIELD=VALUE`` changes one ``KernelSpec`` field (e.g.
``preempt_short=false protect_min_slice=false``: the calibrated kernel as
it was before it learned the testbed).

The LSVM's request, calibrated on the real idle phase of ``--real`` (the
phase without contention): its vCPU work per request is the real idle
LSVM CPU share / rate (``--burst-us``), drawn as burst x (1 - j + j x
Exp(1)) (``RequestResponse.burst_jitter`` j, ``--burst-jitter``; default
fitted so that the simulated idle p99 - p50 spread matches the real idle
one); the rest of the TCG request path (host socket -> QEMU main loop ->
virtio -> vCPU -> back) is one constant added to every latency, ``path_us
= real idle p50 - simulated idle p50``. The constant waits for no CPU: the
QEMU main loop's own contention (it shares the pCPU and the big lock with
the vCPU) is not in the prediction.

Out of sample (``--fit FILE``): the request (work, jitter, path
constant) and the kernel (every ``KernelSpec`` field) come from a fit
written beforehand by ``--write-fit FILE`` from ONE designated run
(``bench/model_fit.py``; the project's: ``docs/data/model_fit_lsvm.json``,
from issue 10's run 1); of the runs predicted only their setup is read
(``setup_from_run``: rate, host hogs, shared pCPU, ``outside_load``),
never a measurement. The setup's inputs: ``--outside-load`` busy loops
floating on both pCPUs (outside the idle phase, as the testbed stops
them), ``--other-load`` other jobs' loops at ``--other-weight`` (every
phase), ``--loops-autogroup`` (the testbed's loops share one autogroup),
``--weight-group top`` (the weight mechanism's LSVM in a top-level group
at ``--weight-group-weight``, a sibling of libvirt's ``machine``, not its
VM group inside it) and ``--lsvms`` k (a density run: k LSVMs on the
shared pCPU). The model has no group entities: ``flat_weights`` says how
``machine`` and the top-level group are flattened. Several ``--real``
targets print one summary: per phase the ratios to stock sim (real),
sim/real absolute and the ratios to stock that miss by more than 15 %.

Prints the model-validation table: per phase the predicted RTT p50/p99
beside the real one and sim/real, and the ratios to stock and the p99
over the idle floor's (sim vs real: what should agree); then every
guest's CPU share (run time / wall time).
The testbed's results are ``--real`` (default
``out/bench/testbed_lsvm.json``: ``results[phase]['rtt_p50_us' |
'rtt_p99_us' | 'cpu_share']``, read defensively). ``--markdown FILE``
also writes the table as markdown. Writes ``model_validation.json`` to
``-o``. Deterministic (seeded); a few seconds at the defaults.

Usage: .venv/bin/python bench/model_validation.py [--seconds 30]
       [--kernel linux-6.18-hz250] [--real out/bench/testbed_lsvm.json]
       [--write-fit FIT | --fit FIT [--real RUN ...]]
"""

import argparse
import dataclasses
import json
import math
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))

from bench import model_fit  # noqa: E402
from iosched.contract import lsvm  # noqa: E402
from iosched.contract import stats  # noqa: E402
from iosched.host_agent.conf import vslicer as vslicer_conf  # noqa: E402
from iosched.host_agent.policies import lsvm_bounds  # noqa: E402
from iosched.host_agent import policy_params  # noqa: E402
from iosched.simulator import host as sim_host  # noqa: E402
from iosched.simulator import spec  # noqa: E402
from iosched.simulator import spec_kernel  # noqa: E402

PHASES = ('idle', 'stock', 'slice', 'weight', 'deadline')
GUESTS = ('lsvm', 'cpu1', 'cpu2', 'cpu3')
PCPUS = 2
WARMUP_US = 1000000
JITTER_GRID = tuple(i / 20.0 for i in range(21))
PARAMS = policy_params.params_for('vslicer')
GROUP_WEIGHT = next(o.default for o in vslicer_conf.VSLICER_OPTS
                    if o.name == 'weight_group_weight')
LOOPS = ('host_hogs', 'outside', 'other')   # busy loops outside the VMs
MACHINE_WEIGHT = 100        # libvirt's machine group (cgroup v2 scale)
WEIGHT_GROUPS = ('machine', 'top')
# the target run's setup (not its measurements): config key, args field
SETUP_KEYS = (('rate', 'rate'), ('host_hogs', 'host_hogs'),
              ('shared_cpu', 'shared_cpu'), ('outside_load', 'outside_load'))


def lsvm_names(k):
    """The simulated LSVMs' uuids: 'lsvm' alone, lsvm1..k for k > 1."""
    return ('lsvm',) if k == 1 else tuple('lsvm%d' % (i + 1)
                                          for i in range(k))


def flat_weights(phase, lsvms, burners, root_load, weight_group,
                 lsvm_weight, group_weight):
    """{uuid: weight} of the LSVMs and burners on the shared pCPU in the
    simulator's flat model (one entity per vCPU, no group entities).

    On the host every guest sits in libvirt's ``machine`` group, one entity
    of weight 100 at the top of the hierarchy; under the weight mechanism
    an LSVM has its VM group there at ``lsvm_weight`` (``weight_group``
    'machine') or its own group at the top level at ``group_weight``
    ('top'). While nothing outside ``machine`` competes on the shared pCPU
    (``root_load`` False, 'machine') only the weights inside it matter:
    the LSVM at ``lsvm_weight`` in the weight phase, 100 otherwise. Else
    ``machine``'s 100 is split among its members there in proportion to
    their weights inside it (the group's share of the pCPU, not its
    wake-up order: a member waking in a group entity that is not running
    waits for the group's turn, which the split approximates by a small
    weight), and a top-level LSVM group competes at ``group_weight``.
    """
    inside = {b: MACHINE_WEIGHT for b in burners}
    top = {}
    for name in lsvms:
        if phase == 'weight' and weight_group == 'top':
            top[name] = group_weight
        else:
            inside[name] = lsvm_weight if phase == 'weight' else (
                MACHINE_WEIGHT)
    if not root_load and not top:
        return inside
    total = sum(inside.values())
    out = {n: max(1, int(round(MACHINE_WEIGHT * w / total)))
           for n, w in inside.items()}
    out.update(top)
    return out


def loop_weight(host_hogs, outside_load, autogroup):
    """The weight of each of the testbed's own busy loops: 100 (nice 0,
    each its own entity at the top level), or with ``autogroup`` (the
    kernel's ``sched_autogroup_enabled``: the loops, children of the
    bench in its session, share one autogroup entity of weight 100) that
    100 split among them.
    """
    n = host_hogs + outside_load
    if not autogroup or n == 0:
        return MACHINE_WEIGHT
    return max(1, int(round(MACHINE_WEIGHT / n)))


def setup_from_run(data):
    """{args field: value} of the testbed run's setup, from its
    ``config`` (absent keys: the old runs' defaults; outside_load 0, the
    runs before ``--outside-load`` existed). Nothing measured is read.
    """
    cfg = data.get('config') if isinstance(data, dict) else None
    cfg = cfg if isinstance(cfg, dict) else {}
    out = {'outside_load': 0}
    for key, field in SETUP_KEYS:
        v = cfg.get(key)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            out[field] = v
    return out


def reservation(args, activation_us=None):
    """The agent's deadline knobs for the LSVM vCPU (and one I/O-path
    thread's runtime, which only sets the period here: the simulator has
    no QEMU threads), for a vCPU using ``activation_us`` (default
    ``--activation-us``) of CPU per activation.
    """
    share = lsvm.deadline_share(PCPUS, len(GUESTS) - 1 + (args.lsvms or 1),
                                args.deadline_max_share)
    runtime = lsvm_bounds.deadline_runtime_us(
        args.t_m_us, args.activation_us if activation_us is None
        else activation_us, args.deadline_headroom,
        PARAMS.deadline_max_runtime_us)
    vcpu, _io = lsvm_bounds.reservation(1, runtime, args.latency_ms,
                                        share, args.io_runtime_us, 1)
    return vcpu


def kernel_spec(args):
    """``--kernel`` with the ``--kernel-set`` changes applied."""
    k = spec_kernel.kernel(args.kernel)
    if not args.kernel_set:
        return k
    changes = {}
    fields = {f.name: f.type for f in dataclasses.fields(k)}
    for item in args.kernel_set:
        name, _, raw = item.partition('=')
        if name not in fields or name == 'name' or not raw:
            raise ValueError('--kernel-set: %r is invalid; accepted: '
                             'FIELD=VALUE with FIELD one of %s' % (
                                 item, ', '.join(sorted(set(fields) -
                                                        {'name'}))))
        cur = getattr(k, name)
        if isinstance(cur, bool):
            if raw.lower() not in ('true', 'false'):
                raise ValueError('--kernel-set %s: %r is invalid; '
                                 'accepted: true or false' % (name, raw))
            changes[name] = raw.lower() == 'true'
        else:
            try:
                changes[name] = type(cur)(raw)
            except ValueError:
                raise ValueError('--kernel-set %s: %r is invalid; accepted: '
                                 'a %s' % (name, raw, type(cur).__name__))
    return dataclasses.replace(k, name=k.name + '+set', **changes)


_SIMULATED = {}
# options that do not change a simulation (the cache key leaves them out)
_NOT_SIM = ('real', 'label', 'markdown', 'output_dir', 'fit', 'write_fit',
            'kernel_spec', 'kernel', 'kernel_set')


def run_phase(phase, args, kernel, jitter, dl_params=None):
    """One simulated phase: LSVM latencies and CPU shares (``dl_params``:
    the deadline phase's reservation, default ``reservation(args)``).
    With ``--lsvms`` k > 1 the latencies are the k LSVMs' pooled (idle:
    one LSVM, the others absent). Deterministic: a phase simulated once
    with the same inputs in this process is not simulated again.
    """
    key = (phase, kernel, jitter, repr(dl_params), repr(sorted(
        (k, v) for k, v in vars(args).items() if k not in _NOT_SIM)))
    if key not in _SIMULATED:
        _SIMULATED[key] = _simulate(phase, args, kernel, jitter, dl_params)
    return _SIMULATED[key]


def _simulate(phase, args, kernel, jitter, dl_params):
    host_spec = spec.HostSpec(name='testbed', pcpus=PCPUS,
                              default_slice_us=args.base_slice_us,
                              kernel=kernel)
    h = sim_host.SimHost(host_spec, seed=args.seed)
    shared, other = args.shared_cpu, 1 - args.shared_cpu
    names = lsvm_names(1 if phase == 'idle' else args.lsvms or 1)
    for name in names:
        h.add_vm(spec.VmSpec(uuid=name, name=name, disks=(), vcpus=(
            spec.RequestResponse(rate_per_s=args.rate,
                                 burst_us=args.burst_us,
                                 burst_jitter=jitter),)))
        h.set_vcpu_affinity(name, 0, (other if phase == 'idle' else shared,))
    for name in GUESTS[1:]:
        h.add_vm(spec.VmSpec(uuid=name, name=name, disks=()))
        h.set_vcpu_affinity(name, 0, (shared,))
    own = loop_weight(args.host_hogs, args.outside_load,
                      args.loops_autogroup)
    loops = [('host_hogs', 'host-hog-%d', args.host_hogs, (other,), own),
             ('outside', 'outside-%d', args.outside_load, None, own),
             ('other', 'other-%d', args.other_load, None, args.other_weight)]
    if phase == 'idle':         # the testbed stops its own loops
        loops = loops[2:]
    loop_uuids = {}
    for key, fmt, count, where, weight in loops:
        loop_uuids[key] = [fmt % i for i in range(count)]
        for i in range(count):
            uuid = fmt % i
            h.add_vm(spec.VmSpec(uuid=uuid, name=uuid, disks=()))
            h.set_vcpu_affinity(uuid, 0, where)
            if weight != 100:
                h.set_vm_weight(uuid, weight)
    root_load = args.outside_load + args.other_load > 0
    weights = flat_weights(phase, names if phase != 'idle' else (),
                           GUESTS[1:], root_load, args.weight_group,
                           args.lsvm_weight, args.weight_group_weight)
    for name, w in weights.items():
        if w != 100:
            h.set_vm_weight(name, w)
    params = None
    if phase == 'slice':
        for name in names:
            h.set_vcpu_slice(name, 0, args.t_m_us)
        for name in GUESTS[1:]:
            h.set_vcpu_slice(name, 0, args.nlsvm_slice_us)
    elif phase == 'weight':
        for name in names:
            h.set_vm_cap(name, lsvm.fair_share(
                PCPUS, len(GUESTS) - 1 + len(names)))
            h.set_vcpu_slice(name, 0, args.t_m_us)
    elif phase == 'deadline':
        params = dl_params or reservation(args)
        for name in names:
            h.set_vcpu_affinity(name, 0, None)
            h.set_vcpu_deadline(name, 0, params)
    watched = names + GUESTS[1:] + tuple(
        u for us in loop_uuids.values() for u in us)
    h.run_until(WARMUP_US)
    cpu0 = {g: h.cpu_run_us(g) for g in watched}
    end = WARMUP_US + int(args.seconds * 1e6)
    h.run_until(end)
    lat = [x for name in names
           for x in h.request_latencies_us(name, since_us=WARMUP_US)]
    wall = end - WARMUP_US
    share = {g: round((h.cpu_run_us(g) - cpu0[g]) / wall, 4)
             for g in watched}
    share['lsvm'] = round(sum(share[n] for n in names) / len(names), 4)
    return {'sim_p50_us': stats.percentile(lat, 0.5),
            'sim_p99_us': stats.percentile(lat, 0.99),
            'requests': len(lat),
            'cpu_share': {g: share[g] for g in GUESTS},
            'loops_share': {k: round(sum(share[u] for u in us), 4)
                            for k, us in loop_uuids.items()},
            'deadline': params}


def agent_on_sim(args, kernel, path_us, stock):
    """The deadline phase with the runtime the agent would size from the
    simulated vCPU's activations (one per request, ``--burst-us``), or
    None when that is the reservation already simulated.
    """
    dl = reservation(args, args.burst_us)
    if dl == reservation(args):
        return None
    s = run_phase('deadline', args, kernel, args.burst_jitter, dl)
    p50, p99 = s['sim_p50_us'] + path_us, s['sim_p99_us'] + path_us
    return {'deadline': dl, 'pred_rtt_p50_us': round(p50, 1),
            'pred_rtt_p99_us': round(p99, 1),
            'sim_p50_over_stock': _ratio(p50, stock['pred_rtt_p50_us']),
            'sim_p99_over_stock': _ratio(p99, stock['pred_rtt_p99_us'])}


def fit_jitter(args, kernel, real_idle):
    """The burst jitter whose simulated idle p99 - p50 is nearest the real
    idle phase's (ties: the smaller jitter), and that idle run.
    """
    want = real_idle['rtt_p99_us'] - real_idle['rtt_p50_us']
    best = None
    for j in JITTER_GRID:
        r = run_phase('idle', args, kernel, j)
        err = abs(r['sim_p99_us'] - r['sim_p50_us'] - want)
        if best is None or err < best[0] - 1e-9:
            best = (err, j, r)
    return best[1], best[2]


def _number(x):
    return (isinstance(x, (int, float)) and not isinstance(x, bool)
            and math.isfinite(x) and x > 0)


def _density_entry(data, k):
    """The density bench's entry for ``k`` LSVMs in the shape ``load_real``
    reads: per phase the mean of the LSVMs' p50s and p99s.
    """
    entry = next((e for e in data if isinstance(e, dict)
                  and e.get('k') == k), None)
    if entry is None:
        return None
    out = {}
    for phase in PHASES:
        r = entry.get(phase)
        if not isinstance(r, dict):
            continue
        p50s, p99s = r.get('p50_us'), r.get('p99_us')
        if not (isinstance(p50s, dict) and isinstance(p99s, dict)
                and p50s and all(_number(v) for v in p50s.values())
                and all(_number(v) for v in p99s.values())):
            continue
        out[phase] = {'rtt_p50_us': sum(p50s.values()) / len(p50s),
                      'rtt_p99_us': sum(p99s.values()) / len(p99s),
                      'cpu_share': r.get('cpu_share', {})}
    return out


def read_json(path):
    """The JSON in ``path`` and '' , or None and why not."""
    if not path or not os.path.exists(path):
        return None, 'no file %s' % path
    try:
        with open(path) as fh:
            return json.load(fh), ''
    except (OSError, ValueError) as e:
        return None, 'unreadable %s: %s' % (path, e)


def load_real(path, k=1):
    """{phase: {'rtt_p50_us', 'rtt_p99_us', 'cpu_share'}} from the testbed
    bench's JSON (the density bench's list: its entry for ``k`` LSVMs);
    phases without both numbers are left out; {} when the file is missing
    or unreadable (the reason is returned too).
    """
    data, why = read_json(path)
    if why:
        return {}, why
    if isinstance(data, list):
        data = _density_entry(data, k)
        if data is None:
            return {}, '%s: no entry for k = %d LSVMs' % (path, k)
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
        loops = r.get('loops_share')
        out[phase] = {'rtt_p50_us': float(p50), 'rtt_p99_us': float(p99),
                      'cpu_share': share if isinstance(share, dict) else {},
                      'loops_share': loops if isinstance(loops, dict)
                      else None}
    return out, '' if out else '%s: no phase with rtt_p50_us/rtt_p99_us' % (
        path)


def _ratio(a, b):
    return round(a / b, 3) if a is not None and b else None


def ratios(rows, real):
    """Per phase: predicted and real RTT p50/p99 over stock's, p99 over
    the idle floor's, and the predicted figures over the real ones (None
    where a figure is missing).
    ``rows``: {phase: {'pred_rtt_p50_us', 'pred_rtt_p99_us'}}.
    """
    out = {}
    st = rows.get('stock', {})
    rst = real.get('stock', {})
    idle = rows.get('idle', {})
    ridle = real.get('idle', {})
    for ph, row in rows.items():
        r = real.get(ph, {})
        out[ph] = {
            'sim_p99_over_idle': _ratio(row['pred_rtt_p99_us'],
                                        idle.get('pred_rtt_p99_us')),
            'real_p99_over_idle': _ratio(r.get('rtt_p99_us'),
                                         ridle.get('rtt_p99_us')),
            'ratio_p50': _ratio(row['pred_rtt_p50_us'], r.get('rtt_p50_us')),
            'ratio_p99': _ratio(row['pred_rtt_p99_us'], r.get('rtt_p99_us')),
            'sim_p50_over_stock': _ratio(row['pred_rtt_p50_us'],
                                         st.get('pred_rtt_p50_us')),
            'sim_p99_over_stock': _ratio(row['pred_rtt_p99_us'],
                                         st.get('pred_rtt_p99_us')),
            'real_p50_over_stock': _ratio(r.get('rtt_p50_us'),
                                          rst.get('rtt_p50_us')),
            'real_p99_over_stock': _ratio(r.get('rtt_p99_us'),
                                          rst.get('rtt_p99_us'))}
    return out


HEAD = ('phase', 'sim p50', 'sim p99', 'real p50', 'real p99', 'p50 s/r',
        'p99 s/r', 'p50/stock sim (real)', 'p99/stock sim (real)',
        'p99/idle sim (real)')


def table_rows(out):
    """The table's cells, one tuple of strings per phase."""
    def us(x):
        return '-' if x is None else '%.0f' % x

    def r(x):
        return '-' if x is None else '%.2f' % x

    rows = []
    for ph, row in out['phases'].items():
        rows.append((
            ph, us(row['pred_rtt_p50_us']), us(row['pred_rtt_p99_us']),
            us(row['real_rtt_p50_us']), us(row['real_rtt_p99_us']),
            r(row['ratio_p50']), r(row['ratio_p99']),
            '%s (%s)' % (r(row['sim_p50_over_stock']),
                         r(row['real_p50_over_stock'])),
            '%s (%s)' % (r(row['sim_p99_over_stock']),
                         r(row['real_p99_over_stock'])),
            '%s (%s)' % (r(row['sim_p99_over_idle']),
                         r(row['real_p99_over_idle']))))
    return rows


def markdown(out):
    lines = ['| %s |' % ' | '.join(HEAD),
             '|%s' % ('---|' * len(HEAD))]
    lines += ['| %s |' % ' | '.join(c) for c in table_rows(out)]
    return '\n'.join(lines)


MISS_TOL = 0.15
SUMMARY_HEAD = ('run', 'phase', 'p50/stock sim (real)', 'p99/stock sim (real)',
                'p50 s/r', 'p99 s/r', 'miss')


def miss(sim, real, tol=MISS_TOL):
    """True when ``sim`` / ``real`` is off 1 by more than ``tol``; None
    when either is missing.
    """
    if sim is None or not real:
        return None
    return abs(sim / real - 1) > tol + 1e-9


def summary_rows(outs):
    """One row per target and non-stock phase: the ratios to stock sim
    (real), sim/real absolute, and which ratio to stock misses (p50, p99).
    """
    def r(x):
        return '-' if x is None else '%.2f' % x

    rows = []
    for out in outs:
        for ph, row in out['phases'].items():
            if row.get('real_rtt_p50_us') is None:
                continue
            missed = [q for q in ('p50', 'p99') if miss(
                row['sim_%s_over_stock' % q], row['real_%s_over_stock' % q])]
            rows.append((
                out['target'], ph,
                '%s (%s)' % (r(row['sim_p50_over_stock']),
                             r(row['real_p50_over_stock'])),
                '%s (%s)' % (r(row['sim_p99_over_stock']),
                             r(row['real_p99_over_stock'])),
                r(row['ratio_p50']), r(row['ratio_p99']),
                ' '.join(missed) or '-'))
    return rows


def summary_text(outs):
    widths = (34, 9, 21, 21, 8, 8, 7)
    lines = [' '.join('%-*s' % (w, h) for w, h in zip(widths, SUMMARY_HEAD))]
    lines += [' '.join('%-*s' % (w, c) for w, c in zip(widths, cells))
              for cells in summary_rows(outs)]
    return lines


def summary_markdown(outs):
    lines = ['| %s |' % ' | '.join(SUMMARY_HEAD),
             '|%s' % ('---|' * len(SUMMARY_HEAD))]
    lines += ['| %s |' % ' | '.join(c) for c in summary_rows(outs)]
    return '\n'.join(lines)


class _Help(argparse.ArgumentDefaultsHelpFormatter,
            argparse.RawDescriptionHelpFormatter):
    pass


def parse(argv):
    p = argparse.ArgumentParser(
        description=__doc__.split('\nUsage:')[0],
        epilog='The kernel models and what each parameter reproduces: '
        'iosched/simulator/spec_kernel.py and docs/architecture.md section 7; '
        'the '
        'table for the two testbed runs: docs/reproduction.md, "Model '
        'validation".',
        formatter_class=_Help)
    p.add_argument('--seconds', type=float, default=50.0,
                   help='simulated seconds per phase after 1 s of warm-up '
                   '(50: the testbed\'s 2,500 requests per phase)')
    p.add_argument('--kernel', default='linux-6.18-hz250',
                   choices=sorted(spec_kernel.KERNELS),
                   help='kernel model (iosched/simulator/spec_kernel.py)')
    p.add_argument('--kernel-set', action='append', default=[],
                   metavar='FIELD=VALUE',
                   help='change one KernelSpec field (repeatable)')
    p.add_argument('--base-slice-us', type=int, default=1400,
                   help='EEVDF base slice: 700 us x (1 + log2 pCPUs), the '
                   'kernel default on the 2-pCPU testbed')
    p.add_argument('--rate', type=float, default=50.0,
                   help='LSVM requests per second (Poisson)')
    p.add_argument('--burst-us', type=int, default=None,
                   help='LSVM vCPU work per request, mean (default: the real '
                   'idle phase\'s LSVM CPU share / rate when --real has it, '
                   'else 200, the guest\'s nominal work)')
    p.add_argument('--burst-jitter', type=float, default=None,
                   help='0 (fixed) .. 1 (exponential) work per request '
                   '(default: fitted to the real idle p99 - p50 when --real '
                   'has an idle phase, else 0)')
    p.add_argument('--host-hogs', type=int, default=3,
                   help='busy loops on the other pCPU outside the idle phase')
    p.add_argument('--shared-cpu', type=int, default=1, choices=(0, 1))
    p.add_argument('--t-m-us', type=int, default=PARAMS.lsvm_max_slice_us,
                   help='microslice T_m (k = 1, L = 2 ms: lsvm_max_slice_us):'
                   ' the LSVM\'s slice (slice, weight) and the deadline '
                   'runtime\'s floor')
    p.add_argument('--nlsvm-slice-us', type=int,
                   default=PARAMS.nlsvm_slice_us,
                   help='T_NLSVM: the burners\' slice in the slice phase')
    p.add_argument('--latency-ms', type=float,
                   default=PARAMS.default_latency_ms,
                   help='the LSVM flavor\'s latency bound')
    p.add_argument('--activation-us', type=float, default=175.0,
                   help='the LSVM vCPU\'s CPU per activation as the agent\'s '
                   'collector measures it (the real testbed: 150-200 us, a '
                   'request wakes the vCPU 2-3 times; the simulated vCPU '
                   'wakes once per request), which sizes the deadline '
                   'runtime: max(T_m, headroom x this rounded up to 500 us)')
    p.add_argument('--deadline-headroom', type=float,
                   default=PARAMS.deadline_burst_headroom)
    p.add_argument('--io-runtime-us', type=int,
                   default=PARAMS.io_thread_runtime_us,
                   help='[host_agent_policy.vslicer] io_thread_runtime_us: '
                   'only lengthens the period here (the model has no I/O '
                   'thread to reserve); testbed run 1 used 200')
    p.add_argument('--deadline-max-share', type=float,
                   default=PARAMS.deadline_max_share)
    p.add_argument('--lsvm-weight', type=int, default=PARAMS.lsvm_weight)
    p.add_argument('--real', action='extend', nargs='+', default=[],
                   metavar='RUN',
                   help='the testbed bench\'s results, if present '
                   '(several: each a target, its setup from its config; '
                   'default out/bench/testbed_lsvm.json)')
    p.add_argument('--fit', default=None,
                   help='take the request (work, jitter, path constant) '
                   'and the kernel from this fit file (model_fit.py), '
                   'nothing from the runs predicted')
    p.add_argument('--write-fit', default=None,
                   help='write the fit made from the (one) --real run to '
                   'this file')
    p.add_argument('--label', default=None,
                   help='the target\'s name in the tables (default: its '
                   'file name)')
    p.add_argument('--outside-load', type=int, default=0,
                   help='busy loops outside the VMs on any pCPU at weight '
                   '100, outside the idle phase (default 0; a target\'s '
                   'config sets it)')
    p.add_argument('--other-load', type=int, default=0,
                   help='other jobs\' busy loops on any pCPU, every phase')
    p.add_argument('--other-weight', type=int, default=1,
                   help='the weight of each (1: a nice-19 task on the '
                   'cgroup v2 scale; 100: a nice-0 task or a whole '
                   'autogroup, whatever its tasks\' nice)')
    p.add_argument('--loops-autogroup', action='store_true',
                   help='the testbed\'s host hogs and outside loops share '
                   'one autogroup (sched_autogroup_enabled = 1): weight '
                   '100 split among them')
    p.add_argument('--weight-group', default='machine',
                   choices=WEIGHT_GROUPS,
                   help='where the weight mechanism puts the LSVM: its VM '
                   'group inside libvirt\'s machine at --lsvm-weight, or a '
                   'top-level group at --weight-group-weight')
    p.add_argument('--weight-group-weight', type=int, default=GROUP_WEIGHT,
                   help='[host_agent_policy.vslicer] weight_group_weight')
    p.add_argument('--lsvms', type=int, default=None,
                   help='LSVMs on the shared pCPU (default: each k of a '
                   'density bench\'s JSON, else 1)')
    p.add_argument('--real-idle-p50-us', type=float, default=1000.0,
                   help='idle-core RTT p50 used for the path constant when '
                   '--real has no idle phase')
    p.add_argument('--seed', type=int, default=1)
    p.add_argument('--markdown', default=None,
                   help='also write the table as markdown to this file')
    p.add_argument('-o', '--output-dir', default='out/bench')
    args = p.parse_args(argv)
    if args.seconds <= 0:
        p.error('--seconds: %r is invalid; accepted: > 0' % args.seconds)
    if args.burst_jitter is not None and not 0 <= args.burst_jitter <= 1:
        p.error('--burst-jitter: %r is invalid; accepted: 0 .. 1'
                % args.burst_jitter)
    for name in ('outside_load', 'other_load'):
        if getattr(args, name) < 0:
            p.error('--%s: %r is invalid; accepted: >= 0' % (
                name.replace('_', '-'), getattr(args, name)))
    if args.lsvms is not None and args.lsvms < 1:
        p.error('--lsvms: %r is invalid; accepted: >= 1' % args.lsvms)
    if not 1 <= args.other_weight <= 10000:
        p.error('--other-weight: %r is invalid; accepted: 1 .. 10000'
                % args.other_weight)
    if args.fit and (args.kernel_set or args.burst_us is not None
                     or args.burst_jitter is not None):
        p.error('--fit: the fit sets the kernel, the work and the jitter; '
                'accepted without --kernel-set, --burst-us, --burst-jitter')
    if args.write_fit and (args.fit or len(args.real) != 1):
        p.error('--write-fit: needs exactly one --real and no --fit')
    try:
        args.kernel_spec = kernel_spec(args)
    except ValueError as e:
        p.error(str(e))
    return args


def git_date(path):
    """The date ``path`` was last committed (ISO), or None."""
    try:
        out = subprocess.run(['git', 'log', '-1', '--format=%cI', '--',
                              path], capture_output=True, text=True,
                             timeout=10, check=False).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return out or None


def fit_from_run(args, kernel, real):
    """The in-sample fit from ``real``'s idle phase (``args.burst_us`` and
    ``args.burst_jitter`` when given): burst, jitter, path constant, the
    reasons, and the simulated idle phase it used.
    """
    burst, burst_from = args.burst_us, '--burst-us'
    if burst is None:
        share = real.get('idle', {}).get('cpu_share', {}).get('lsvm')
        if _number(share):
            burst = max(1, int(round(share * 1e6 / args.rate)))
            burst_from = 'real idle LSVM CPU share %.4f / rate' % share
        else:
            burst, burst_from = 200, 'nominal (no real idle LSVM share)'
    a = argparse.Namespace(**vars(args))
    a.burst_us = burst
    jitter, jitter_from, idle = args.burst_jitter, '--burst-jitter', None
    if jitter is None:
        if 'idle' in real:
            jitter, idle = fit_jitter(a, kernel, real['idle'])
            jitter_from = 'fitted to the real idle p99 - p50'
        else:
            jitter, jitter_from = 0.0, 'no real idle phase'
    if idle is None:
        idle = run_phase('idle', a, kernel, jitter)
    idle_real = real.get('idle', {}).get('rtt_p50_us', args.real_idle_p50_us)
    return {'burst_us': burst, 'burst_from': burst_from,
            'burst_jitter': jitter, 'jitter_from': jitter_from,
            'path_us': idle_real - idle['sim_p50_us'],
            'path_from': 'real idle p50' if 'idle' in real else
            '--real-idle-p50-us', 'idle': idle}


def predict(args, kernel, fit, real, label):
    """Every phase simulated with ``fit``'s request (burst, jitter, path
    constant), beside ``real``: the output dict of one target.
    """
    args.burst_us, args.burst_jitter = fit['burst_us'], fit['burst_jitter']
    path_us = fit['path_us']
    sim = {ph: (fit['idle'] if ph == 'idle' and fit.get('idle')
                else run_phase(ph, args, kernel, args.burst_jitter))
           for ph in PHASES}
    config = {k: v for k, v in vars(args).items() if k != 'kernel_spec'}
    out = {'target': label, 'kernel': kernel.name,
           'kernel_spec': dataclasses.asdict(kernel), 'config': config,
           'path_us': round(path_us, 1), 'path_from': fit['path_from'],
           'burst_us': fit['burst_us'], 'burst_from': fit['burst_from'],
           'burst_jitter': fit['burst_jitter'],
           'jitter_from': fit['jitter_from'], 'phases': {}}
    for ph in PHASES:
        s = sim[ph]
        r = real.get(ph, {})
        row = {'pred_rtt_p50_us': round(s['sim_p50_us'] + path_us, 1),
               'pred_rtt_p99_us': round(s['sim_p99_us'] + path_us, 1),
               'sim_latency_p50_us': s['sim_p50_us'],
               'sim_latency_p99_us': s['sim_p99_us'],
               'requests': s['requests'], 'cpu_share': s['cpu_share'],
               'loops_share': s['loops_share'],
               'real_loops_share': r.get('loops_share'),
               'real_rtt_p50_us': r.get('rtt_p50_us'),
               'real_rtt_p99_us': r.get('rtt_p99_us'),
               'real_cpu_share': r.get('cpu_share') or None}
        if s['deadline']:
            row['deadline'] = s['deadline']
        out['phases'][ph] = row
    for ph, rat in ratios(out['phases'], real).items():
        out['phases'][ph].update(rat)
    out['deadline_agent_on_sim'] = agent_on_sim(
        args, kernel, path_us, out['phases']['stock'])
    out['deadline_reservation'] = sim['deadline']['deadline']
    return out


def print_target(out, args, real, why):
    print('%s: LSVM RTT on the testbed setup (%d LSVM(s), %d host hog(s), '
          '%d outside loop(s)%s, %d other load(s) at weight %d, weight group '
          '%s), kernel %s; vCPU work %d us per request (%s), jitter %.2f '
          '(%s); TCG path constant %.0f us (%s)' % (
              out['target'], args.lsvms, args.host_hogs, args.outside_load,
              ' in one autogroup' if args.loops_autogroup else '',
              args.other_load, args.other_weight, args.weight_group,
              out['kernel'], out['burst_us'], out['burst_from'],
              out['burst_jitter'], out['jitter_from'], out['path_us'],
              out['path_from']))
    widths = (9, 8, 8, 9, 9, 8, 8, 21, 21, 20)
    print(' '.join('%-*s' % (w, h) for w, h in zip(widths, HEAD)))
    for cells in table_rows(out):
        print(' '.join('%-*s' % (w, c) for w, c in zip(widths, cells)))
    print('CPU share sim (real), lsvm cpu1 cpu2 cpu3:')
    for ph in PHASES:
        row = out['phases'][ph]
        rs = row['real_cpu_share'] or {}
        print('  %-9s %s' % (ph, ' '.join(
            '%.3f%s' % (row['cpu_share'][g], '' if g not in rs else
                        '(%.3f)' % rs[g]) for g in GUESTS)))
    print('loops\' CPU sim (real), host hogs, outside, other:')
    for ph in PHASES:
        row = out['phases'][ph]
        rl = row['real_loops_share'] or {}
        print('  %-9s %s' % (ph, ' '.join(
            '%.3f%s' % (v, '' if k not in rl else '(%.3f)' % rl[k])
            for k, v in sorted(row['loops_share'].items(),
                               key=lambda kv: LOOPS.index(kv[0])))))
    dl = out['deadline_reservation']
    print('deadline phase: runtime %d us / deadline %d us / period %d us '
          '(CPU per activation %.0f us, I/O threads %d us)'
          % (dl['runtime_us'], dl['deadline_us'], dl['period_us'],
             args.activation_us, args.io_runtime_us))
    alt = out['deadline_agent_on_sim']
    if alt:
        print('deadline with the runtime the agent sizes from the simulated '
              'vCPU (one activation of %d us per request): %d us / %d us: '
              'RTT p50 %.0f us, p99 %.0f us (%.2f / %.2f x stock)' % (
                  out['burst_us'], alt['deadline']['runtime_us'],
                  alt['deadline']['period_us'], alt['pred_rtt_p50_us'],
                  alt['pred_rtt_p99_us'], alt['sim_p50_over_stock'],
                  alt['sim_p99_over_stock']))
    if not real:
        print('no testbed results to compare (%s): run make bench-testbed'
              % why)


def targets(paths, lsvms):
    """(path, k LSVMs) per target: ``lsvms`` when given, else every k a
    density bench's list holds, else 1.
    """
    out = []
    for path in paths:
        data, _ = read_json(path)
        ks = sorted({e.get('k') for e in data if isinstance(e, dict)
                     and isinstance(e.get('k'), int) and e['k'] >= 1}) if (
            isinstance(data, list)) else []
        out += [(path, k) for k in ([lsvms] if lsvms else ks or [1])]
    return out


def main(argv=None):
    args = parse(argv)
    reals = args.real or ['out/bench/testbed_lsvm.json']
    fit = None
    if args.fit:
        try:
            fit = model_fit.read(args.fit)
        except ValueError as e:
            print('model_validation: %s' % e, file=sys.stderr)
            return 2
        kernel = model_fit.kernel_of(fit)
        fit = dict(fit, burst_from='fit %s' % args.fit,
                   jitter_from='fit %s' % args.fit,
                   path_from='fit %s (run %s)' % (args.fit, fit['source']))
    else:
        kernel = args.kernel_spec
    t0 = time.perf_counter()
    outs = []
    for path, k in targets(reals, args.lsvms):
        real, why = load_real(path, k)
        data, _ = read_json(path)
        a = argparse.Namespace(**vars(args))
        a.lsvms = k
        if not isinstance(data, list):
            for field, v in setup_from_run(data).items():
                setattr(a, field, type(getattr(a, field))(v))
        target_fit = fit if fit is not None else fit_from_run(a, kernel, real)
        label = args.label or os.path.splitext(os.path.basename(path))[0]
        if k > 1:
            label += ' k=%d' % k
        out = predict(a, kernel, target_fit, real, label)
        out['real'] = path
        if fit is not None:
            out['fit'] = {k: fit[k] for k in model_fit.FIELDS}
        print_target(out, a, real, why)
        outs.append(out)
        if args.write_fit:
            model_fit.write(args.write_fit, model_fit.build(
                target_fit['burst_us'], target_fit['burst_jitter'],
                target_fit['path_us'], kernel, path, git_date(path),
                args.seed, args.seconds, how={
                    'burst': target_fit['burst_from'],
                    'jitter': target_fit['jitter_from'],
                    'path': target_fit['path_from']}))
            print('wrote the fit to %s' % args.write_fit)
    wall = time.perf_counter() - t0
    if len(outs) > 1:
        print('Ratios to stock, sim (real), and sim/real absolute; a miss: '
              '|sim/real ratio to stock - 1| > %d %%:' % round(
                  MISS_TOL * 100))
        for line in summary_text(outs):
            print(line)
    os.makedirs(args.output_dir, exist_ok=True)
    path = os.path.join(args.output_dir, 'model_validation.json')
    with open(path, 'w') as fh:
        json.dump(outs[0] if len(outs) == 1 else {'targets': outs}, fh,
                  indent=2, sort_keys=True)
    if args.markdown:
        with open(args.markdown, 'w') as fh:
            fh.write((markdown(outs[0]) if len(outs) == 1 else
                      summary_markdown(outs)) + '\n')
    print('wrote %s (%.1f s)' % (path, wall))
    return 0


if __name__ == '__main__':
    sys.exit(main())
