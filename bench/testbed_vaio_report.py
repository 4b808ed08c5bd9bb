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
"""Pure: the VA testbed bench's table and verdicts (``bench/
testbed_vaio.py``, ``make bench-vaio``), from its result dict or a
recorded JSON (``--report``).

Targets (issue 28, docs/vaio.md), per agent arm: the finish-time SD
(mean over trials) <= 0.5 x stock's, and the aggregate throughput >=
0.95 x stock's (median of the per-trial ratios to the stock trial of the
same round). When one is not met the verdict gives the run's own reason,
from what ``bench/trial_load.py`` recorded per trial: how busy the host's
CPUs and the devices were (CPU-bound: a disk scheduler cannot set the
finish order; device-bound: it can), and how often the slowest guest had
a lower CPU rate while it ran (its QEMU's CPU seconds over its finish
time) than the fastest, and the lowest of all. Runs from before the load
was recorded say so.
"""

import os

from bench import target_verdict as tv

UNFAIR = 1.1                 # slowest / fastest above this: unfair trial
TARGET_SD_RATIO = 0.5        # agent finish-time SD <= 0.5 x stock
TARGET_THROUGHPUT = 0.95     # agent throughput >= 0.95 x stock
CPU_BOUND = 0.95             # host CPUs this busy in every trial
DEVICE_BOUND = 0.75          # the loop device this busy in every trial


def base_arm(arm):
    """'agent' of 'agent:slice_idle_us=0'."""
    return arm.partition(':')[0]


def agent_arms(res):
    return [a for a in res.get('arms') or () if base_arm(a) == 'agent']


def _trials(res, arms):
    per = res.get('per_trial') or {}
    return [t for a in arms for t in per.get(a) or ()]


def device_busy(busy):
    """{device: busy fraction} of a trial's (or an arm's mean)
    ``device_busy``. A device named by its path ('/dev/loop0') was never
    read (the sampler of that run looked for /sys/block//dev/loop0/stat
    and counted 0): not recorded.
    """
    return {d: v for d, v in (busy or {}).items() if not d.startswith('/')}


def cpu_rates(trial):
    """Per guest, its QEMU's CPU seconds over its own finish time (CPUs
    while it ran), or None without a recorded load.
    """
    load = trial.get('load') or {}
    q = load.get('qemu_cpus') or {}
    if not q or not load.get('wall_s'):
        return None
    return {n: q[n] * load['wall_s'] / g['finish_s']
            for n, g in trial['guests'].items() if n in q and g['finish_s']}


def slowest_cpu(trials):
    """How often the slowest guest had a lower CPU rate than the fastest,
    how often the lowest of all, over the trials with a recorded load;
    with the slowest's and the fastest's rates.
    """
    below = lowest = n = 0
    slow, fast = [], []
    for t in trials:
        rate = cpu_rates(t)
        if not rate:
            continue
        g = t['guests']
        s = max(g, key=lambda x: g[x]['finish_s'])
        f = min(g, key=lambda x: g[x]['finish_s'])
        n += 1
        below += rate[s] < rate[f]
        lowest += rate[s] == min(rate.values())
        slow.append(rate[s])
        fast.append(rate[f])
    return {'trials': n, 'below_fastest': below, 'lowest': lowest,
            'slowest_cpus': slow, 'fastest_cpus': fast}


def load_figures(trials):
    """Host busy CPUs, QEMU CPUs and each device's busy fraction per
    trial, over trials with a recorded load.
    """
    loads = [t['load'] for t in trials if t.get('load')]
    devs = {}
    for ld in loads:
        for d, v in device_busy(ld.get('device_busy')).items():
            devs.setdefault(d, []).append(v)
    return {'trials': len(loads),
            'host': [ld.get('host_busy_cpus') for ld in loads],
            'host_cpus': max((ld.get('host_cpus') or 0 for ld in loads),
                             default=0) or None,
            'qemu': [ld.get('qemu_cpus_total') for ld in loads],
            'devices': devs}


def bottleneck(lf, loop):
    """'CPU', 'device' or 'neither' from an arm's loads; None without."""
    if not lf['trials']:
        return None
    if lf['host_cpus'] and min(lf['host']) >= CPU_BOUND * lf['host_cpus']:
        return 'CPU'
    busy = lf['devices'].get(loop)
    if busy and min(busy) >= DEVICE_BOUND:
        return 'device'
    return 'neither'


def _load_text(lf):
    if not lf['trials']:
        return 'load %s' % tv.NOT_RECORDED
    devs = ', '.join('%s %s' % (d, tv.span(v, '%.2f'))
                     for d, v in sorted(lf['devices'].items()))
    return 'host %s of %s CPUs busy, QEMUs %s, devices busy: %s' % (
        tv.span(lf['host'], '%.2f'), lf['host_cpus'] or '?',
        tv.span(lf['qemu'], '%.2f'), devs or tv.NOT_RECORDED)


def reason(res, arm):
    """Why the arm's finish times spread: its load beside stock's and the
    slowest guest's CPU, from the run's trials.
    """
    loop = os.path.basename((res.get('device') or {}).get('loop') or '')
    lf = load_figures(_trials(res, [arm]))
    ls = load_figures(_trials(res, ['stock']))
    b = bottleneck(lf, loop)
    what = {
        'CPU': 'CPU-bound (host CPUs >= %d%% busy in every trial): the '
               'CPU each guest gets sets its finish time, not the disk '
               'scheduler' % (CPU_BOUND * 100),
        'device': 'device-bound (%s >= %d%% busy in every trial)' % (
            loop, DEVICE_BOUND * 100),
        'neither': 'neither the host CPUs (< %d%%) nor %s (< %d%%) busy '
                   'in every trial' % (CPU_BOUND * 100, loop or 'the device',
                                       DEVICE_BOUND * 100),
        None: 'CPU and device use %s (a run from before '
              'bench/trial_load.py)' % tv.NOT_RECORDED}[b]
    parts = [what]
    for name, f in ((arm, lf), ('stock', ls)):
        if f['trials']:
            parts.append('%s: %s' % (name, _load_text(f)))
    sc = slowest_cpu(_trials(res, res.get('arms') or ()))
    if sc['trials']:
        parts.append(
            'in %d of %d trials of the run the slowest guest had a lower '
            'CPU rate while it ran than the fastest (%s against %s CPUs), '
            'the lowest of all guests in %d' % (
                sc['below_fastest'], sc['trials'],
                tv.span(sc['slowest_cpus'], '%.2f'),
                tv.span(sc['fastest_cpus'], '%.2f'), sc['lowest']))
    s = (res.get('summary') or {}).get(arm) or {}
    st = (res.get('summary') or {}).get('stock') or {}
    if s and st:
        parts.append('unfair trials (slowest/fastest > %s) %d of %d, stock '
                     '%d of %d' % (UNFAIR, s['unfair_trials'], s['trials'],
                                   st['unfair_trials'], st['trials']))
    return '; '.join(parts)


def judge(res):
    """Per agent arm, the verdict lines (``target ...: met (...)`` or
    ``NOT met (measured: ...)``).
    """
    out = []
    summary = res.get('summary') or {}
    st = summary.get('stock') or {}
    for arm in agent_arms(res):
        s = summary.get(arm) or {}
        v = s.get('sd_ratio_to_stock')
        out.append(tv.line(
            '%s finish-time SD <= %s x stock' % (arm, TARGET_SD_RATIO),
            None if v is None else v <= TARGET_SD_RATIO,
            v is not None and 'x%s (%.3f s against stock\'s %.3f s)' % (
                v, s['sd_s_mean'], st['sd_s_mean']),
            reason(res, arm)))
        per = s.get('throughput_ratio_per_trial') or {}
        v = per.get('median')
        out.append(tv.line(
            '%s throughput >= %s x stock (median of per-trial ratios)' % (
                arm, TARGET_THROUGHPUT),
            None if v is None else v >= TARGET_THROUGHPUT,
            v is not None and 'x%s (per trial %s; x%s by means)' % (
                v, tv.listed(per.get('per_round') or ()),
                s.get('throughput_ratio_to_stock')),
            reason(res, arm)))
    return out


def table(res):
    """The bench's table: finish times per trial, per-arm figures, load."""
    arms = res.get('arms') or ()
    lines = ['seed 004 dd test, %s guests x %s MiB, qd %s, bs %s, a commit '
             'every %s ms%s, cache=%s; device %s (loop, direct I/O, no '
             'limit)' % (
                 res.get('guests'), res.get('disk_mib'), res.get('qd'),
                 res.get('bs', tv.NOT_RECORDED), res.get('journal_ms'),
                 ' with fdatasync' if res.get('jsync') else '',
                 res.get('cache', 'none'),
                 (res.get('device') or {}).get('loop'))]
    for a in arms:
        s = res['summary'][a]
        lines.append('%s: finish times (s) per trial:' % a)
        for i, ts in enumerate(s['finish_s']):
            lines.append('  trial %d: %s' % (i + 1, '  '.join(
                '%.2f' % t for t in ts)))
    lines.append('%-26s %8s %8s %9s %9s %7s %7s %9s %8s %8s %8s' % (
        'arm', 'SD s', 'SD/stk', 'slow/fast', 'max s/f', 'Jain',
        'unfair', 'MiB/s', 'tput/stk', 'median', 'jw max'))
    for a in arms:
        s = res['summary'][a]
        per = s.get('throughput_ratio_per_trial') or {}
        lines.append('%-26s %8.3f %8s %9.3f %9.3f %7.4f %4d/%-2d %9.1f %8s '
                     '%8s %6.0fms' % (
                         a, s['sd_s_mean'], s.get('sd_ratio_to_stock', '-'),
                         s['slowest_fastest_mean'], s['slowest_fastest_max'],
                         s['jain_mean'], s['unfair_trials'], s['trials'],
                         s['aggregate_mib_s_mean'],
                         s.get('throughput_ratio_to_stock', '-'),
                         per.get('median', '-'), s['journal_wait_max_ms']))
    lines.append('SD: population SD of the finish times per trial, mean '
                 'over trials; unfair: slowest/fastest > %.1f; tput/stk: '
                 'mean aggregate MiB/s over stock\'s; median: median of the '
                 'per-trial ratios to the stock trial of the same round; jw '
                 'max: longest journal commit' % UNFAIR)
    lines.append('load per arm (means over trials): QEMU CPUs, host busy '
                 'CPUs of %s, device busy fraction' % (
                     res.get('host_cpus') or '?'))
    for a in arms:
        ld = res['summary'][a].get('load') or {}
        lines.append('  %-24s %s' % (a, 'QEMU %.2f  host %.2f  busy %s' % (
            ld['qemu_cpus_mean'], ld['host_busy_cpus_mean'],
            device_busy(ld.get('device_busy_mean')) or tv.NOT_RECORDED)
            if ld else tv.NOT_RECORDED))
    return lines
