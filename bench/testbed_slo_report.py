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
"""SLO attainment of ``bench/testbed_slo.py``: pure functions over the
guests' own 1-second reports (what the tenant sees), and the table.

A window is one ``DISK`` report of a guest (``report_ms`` = 1000). For an
SLO volume it meets B when its throughput, in operations of the SLO's
``ref_io`` bytes, is at least B; it meets L when its latency statistic
(the SLO's ``stat``: the exact mean or max, or a percentile from the
report's histogram, ``iosched.contract.stats.hist_quantile``: interpolated
inside its bucket, within 25 %) is at most L; it meets the
SLO when both hold. A window without a completed request misses both.
"""

from iosched.contract import qos_keys
from iosched.contract import slo as slo_mod
from iosched.contract import stats


def window(rep, bs, slo=None):
    """One report as a dict: ref-size IOPS, mean and p99 (ms), and with an
    ``slo`` (iosched.contract.slo.SLO) whether it met B, L and both.
    """
    ref = slo.ref_io_bytes if slo is not None else slo_mod.DEFAULT_REF_IO_BYTES
    iops_ref = rep.ops * bs / ref * 1e6 / max(1, rep.interval_us)
    mean = rep.mean_us
    p99 = rep.latency_quantile_us(qos_keys.STAT_QUANTILES['p99'])
    w = {'iops': round(rep.iops, 1), 'iops_ref': round(iops_ref, 1),
         'mean_ms': None if mean is None else round(mean / 1000, 3),
         'p99_ms': None if p99 is None else round(p99 / 1000, 3),
         'max_ms': (None if rep.lat_max_us is None
                    else round(rep.lat_max_us / 1000, 3)),
         'dropped': rep.dropped}
    if slo is not None:
        if slo.latency_stat == qos_keys.STAT_MEAN:
            stat = mean
        elif slo.latency_stat == 'max':      # exact, not from the histogram
            stat = rep.lat_max_us
        else:
            stat = rep.latency_quantile_us(
                qos_keys.STAT_QUANTILES[slo.latency_stat])
        w['stat_ms'] = None if stat is None else round(stat / 1000, 3)
        w['met_b'] = rep.ops > 0 and iops_ref >= slo.min_iops
        w['met_l'] = stat is not None and stat / 1000 <= slo.latency_ms
        w['met'] = w['met_b'] and w['met_l']
    return w


def _present(values):
    return [v for v in values if v is not None]


def _mean(values):
    vals = [v for v in values if v is not None]
    return round(sum(vals) / len(vals), 3) if vals else None


def attainment(windows):
    """Share of windows meeting B, L and both, and summary figures."""
    n = len(windows)
    out = {'windows': n,
           'iops_ref_mean': _mean([w['iops_ref'] for w in windows]),
           'mean_ms_mean': _mean([w['mean_ms'] for w in windows]),
           'mean_ms_p99': stats.percentile(
               _present(w['mean_ms'] for w in windows), 0.99),
           'p99_ms_median': stats.percentile(
               _present(w['p99_ms'] for w in windows), 0.5),
           'dropped': sum(w['dropped'] for w in windows)}
    if n and 'met' in windows[0]:
        for key in ('met_b', 'met_l', 'met'):
            out[key] = round(sum(1 for w in windows if w[key]) / n, 4)
    return out


def pool_arm(rounds):
    """Pool one arm's rounds: windows of each volume together."""
    vols = {}
    for r in rounds:
        for name, ws in r['windows'].items():
            vols.setdefault(name, []).extend(ws)
    out = {'volumes': {n: attainment(ws) for n, ws in sorted(vols.items())}}
    for key in ('device_iops_ref', 'device_util'):
        out[key] = _mean([r.get(key) for r in rounds])
    return out


def _f(v, fmt='%.1f'):
    return '-' if v is None else fmt % v


def print_table(res, out=print):
    cap, dev = res['capacity'], res['device']
    out('device: %s, capacity %.0f IOPS of 16 KiB (%.1f MiB/s '
        'measured through the guests; limit %.1f MiB/s)' % (
            dev.get('text') or 'loop %s' % dev['loop'], cap['iops_ref'],
            cap['mib_s'], dev['read_bps'] / 2**20))
    out('SLOs: %s; sum of B %.0f IOPS; neighbour target >= 0.9 x (C - sum '
        'B) = %.0f IOPS of 16 KiB' % (
            ', '.join('%s %s' % (n, s) for n, s in sorted(
                res['slos'].items())), res['sum_b'],
            res['neighbour_target_iops']))
    out('%d rounds x %d s per arm (ABBA), each after %s s of drain (the '
        'neighbour held), first %d s of each discarded' % (
            res['rounds'], res['seconds'], res.get('drain_s', 0),
            res['settle_s']))
    out('')
    out('| arm | volume | windows | met B | met L | met both | IOPS (16K) '
        '| mean lat (ms) | p99 of window means | median window p99 |')
    out('|---|---|---|---|---|---|---|---|---|---|')
    for arm in res['arms']:
        p = res['pooled'][arm]
        for name, a in p['volumes'].items():
            pc = (lambda k: _f(None if k not in a else 100 * a[k],
                               '%.1f %%'))
            out('| %s | %s | %d | %s | %s | %s | %s | %s | %s | %s |' % (
                arm, name, a['windows'], pc('met_b'), pc('met_l'),
                pc('met'), _f(a['iops_ref_mean']),
                _f(a['mean_ms_mean'], '%.2f'),
                _f(a['mean_ms_p99'], '%.2f'), _f(a['p99_ms_median'], '%.2f')))
    out('')
    out('| arm | neighbour IOPS (16K) | / target | device IOPS (16K) | '
        'device use |')
    out('|---|---|---|---|---|')
    for arm in res['arms']:
        p = res['pooled'][arm]
        nb = p['volumes'][res['neighbour']]['iops_ref_mean']
        out('| %s | %s | %s | %s | %s |' % (
            arm, _f(nb), _f(None if nb is None else
                            nb / res['neighbour_target_iops'], '%.2f'),
            _f(p['device_iops_ref']), _f(p['device_util'], '%.2f')))
