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
"""Pure: check the LSVM testbed bench's figures against the issue's
targets and print the table (``bench/testbed_lsvm.py``; the rounds are
pooled by ``bench.testbed_common.pool``).
"""

from bench import lsvm_knob_snapshot
from iosched.contract import knob_kinds
from iosched.contract import lsvm as lsvm_bound

# Issue 10's targets (benchmarks, not timed tests).
P99_OVER_IDLE_MAX = 1.5
P99_OVER_STOCK_MAX = 0.5
P50_OVER_STOCK_MAX = 0.7
BURN_OVER_STOCK_MIN = 0.97
# Issue 28: every guest's share within its fair band
# (contract.lsvm.share_excess): no guest loses CPU, none takes more than
# its fair-share limit. Issue 10's symmetric |share / stock - 1| is still
# printed ('shr dev'): guests gaining below their limit fail it although
# the CPU they gain comes from the loops outside the VMs (printed too).
SHARE_EXCESS_MAX = lsvm_bound.SHARE_TOLERANCE
# Issue 10 asked <= 5 s of one run per case; issue 28's three repeats and
# share phases cost 6.2-6.6 s measured on a loaded host: a robust choice
# for ~3 s more at agent start.
SELFTEST_MAX_S = 8.0


def _ratio(a, b):
    return round(a / b, 3) if b else None


def share_deviation(phase, stock):
    """Largest |share / stock share - 1| over the guests."""
    devs = [abs(phase['cpu_share'][n] / s - 1.0)
            for n, s in stock['cpu_share'].items() if s > 0]
    return round(max(devs), 3) if devs else None


def worst_share_excess(phase, stock, lsvm='lsvm'):
    """Largest lsvm.share_excess over the guests. The benches pin every
    guest to one pCPU: each guest's fair-share limit is 1 / guests. The
    LSVM's share is its requests' demand: the ceiling only.
    """
    limit = lsvm_bound.fair_share(1, len(stock['cpu_share']))
    ex = [lsvm_bound.share_excess(phase['cpu_share'][n], s, limit,
                                  floor=(n != lsvm))
          for n, s in stock['cpu_share'].items() if s > 0]
    return round(max(ex), 3) if ex else None


def figures(results, mech):
    m, s, i = results[mech], results['stock'], results['idle']
    burn_m = sum(m['burn_iter_per_s'].values())
    burn_s = sum(s['burn_iter_per_s'].values())
    return {
        'p99_over_idle': _ratio(m['rtt_p99_us'], i['rtt_p99_us']),
        'p99_over_stock': _ratio(m['rtt_p99_us'], s['rtt_p99_us']),
        'p50_over_stock': _ratio(m['rtt_p50_us'], s['rtt_p50_us']),
        'burn_over_stock': _ratio(burn_m, burn_s),
        'share_deviation': share_deviation(m, s),
        'share_excess': worst_share_excess(m, s),
    }


def targets(results, mechs):
    """Per mechanism: each target's figure, limit and verdict."""
    out = {}
    for mech in mechs:
        f = figures(results, mech)
        out[mech] = {
            'p99_over_idle': (f['p99_over_idle'], '<=', P99_OVER_IDLE_MAX),
            'p99_over_stock': (f['p99_over_stock'], '<=',
                               P99_OVER_STOCK_MAX),
            'p50_over_stock': (f['p50_over_stock'], '<=',
                               P50_OVER_STOCK_MAX),
            'burn_over_stock': (f['burn_over_stock'], '>=',
                                BURN_OVER_STOCK_MIN),
            'share_excess': (f['share_excess'], '<=', SHARE_EXCESS_MAX),
        }
        for name, (got, op, lim) in list(out[mech].items()):
            met = got is not None and (got <= lim if op == '<='
                                       else got >= lim)
            out[mech][name] = {'value': got, 'target': '%s %s' % (op, lim),
                               'met': met}
    auto = results.get('selftest', {}).get('auto')
    if auto in mechs:
        out['auto'] = {'value': auto, 'target': 'all five met',
                       'met': all(v['met'] for v in out[auto].values())}
    st = results.get('selftest', {}).get('seconds')
    out['selftest_seconds'] = {'value': st, 'target': '<= %s'
                               % SELFTEST_MAX_S,
                               'met': st is not None and st <= SELFTEST_MAX_S}
    return out


def share_limit(decisions, uuid):
    """The CPU share the agent allows the LSVM's vCPU 0 (deadline: runtime
    / period; weight: the VM cap), from the actuator's decisions.
    """
    for d in decisions.values():
        if d.instance_uuid != uuid:
            continue
        if d.kind == knob_kinds.VCPU_DEADLINE and d.target == '0' and (
                isinstance(d.after, dict)):
            return round(d.after['runtime_us'] / d.after['period_us'], 4)
    for d in decisions.values():
        if d.instance_uuid != uuid:
            continue
        if d.kind == knob_kinds.VM_CAP:
            return d.after
        if d.kind == knob_kinds.LSVM_GROUP and isinstance(d.after, dict):
            return d.after.get('cap')      # the group of its own
    return None


# A round in which the LSVM got less than this fraction of its median
# stock-round share is starved: its knobs are printed (issue 28, run 4:
# one weight round at share 0.013 and p50 53.7 ms, all others ~1 ms).
STARVED_FRACTION = 0.5


def starved_rounds(results, mechs, lsvm='lsvm'):
    """[(mech, round index, share, p50 us, knobs)] of the mechanism
    rounds whose LSVM share fell below ``STARVED_FRACTION`` of its median
    share in the stock rounds.
    """
    stock = [r.get(lsvm) for r in (results.get('stock') or {}).get(
        'rounds_cpu_share') or [] if r]
    stock = sorted(v for v in stock if v)
    if not stock:
        return []
    floor = STARVED_FRACTION * stock[len(stock) // 2]
    out = []
    for m in mechs:
        r = results.get(m) or {}
        knobs = r.get('rounds_lsvm_knobs') or []
        for i, shares in enumerate(r.get('rounds_cpu_share') or []):
            share = (shares or {}).get(lsvm)
            if share is not None and share < floor:
                out.append((m, i, share, r['rounds_p50_us'][i],
                            knobs[i] if i < len(knobs) else None))
    return out


def _total(phase, key):
    vals = [v for v in phase.get(key) or [] if v is not None]
    return sum(vals) / len(vals) if vals else None


def transfer(results, mechs):
    """{mech: (guests' CPU / stock, outside loops' CPU / stock)}: what
    the guests gain together and who pays for it (None: not recorded).
    """
    stock = results.get('stock') or {}
    g0 = _total(stock, 'rounds_guests_cpu_total')
    o0 = sum((stock.get('loops_share') or {}).values())
    out = {}
    for m in mechs:
        r = results.get(m) or {}
        g = _total(r, 'rounds_guests_cpu_total')
        o = sum((r.get('loops_share') or {}).values())
        if g is None or not g0:
            continue
        out[m] = (_ratio(g, g0), _ratio(o, o0) if o0 else None)
    return out


def table(results, mechs):
    """The bench's figures beside stock and idle, then the targets."""
    lines = ['LSVM RTT (us), rounds pooled; ratios are to stock of the same '
             'run', '%-9s %8s %8s %8s %8s %8s %8s %8s %8s  %s' % (
                 'phase', 'p50', 'p99', 'p50/stk', 'p99/stk', 'p99/idle',
                 'burn/stk', 'shr exc', 'shr dev', 'round p50s')]
    for phase in ['idle', 'stock'] + list(mechs):
        r = results.get(phase) or {}
        if not r:
            continue
        f = (figures(results, phase) if phase not in ('idle', 'stock')
             else {})
        lines.append('%-9s %8.0f %8.0f %8s %8s %8s %8s %8s %8s  %s' % (
            phase, r['rtt_p50_us'], r['rtt_p99_us'],
            f.get('p50_over_stock', '-'), f.get('p99_over_stock', '-'),
            f.get('p99_over_idle', '-'), f.get('burn_over_stock', '-'),
            f.get('share_excess', '-'), f.get('share_deviation', '-'),
            ' '.join('%.0f' % v for v in r['rounds_p50_us'])))
    shares = results.get('stock', {}).get('cpu_share', {})
    if shares:
        lines.append('CPU share per guest: ' + '; '.join(
            '%s %s' % (phase, ' '.join('%s=%.3f' % (n, results[phase][
                'cpu_share'][n]) for n in sorted(shares)))
            for phase in ['stock'] + list(mechs) if results.get(phase)))
    moved = transfer(results, mechs)
    if moved:
        lines.append('CPU / stock, the guests together (vCPUs and QEMU '
                     'threads) and the loops outside the VMs: ' + '; '.join(
                         '%s %s / %s' % (m, g, o) for m, (g, o) in
                         moved.items()))
    loops = results.get('stock', {}).get('loops_share', {})
    if loops:
        # what the guests gain or lose comes from somewhere: the busy
        # loops outside the VMs (host_hogs pinned to the other pCPU)
        lines.append('CPU share of the loops outside the VMs: ' + '; '.join(
            '%s %s' % (phase, ' '.join('%s=%.3f' % (n, results[phase][
                'loops_share'].get(n, 0)) for n in sorted(loops)))
            for phase in ['stock'] + list(mechs) if results.get(phase)))
    bound = results.get('cpu_bound_share')
    if bound:
        lines.append('LSVM turned CPU-bound, vCPU share: ' + ', '.join(
            '%s %.3f%s' % (k, v, ' (limit %s)' % bound.get(k + '_limit')
                           if bound.get(k + '_limit') is not None else '')
            for k, v in bound.items() if not k.endswith('_limit')))
    for m, i, share, p50, knobs in starved_rounds(results, mechs):
        lines.append('STARVED: %s round %d, LSVM share %.3f, p50 %.0f us; '
                     'where it competed: %s' % (
                         m, i + 1, share, p50,
                         lsvm_knob_snapshot.describe(knobs)))
    t = results.get('targets', {})
    lines.append('targets:')
    for mech in mechs:
        for name, v in t.get(mech, {}).items():
            lines.append('  %-9s %-16s %-8s %-10s %s' % (
                mech, name, v['value'], v['target'],
                'met' if v['met'] else 'NOT met'))
    st = t.get('selftest_seconds')
    if st:
        lines.append('  self-test %.2f s (%s): %s, auto picks %s' % (
            st['value'] or 0, st['target'], 'met' if st['met'] else
            'NOT met', results.get('selftest', {}).get('auto')))
    a = t.get('auto')
    if a:
        lines.append("  auto's choice %s: %s" % (
            a['value'], 'all five targets met' if a['met']
            else 'NOT all targets met'))
    lines.append('agent CPU per tick: %s ms' % results.get(
        'agent_cpu_ms_per_tick'))
    return lines
