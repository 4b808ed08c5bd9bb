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
"""Part 2: the report pipeline through a real RabbitMQ (no nova import).

Publisher processes play ``hosts`` compute hosts: each host casts its
HostReport (``rpcapi.ReportAPI`` on ``messaging.get_transport``) every
``interval`` seconds, the hosts evenly staggered over the interval. On the
same fanout topic (a fresh one per run) listen, at the same time:

* N iosched workers: ``iosched.nova_plugin.endpoint.start_listener(conf,
  transport_url=..., store=..., host=...)``, each with its own ReportStore
  of slim entries, as nova-scheduler's (``ReportStore(slim=True)``: the
  endpoint parses the report's head only);
* N baseline workers: a bare oslo.messaging RPC server (same target,
  threading executor) whose endpoint only notes the report's host and ts.

With ``--sign`` every host signs its reports with its own key (the agent's
``ReportAPI`` with a ``report_key``: scheme ``hmac-sha256-v2``) and the
iosched workers run with ``[iosched] report_auth = hmac``; the bare servers
get the same casts and ignore the signature.

Wire formats (``--format``): ``whole``, the whole report as agents cast it
before RPC 1.3 (1.0 unsigned, 1.2 signed: 20 KB for 32 vCPUs and 50
decisions), and ``head``, what the agent's ``ReportAPI`` casts now (RPC
1.3: the head and the tail counts, 1.3 KB). ``both`` (the default): every
host casts each report in both formats, on two topics, to iosched and bare
workers on each (``iosched``/``bare`` on the whole casts,
``iosched-head``/``bare-head`` on the heads), in the same phase: the
whole-format bare server stays the baseline of the ratios.

Every worker is its own process and measures: reports received and their
rate; delivery latency (time received, i.e. stored for iosched, minus the
report's ts; one clock: all on this machine); staleness seen by a scheduler
(every ``sample_every`` s a sampler looks up every host: the age of the
held report and whether it is fresh, i.e. younger than ``ttl_intervals``
report intervals; the baseline's "held report" is the newest ts it noted);
CPU seconds of the process over the run less the sampler thread's own,
and of those the CPU spent inside the endpoint's ``report_host_io`` (for
iosched: signature check, parse, store; the rest is oslo.messaging's:
socket, AMQP, JSON decoding, dispatch).
The first interval is warm-up (a host is missing until its first report)
and is left out of the staleness samples.
"""

import collections
import dataclasses
import multiprocessing
import queue as queue_mod
import resource
import socket
import threading
import time
import urllib.parse
import uuid

from bench.nova_scale import reports as fake_reports
from iosched.contract import stats

DEFAULT_URL = 'rabbit://guest:guest@127.0.0.1:5672/'
# --format: the wire formats cast
FORMATS = {'whole': ('whole',), 'head': ('head',), 'both': ('whole', 'head')}
# --sign: the schedulers' [iosched] report_master_key (a bench secret)
MASTER_KEY = 'bench-only-master-key-' + '5' * 24


def _percentiles(values):
    """p50, p99 (``iosched.contract.stats``, nearest rank), max and count;
    None for each figure without any value.
    """
    return {'p50': stats.percentile(values, 0.5),
            'p99': stats.percentile(values, 0.99),
            'max': max(values, default=None), 'n': len(values)}


def _cpu_seconds():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def broker_answers(url, timeout=2.0):
    """'' if something listens at the URL's host:port, else why not."""
    parts = urllib.parse.urlparse(url)
    try:
        socket.create_connection((parts.hostname, parts.port or 5672),
                                 timeout=timeout).close()
        return ''
    except OSError as e:
        return 'nothing answers at %s:%s (%s)' % (parts.hostname,
                                                  parts.port or 5672, e)


@dataclasses.dataclass
class Settings:
    url: str
    topic: str
    hosts: int
    interval: float
    duration: float
    ttl_intervals: float
    sample_every: float
    start_at: float = 0.0
    vcpus: int = 32
    decisions: int = 50
    seed: int = 0
    sign: bool = False
    formats: tuple = ('whole', 'head')


def topic_of(s, kind):
    """The topic a worker of ``kind`` listens on: the heads' own."""
    return s.topic + ('-head' if kind.endswith('-head') else '')


def _sampler(s, start, lookup, stop, out):
    """Sample ages and freshness of every host; then the CPU figures."""
    names = [fake_reports.host_name(i) for i in range(s.hosts)]
    ttl = s.ttl_intervals * s.interval
    while not start.value or time.time() < start.value:
        if stop.wait(0.01):
            break
    s.start_at = start.value
    cpu0 = _cpu_seconds()
    wall0 = time.time()
    own0 = time.thread_time()
    ages = []
    fresh = []
    warm = s.start_at + s.interval
    end = s.start_at + s.duration
    while not stop.is_set():
        now = time.time()
        if warm <= now < end:
            got = 0
            for h in names:
                age = lookup(h, now, ttl)
                if age is not None:
                    got += 1
                    ages.append(age)
            fresh.append(got / len(names))
        stop.wait(s.sample_every)
    out.update(cpu_s=_cpu_seconds() - cpu0, wall_s=time.time() - wall0,
               sampler_cpu_s=time.thread_time() - own0,
               age_s=_percentiles(ages), samples=len(fresh),
               fresh_fraction={'mean': (sum(fresh) / len(fresh)
                                        if fresh else None),
                               'min': min(fresh) if fresh else None})


def worker_main(kind, name, s, start, count, ready, results, stop):
    """One scheduler worker process (kind 'iosched' or 'bare')."""
    from oslo_config import cfg
    import oslo_messaging

    latencies = []
    in_endpoint = [0.0]

    def timed(method):
        """``method`` adding its thread CPU time to ``in_endpoint``."""
        def report_host_io(self, ctxt, report, signature=None,
                           tail_counts=None):
            t0 = time.thread_time()
            try:
                return method(self, ctxt, report, signature=signature,
                              tail_counts=tail_counts)
            finally:
                in_endpoint[0] += time.thread_time() - t0
        return report_host_io

    topic = topic_of(s, kind)
    if kind.startswith('iosched'):
        from iosched.nova_plugin import conf as plugin_conf
        from iosched.nova_plugin import endpoint
        from iosched.nova_plugin import metrics as metrics_mod
        from iosched.nova_plugin import store as store_mod

        class TimingStore(store_mod.ReportStore):
            """The scheduler's store (slim entries), noting each report."""

            def admit(self, report, tail_counts=None):
                latencies.append(time.time() - report.ts)
                admitted = super().admit(report, tail_counts)
                with count.get_lock():
                    count.value += 1
                return admitted

        plugin_conf.register_opts(cfg.CONF)
        cfg.CONF.set_override('report_topic', topic, 'iosched')
        if s.sign:
            cfg.CONF.set_override('report_auth', 'hmac', 'iosched')
            cfg.CONF.set_override('report_master_key', MASTER_KEY,
                                  'iosched')
        st = TimingStore(ttl_intervals=s.ttl_intervals, slim=True)
        endpoint.ReportEndpoint.report_host_io = timed(
            endpoint.ReportEndpoint.report_host_io)
        # counted as a scheduler worker counts them
        server = endpoint.start_listener(
            cfg.CONF, transport_url=s.url, store=st, host=name,
            metrics=metrics_mod.SchedulerMetrics(st))

        def lookup(host, now, ttl):
            r = st.get(host)
            return None if r is None else now - r.ts

        def counts():
            stats = st.stats()
            return {k: stats.get(k) for k in ('stored', 'ignored',
                                               'dropped', 'hosts', 'fresh')}
    else:
        held = {}

        from iosched.contract import rpc

        class BareEndpoint(object):
            target = oslo_messaging.Target(namespace=rpc.NAMESPACE,
                                           version=rpc.REPORT_VERSION)

            def report_host_io(self, ctxt, report, signature=None,
                               tail_counts=None):
                ts = report['ts']
                latencies.append(time.time() - ts)
                held[report['host']] = ts
                with count.get_lock():
                    count.value += 1

        BareEndpoint.report_host_io = timed(BareEndpoint.report_host_io)

        transport = oslo_messaging.get_rpc_transport(cfg.CONF, url=s.url)
        server = oslo_messaging.get_rpc_server(
            transport, oslo_messaging.Target(topic=topic, server=name),
            [BareEndpoint()], executor='threading',
            access_policy=oslo_messaging.DefaultRPCAccessPolicy)
        server.start()

        def lookup(host, now, ttl):
            ts = held.get(host)
            return None if ts is None or now - ts > ttl else now - ts

        def counts():
            return {'hosts': len(held)}
    ready.put(name)
    out = {}
    sampler = threading.Thread(target=_sampler,
                               args=(s, start, lookup, stop, out))
    sampler.start()
    sampler.join()
    try:
        server.stop()
        server.wait()
    except Exception:      # a worker that cannot stop cleanly still reports
        pass
    lat = _percentiles(latencies)
    cpu = out['cpu_s'] - out['sampler_cpu_s']
    results.put(dict(
        out, kind=kind, name=name, received=len(latencies),
        received_per_s=len(latencies) / s.duration,
        latency_s=lat, worker_cpu_s=cpu,
        cpu_s_per_1000_reports=(cpu / len(latencies) * 1000
                                if latencies else None),
        endpoint_cpu_s_per_1000_reports=(in_endpoint[0] / len(latencies)
                                         * 1000 if latencies else None),
        cpu_pct_of_core=100.0 * cpu / out['wall_s'], counts=counts()))


def cast_whole(api, data):
    """Fanout-cast the whole report dict as agents did before RPC 1.3
    (1.0 unsigned; 1.2 signed, scheme v2): today's format in the bench.
    """
    from iosched.contract import rpc
    from iosched.contract import signature

    if api.key is None:
        api.client.prepare(fanout=True, version=rpc.REPORT_VERSION_UNSIGNED,
                           retry=api.retry).cast({}, rpc.REPORT_METHOD,
                                                 report=data)
        return
    api.client.prepare(fanout=True, version=rpc.REPORT_VERSION_SIGNED,
                       retry=api.retry).cast(
        {}, rpc.REPORT_METHOD, report=data, signature=signature.sign(
            data, api.key, scheme=signature.SCHEME_V2))


class _Wire(object):
    """A report as ``ReportAPI.report_host_io`` casts it: ``to_dict()``."""

    def __init__(self, data):
        self.data = data

    def renewed(self, ts, seq):
        self.data['ts'] = ts
        self.data['seq'] = seq
        return self

    def to_dict(self):
        return self.data


def publisher_main(index, host_ids, s, start, sent_count, ready, results,
                   stop):
    """Cast every host's report every interval, staggered, until the end."""
    from oslo_config import cfg

    from iosched.contract import payload
    from iosched.contract import signature
    from iosched.host_agent.reporter import messaging
    from iosched.host_agent.reporter import rpcapi

    api = rpcapi.ReportAPI(messaging.get_transport(cfg.CONF, s.url), s.topic)
    heads = rpcapi.ReportAPI(api.client.transport, s.topic + '-head')
    keys = {i: (signature.derive_host_key(MASTER_KEY,
                                          fake_reports.host_name(i))
                if s.sign else None) for i in host_ids}
    # The agent's HostReport.to_dict() (~3.5 ms for 32 vCPUs and 50
    # decisions) is the agent's cost, not the pipeline's: each host's dict is
    # built once, checked by from_dict, and cast with a fresh ts and seq.
    base = {}
    for i in host_ids:
        data = fake_reports.report_dict(i, report_interval=s.interval,
                                        vcpus=s.vcpus, decisions=s.decisions,
                                        seed=s.seed)
        payload.HostReport.from_dict(data)
        base[i] = _Wire(data)
    # open the connection now (the first cast of a transport takes ~1 s):
    # a cast to a topic nobody listens on, so no worker sees it
    warm = rpcapi.ReportAPI(api.client.transport, s.topic + '-warmup')
    warm.report_host_io(base[host_ids[0]])
    ready.put('publisher-%d' % index)
    while not start.value:
        if stop.wait(0.01):
            return
    s.start_at = start.value
    end = s.start_at + s.duration
    sent = 0
    late = []
    cpu0 = None
    r = 0
    while True:
        due = [(s.start_at + (r + i / s.hosts) * s.interval, i)
               for i in host_ids]
        if due[0][0] >= end:
            break
        for t, i in due:
            if t >= end:
                break
            now = time.time()
            if t > now:
                time.sleep(t - now)
            if cpu0 is None:
                cpu0 = _cpu_seconds()
            late.append(time.time() - t)
            api.key = heads.key = keys[i]   # this host's (None: unsigned)
            # each format's cast stamped when it starts (its delivery
            # latency from there), first in turn
            for fmt in (s.formats if (r + i) % 2 else s.formats[::-1]):
                wire = base[i].renewed(ts=time.time(), seq=r)
                if fmt == 'whole':
                    cast_whole(api, wire.data)
                else:
                    heads.report_host_io(wire)
            sent += 1
            with sent_count.get_lock():
                sent_count.value += 1
        r += 1
    cpu = _cpu_seconds() - (cpu0 or 0.0)
    messaging.cleanup()
    results.put({'kind': 'publisher', 'name': 'publisher-%d' % index,
                 'sent': sent, 'sent_per_s': sent / s.duration,
                 'late_s': _percentiles(late), 'first_late_s': late[:3],
                 'cpu_s': cpu,
                 'cpu_ms_per_cast': cpu / sent * 1e3 if sent else None})


def run(args, log=print):
    """Part 2. Returns the JSON-ready figures."""
    why = broker_answers(args.url)
    if why:
        raise SystemExit('RabbitMQ: %s (--url, IOSCHED_RABBIT_URL, or '
                         '--no-rabbit)' % why)
    interval = args.interval or args.pipeline_hosts / args.rate
    s = Settings(url=args.url, topic='', hosts=args.pipeline_hosts,
                 interval=interval, duration=args.duration,
                 ttl_intervals=args.ttl_intervals,
                 sample_every=args.sample_every, vcpus=args.vcpus,
                 decisions=args.decisions, seed=args.seed,
                 sign=bool(getattr(args, 'sign', False)),
                 formats=FORMATS[getattr(args, 'format', 'both')])
    tags = [''] * ('whole' in s.formats) + ['-head'] * ('head' in s.formats)
    if args.together:
        phases = [tuple(k + t for t in tags for k in ('iosched', 'bare'))]
    else:
        phases = [tuple('bare' + t for t in tags),
                  tuple('iosched' + t for t in tags)]
    log('part 2: %d hosts, one %s report each every %.2f s (%.0f/s) as %s, '
        '%d publisher(s); %d iosched and %d baseline workers per format, '
        '%s; %.0f s each'
        % (s.hosts, 'signed' if s.sign else 'unsigned', interval,
           s.hosts / interval, ' and '.join(s.formats), args.publishers,
           args.workers, args.workers,
           'at the same time' if args.together else 'one after the other',
           s.duration))
    out = []
    for kinds in phases:
        s.topic = 'iosched-bench-%s' % uuid.uuid4().hex[:8]
        out.extend(_phase(s, kinds, args, log))
    return summarize(s, args, out)


def _phase(s, kinds, args, log):
    """Workers of ``kinds`` and the publishers on a fresh topic."""
    ctx = multiprocessing.get_context('spawn')
    ready, results, stop = ctx.Queue(), ctx.Queue(), ctx.Event()
    start = ctx.Value('d', 0.0)      # start_at, once every worker listens
    sent = ctx.Value('l', 0)
    workers = [(kind, '%s-worker-%d' % (kind, k), ctx.Value('l', 0))
               for kind in kinds for k in range(args.workers)]
    procs = [ctx.Process(target=worker_main, args=(
        kind, name, s, start, count, ready, results, stop),
        name=name, daemon=True) for kind, name, count in workers]
    ids = list(range(s.hosts))
    pubs = [ctx.Process(target=publisher_main,
                        args=(k, ids[k::args.publishers], s, start, sent,
                              ready, results, stop),
                        name='publisher-%d' % k, daemon=True)
            for k in range(args.publishers)]
    for p in procs + pubs:
        p.start()
    got = []
    deadline = time.time() + args.startup
    while len(got) < len(procs) + len(pubs):
        try:
            got.append(ready.get(timeout=max(0.1, deadline - time.time())))
        except queue_mod.Empty:
            stop.set()
            raise SystemExit('workers and publishers not ready within '
                             '--startup %.0f s (%d/%d ready)' % (
                                 args.startup, len(got),
                                 len(procs) + len(pubs)))
    # let the fanout queues bind
    s.start_at = time.time() + args.settle
    start.value = s.start_at
    log('  %s: %d workers listening, %d publishers ready; casting from %s' % (
        ' + '.join(kinds), len(procs), len(pubs),
        time.strftime('%H:%M:%S', time.localtime(s.start_at))))
    t_end = s.start_at + s.duration

    def received():
        return ', '.join('%s %d' % (name, count.value)
                         for _, name, count in workers)

    while time.time() < t_end:
        time.sleep(min(5.0, max(0.0, t_end - time.time())))
        log('  %3.0f/%.0f s: sent %d; received %s' % (
            min(s.duration, time.time() - s.start_at), s.duration,
            sent.value, received()))
    for p in pubs:
        p.join(timeout=60)
    # the backlog: wait (up to --drain s) until every worker has every report
    deadline = time.time() + args.drain
    while (time.time() < deadline and
           any(count.value < sent.value for _, _, count in workers)):
        time.sleep(0.1)
    backlog = {name: sent.value - count.value for _, name, count in workers}
    if any(backlog.values()):
        log('  still queued after --drain %.0f s: %s' % (args.drain, backlog))
    stop.set()
    out = []
    for _ in range(len(procs) + len(pubs)):
        try:
            out.append(results.get(timeout=60))
        except queue_mod.Empty:
            break
    for p in procs:
        p.join(timeout=30)
        if p.is_alive():
            p.terminate()
    if len(out) < len(procs) + len(pubs):
        raise SystemExit('only %d of %d processes reported' % (
            len(out), len(procs) + len(pubs)))
    for o in out:
        o['phase'] = '+'.join(kinds)
        o['drain_s'] = round(args.drain - max(0.0, deadline - time.time()),
                             1)
    return out


def _mean(xs):
    xs = [x for x in xs if x is not None]
    return sum(xs) / len(xs) if xs else None


def _round(x, digits):
    return None if x is None else round(x, digits)


def _ratio(a, b):
    return round(a / b, 3) if a is not None and b else None


# worker kind -> its figures' key in the JSON
KINDS = {'iosched': 'iosched', 'bare': 'baseline',
         'iosched-head': 'iosched_head', 'bare-head': 'baseline_head'}


def summarize(s, args, out):
    pubs = [o for o in out if o['kind'] == 'publisher']
    by_kind = {k: sorted((o for o in out if o['kind'] == k),
                         key=lambda o: o['name']) for k in KINDS}
    sent_by_phase = collections.Counter()
    for p in pubs:
        sent_by_phase[p['phase']] += p['sent']

    def agg(kind):
        ws = by_kind[kind]
        sent = sent_by_phase[ws[0]['phase']]
        return {
            'phase': ws[0]['phase'], 'sent': sent,
            'workers': len(ws),
            'received_per_worker': [w['received'] for w in ws],
            'received_per_s': _round(_mean([w['received_per_s']
                                           for w in ws]), 1),
            'unreceived_fraction': round(1 - _mean([w['received']
                                              for w in ws]) / sent, 4)
            if sent else None,
            'latency_ms_p50': _round(_mean([w['latency_s']['p50'] * 1e3
                                            for w in ws if w['received']]),
                                     2),
            'latency_ms_p99': _round(_mean([w['latency_s']['p99'] * 1e3
                                            for w in ws if w['received']]),
                                     2),
            'latency_ms_max': _round(max([w['latency_s']['max'] * 1e3
                                          for w in ws if w['received']],
                                         default=None), 2),
            'age_s_p50': _round(_mean([w['age_s']['p50'] for w in ws]), 3),
            'age_s_p99': _round(_mean([w['age_s']['p99'] for w in ws]), 3),
            'age_s_max': round(max(w['age_s']['max'] or 0 for w in ws), 3),
            'fresh_fraction_mean': _round(_mean(
                [w['fresh_fraction']['mean'] for w in ws]), 4),
            'fresh_fraction_min': _round(min(
                [w['fresh_fraction']['min'] for w in ws
                 if w['fresh_fraction']['min'] is not None], default=None),
                4),
            'cpu_s_per_1000_reports': _round(_mean(
                [w['cpu_s_per_1000_reports'] for w in ws]), 3),
            'endpoint_cpu_s_per_1000_reports': _round(_mean(
                [w['endpoint_cpu_s_per_1000_reports'] for w in ws]), 3),
            'cpu_pct_of_core': _round(_mean([w['cpu_pct_of_core']
                                            for w in ws]), 2),
            'sampler_cpu_s': _round(_mean([w['sampler_cpu_s']
                                          for w in ws]), 3),
            'per_worker': ws,
        }

    got = {key: agg(kind) for kind, key in KINDS.items() if by_kind[kind]}

    def ratios(a, b):
        if a not in got or b not in got:
            return None
        return {k: _ratio(got[a][k], got[b][k]) for k in (
            'latency_ms_p50', 'latency_ms_p99', 'age_s_p50', 'age_s_p99',
            'cpu_s_per_1000_reports', 'cpu_pct_of_core', 'received_per_s')}
    return dict(got, **{
        'iosched_over_baseline': ratios('iosched', 'baseline'),
        'head_over_baseline': ratios('iosched_head', 'baseline'),
        'head_over_baseline_head': ratios('iosched_head', 'baseline_head'),
        'head_over_whole': ratios('iosched_head', 'iosched'),
        'formats': list(s.formats),
        'hosts': s.hosts, 'interval_s': round(s.interval, 3),
        'duration_s': s.duration, 'ttl_intervals': s.ttl_intervals,
        'ttl_s': round(s.ttl_intervals * s.interval, 3),
        'publishers': args.publishers, 'together': bool(args.together),
        'sent_per_phase': dict(sent_by_phase),
        'sent_per_s': round(_mean(list(sent_by_phase.values())) /
                            s.duration, 1),
        'drain_s': max(o['drain_s'] for o in out),
        'publisher_late_ms_p99': round(max(
            p['late_s']['p99'] or 0 for p in pubs) * 1e3, 1),
        'publisher_cpu_ms_per_cast': round(_mean(
            [p['cpu_ms_per_cast'] for p in pubs]), 3),
        'report_vcpus': s.vcpus, 'report_decisions': s.decisions,
        'signed': s.sign,
        'per_publisher': pubs})


# (column, figures' key, ratio: (label, ratios' key))
_COLUMNS = (('iosched whole', 'iosched', None),
            ('iosched head', 'iosched_head', None),
            ('bare (whole)', 'baseline', None),
            ('bare (head)', 'baseline_head', None))
_RATIOS = (('whole/bare', 'iosched_over_baseline'),
           ('head/bare', 'head_over_baseline'),
           ('head/whole', 'head_over_whole'))
_ROWS = (
    ('received per worker, /s', 'received_per_s', '%.1f'),
    ('not received after drain', 'unreceived_fraction', '%.4f'),
    ('delivery latency p50, ms', 'latency_ms_p50', '%.2f'),
    ('delivery latency p99, ms', 'latency_ms_p99', '%.2f'),
    ('delivery latency max, ms', 'latency_ms_max', '%.2f'),
    ('report age p50, s', 'age_s_p50', '%.3f'),
    ('report age p99, s', 'age_s_p99', '%.3f'),
    ('report age max, s', 'age_s_max', '%.3f'),
    ('hosts fresh, mean fraction', 'fresh_fraction_mean', '%.4f'),
    ('hosts fresh, min fraction', 'fresh_fraction_min', '%.4f'),
    ('worker CPU s / 1000 reports', 'cpu_s_per_1000_reports', '%.3f'),
    ('  of which in the endpoint', 'endpoint_cpu_s_per_1000_reports',
     '%.3f'),
    ('worker CPU, % of one core', 'cpu_pct_of_core', '%.2f'),
)


def print_table(fig, out=None):
    import sys
    w = (out or sys.stdout).write
    cols = [(label, fig[key]) for label, key, _ in _COLUMNS if fig.get(key)]
    rats = [(label, fig[key]) for label, key in _RATIOS if fig.get(key)]
    any_ = cols[0][1]
    w('\nPart 2: report pipeline through RabbitMQ: %d hosts every %.2f s, '
      '%.0f s, %d iosched and %d baseline workers per format (%s) %s\n' % (
          fig['hosts'], fig['interval_s'], fig['duration_s'],
          any_['workers'], any_['workers'], ', '.join(fig['formats']),
          'at the same time' if fig['together'] else
          '(baseline first, then iosched)'))
    w('  sent %s %s reports (%.1f/s) from %d publisher(s), each in every '
      'format; publisher lateness p99 %.1f ms; %.2f ms CPU per report '
      '(%d vCPUs, %d decisions)\n' % (
          ' and '.join(str(v) for v in fig['sent_per_phase'].values()),
          'signed' if fig.get('signed') else 'unsigned',
          fig['sent_per_s'], fig['publishers'],
          fig['publisher_late_ms_p99'], fig['publisher_cpu_ms_per_cast'],
          fig['report_vcpus'], fig['report_decisions']))
    w('  %-28s' % '' + ''.join(' | %13s' % c for c, _ in cols) +
      ''.join(' | %10s' % r for r, _ in rats) + '\n')
    for label, key, fmt in _ROWS:
        w('  %-28s' % label + ''.join(
            ' | %13s' % (fmt % f[key] if f[key] is not None else '-')
            for _, f in cols) + ''.join(
            ' | %10s' % ('%.2fx' % r[key] if r.get(key) is not None else '')
            for _, r in rats) + '\n')
    w('  (fresh: a report younger than %.1f intervals = %.1f s; ages '
      'sampled from the 2nd interval to the last cast; CPU over casting '
      'and drain (%.1f s), the samplers\' %s CPU s left out)\n' % (
          fig['ttl_intervals'], fig['ttl_s'], fig['drain_s'],
          ' / '.join('%.3f' % f['sampler_cpu_s'] for _, f in cols)))


if __name__ == '__main__':   # pragma: no cover - run bench.nova_scale
    raise SystemExit('run: python -m bench.nova_scale --help')
