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
"""Seed 004 (Kim, Kang, Choi, IEICE 2014): CFQ's I/O priority inversion
between VMs and the virtualization-aware CFQ, on ``iosched.simulator.vaio``.

The experiment of §4.1: 4 VMs, one dd of 1 GiB each from its own
partition of one HDD, started together; sporadic journal-like async
writes in every guest; ``TRIALS`` seeds (commit phases, rotational
latencies, CFQ's escapes differ). Experiments:

* ``finish_sd``: finish-time standard deviation under stock CFQ (shared
  async queue) and VA-CFQ (paper 4.5 -> 1.2), its change, the
  slowest / fastest ratio (1.31), how often a trial is unfair (4 of 5),
  Jain's index, the makespan, the shown trial of Fig. 3 beside our median
  unfair one (``showcase``), the async queue-to-dispatch gaps (Table 1:
  3.15 s);
* ``native``: the paper's non-virtualized control (writes never hold the
  reader up): "hardly" any unfairness;
* ``sensitivity``: the CFQ SD again at other values of the model's free
  parameter ``p_quiet`` and of the write rate (info rows).

``quick``: a sixteenth of the data (writes 16 x as often), 2 trials.
"""

import statistics

from bench.reproduce import harness
from iosched.simulator.vaio import run as vrun

PAPER = 'vaio'
TRIALS = 10
QUICK_DIV = 16
QUICK_TRIALS = 2
SIDE_TRIALS = 5                # native control, sensitivity
UNFAIR = 1.1                   # slowest / fastest above this: unfair trial
SD = {'cfq': 4.5, 'va-cfq': 1.2}
RATIO = 1.31                   # VM4 38 s / VM1 29 s
UNFAIR_SHARE = 80.0            # "about 4 of 5 trials"
GAP_S = 3.147                  # Table 1, the two writes
SHOWCASE = (29.0, 38.0)        # VM1, VM4 (s)
NAMES = {'cfq': 'stock CFQ', 'va-cfq': 'VA-CFQ'}


def _scn(quick, **kw):
    if quick:
        kw.setdefault('gib', 1.0 / QUICK_DIV)
        kw.setdefault('commit_ms', vrun.Scenario.commit_ms / QUICK_DIV)
    return vrun.Scenario(**kw)


def _trials(quick, n=TRIALS, **kw):
    return vrun.trials(_scn(quick, **kw), QUICK_TRIALS if quick else n)


def _scale(quick):
    return float(QUICK_DIV) if quick else 1.0


# p_quiet, the model's one free parameter, was chosen from these two
# figures (docs/reproduction_models.md, seed 004): their rows are labelled.
P_QUIET = ('p_quiet (0.4) was chosen from this figure and the other '
           'p_quiet row')


def _row(claim, setting, metric, paper, ours, kind='value', tol=None,
         note='', **kw):
    return harness.Row(paper_id=PAPER, claim=claim, setting=setting,
                       metric=metric, paper=paper,
                       ours=None if ours is None else round(ours, 4),
                       kind=kind, tol=tol, note=note, **kw)


def showcase(runs):
    """The trial to set beside the paper's one shown trial (Fig. 3): the
    median by slowest / fastest of the unfair trials (the paper shows an
    unfair one, "about 4 of 5" are, and says nothing of picking its worst),
    of all trials when none is unfair; the lower median of an even count.
    """
    unfair = [r for r in runs if r.ratio() > UNFAIR] or list(runs)
    ranked = sorted(unfair, key=lambda r: (r.ratio(), r.scenario.seed))
    return ranked[(len(ranked) - 1) // 2]


def _mean(xs):
    return statistics.fmean(xs)


def _sd_rows(runs, quick, setting_suffix=''):
    k = _scale(quick)
    claim = 'Sec. 4.2: finish-time SD across 4 VMs'
    rows = []
    for s, rs in runs.items():
        sds = [r.std() * k for r in rs]
        rows.append(_row(claim, NAMES[s] + setting_suffix,
                         'finish-time SD (s), mean of trials', SD[s],
                         _mean(sds), note='population SD per trial, %d '
                         'trials; min %.2f, max %.2f; sample SD (n - 1) '
                         '%.2f' % (len(rs), min(sds), max(sds),
                                   _mean(sds) * (4 / 3) ** 0.5)))
    return rows


def finish_sd(quick):
    runs = {s: _trials(quick, scheduler=s) for s in ('cfq', 'va-cfq')}
    k = _scale(quick)
    rows = _sd_rows(runs, quick)
    sd = {s: _mean([r.std() for r in rs]) for s, rs in runs.items()}
    rows.append(_row('Sec. 4.2: finish-time SD across 4 VMs',
                     'VA-CFQ vs stock CFQ', 'finish-time SD change (%)',
                     round(harness.pct_change(SD['va-cfq'], SD['cfq']), 1),
                     harness.pct_change(sd['va-cfq'], sd['cfq']),
                     kind='change'))
    claim = 'Sec. 4.2: slowest / fastest VM'
    for s, rs in runs.items():
        ratios = [r.ratio() for r in rs]
        unfair = [x for x in ratios if x > UNFAIR]
        if s == 'cfq':
            rows.append(_row(claim, NAMES[s], 'slowest / fastest, mean of '
                             'unfair trials', RATIO,
                             _mean(unfair) if unfair else 1.0,
                             note='all trials: mean %.3f, max %.3f' % (
                                 _mean(ratios), max(ratios))))
            rows.append(_row(claim, NAMES[s], 'unfair trials (%)',
                             UNFAIR_SHARE, 100.0 * len(unfair) / len(rs),
                             basis='calibrated', basis_reason=P_QUIET,
                             note='unfair: slowest / fastest > %.1f'
                             % UNFAIR))
        else:
            rows.append(_row(claim, NAMES[s], 'slowest / fastest, mean of '
                             'trials', None, _mean(ratios), kind='info',
                             note='unfair trials: %d of %d'
                             % (len(unfair), len(rs))))
        rows.append(_row('Jain\'s index (not in the paper)', NAMES[s],
                         'Jain over per-VM throughput, mean', None,
                         _mean([r.jain() for r in rs]), kind='info'))
        rows.append(_row('Sec. 4.2: VA-CFQ finishes later overall',
                         NAMES[s], 'makespan (s), mean of trials', None,
                         _mean([max(r.times()) * k for r in rs]),
                         kind='info', note='fastest VM %.1f s' % _mean(
                             [min(r.times()) * k for r in rs])))
    shown = showcase(runs['cfq'])
    worst = max(runs['cfq'], key=lambda r: r.ratio())
    slow, fast = shown.slowest(), shown.fastest()
    spans = ', '.join('%.1f-%.1f' % (a * k, b * k)
                      for a, b in shown.inactive[slow])
    claim = 'Fig. 3: the shown trial (our median unfair trial)'
    setting = 'stock CFQ, seed %d' % shown.scenario.seed
    rows.append(_row(claim, setting, 'fastest VM finish (s)', SHOWCASE[0],
                     shown.finish[fast] * k, note='%s; slowest / fastest '
                     '%.3f' % (fast, shown.ratio())))
    rows.append(_row(claim, setting, 'slowest VM finish (s)', SHOWCASE[1],
                     shown.finish[slow] * k,
                     note='%s; its vCPU inactive %s s (paper VM4: 4-12, '
                     '17-21 s); our worst trial: seed %d, %.1f / %.1f s'
                     % (slow, spans or 'never', worst.scenario.seed,
                        worst.finish[worst.fastest()] * k,
                        worst.finish[worst.slowest()] * k)))
    gaps = sorted(g for r in runs['cfq'] for g in r.async_gaps())
    stalls = [g for g in gaps if g > 1.0]
    rows.append(_row('Table 1: async write queue-to-dispatch gap',
                     'stock CFQ', 'median gap of stalled writes (> 1 s)',
                     GAP_S, statistics.median(stalls) if stalls else 0.0,
                     basis='calibrated', basis_reason=P_QUIET,
                     note='%d of %d writes stalled > 1 s; longest %.1f s'
                     % (len(stalls), len(gaps), gaps[-1] if gaps else 0)))
    va = sorted(g for r in runs['va-cfq'] for g in r.async_gaps())
    rows.append(_row('Table 1: async write queue-to-dispatch gap',
                     'VA-CFQ', 'longest gap (s)', None,
                     va[-1] if va else 0.0, kind='info',
                     note='round robin: at most one round of the others'))
    return rows


def native(quick):
    rs = _trials(quick, n=SIDE_TRIALS, scheduler='cfq', block=False)
    ratios = [r.ratio() for r in rs]
    return [_row('Sec. 4.2: native control, 4 dd without VMs',
                 'stock CFQ, writes do not block', 'slowest / fastest, '
                 'mean of trials', 1.0, _mean(ratios), note='paper: '
                 '"hardly" any unfairness; SD %.2f s' % (_mean(
                     [r.std() for r in rs]) * _scale(quick)))]


def sensitivity(quick):
    rows = []
    k = _scale(quick)
    mean_ms = vrun.Scenario.commit_ms / (QUICK_DIV if quick else 1)
    for setting, kw in (('p_quiet 0.3', {'p_quiet': 0.3}),
                        ('p_quiet 0.5', {'p_quiet': 0.5}),
                        ('writes every 40 s', {'commit_ms': 2 * mean_ms})):
        rs = _trials(quick, n=SIDE_TRIALS, scheduler='cfq', **kw)
        ratios = [r.ratio() for r in rs]
        rows.append(_row('Model sensitivity: CFQ escape, write rate',
                         'stock CFQ, ' + setting,
                         'finish-time SD (s), mean of trials', None,
                         _mean([r.std() * k for r in rs]), kind='info',
                         note='slowest / fastest mean %.3f; unfair %d of %d'
                         % (_mean(ratios), sum(x > UNFAIR for x in ratios),
                            len(rs))))
    return rows


EXPERIMENTS = [
    ('finish_sd', finish_sd),
    ('native', native),
    ('sensitivity', sensitivity),
]
