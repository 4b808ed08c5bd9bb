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
"""Figures of one finished run: placements, I/O balance, LSVM latency,
CPU shares and SLO attainment, as plain dicts (JSON-ready).

Percentiles are ``iosched.contract.stats.percentile`` (nearest rank), the
agent's and the scheduler's own; a figure of no sample is 0.0 here.
"""

from iosched.contract import flavor as flavor_contract
from iosched.contract import payload_sections
from iosched.contract import qos_keys
from iosched.contract import stats


def _pct_ms(values_us, q):
    """The q-quantile of latencies (us) in ms, rounded; 0.0 if none."""
    got = stats.percentile(values_us, q)
    return round(got / 1000.0, 3) if got is not None else 0.0


def _stat(lat_us, stat):
    """The SLO statistic of latencies (us) in ms; 0.0 if none."""
    if not lat_us:
        return 0.0
    if stat == qos_keys.STAT_MEAN:
        return sum(lat_us) / len(lat_us) / 1000.0
    return stats.percentile(lat_us, qos_keys.STAT_QUANTILES[stat]) / 1000.0


def window_attainment(times_us, lat_us, slo, t0_us, t1_us, window_us=1e6):
    """Share of whole windows in [t0, t1) where the volume completed at
    least B requests per second and its latency statistic was <= L.
    """
    n = int((t1_us - t0_us) // window_us)
    buckets = [[] for _ in range(n)]
    for t, lat in zip(times_us, lat_us):
        k = int((t - t0_us) // window_us)
        if 0 <= k < n:
            buckets[k].append(lat)
    met = sum(1 for b in buckets
              if len(b) >= slo.min_iops * window_us / 1e6
              and _stat(b, slo.latency_stat) <= slo.latency_ms)
    return (met / n) if n else 0.0


class _Totals(object):
    """What the servers add up to, for the headline."""

    def __init__(self):
        self.lsvm_lat = []       # request latencies (us) of LSVMs
        self.other_lat = []      # of the other request/response servers
        self.cpu_bound_us = 0    # CPU time of the CPU-bound servers
        self.disk_lat = []       # disk latencies of the SLO volumes
        self.plain_ios = 0       # requests of disks without an SLO


def _slo_row(cloud, server, sim, uuid, t0, t1, totals):
    """The SLO figures of a server's volume over [t0, t1)."""
    t0_us = int(t0 * 1e6)
    slo = cloud.slos[server.volume_type]
    lat = sim.disk_latencies_us(uuid, 'vda', since_us=t0_us)
    times = sim.disk_completions_us(uuid, 'vda', since_us=t0_us)
    totals.disk_lat.extend(lat)
    iops = len(lat) / (t1 - t0)
    got = _stat(lat, slo.latency_stat)
    return {
        'volume_type': server.volume_type,
        'min_iops': slo.min_iops, 'latency_ms': slo.latency_ms,
        'latency_stat': slo.latency_stat, 'iops': round(iops, 1),
        'latency_got_ms': round(got, 3),
        'windows_met': round(window_attainment(
            times, lat, slo, t0_us, int(t1 * 1e6)), 3),
        'met': bool(lat) and iops >= 0.95 * slo.min_iops and
        got <= slo.latency_ms}


def _server_row(cloud, server, klass, t0, t1, totals):
    """One server's row; adds its samples to ``totals``."""
    host = cloud.server_host.get(server.name, '')
    row = {'server': server.name, 'flavor': server.flavor.name,
           'workload': server.workload['type'], 'host': host}
    if not host:
        return row
    t0_us = int(t0 * 1e6)
    kind = server.workload['type']
    uuid = cloud.server_uuid[server.name]
    sim = cloud.sims[host]
    used = sim.cpu_run_us(uuid) - cloud.cpu_at.get(uuid, 0)
    row['cpu_share'] = round(used / ((t1 - t0) * 1e6) / server.flavor.vcpus,
                             4)
    classes = [klass.get((uuid, i), ('idle', 0.0))
               for i in range(server.flavor.vcpus)]
    row['klass'] = [c[0] for c in classes]
    row['io_strength'] = [round(c[1], 3) for c in classes]
    lsvm = flavor_contract.read(server.flavor.extra_specs).latency_sensitive
    row['lsvm'] = lsvm
    if kind == 'request_response':
        lat = sim.request_latencies_us(uuid, since_us=t0_us)
        (totals.lsvm_lat if lsvm else totals.other_lat).extend(lat)
        row['requests'] = len(lat)
        row['latency_p50_ms'] = _pct_ms(lat, 0.5)
        row['latency_p99_ms'] = _pct_ms(lat, 0.99)
    if kind == 'cpu':
        totals.cpu_bound_us += used
    if kind == 'disk_closed_loop' and not server.volume_type:
        done = sim.disk_latencies_us(uuid, 'vda', since_us=t0_us)
        totals.plain_ios += len(done)
        row['disk_iops'] = round(len(done) / (t1 - t0), 1)
    if server.volume_type:
        row['slo'] = _slo_row(cloud, server, sim, uuid, t0, t1, totals)
    return row


def _host_rows(hosts, servers):
    out = []
    for h in hosts:
        on = [s for s in servers if s['host'] == h.name]
        row = {'host': h.name, 'pcpus': h.pcpus, 'servers': len(on),
               'vcpus': sum(len(s.get('klass', ())) for s in on),
               'io_vcpus': sum(1 for s in on for k in s.get('klass', ())
                               if k in payload_sections.IO_KLASSES),
               'lsvm_vcpus': sum(len(s.get('klass', ())) for s in on
                                 if s.get('lsvm'))}
        row['io_vcpus_per_pcpu'] = round(row['io_vcpus'] / h.pcpus, 3)
        out.append(row)
    return out


def _headline(totals, hosts, slo_rows, window_s):
    io_counts = [h['io_vcpus_per_pcpu'] for h in hosts]
    return {
        'lsvm_requests': len(totals.lsvm_lat),
        'lsvm_p50_ms': _pct_ms(totals.lsvm_lat, 0.5),
        'lsvm_p99_ms': _pct_ms(totals.lsvm_lat, 0.99),
        'other_rr_p99_ms': _pct_ms(totals.other_lat, 0.99),
        'io_vcpus_per_pcpu_max': max(io_counts, default=0.0),
        'io_vcpus_per_pcpu_min': min(io_counts, default=0.0),
        'cpu_bound_cpu_s': round(totals.cpu_bound_us / 1e6, 3),
        'disk_iops': round(len(totals.disk_lat) / window_s, 1),
        'disk_p99_ms': _pct_ms(totals.disk_lat, 0.99),
        'slo_met': sum(1 for r in slo_rows if r['met']),
        'slo_total': len(slo_rows),
        # mean over SLO volumes of their share of 1-s windows met
        'slo_windows_met': round(sum(r['windows_met'] for r in slo_rows)
                                 / len(slo_rows), 3) if slo_rows else 0.0,
        'slo_windows_met_min': min((r['windows_met'] for r in slo_rows),
                                   default=0.0),
        'plain_disk_iops': round(totals.plain_ios / window_s, 1),
    }


def summarize(cloud, t0, t1):
    """The run's figures over the measured window [t0, t1) (seconds)."""
    klass = {}
    for host, vcpus in cloud.last_vcpus.items():
        for v in vcpus:
            klass[(v.instance_uuid, v.vcpu)] = (v.klass, v.io_strength)
    totals = _Totals()
    servers = [_server_row(cloud, server, klass, t0, t1, totals)
               for server in cloud.sc.servers]
    hosts = _host_rows(cloud.sc.hosts, servers)
    slo_rows = [s['slo'] for s in servers if 'slo' in s]
    return {
        'window_s': round(t1 - t0, 3),
        'servers': servers,
        'hosts': hosts,
        'placements': [dict(d.__dict__) for d in cloud.placements],
        'headline': _headline(totals, hosts, slo_rows, t1 - t0),
    }
