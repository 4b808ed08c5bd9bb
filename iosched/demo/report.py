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
"""The side-by-side report: concise tables, JSON, and a PNG picture."""

import json
import os

import prettytable


# Shown where a ratio has no meaning (the stock figure is 0).
NO_RATIO = 'n/a (stock 0)'
# The "why" column wraps at this width instead of being cut.
WHY_WIDTH = 60


def _ratio(a, b):
    return round(a / b, 3) if b else None


def _ratio_text(a, b):
    r = _ratio(a, b)
    return NO_RATIO if r is None else r


# (label, headline key) of the headline table, in order; the console, the
# Markdown table of docs/status.md and the test that compares the two
# read this one list.
HEADLINE_ROWS = [
        ('LSVM request latency p50 (ms)', 'lsvm_p50_ms'),
        ('LSVM request latency p99 (ms)', 'lsvm_p99_ms'),
        ('max I/O vCPUs per pCPU on a host', 'io_vcpus_per_pcpu_max'),
        ('min I/O vCPUs per pCPU on a host', 'io_vcpus_per_pcpu_min'),
        ('CPU-bound VMs: CPU seconds', 'cpu_bound_cpu_s'),
        ('disk VMs: IOPS (sum)', 'disk_iops'),
        ('disk VMs: request latency p99 (ms)', 'disk_p99_ms'),
        ('SLO volumes: share of 1-s windows met (mean)', 'slo_windows_met'),
        ('SLO volumes: share of 1-s windows met (worst)',
         'slo_windows_met_min'),
        ('disks without an SLO: IOPS (sum)', 'plain_disk_iops'),
]


def headline_rows(stock, iosched):
    """[label, stock, iosched, ratio] rows of the headline, as printed."""
    s, i = stock['headline'], iosched['headline']
    rows = [[label, s[key], i[key], _ratio_text(i[key], s[key])]
            for label, key in HEADLINE_ROWS]
    rows.append(['SLO volumes meeting their SLO',
                 '%d/%d' % (s['slo_met'], s['slo_total']),
                 '%d/%d' % (i['slo_met'], i['slo_total']), ''])
    return rows


def headline_table(stock, iosched):
    t = prettytable.PrettyTable(['figure', 'stock', 'iosched',
                                 'iosched/stock'])
    t.align = 'r'
    t.align['figure'] = 'l'
    for row in headline_rows(stock, iosched):
        t.add_row(row)
    return t


def headline_markdown(stock, iosched):
    """The headline as the Markdown table docs/status.md carries."""
    lines = ['| figure | stock | iosched | iosched/stock |',
             '|---|---|---|---|']
    lines += ['| %s | %s | %s | %s |' % tuple(row)
              for row in headline_rows(stock, iosched)]
    return '\n'.join(lines)


def placement_table(stock, iosched):
    t = prettytable.PrettyTable(['server', 'flavor', 'workload',
                                 'stock host', 'iosched host',
                                 'CPU share stock', 'CPU share iosched',
                                 'why (iosched)'])
    t.align = 'l'
    t.max_width['why (iosched)'] = WHY_WIDTH
    why = {d['server']: d for d in iosched['placements']}
    for s_row, i_row in zip(stock['servers'], iosched['servers']):
        d = why.get(i_row['server'], {})
        rej = d.get('rejected', {})
        reason = '; '.join('%s: %s' % (h, r) for h, r in sorted(rej.items())
                           if not r.startswith('placement'))
        if not reason and d.get('weights'):
            best = sorted(d['weights'].items(), key=lambda kv: -kv[1])[:2]
            reason = 'best weight ' + ', '.join('%s=%.2f' % kv for kv in best)
        t.add_row([s_row['server'], s_row['flavor'], s_row['workload'],
                   s_row['host'] or '-', i_row['host'] or '-',
                   s_row.get('cpu_share', ''), i_row.get('cpu_share', ''),
                   reason])
    return t


def hosts_table(stock, iosched):
    t = prettytable.PrettyTable(['host', 'pCPUs', 'VMs stock', 'VMs iosched',
                                 'I/O vCPUs stock', 'I/O vCPUs iosched'])
    t.align = 'r'
    t.align['host'] = 'l'
    for a, b in zip(stock['hosts'], iosched['hosts']):
        t.add_row([a['host'], a['pcpus'], a['servers'], b['servers'],
                   a['io_vcpus'], b['io_vcpus']])
    return t


def write_json(path, scenario, stock, iosched, elapsed_s):
    data = {'scenario': scenario.name, 'seed': scenario.seed,
            'elapsed_wall_s': round(elapsed_s, 2),
            'stock': stock, 'iosched': iosched,
            'ratios': {k: _ratio(iosched['headline'][k],
                                 stock['headline'][k])
                       for k in ('lsvm_p50_ms', 'lsvm_p99_ms',
                                 'io_vcpus_per_pcpu_max',
                                 'cpu_bound_cpu_s', 'disk_iops',
                                 'disk_p99_ms')}}
    with open(path, 'w', encoding='utf-8') as fh:
        json.dump(data, fh, indent=2, sort_keys=True, default=str)
    return data


def _grouped_bars(ax, names, values_of, colors, labels, **tick_kw):
    """One bar per variant (stock, iosched) for each name, side by side."""
    for n, values in enumerate(values_of):
        ax.bar([k + n * 0.38 for k in range(len(names))], values, 0.38,
               color=colors[n], label=labels[n])
    ax.set_xticks([k + 0.19 for k in range(len(names))], names, **tick_kw)
    _legend_above_bars(ax, max((max(v, default=0) for v in values_of),
                               default=0))


def _legend_above_bars(ax, top):
    """Room above the tallest bar, so the legend hides none."""
    if top > 0:
        ax.set_ylim(0, top * 1.35)
    ax.legend(loc='upper right', fontsize=8, ncol=3)


def write_png(path, stock, iosched):
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 3, figsize=(16, 8))
    fig.suptitle('iosched vs stock on the embedded default')
    colors = ('#9e9e9e', '#1f77b4')
    labels = ('stock', 'iosched')

    both = (stock, iosched)
    ax = axes[0][0]
    keys = ('lsvm_p50_ms', 'lsvm_p99_ms')
    _grouped_bars(ax, ['p50', 'p99'],
                  [[r['headline'][k] for k in keys] for r in both],
                  colors, labels)
    ax.set_ylabel('ms')
    ax.set_title('LSVM request latency')

    ax = axes[0][1]
    _grouped_bars(ax, [h['host'] for h in stock['hosts']],
                  [[h['io_vcpus_per_pcpu'] for h in r['hosts']]
                   for r in both], colors, labels)
    ax.set_ylabel('I/O-intensive vCPUs per pCPU')
    ax.set_title('I/O balance across hosts')

    ax = axes[1][0]
    _grouped_bars(ax, [x['server'] for x in stock['servers']],
                  [[x.get('cpu_share', 0) for x in r['servers']]
                   for r in both], colors, labels, rotation=60, fontsize=7)
    ax.set_ylabel('CPU share per vCPU')
    ax.set_title('CPU share per VM')

    slo = [(s['server'], s['slo']) for s in stock['servers'] if 'slo' in s]
    slo_i = {s['server']: s['slo'] for s in iosched['servers'] if 'slo' in s}
    # An SLO is met when both hold (what the table counts): the throughput
    # at or above its floor B and the latency statistic at or below L.
    for ax, got, target, unit, title, target_label in (
            (axes[0][2], 'iops', 'min_iops', 'IOPS',
             'SLO volumes: throughput vs floor B', 'SLO floor B'),
            (axes[1][1], 'latency_got_ms', 'latency_ms',
             'ms (the SLO statistic)', 'SLO volumes: latency vs target L',
             'SLO latency L')):
        if slo:
            xs = range(len(slo))
            values = ([r[got] for _, r in slo],
                      [slo_i.get(n, {}).get(got, 0) for n, _ in slo])
            for n, v in enumerate(values):
                ax.bar([x + n * 0.38 for x in xs], v, 0.38,
                       color=colors[n], label=labels[n])
            ax.scatter([x + 0.19 for x in xs], [r[target] for _, r in slo],
                       marker='_', s=400, color='red', label=target_label)
            ax.set_xticks([x + 0.19 for x in xs],
                          ['%s\nstock %s' % (n, 'met' if r['met']
                                              else 'missed')
                           for n, r in slo], rotation=60, fontsize=7)
            ax.set_ylabel(unit)
            _legend_above_bars(ax, max(max(values[0]), max(values[1]),
                                       max(r[target] for _, r in slo)))
        ax.set_title(title)

    ax = axes[1][2]
    if slo:
        xs = range(len(slo))
        for n, r in enumerate((dict(slo), slo_i)):
            ax.bar([x + n * 0.38 for x in xs],
                   [r.get(name, {}).get('windows_met', 0)
                    for name, _ in slo], 0.38, color=colors[n],
                   label=labels[n])
        ax.set_xticks([x + 0.19 for x in xs], [n for n, _ in slo],
                      rotation=60, fontsize=7)
        ax.set_ylabel('share of 1-s windows meeting B and L')
        _legend_above_bars(ax, 1.0)
    ax.set_title('SLO volumes: windows met')
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def write_all(out_dir, scenario, stock, iosched, elapsed_s):
    os.makedirs(out_dir, exist_ok=True)
    json_path = os.path.join(out_dir, 'report.json')
    png_path = os.path.join(out_dir, 'report.png')
    data = write_json(json_path, scenario, stock, iosched, elapsed_s)
    write_png(png_path, stock, iosched)
    return data, json_path, png_path
