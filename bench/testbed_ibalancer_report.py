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
"""Pure: the I-Balancer testbed bench's table and verdicts
(``bench/testbed_ibalancer.py``, ``make bench-ibalancer``), from its
result dict or a recorded JSON (``--report``).

Targets (issue 28): the spread SD/mean of the four VMs' IOPS, agent over
stock (median of the rounds, each against the stock round beside it),
<= 0.5, with the aggregate IOPS >= 0.95 x stock. When one is not met the
verdict gives the run's own reason: the agent's spread against stock's
per round (a floor of the agent's own says the ratio follows how uneven
stock was), the fast guests' rate under their caps against their stock
rate and an equal share of stock's aggregate, the cap Eq. 5's mean delay gives
at their natural rate, f = 1 / (1 + r d), and the requests per I/O
wake-up of fast and slow guests (the agent's trace, ``agent_ticks``).
"""

from bench import target_verdict as tv

SLOW, FAST = ('s1', 's2'), ('f1', 'f2')
VMS = SLOW + FAST
TARGET_SPREAD_RATIO = 0.5      # agent spread <= 0.5 x stock (median)
TARGET_AGGREGATE = 0.95        # aggregate >= 0.95 x stock (median)
# What the bench records per vCPU and tick (``agent_tick_fields``); a run
# from before the list was recorded wrote the first nine, its events
# being the vCPUs' I/O wake-ups.
TICK_FIELDS = ('vm', 'vcpu', 'events', 'pr_ms', 'vr_pr', 'en', 'ei_us',
               'io', 'delay_us', 'wakeups')
LEGACY_TICK_FIELDS = TICK_FIELDS[:9]


def _rounds(res, arm):
    return (res.get('per_round') or {}).get(arm) or []


def tick_rows(res):
    """Every vCPU row of the agent's ticks as a dict of its fields."""
    fields = res.get('agent_tick_fields') or LEGACY_TICK_FIELDS
    return [dict(zip(fields, row)) for t in res.get('agent_ticks') or ()
            for row in t.get('vcpus') or ()]


def requests_per_wakeup(rows):
    """Per VM, its events (the VM's requests) over its vCPUs' I/O
    wake-ups, summed over the ticks; None where wake-ups were not
    recorded.
    """
    out = {}
    for vm in VMS:
        ev = sum(r['events'] for r in rows
                 if r['vm'] == vm and r.get('wakeups'))
        wk = sum(r.get('wakeups') or 0 for r in rows if r['vm'] == vm)
        out[vm] = round(ev / wk, 2) if wk else None
    return out


def target_delay_us(rows, vms=FAST):
    """The events-weighted mean delay (Eq. 5) of the ``vms``' vCPUs in
    the ticks they were targets (delay > 0), or None.
    """
    tg = [r for r in rows if r['vm'] in vms and r.get('delay_us')]
    ev = sum(r['events'] for r in tg)
    return (sum(r['delay_us'] * r['events'] for r in tg) / ev
            if ev else None)


def rate_ratios(res, vms):
    """Per round and VM, agent IOPS over the stock round's beside it."""
    return [a['iops'][n] / s['iops'][n]
            for a, s in zip(_rounds(res, 'agent'), _rounds(res, 'stock'))
            for n in vms if s['iops'].get(n)]


def caps(res, vms=FAST):
    """The mean cap of each of ``vms`` per agent round (None: uncapped)."""
    return [(r.get('mean_cap_iops') or {}).get(n)
            for r in _rounds(res, 'agent') for n in vms]


def figures(res):
    """What the verdicts' reasons are written from."""
    pooled = res.get('pooled') or {}
    stock = (pooled.get('stock') or {}).get('iops') or {}
    agent = (pooled.get('agent') or {}).get('iops') or {}
    rows = tick_rows(res)
    d_us = target_delay_us(rows)
    r = (sum(stock[n] for n in FAST) / len(FAST)
         if all(n in stock for n in FAST) else None)
    rd = r * d_us * 1e-6 if r is not None and d_us is not None else None
    rpw = requests_per_wakeup(rows)
    return {
        'agent_spread': [x['spread'] for x in _rounds(res, 'agent')],
        'stock_spread': [x['spread'] for x in _rounds(res, 'stock')],
        'fast_over_stock': rate_ratios(res, FAST),
        'slow_over_stock': rate_ratios(res, SLOW),
        'fast_caps': caps(res),
        'equal_share': ((pooled.get('stock') or {}).get('aggregate_mean')
                        or 0) / len(VMS) or None,
        'delay_us': d_us, 'fast_rate': r, 'rd': rd,
        'cap_fraction': 1.0 / (1.0 + rd) if rd is not None else None,
        'rpw_fast': [rpw[n] for n in FAST],
        'rpw_slow': [rpw[n] for n in SLOW],
        'fast_lost': (sum(stock[n] - agent[n] for n in FAST)
                      if stock and agent else None),
        'slow_gained': (sum(agent[n] - stock[n] for n in SLOW)
                        if stock and agent else None),
    }


def spread_reason(f):
    parts = ['spread per round stock -> agent %s: the agent\'s own '
             'spread stays at %s whatever stock\'s (%s), so the ratio '
             'follows how uneven stock was' % (
                 ', '.join('%.2f -> %.2f' % p for p in zip(
                     f['stock_spread'], f['agent_spread'])),
                 tv.span(f['agent_spread'], '%.2f'),
                 tv.span(f['stock_spread'], '%.2f'))]
    parts.append('the fast guests ran at %s of their stock rate under caps '
                 'of %s IOPS (an equal share of stock\'s aggregate: %s '
                 'IOPS)' % (
                     tv.span(f['fast_over_stock'], '%.2f'),
                     tv.span(f['fast_caps'], '%.0f'),
                     '%.0f' % f['equal_share'] if f['equal_share']
                     else tv.NOT_RECORDED))
    if f['rd'] is not None:
        parts.append('Eq. 5 fixes the targets\' mean delay: %.0f us at '
                     'their stock %.0f requests/s is r*d %.2f, a cap of '
                     '1/(1 + r*d) = %.2f of the natural rate' % (
                         f['delay_us'], f['fast_rate'], f['rd'],
                         f['cap_fraction']))
    else:
        parts.append('the targets\' delays: %s' % tv.NOT_RECORDED)
    parts.append('requests per I/O wake-up: fast %s, slow %s' % (
        tv.span(f['rpw_fast'], '%.1f'), tv.span(f['rpw_slow'], '%.1f')))
    return '; '.join(parts)


def judge(res):
    """The verdict lines (``target ...: met (...)`` or ``NOT met
    (measured: ...)``).
    """
    ratios = res.get('ratios') or {}
    f = figures(res)
    out = []
    sp = ratios.get('spread') or {}
    m = sp.get('median')
    out.append(tv.line(
        'spread agent/stock <= %s (median of rounds)' % TARGET_SPREAD_RATIO,
        None if m is None else m <= TARGET_SPREAD_RATIO,
        m is not None and 'median %s (rounds %s)' % (
            m, tv.listed(sp.get('per_round') or ())),
        spread_reason(f)))
    ag = ratios.get('aggregate') or {}
    m = ag.get('median')
    out.append(tv.line(
        'aggregate agent/stock >= %s (median of rounds)' % TARGET_AGGREGATE,
        None if m is None else m >= TARGET_AGGREGATE,
        m is not None and 'median %s (rounds %s)' % (
            m, tv.listed(ag.get('per_round') or ())),
        'the fast pair lost %s IOPS under the caps, the slow pair gained '
        '%s (slow guests at %s of their stock rate): they could not take '
        'the slack' % (
            tv.span([f['fast_lost']], '%.0f'),
            tv.span([f['slow_gained']], '%.0f'),
            tv.span(f['slow_over_stock'], '%.2f'))))
    return out


def table(res):
    """The bench's table: per arm the VMs' IOPS, spread, aggregate, Jain,
    then the per-round ratios.
    """
    lines = ['I-Balancer on the testbed: %s rounds x %s s, bs %s, qd %s, '
             'device %s MiB/s, layout %s %s, %s burner(s); events: %s' % (
                 res.get('rounds'), res.get('seconds'), res.get('bs'),
                 res.get('qd'), res.get('capacity_mib') or 'unlimited',
                 res.get('layout'), res.get('placement'),
                 res.get('burners'), res.get('event_source')
                 or tv.NOT_RECORDED),
             '%-6s %s  %8s %8s %7s' % ('arm', ' '.join('%8s' % n
                                                      for n in VMS),
                                       'spread', 'aggr', 'jain')]
    for arm in res.get('arms') or ():
        p = res['pooled'][arm]
        lines.append('%-6s %s  %8.3f %8.0f %7.3f' % (
            arm, ' '.join('%8.0f' % p['iops'][n] for n in VMS),
            p['spread_mean'], p['aggregate_mean'], p['jain_mean']))
    r = res.get('ratios') or {}
    sp, ag = r.get('spread') or {}, r.get('aggregate') or {}
    lines.append('agent/stock spread per round %s, median %s; aggregate per '
                 'round %s, median %s' % (
                     sp.get('per_round'), sp.get('median'),
                     ag.get('per_round'), ag.get('median')))
    return lines
