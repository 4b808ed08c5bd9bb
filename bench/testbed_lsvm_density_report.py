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
"""Pure: the LSVM density bench's table and verdicts (``bench/
testbed_lsvm_density.py``, ``make bench-lsvm-density``), from its
results (one dict per density k) or a recorded JSON (``--report``).

Target (issue 28): the bound the agent reports, or its refusal, covers
what was measured. Per density k and mechanism, the measured figure is
the excess p99: the arm's worst LSVM RTT p99 minus the idle floor's p99
(what sharing the pCPU added). Admitted (no LSVM refused): met when the
excess <= the reported bound. Refused (every LSVM): honest, so met, when
the excess > the flavor's L (the bound could not have held). Some
refused: the admitted ones were promised the bound, judged as admitted.
A verdict not met names the excess beside the bound, and how much of it
the LSVM vCPUs' own wake-to-run p99 (the seen W) accounts for: the rest
came after the vCPU got its CPU.
"""

from bench import target_verdict as tv
from bench import testbed_common as common
from iosched.contract import flavor
from iosched.contract import lsvm as lsvm_bound
from iosched.testbed import spec

# The L the rr guests boot with (their flavor), for runs that did not
# record the agent's (``latency_ms`` of the agent facts).
RR_FLAVOR_LATENCY_MS = float(flavor.read(spec.FLAVORS['rr'][1]).latency_ms)


def mechanisms(r):
    """The mechanism arms of one density's results, in run order."""
    return [a for a in r if a in lsvm_bound.MECHANISMS]


def latency_ms(f):
    """(L, a note when it was not recorded) of an arm's agent facts."""
    if f.get('latency_ms'):
        return f['latency_ms'], ''
    return RR_FLAVOR_LATENCY_MS, ' (the rr flavor\'s; L not recorded)'


def excess_ms(r, mech):
    """The arm's worst LSVM p99 over the idle floor's p99, ms, with both."""
    x = r.get(mech) or {}
    idle = ((r.get('idle') or {}).get('p99_us') or {}).get('lsvm1')
    worst = x.get('worst_p99_us')
    if worst is None and x.get('p99_us'):
        worst = max(x['p99_us'].values())
    if worst is None or idle is None:
        return None, worst, idle
    return (worst - idle) / 1000.0, worst / 1000.0, idle / 1000.0


def _seen(f, excess):
    if not f.get('seen_wakes'):
        return 'the LSVM vCPUs\' own wake-to-run delays %s' % tv.NOT_RECORDED
    w = f['seen_us'] / 1000.0
    return ('the LSVM vCPUs\' own wake-to-run p99 was %.2f ms (%d wakes): '
            '%.2f ms of the excess came after the vCPU got its CPU, which '
            'a wake-up bound does not count' % (
                w, f['seen_wakes'], max(0.0, excess - w)))


def judge_k(r):
    """One density's verdict lines, one per mechanism."""
    k = r.get('k')
    out = []
    for mech in mechanisms(r):
        f = (r.get('agent') or {}).get(mech)
        ex, worst, idle = excess_ms(r, mech)
        if not f or ex is None:
            out.append(tv.line('k=%s %s: bound covers the excess p99' % (
                k, mech), None, 'bound or p99 %s' % tv.NOT_RECORDED))
            continue
        bound, refused = f['bound_ms'], f.get('refused') or 0
        lat, lat_note = latency_ms(f)
        measured = 'excess %.2f ms (worst LSVM p99 %.2f ms - idle floor ' \
                   '%.2f ms)' % (ex, worst, idle)
        if refused and refused >= k:
            out.append(tv.line(
                'k=%s %s refused (%d of %d, reported bound %.2f ms > L): '
                'excess p99 > L %g ms%s' % (k, mech, refused, k, bound, lat,
                                            lat_note),
                ex > lat, measured,
                'the flavor would have held: the refusal was not needed '
                '(%s)' % _seen(f, ex)))
            continue
        what = 'k=%s %s%s: excess p99 <= reported bound %.2f ms' % (
            k, mech, ' (refused %d of %d: the admitted ones were promised '
            'it)' % (refused, k) if refused else ' admitted', bound)
        out.append(tv.line(
            what, ex <= bound, measured,
            '%.2f ms over the bound (%.1fx); %s' % (
                ex - bound, ex / bound if bound else float('inf'),
                _seen(f, ex))))
    return out


def judge(results):
    """Every density's verdict lines."""
    return [line for r in results for line in judge_k(r)]


def table(results):
    """Per density and arm: worst p99, excess, ratios, the bound the agent
    reported, refusals, the seen W and the LSVMs' shares.
    """
    lines = ['k  arm       worst p99   excess p99  p99/stock  burn/stk  '
             'bound reported   refused  seen W (wakes)     LSVM shares']
    for r in results:
        for a in ['stock'] + mechanisms(r):
            x = r[a]
            f = (r.get('agent') or {}).get(a, {})
            shares = ' '.join('%.3f' % v for n, v in sorted(
                x['cpu_share'].items()) if n.startswith('lsvm'))
            seen = ('%.2f ms (%d)' % (f['seen_us'] / 1000.0,
                                      f['seen_wakes'])
                    if f.get('seen_wakes') else '-')
            lines.append('%d  %-8s %9.0f us %9.0f us %9s %9s  %-15s %8s  '
                         '%-17s  %s'
                         % (r['k'], a, x['worst_p99_us'],
                            x['excess_p99_us'],
                            common.ratio(x['worst_p99_us'],
                                         r['stock']['worst_p99_us']),
                            x['burn_over_stock'],
                            ('%.2f ms' % f['bound_ms']) if f else '-',
                            f.get('refused', '-'), seen, shares))
        lines.append('   idle floor p99 %.0f us; self-test: %s, W %s us'
                     % (r['idle']['p99_us']['lsvm1'], r['selftest']['auto'],
                        r['selftest']['w_us']))
    return lines
