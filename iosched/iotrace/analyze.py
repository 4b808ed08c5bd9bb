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
"""The off-line analyzer: pure functions of a ``fmt.Trace`` (no I/O, no
clock).

* ``shares``: each VM's share of the bytes reaching each layer, moving
  average over ``window`` s, one point every ``step`` s (the paper's
  share view);
* ``cumulative``: bytes per VM over time at one layer (the time view);
* ``waits``: per request, the gap between consecutive layers; the queue
  wait is Dispatch - Queuing;
* ``fairness``: finish times, their population SD, slowest / fastest,
  Jain's index over per-VM throughput (bytes / finish time);
* ``detect``: seed 004's I/O priority inversion (see its docstring);
* ``describe``: a finding in words with timestamps (like Table 1).
"""

import bisect
import collections
import math

from iosched.contract import stats
from iosched.iotrace import fmt

Req = collections.namedtuple('Req', 'rid vm op sync bytes sector t')
Wait = collections.namedtuple('Wait', 'rid vm op sync start wait')
# Share points a trace may need (end / step): more would take minutes and
# gigabytes to compute and draw.
MAX_POINTS = 200000
GAPS = (('req', 'que'), ('que', 'dis'), ('dis', 'com'), ('com', 'rsp'))


def requests(trace):
    """{rid: Req} with ``t`` = {layer: ts} of the layers it reached."""
    out = {}
    for e in trace.io:
        r = out.get(e.rid)
        if r is None:
            r = out[e.rid] = Req(e.rid, e.vm, e.op, e.sync, e.bytes,
                                 e.sector, {})
        r.t.setdefault(e.layer, e.ts)
    return out


def waits(reqs, a='que', b='dis'):
    """[Wait] of every request that reached both layers ``a`` and ``b``
    (default: the queue wait, Dispatch - Queuing), in order of ``a``.
    """
    out = [Wait(r.rid, r.vm, r.op, r.sync, r.t[a], r.t[b] - r.t[a])
           for r in reqs.values() if a in r.t and b in r.t]
    out.sort(key=lambda w: w.start)
    return out


def layers_present(trace):
    return [layer for layer in fmt.LAYERS
            if any(e.layer == layer for e in trace.io)]


def shares(trace, window=1.0, step=0.1, t_end=None):
    """(times, {layer: {vm: [share or None]}}): per layer, each VM's
    share of the bytes reaching it in the ``window`` s before each time
    (a moving sum; None where no bytes reached the layer).
    """
    if window <= 0 or step <= 0:
        raise ValueError('window and step must be > 0 (got %r, %r)'
                         % (window, step))
    end = trace.end if t_end is None else t_end
    n = max(1, int(math.ceil(end / step)))
    if n > MAX_POINTS:
        raise ValueError('%d share points (%g s / step %g s); at most %d'
                         % (n, end, step, MAX_POINTS))
    vms = trace.vms
    bins = {layer: {vm: [0.0] * n for vm in vms} for layer in fmt.LAYERS}
    for e in trace.io:
        i = min(n - 1, max(0, int(e.ts / step)))
        bins[e.layer][e.vm][i] += e.bytes
    k = max(1, int(round(window / step)))
    times = [(i + 1) * step for i in range(n)]
    out = {}
    for layer in fmt.LAYERS:
        sums = {}
        for vm in vms:
            b = bins[layer][vm]
            acc, s = 0.0, []
            for i in range(n):
                acc += b[i]
                if i >= k:
                    acc -= b[i - k]
                s.append(acc)
            sums[vm] = s
        tot = [sum(sums[vm][i] for vm in vms) for i in range(n)]
        out[layer] = {vm: [sums[vm][i] / tot[i] if tot[i] > 0 else None
                           for i in range(n)] for vm in vms}
    return times, out


def cumulative(trace, layer='rsp'):
    """{vm: ([ts], [cumulative bytes])} at ``layer``."""
    out = {vm: ([0.0], [0]) for vm in trace.vms}
    for e in trace.io:
        if e.layer == layer:
            ts, cb = out[e.vm]
            ts.append(e.ts)
            cb.append(cb[-1] + e.bytes)
    return out


def pstdev(xs):
    m = sum(xs) / len(xs)
    return math.sqrt(sum((x - m) ** 2 for x in xs) / len(xs))


def jain(xs):
    """Jain's fairness index of ``xs``: 1 when all equal, 1/n at worst."""
    s2 = sum(x * x for x in xs)
    return (sum(xs) ** 2 / (len(xs) * s2)) if s2 else None


def fairness(trace):
    """{'finish': {vm: s}, 'bytes': {vm: n}, 'sd', 'mean', 'slowest',
    'fastest', 'ratio', 'jain'}; finish from the trace's finish lines,
    else each VM's last Response (or Completion).
    """
    finish = dict(trace.finish)
    done = collections.Counter()
    last = {}
    layer = 'rsp' if any(e.layer == 'rsp' for e in trace.io) else 'com'
    for e in trace.io:
        if e.layer == layer:
            done[e.vm] += e.bytes
            last[e.vm] = e.ts
    for vm, ts in last.items():
        finish.setdefault(vm, ts)
    vms = [vm for vm in trace.vms if vm in finish and finish[vm] > 0]
    out = {'finish': {vm: finish[vm] for vm in vms},
           'bytes': {vm: done[vm] for vm in vms}, 'layer': layer,
           'sd': None, 'mean': None, 'slowest': None, 'fastest': None,
           'ratio': None, 'jain': None}
    if not vms:
        return out
    times = [finish[vm] for vm in vms]
    out['sd'] = pstdev(times)
    out['mean'] = sum(times) / len(times)
    out['slowest'] = max(vms, key=lambda v: finish[v])
    out['fastest'] = min(vms, key=lambda v: finish[v])
    out['ratio'] = finish[out['slowest']] / finish[out['fastest']]
    out['jain'] = jain([done[vm] / finish[vm] for vm in vms])
    return out


class _Bytes:
    """Bytes per VM reaching one layer within [a, b], by bisection."""

    def __init__(self, trace, layer):
        self.ts, self.cum = {}, {}
        for e in trace.io:
            if e.layer == layer:
                ts = self.ts.setdefault(e.vm, [])
                cum = self.cum.setdefault(e.vm, [0])
                ts.append(e.ts)
                cum.append(cum[-1] + e.bytes)

    def between(self, vm, a, b):
        ts = self.ts.get(vm)
        if not ts:
            return 0
        i = bisect.bisect_left(ts, a)
        j = bisect.bisect_right(ts, b)
        return self.cum[vm][j] - self.cum[vm][i]


def _share(by, vms, vm, a, b):
    tot = sum(by.between(v, a, b) for v in vms)
    return by.between(vm, a, b) / tot if tot else None


def detect(trace, min_wait=0.5, min_others=5, slack=0.1, collapse=0.5,
           window=1.0):
    """Seed 004's I/O priority inversion: [finding dict], oldest first.

    A finding is a VM ``vm`` and an episode [queued, dispatched] where:

    1. some of its async writes waited at least ``min_wait`` s between
       Queuing and Dispatch (writes whose waits overlap are one episode);
    2. meanwhile at least ``min_others`` sync requests of *other* VMs
       were dispatched (the scheduler served them instead);
    3. its vCPU was inactive in a span that starts before the episode
       ends plus ``slack`` s and ends after the episode starts;
    4. its share of the Request layer during the episode fell below
       ``collapse`` times its fair share (1 / number of VMs).
    """
    reqs = requests(trace)
    vms = trace.vms
    if len(vms) < 2:
        return []
    qw = [w for w in waits(reqs) if not w.sync and w.wait >= min_wait]
    disp = sorted((r.t['dis'], r.vm, r.sync, r.bytes, r.rid)
                  for r in reqs.values() if 'dis' in r.t)
    disp_ts = [d[0] for d in disp]
    req_bytes = _Bytes(trace, 'req')
    inactive = collections.defaultdict(list)
    for s in trace.vcpu:
        if s.state == 'inactive':
            inactive[s.vm].append(s)
    episodes = collections.defaultdict(list)
    for w in qw:
        eps = episodes[w.vm]
        end = w.start + w.wait
        if eps and w.start <= eps[-1]['dispatched']:
            eps[-1]['dispatched'] = max(eps[-1]['dispatched'], end)
            eps[-1]['writes'].append(w)
        else:
            eps.append({'queued': w.start, 'dispatched': end, 'writes': [w]})
    found = []
    fair = 1.0 / len(vms)
    for vm in vms:
        for ep in episodes.get(vm, []):
            a, b = ep['queued'], ep['dispatched']
            i = bisect.bisect_right(disp_ts, a)
            j = bisect.bisect_left(disp_ts, b)
            others = [d for d in disp[i:j] if d[1] != vm and d[2]]
            if len(others) < min_others:
                continue
            spans = [s for s in inactive.get(vm, [])
                     if s.start <= b + slack and s.end >= a]
            if not spans:
                continue
            during = _share(req_bytes, vms, vm, a, b)
            if during is None or during >= collapse * fair:
                continue
            before = _share(req_bytes, vms, vm, max(0.0, a - window), a)
            ws = ep['writes']
            found.append({
                'vm': vm, 'queued': a, 'dispatched': b, 'wait': b - a,
                'writes': [{'rid': w.rid, 'queued': w.start,
                            'dispatched': w.start + w.wait, 'wait': w.wait,
                            'bytes': reqs[w.rid].bytes,
                            'sector': reqs[w.rid].sector} for w in ws],
                'others': {'count': len(others),
                           'bytes': sum(d[3] for d in others),
                           'vms': sorted({d[1] for d in others}),
                           'first': others[0][0], 'last': others[-1][0]},
                'inactive': [(s.start, s.end) for s in spans],
                'request_share_before': before,
                'request_share_during': during, 'fair_share': fair,
                'next_request': _next_request(reqs, vm, b),
            })
    found.sort(key=lambda f: f['queued'])
    return found


def _next_request(reqs, vm, t):
    """When ``vm`` next reached the Request layer after ``t`` (or None)."""
    nxt = [r.t['req'] for r in reqs.values()
           if r.vm == vm and 'req' in r.t and r.t['req'] > t]
    return min(nxt) if nxt else None


def _as_percent(x):
    return 'n/a' if x is None else '%.0f %%' % (100 * x)


def _kib(n):
    return '%g KiB' % round(n / 1024, 1)


def describe(f):
    """A finding in words, then its events as rows (Table 1's shape)."""
    ws = f['writes']
    lines = [
        '%s: I/O priority inversion from %.3f s to %.3f s.' % (
            f['vm'], f['queued'], f['dispatched']),
        '  %d async write(s) of %s waited up to %.3f s between Queuing '
        'and Dispatch,' % (len(ws), f['vm'], max(w['wait'] for w in ws)),
        '  while %d sync requests (%.1f MB) of %s were dispatched '
        '(%.3f s to %.3f s);' % (
            f['others']['count'], f['others']['bytes'] / 1e6,
            ', '.join(f['others']['vms']), f['others']['first'],
            f['others']['last']),
        '  its vCPU was inactive %s;' % ', '.join(
            '%.3f s to %.3f s' % s for s in f['inactive']),
        '  its Request-layer share fell from %s to %s (fair share %s).' % (
            _as_percent(f['request_share_before']),
            _as_percent(f['request_share_during']),
            _as_percent(f['fair_share'])),
    ]
    if f['next_request'] is not None:
        lines.append('  Its next request came at %.3f s, %.3f s after the '
                     'writes were dispatched.' % (
                         f['next_request'],
                         f['next_request'] - f['dispatched']))
    lines.append('  %-12s %-5s %-10s %-3s %-9s %s' % (
        'time (s)', 'VM', 'layer', 'op', 'size', 'sector'))
    rows = []
    for w in ws:
        rows.append((w['queued'], 'Queuing', w))
        rows.append((w['dispatched'], 'Dispatch', w))
    for t, layer, w in sorted(rows, key=lambda r: r[0]):
        lines.append('  %-12.5f %-5s %-10s %-3s %-9s %d' % (
            t, f['vm'], layer, 'W', _kib(w['bytes']), w['sector']))
    return '\n'.join(lines)


def summary(trace, window=1.0, step=0.1, **detect_kw):
    """Everything ``analyze`` prints, as one dict (JSON-friendly)."""
    reqs = requests(trace)
    qw = waits(reqs)
    by_vm = collections.defaultdict(list)
    for w in qw:
        by_vm[w.vm].append(w.wait)
    wait_stats = {}
    for vm, xs in by_vm.items():
        xs.sort()
        wait_stats[vm] = {'n': len(xs), 'mean': sum(xs) / len(xs),
                          'p99': stats.percentile(xs, 0.99),
                          'max': xs[-1]}
    return {'source': trace.header.get('source'),
            'vms': trace.vms, 'requests': len(reqs),
            'layers': layers_present(trace),
            'fairness': fairness(trace), 'queue_wait': wait_stats,
            'findings': detect(trace, window=window, **detect_kw)}
