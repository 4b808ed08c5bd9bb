#!/usr/bin/env python3
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
"""What the agent's Prometheus metrics cost: tick time with metrics on vs
off, and the cost of one scrape, on simulated hosts of N vCPUs.

For each N two identical simulated hosts (same seed, VMs of 4 vCPUs:
request/response, disk and CPU-bound workloads, every 4th VM with an SLO
volume) each run the real agent (vSlicer + SLO policies, journaled
driver actuator); one has ``AgentMetrics`` attached. Their ticks are
interleaved (off, on, off, on, ...) so drift hits both alike; only
``Agent.tick()`` is timed, not the simulator. Then the metrics agent's
registry is rendered (``generate_latest``: what a scrape costs in the
agent's process) and scraped over HTTP on an ephemeral port.

    .venv/bin/python bench/metrics_overhead.py [--vcpus 16,64,256]
        [--ticks 40] [--scrapes 50]

Prints one row per N: median tick off and on (ms), their ratio, the
median of the metrics' own per-tick bookkeeping (``tick_done``, inside
the "on" tick), ms per render and per HTTP scrape, and the scrape's size.
"""

import argparse
import json
import logging
import os
import statistics
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))

from oslo_config import cfg  # noqa: E402
from prometheus_client import exposition  # noqa: E402

from iosched.cinder_qos import translate  # noqa: E402
from iosched.contract import slo as slo_mod  # noqa: E402
from iosched.host_agent import assembly  # noqa: E402
from iosched.host_agent.conf import opts  # noqa: E402
from iosched.host_agent import metrics  # noqa: E402
from iosched.host_agent import model  # noqa: E402
from iosched.host_agent.policies import slo  # noqa: E402
from iosched.host_agent.policies import vslicer  # noqa: E402
from iosched.simdriver import driver as sim_driver  # noqa: E402
from iosched.simulator import host as sim_host  # noqa: E402
from iosched.simulator import spec as S  # noqa: E402

LSVM = {'iosched:latency_sensitive': 'true', 'iosched:latency_ms': '5'}


def _conf(qos_file):
    conf = cfg.ConfigOpts()
    opts.register_all(conf)
    conf([], default_config_files=[])
    conf.set_override('volume_qos_file', qos_file, 'host_agent')
    conf.set_override('report_every_ticks', 1, 'host_agent')
    return conf


def _host(vcpus, seed=7):
    sim = sim_host.SimHost(S.HostSpec(
        name='bench', pcpus=max(2, vcpus // 8), default_slice_us=3000,
        disk=S.DiskSpec(service_us=500, parallelism=8)), seed=seed)
    drv = sim_driver.SimulatedDriver(sim)
    for i in range(max(1, vcpus // 4)):
        uuid = 'vm-%d' % i
        first = (S.RequestResponse(rate_per_s=200, burst_us=200) if i % 3 == 0
                 else S.DiskClosedLoop(outstanding=2) if i % 3 == 1
                 else S.CpuBound())
        sim.add_vm(S.VmSpec(uuid=uuid, name=uuid, disks=('vda',), vcpus=(
            first, S.CpuBound(), S.CpuBound(), S.CpuBound())))
        serial = 'vol-%d' % i if i % 4 == 1 else ''
        drv.add_instance(model.InstanceInfo(
            uuid=uuid, name=uuid, vcpus=4,
            extra_specs=LSVM if i % 3 == 0 else {},
            disks=(model.DiskInfo('vda', serial),) if serial else ()))
    return sim, drv


class _TimedMetrics(metrics.AgentMetrics):
    """AgentMetrics that times its own per-tick bookkeeping."""

    def __init__(self, agent):
        super().__init__(agent)
        self.spent = []

    def tick_done(self, agent, seconds):
        t0 = time.perf_counter()
        super().tick_done(agent, seconds)
        self.spent.append(time.perf_counter() - t0)


class _Reporter(object):
    def report_host_io(self, report):
        pass


def _agent(conf, drv, journal_path):
    return assembly.build_agent(
        conf, drv, policies=[vslicer.VSlicerPolicy(conf),
                             slo.SloPolicy(conf)],
        journal_path=journal_path, reporter=_Reporter())


def measure(vcpus, ticks, scrapes, workdir):
    qos = os.path.join(workdir, 'qos.json')
    spec = translate.translate(slo_mod.parse('300iops,20ms,p99'))
    with open(qos, 'w') as fh:
        json.dump({'vol-%d' % i: spec for i in range(vcpus)}, fh)
    conf = _conf(qos)
    runs = {}
    for mode in ('off', 'on'):
        sim, drv = _host(vcpus)
        ag = _agent(conf, drv, os.path.join(workdir, mode + '.jsonl'))
        m = _TimedMetrics(ag).attach() if mode == 'on' else None
        ag.start()
        runs[mode] = (sim, ag, m, [])
    for _ in range(ticks):
        for mode in ('off', 'on'):
            sim, ag, _, times = runs[mode]
            sim.run_until(sim.now_us + 1000000)
            t0 = time.perf_counter()
            ag.tick()
            times.append(time.perf_counter() - t0)
    _, ag_on, m, _ = runs['on']
    render = []
    for _ in range(scrapes):
        t0 = time.perf_counter()
        body = exposition.generate_latest(m.registry)
        render.append(time.perf_counter() - t0)
    exporter = metrics.Exporter(m.registry, '127.0.0.1', 0)
    http = []
    try:
        url = 'http://127.0.0.1:%d/metrics' % exporter.port
        for _ in range(scrapes):
            t0 = time.perf_counter()
            urllib.request.urlopen(url, timeout=10).read()
            http.append(time.perf_counter() - t0)
    finally:
        exporter.stop()
    knobs = len(ag_on.actuator.journal.pending())
    for _, ag, _, _ in runs.values():
        ag.shutdown()
        ag.actuator.journal.close()
    # skip the first ticks (start-up: first samples, first writes)
    off = statistics.median(runs['off'][3][3:])
    on = statistics.median(runs['on'][3][3:])
    return dict(vcpus=len(ag_on.last_snapshot.vcpus),
                knobs=knobs,
                tick_off_ms=off * 1e3, tick_on_ms=on * 1e3, ratio=on / off,
                tick_done_ms=statistics.median(m.spent[3:]) * 1e3,
                render_ms=statistics.median(render) * 1e3,
                http_ms=statistics.median(http) * 1e3, bytes=len(body))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('--vcpus', default='16,64,256',
                   help='comma-separated host sizes (vCPUs)')
    p.add_argument('--ticks', type=int, default=40)
    p.add_argument('--scrapes', type=int, default=50)
    args = p.parse_args(argv)
    logging.disable(logging.WARNING)    # the policies' per-VM notes
    print('%6s %6s %12s %11s %7s %13s %10s %9s %8s' % (
        'vCPUs', 'knobs', 'tick off ms', 'tick on ms', 'on/off',
        'tick_done ms', 'render ms', 'HTTP ms', 'bytes'))
    rows = []
    with tempfile.TemporaryDirectory(prefix='iosched-metrics-bench.') as d:
        for n in (int(x) for x in args.vcpus.split(',')):
            r = measure(n, args.ticks, args.scrapes, d)
            rows.append(r)
            print('%6d %6d %12.2f %11.2f %7.3f %13.3f %10.2f %9.2f %8d' % (
                r['vcpus'], r['knobs'], r['tick_off_ms'], r['tick_on_ms'],
                r['ratio'], r['tick_done_ms'], r['render_ms'], r['http_ms'],
                r['bytes']))
    return rows


if __name__ == '__main__':
    main()
