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
CPU shares and SLO attainment, as plain dicts (JSON-ready)."""

from host_agent.collectors import rates
from host_agent import model
from iosched.contract import flavor as flavor_contract

IO = (model.KLASS_IO, model.KLASS_MIXED)


def _pct(values_us, p):
    return round(rates.percentile(values_us, p) / 1000.0, 3)


def _stat(lat_us, stat):
    """The SLO statistic of latencies (us) in ms."""
    if not lat_us:
        return 0.0
    if stat == 'mean':
        return sum(lat_us) / len(lat_us) / 1000.0
    p = 100.0 if stat == 'max' else float(
        stat.lstrip('p').replace('999', '99.9'))
    return rates.percentile(lat_us, p) / 1000.0


def window_attainment(times_us, lat_us, slo, t0_us, t1_us, window_us=1e6):
    """Share of whole windows in [t0, t1) where the volume completed at
    least B requests per second and its latency statistic was <= L."""
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


def summarize(cloud, t0, t1):
    sc = cloud.sc
    window_us = (t1 - t0) * 1e6
    t0_us = int(t0 * 1e6)
    servers = []
    lsvm_lat = []
    other_lat = []
    cpu_bound_us = 0
    disk_lat = []
    plain_ios = 0             # requests of disks without an SLO
    klass = {}
    for host, vcpus in cloud.last_vcpus.items():
        for v in vcpus:
            klass[(v.instance_uuid, v.vcpu)] = (v.klass, v.io_strength)
    for server in sc.servers:
        host = cloud.server_host.get(server.name, '')
        row = {'server': server.name, 'flavor': server.flavor.name,
               'workload': server.workload['type'], 'host': host}
        servers.append(row)
        if not host:
            continue
        uuid = cloud.server_uuid[server.name]
        sim = cloud.sims[host]
        used = sim.cpu_run_us(uuid) - cloud.cpu_at.get(uuid, 0)
        row['cpu_share'] = round(used / window_us / server.flavor.vcpus, 4)
        classes = [klass.get((uuid, i), ('idle', 0.0))
                   for i in range(server.flavor.vcpus)]
        row['klass'] = [c[0] for c in classes]
        row['io_strength'] = [round(c[1], 3) for c in classes]
        lsvm = flavor_contract.read(
            server.flavor.extra_specs).latency_sensitive
        row['lsvm'] = lsvm
        if server.workload['type'] == 'request_response':
            lat = sim.request_latencies_us(uuid, since_us=t0_us)
            (lsvm_lat if lsvm else other_lat).extend(lat)
            row['requests'] = len(lat)
            row['latency_p50_ms'] = _pct(lat, 50)
            row['latency_p99_ms'] = _pct(lat, 99)
        if server.workload['type'] == 'cpu':
            cpu_bound_us += used
        if server.workload['type'] == 'disk_closed_loop' and \
                not server.volume_type:
            done = sim.disk_latencies_us(uuid, 'vda', since_us=t0_us)
            plain_ios += len(done)
            row['disk_iops'] = round(len(done) / (t1 - t0), 1)
        if server.volume_type:
            slo = cloud.slos[server.volume_type]
            lat = sim.disk_latencies_us(uuid, 'vda', since_us=t0_us)
            times = sim.disk_completions_us(uuid, 'vda', since_us=t0_us)
            disk_lat.extend(lat)
            iops = len(lat) / (t1 - t0)
            stat = slo.latency_stat
            got = _stat(lat, stat)
            row['slo'] = {
                'volume_type': server.volume_type,
                'min_iops': slo.min_iops, 'latency_ms': slo.latency_ms,
                'latency_stat': stat, 'iops': round(iops, 1),
                'latency_got_ms': round(got, 3),
                'windows_met': round(window_attainment(
                    times, lat, slo, t0_us, int(t1 * 1e6)), 3),
                'met': bool(lat) and iops >= 0.95 * slo.min_iops and
                got <= slo.latency_ms}
    hosts = []
    for h in sc.hosts:
        on = [s for s in servers if s['host'] == h.name]
        hosts.append({
            'host': h.name, 'pcpus': h.pcpus, 'servers': len(on),
            'vcpus': sum(len(s.get('klass', ())) for s in on),
            'io_vcpus': sum(1 for s in on for k in s.get('klass', ())
                            if k in IO),
            'lsvm_vcpus': sum(len(s.get('klass', ())) for s in on
                              if s.get('lsvm'))})
    for h in hosts:
        h['io_vcpus_per_pcpu'] = round(h['io_vcpus'] / h['pcpus'], 3)
    io_counts = [h['io_vcpus_per_pcpu'] for h in hosts]
    slo_rows = [s['slo'] for s in servers if 'slo' in s]
    return {
        'window_s': round(t1 - t0, 3),
        'servers': servers,
        'hosts': hosts,
        'placements': [dict(d.__dict__) for d in cloud.placements],
        'headline': {
            'lsvm_requests': len(lsvm_lat),
            'lsvm_p50_ms': _pct(lsvm_lat, 50),
            'lsvm_p99_ms': _pct(lsvm_lat, 99),
            'other_rr_p99_ms': _pct(other_lat, 99),
            'io_vcpus_per_pcpu_max': max(io_counts, default=0.0),
            'io_vcpus_per_pcpu_min': min(io_counts, default=0.0),
            'cpu_bound_cpu_s': round(cpu_bound_us / 1e6, 3),
            'disk_iops': round(len(disk_lat) / (t1 - t0), 1),
            'disk_p99_ms': _pct(disk_lat, 99),
            'slo_met': sum(1 for r in slo_rows if r['met']),
            'slo_total': len(slo_rows),
            # mean over SLO volumes of their share of 1-s windows met
            'slo_windows_met': round(sum(r['windows_met'] for r in slo_rows)
                                     / len(slo_rows), 3) if slo_rows
            else 0.0,
            'slo_windows_met_min': min((r['windows_met'] for r in slo_rows),
                                       default=0.0),
            'plain_disk_iops': round(plain_ios / (t1 - t0), 1),
        },
    }
