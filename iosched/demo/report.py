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


def _ratio(a, b):
    return round(a / b, 3) if b else None


def headline_table(stock, iosched):
    s, i = stock['headline'], iosched['headline']
    t = prettytable.PrettyTable(['figure', 'stock', 'iosched',
                                 'iosched/stock'])
    t.align = 'r'
    t.align['figure'] = 'l'
    rows = [
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
    for label, key in rows:
        t.add_row([label, s[key], i[key], _ratio(i[key], s[key])])
    t.add_row(['SLO volumes meeting their SLO',
               '%d/%d' % (s['slo_met'], s['slo_total']),
               '%d/%d' % (i['slo_met'], i['slo_total']), ''])
    return t


def placement_table(stock, iosched):
    t = prettytable.PrettyTable(['server', 'flavor', 'workload',
                                 'stock host', 'iosched host',
                                 'CPU share stock', 'CPU share iosched',
                                 'why (iosched)'])
    t.align = 'l'
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
                   reason[:70]])
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
    ax.legend()


def write_png(path, stock, iosched):
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(12, 8))
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

    ax = axes[1][1]
    slo = [(s['server'], s['slo']) for s in stock['servers'] if 'slo' in s]
    slo_i = {s['server']: s['slo'] for s in iosched['servers'] if 'slo' in s}
    if slo:
        xs = range(len(slo))
        ax.bar([x for x in xs], [r['latency_got_ms'] for _, r in slo], 0.38,
               color=colors[0], label='stock')
        ax.bar([x + 0.38 for x in xs],
               [slo_i.get(n, {}).get('latency_got_ms', 0) for n, _ in slo],
               0.38, color=colors[1], label='iosched')
        ax.scatter([x + 0.19 for x in xs], [r['latency_ms'] for _, r in slo],
                   marker='_', s=400, color='red', label='SLO latency L')
        ax.set_xticks([x + 0.19 for x in xs], [n for n, _ in slo],
                      rotation=60, fontsize=7)
        ax.set_ylabel('ms (the SLO statistic)')
        ax.legend()
    ax.set_title('SLO volumes: latency vs target')
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
