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
"""Reproduce the seed papers' tables in the simulator: one command.

    .venv/bin/python -m bench.reproduce [--quick] [--only isacs,vslicer]
                                        [-j N] [-o out/reproduce]
                                        [--markdown FILE] [--pin]

Runs every registered experiment (ISACS, vSlicer, vTurbo, Flubber,
I-Balancer, VA-CFQ, and the agent's policies side by side with the faithful
models) in worker processes, prints each row as paper / ours / ratio /
tolerance / verdict, then the verdict counts per seed paper under the one
rule of ``harness`` and a total line, and writes all rows to
``<output>/rows.json`` (and a markdown table with ``--markdown``).

A run of every module compares its counts with the ones pinned for its
mode (full or ``--quick``) in ``pinned_counts.json`` beside this file and
exits 1 when they differ; ``--pin`` rewrites them instead.
"""

import argparse
import concurrent.futures
import importlib
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from bench.reproduce import harness  # noqa: E402
from bench.reproduce import headlines  # noqa: E402

MODULES = ('isacs', 'vslicer', 'vturbo', 'side_by_side', 'flubber',
           'vaio', 'ibalancer', 'independent')
# Modules run with another one (``--only isacs`` runs isacs_mixed too).
PARTS = {'isacs': ('isacs_mixed',)}
PINNED = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                      'pinned_counts.json')


def _experiments(only):
    out = []
    names = [n for m in MODULES for n in (m,) + PARTS.get(m, ())
             if not only or m in only]
    for name in names:
        try:
            mod = importlib.import_module('bench.reproduce.' + name)
        except ModuleNotFoundError as e:
            if e.name != 'bench.reproduce.' + name:
                raise
            continue
        for exp_name, fn in mod.EXPERIMENTS:
            out.append(('%s.%s' % (name, exp_name), fn))
    return out


def _run(fn, quick):
    t0 = time.perf_counter()
    rows = fn(quick)
    return rows, time.perf_counter() - t0


def _fmt(v):
    if v is None:
        return '-'
    if isinstance(v, float):
        return '%.4g' % (v + 0.0)      # + 0.0: no '-0'
    return str(v)


def print_rows(name, rows, secs, out=sys.stdout):
    out.write('\n== %s (%.1fs)\n' % (name, secs))
    for r in rows:
        v = r.verdict
        if r.basis != 'measured':
            v += ' (%s)' % r.check
        out.write('  %-28s %-34s paper %-8s ours %-8s ratio %-6s tol %-7s '
                  '%s\n' % (r.setting[:28], r.metric[:34],
                            r.paper_text(_fmt),
                            _fmt(r.ours), _fmt(r.ratio), r.tol_text(), v))
    out.flush()


def markdown(rows):
    lines = ['| claim | setting | metric | paper | ours | ratio | tol | '
             'verdict | why |',
             '|---|---|---|---|---|---|---|---|---|']
    for r in rows:
        cells = (r.claim, r.setting, r.metric, r.paper_text(_fmt),
                 _fmt(r.ours), _fmt(r.ratio),
                 r.tol_text().replace('+-', '±'), r.verdict, r.why())
        lines.append('| %s |' % ' | '.join(c.replace('|', '\\|')
                                           for c in cells))
    return '\n'.join(lines) + '\n'


COLUMNS = ('match', 'same direction', 'opposite', 'no effect', 'off',
           'holds', 'violated', 'calibrated', 'identity', 'info')
SHORT = {'same direction': 'same dir', 'no effect': 'no eff'}


def counts_table(counts):
    """The per-seed counts as text lines (``harness.counts()``)."""
    cols = list(COLUMNS) + [c for c in harness.CATEGORIES
                            if c not in COLUMNS and counts['total'][c]]
    head = '%-22s %5s ' % ('seed', 'rows') + ' '.join(
        '%8s' % SHORT.get(c, c)[:8] for c in cols)
    lines = [head]
    for seed, c in counts.items():
        lines.append('%-22s %5d ' % (seed, sum(c.values())) + ' '.join(
            '%8d' % c[k] for k in cols))
    return lines


def counts_markdown(counts):
    """The per-seed counts as the markdown table of docs/reproduction.md."""
    lines = ['| seed | rows | ' + ' | '.join(COLUMNS) + ' |',
             '|---|---|' + '---|' * len(COLUMNS)]
    for seed, c in counts.items():
        lines.append('| %s | %d | ' % ('**total**' if seed == 'total'
                                       else seed, sum(c.values()))
                     + ' | '.join(str(c[k]) for k in COLUMNS) + ' |')
    return '\n'.join(lines) + '\n'


def _pinned(mode):
    try:
        with open(PINNED) as f:
            return json.load(f).get(mode)
    except FileNotFoundError:
        return None


def _pin(mode, counts):
    try:
        with open(PINNED) as f:
            data = json.load(f)
    except FileNotFoundError:
        data = {}
    data[mode] = counts
    with open(PINNED, 'w') as f:
        json.dump(data, f, indent=1, sort_keys=True)
        f.write('\n')


def main(argv=None):
    ap = argparse.ArgumentParser(
        prog='python -m bench.reproduce',
        description='Reproduce the seed papers\' tables in the simulator '
                    'and print paper vs ours, with each row\'s tolerance '
                    'and verdict and the counts per seed.')
    ap.add_argument('--quick', action='store_true',
                    help='shorter runs (noisier figures), for tests')
    ap.add_argument('--only', default='',
                    help='comma-separated modules among %s'
                    % ', '.join(MODULES))
    ap.add_argument('-j', '--jobs', type=int, default=os.cpu_count() or 1,
                    help='worker processes (default: one per CPU)')
    ap.add_argument('-o', '--output-dir', default='out/reproduce',
                    help='where rows.json goes (default out/reproduce)')
    ap.add_argument('--markdown', default='',
                    help='also write the rows as a markdown table here')
    ap.add_argument('--pin', action='store_true',
                    help='rewrite this mode\'s pinned counts in %s (a run '
                    'of every module only)' % os.path.relpath(PINNED, ROOT))
    args = ap.parse_args(argv)
    only = {m.strip() for m in args.only.split(',') if m.strip()}
    bad = only - set(MODULES)
    if bad:
        ap.error('--only: %s unknown; accepted: %s'
                 % (', '.join(sorted(bad)), ', '.join(MODULES)))
    if only and args.pin:
        ap.error('--pin: the counts of a run of every module only '
                 '(drop --only)')
    exps = _experiments(only)
    if not exps:
        ap.error('no experiment registered for %s' % (args.only or 'any'))
    print('reproducing %d experiments with %d workers%s'
          % (len(exps), args.jobs, ' (quick)' if args.quick else ''))
    t0 = time.perf_counter()
    results = {}
    with concurrent.futures.ProcessPoolExecutor(args.jobs) as pool:
        futs = {pool.submit(_run, fn, args.quick): name
                for name, fn in exps}
        for done, fut in enumerate(concurrent.futures.as_completed(futs), 1):
            name = futs[fut]
            rows, secs = fut.result()
            results[name] = rows
            print_rows('%s [%d/%d]' % (name, done, len(exps)), rows, secs)
    ordered = [r for name, _ in exps for r in results[name]]
    counts = harness.counts(ordered)
    os.makedirs(args.output_dir, exist_ok=True)
    path = os.path.join(args.output_dir, 'rows.json')
    with open(path, 'w') as f:
        json.dump({'quick': args.quick, 'counts': counts,
                   'rows': [r.as_dict() for r in ordered]}, f, indent=1)
    as_dicts = [r.as_dict() for r in ordered]
    if args.markdown:
        with open(args.markdown, 'w') as f:
            f.write(headlines.markdown(as_dicts) + '\n' + markdown(ordered))
    print('\nverdict counts per seed (match: within the row\'s tolerance, '
          '+-%g %% unless it says why; changes: %g %% dead band; '
          'calibrated / identity rows set by their inputs, apart):'
          % (100 * harness.TOL, harness.DEAD_BAND))
    for line in counts_table(counts):
        print('  ' + line)
    if headlines.table(as_dicts)[1:]:
        print('\nheadlines (each one row above; docs/reproduction.md says '
              'why one does not reproduce):')
        for line in headlines.table(as_dicts):
            print('  ' + line)
    total = counts['total']
    print('\n%d rows in %.0fs: %s' % (
        len(ordered), time.perf_counter() - t0,
        ', '.join('%d %s' % (total[k], k) for k in harness.CATEGORIES
                  if total[k])))
    print('wrote %s' % path)
    if only:
        return 0
    mode = 'quick' if args.quick else 'full'
    if args.pin:
        _pin(mode, counts)
        print('pinned the %s counts in %s' % (mode, PINNED))
        return 0
    pinned = _pinned(mode)
    if pinned is None:
        print('no %s counts pinned in %s yet: rerun with --pin'
              % (mode, PINNED))
        return 1
    if pinned == counts:
        print('counts as pinned (%s, %s)' % (mode, PINNED))
        return 0
    print('COUNTS DIFFER from the %s counts pinned in %s: %s; if the change '
          'is meant, update docs/reproduction.md and rerun with --pin'
          % (mode, PINNED, _diff(pinned, counts)))
    return 1


def _diff(pinned, counts):
    out = []
    for seed in sorted(set(pinned) | set(counts)):
        a, b = pinned.get(seed, {}), counts.get(seed, {})
        for k in harness.CATEGORIES:
            if a.get(k, 0) != b.get(k, 0):
                out.append('%s %s %d -> %d' % (seed, k, a.get(k, 0),
                                               b.get(k, 0)))
    return ', '.join(out) or 'none'


if __name__ == '__main__':
    sys.exit(main())
