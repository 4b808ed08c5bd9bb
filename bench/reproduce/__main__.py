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
                                        [--markdown FILE]

Runs every registered experiment (ISACS, vSlicer, vTurbo, and the agent's
policies side by side with the faithful models) in worker processes,
prints each row as paper / ours / ratio / verdict, and writes all rows to
``<output>/rows.json`` (and a markdown table with ``--markdown``).
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

MODULES = ('isacs', 'vslicer', 'vturbo', 'side_by_side', 'flubber',
           'vaio', 'ibalancer', 'independent')


def _experiments(only):
    out = []
    for name in MODULES:
        if only and name not in only:
            continue
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
        return '%.4g' % v
    return str(v)


def print_rows(name, rows, secs, out=sys.stdout):
    out.write('\n== %s (%.1fs)\n' % (name, secs))
    for r in rows:
        out.write('  %-28s %-34s paper %-8s ours %-8s ratio %-6s %s\n' % (
            r.setting[:28], r.metric[:34], _fmt(r.paper), _fmt(r.ours),
            _fmt(r.ratio), r.verdict))
    out.flush()


def markdown(rows):
    lines = ['| claim | setting | metric | paper | ours | ratio | verdict |',
             '|---|---|---|---|---|---|---|']
    for r in rows:
        lines.append('| %s | %s | %s | %s | %s | %s | %s |' % (
            r.claim, r.setting, r.metric, _fmt(r.paper), _fmt(r.ours),
            _fmt(r.ratio), r.verdict))
    return '\n'.join(lines) + '\n'


def main(argv=None):
    ap = argparse.ArgumentParser(
        prog='python -m bench.reproduce',
        description='Reproduce the ISACS, vSlicer and vTurbo papers\' '
                    'tables in the simulator and print paper vs ours.')
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
    args = ap.parse_args(argv)
    only = {m.strip() for m in args.only.split(',') if m.strip()}
    bad = only - set(MODULES)
    if bad:
        ap.error('--only: %s unknown; accepted: %s'
                 % (', '.join(sorted(bad)), ', '.join(MODULES)))
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
    counts = {}
    for r in ordered:
        key = r.verdict.split(' x')[0]
        counts[key] = counts.get(key, 0) + 1
    os.makedirs(args.output_dir, exist_ok=True)
    path = os.path.join(args.output_dir, 'rows.json')
    with open(path, 'w') as f:
        json.dump({'quick': args.quick,
                   'rows': [r.as_dict() for r in ordered]}, f, indent=1)
    if args.markdown:
        with open(args.markdown, 'w') as f:
            f.write(markdown(ordered))
    print('\n%d rows in %.0fs: %s' % (
        len(ordered), time.perf_counter() - t0,
        ', '.join('%d %s' % (n, k) for k, n in sorted(counts.items()))))
    print('wrote %s' % path)
    return 0


if __name__ == '__main__':
    sys.exit(main())
