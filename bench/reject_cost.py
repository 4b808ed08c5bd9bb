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
"""What a hostile unsigned report costs a scheduler worker, against a bare
oslo.messaging server receiving the same message (issue 27).

One run, through a real RabbitMQ: a 9.6 MB unsigned report (``--big-mb``:
vCPU records on 8 pCPUs, the issue's 70,000) and a normal-size one (32
vCPUs, 50 decisions), each cast ``--copies`` times (fanout, as an agent
casts) to one server process at a time:

* ``bare``: an oslo.messaging RPC server on the same target whose
  ``report_host_io`` does nothing: the floor, the driver's receiving and
  JSON decoding (kombu's envelope, then oslo.messaging's message);
* ``hmac``: a scheduler worker's listener (``endpoint.start_listener``,
  ``SchedulerState``'s store and metrics) with ``report_auth = hmac``:
  refuses it as unsigned;
* ``none``: the same with ``report_auth = none``: the normal report is
  stored, the big one refused by the contract's bounds (``implausible``).

Printed per kind and size: the server process's CPU per message (all its
threads, idle CPU measured before the casts subtracted), the CPU inside
``report_host_io`` (our code) per message, and the ratio of the worker's
CPU to the bare server's. Written to ``out/bench/reject_cost.json``.

Usage: .venv/bin/python bench/reject_cost.py [--url rabbit://...]
           [--big-mb 9.6] [--copies 5] [--normal-copies 400] [-o out/bench]
"""

import argparse
import json
import multiprocessing
import os
import sys
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))

from bench.nova_scale import pipeline  # noqa: E402
from bench.nova_scale import reports as fake_reports  # noqa: E402

KINDS = ('bare', 'hmac', 'none')
MASTER_KEY = pipeline.MASTER_KEY
IDLE_S = 1.0


def big_report(mb, pcpus=8):
    """An unsigned report of about ``mb`` MB of JSON: vCPU records."""
    one = fake_reports.report_dict(0, ts=time.time(), pcpus=pcpus,
                                   vcpus=1000, decisions=0, seed=1)
    per_record = len(json.dumps(one['vcpus'])) / 1000.0
    n = int(mb * 1e6 / per_record)
    data = fake_reports.report_dict(0, ts=time.time(), pcpus=pcpus,
                                    vcpus=n, decisions=0, seed=1)
    return data


def normal_report():
    return fake_reports.report_dict(1, ts=time.time(), vcpus=32,
                                    decisions=50, seed=1)


def _cpu():
    return time.process_time()      # every thread of the process


def server_main(kind, url, topic, expected, ready, done, results):
    """One server process: listen, measure idle CPU, then the casts."""
    from oslo_config import cfg
    from oslo_log import log as logging
    import oslo_messaging

    from iosched.contract import rpc

    import logging as std_logging

    logging.register_options(cfg.CONF)
    cfg.CONF([], project='bench')
    # a worker logs each refusal at WARNING: formatted, then discarded
    std_logging.basicConfig(stream=open(os.devnull, 'w'),
                            level=std_logging.WARNING, force=True)
    inner = None
    if kind == 'bare':
        class Bare(object):
            def report_host_io(self, ctxt, report, signature=None):
                pass
        inner = Bare()
    calls = {'n': 0, 'in_endpoint': 0.0}

    class Counting(object):
        """The endpoint the server dispatches to: counts and times."""
        target = oslo_messaging.Target(namespace=rpc.NAMESPACE,
                                       version=rpc.REPORT_VERSION)

        def report_host_io(self, ctxt, report, signature=None):
            t0 = time.thread_time()
            inner.report_host_io(ctxt, report, signature=signature)
            calls['in_endpoint'] += time.thread_time() - t0
            calls['n'] += 1
            if calls['n'] == expected:
                calls['cpu1'] = _cpu()
                done.set()

    if kind == 'bare':
        transport = oslo_messaging.get_rpc_transport(cfg.CONF, url=url)
        stats = dict
    else:
        from iosched.nova_plugin import conf as plugin_conf
        from iosched.nova_plugin import endpoint
        from iosched.nova_plugin import state

        plugin_conf.register_opts(cfg.CONF)
        worker = state.SchedulerState()
        inner = endpoint.ReportEndpoint(
            worker.store, auth=kind, master_key=MASTER_KEY,
            metrics=worker.metrics)
        transport = oslo_messaging.get_rpc_transport(cfg.CONF, url=url)

        def stats():
            s = worker.store.stats()
            return {k: s[k] for k in ('stored', 'dropped', 'received')}
    server = oslo_messaging.get_rpc_server(
        transport, oslo_messaging.Target(topic=topic, server=kind),
        [Counting()], executor='threading',
        access_policy=oslo_messaging.DefaultRPCAccessPolicy)
    server.start()
    time.sleep(0.5)                 # consumer declared and settled
    cpu0, wall0 = _cpu(), time.monotonic()
    time.sleep(IDLE_S)
    idle_rate = (_cpu() - cpu0) / (time.monotonic() - wall0)
    ready.set()
    cpu0, wall0 = _cpu(), time.monotonic()
    done.wait(600)
    wall = time.monotonic() - wall0
    cpu = calls.get('cpu1', _cpu()) - cpu0 - idle_rate * wall
    server.stop()
    server.wait()
    transport.cleanup()
    results.put(dict(kind=kind, messages=calls['n'], cpu_s=cpu,
                     idle_cpu_per_s=idle_rate,
                     endpoint_cpu_s=calls['in_endpoint'], store=stats()))


def measure(kind, data, copies, url, log):
    """Cast ``data`` ``copies`` times to one ``kind`` server; its figures
    per message.
    """
    from oslo_config import cfg
    import oslo_messaging

    from iosched.contract import rpc

    ctx = multiprocessing.get_context('spawn')
    ready, done, results = ctx.Event(), ctx.Event(), ctx.Queue()
    topic = 'iosched-reject-%s' % uuid.uuid4().hex[:8]
    proc = ctx.Process(target=server_main, args=(
        kind, url, topic, copies, ready, done, results))
    proc.start()
    if not ready.wait(120):
        proc.terminate()
        raise SystemExit('the %s server did not start' % kind)
    transport = oslo_messaging.get_rpc_transport(cfg.CONF, url=url)
    client = oslo_messaging.get_rpc_client(transport, oslo_messaging.Target(
        topic=topic, namespace=rpc.NAMESPACE,
        version=rpc.REPORT_VERSION_UNSIGNED)).prepare(fanout=True)
    for _ in range(copies):
        client.cast({}, rpc.REPORT_METHOD, report=data)
    out = results.get(timeout=900)
    proc.join(60)
    transport.cleanup()
    n = max(out['messages'], 1)
    row = dict(kind=kind, messages=out['messages'],
               cpu_ms_per_message=out['cpu_s'] / n * 1e3,
               endpoint_cpu_ms_per_message=out['endpoint_cpu_s'] / n * 1e3,
               idle_cpu_per_s=out['idle_cpu_per_s'], store=out['store'])
    log('  %-5s %4d messages: %9.3f ms CPU each, %8.3f ms of it in '
        'report_host_io  %s' % (kind, row['messages'],
                                row['cpu_ms_per_message'],
                                row['endpoint_cpu_ms_per_message'],
                                row['store'] or ''))
    return row


def decode_ms(data, copies):
    """CPU ms of the rabbit driver's two JSON decodes of one cast of
    ``data``: kombu's body (an envelope holding the message as a JSON
    string), then oslo.messaging's ``oslo.message``.
    """
    from oslo_serialization import jsonutils

    from iosched.contract import rpc

    inner = jsonutils.dumps({
        'method': rpc.REPORT_METHOD, 'args': {'report': data},
        'namespace': rpc.NAMESPACE, 'version': rpc.REPORT_VERSION_UNSIGNED})
    body = jsonutils.dumps({'oslo.version': '2.0', 'oslo.message': inner})
    t0 = time.process_time()
    for _ in range(copies):
        jsonutils.loads(jsonutils.loads(body)['oslo.message'])
    return (time.process_time() - t0) / copies * 1e3


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('--url', default=os.environ.get(
        'IOSCHED_RABBIT_URL', 'rabbit://guest:guest@127.0.0.1:5672/'))
    p.add_argument('--big-mb', type=float, default=9.6)
    p.add_argument('--copies', type=int, default=5,
                   help='casts of the big report per server (default 5)')
    p.add_argument('--normal-copies', type=int, default=400,
                   help='casts of the normal report per server')
    p.add_argument('--rounds', type=int, default=3,
                   help='rounds of the three servers, interleaved; the '
                        'median round is reported (default 3)')
    p.add_argument('-o', '--output-dir', default='out/bench')
    args = p.parse_args(argv)
    if (args.big_mb <= 0 or args.copies < 1 or args.normal_copies < 1 or
            args.rounds < 1):
        p.error('--big-mb must be > 0, --copies, --normal-copies and '
                '--rounds >= 1')
    why = pipeline.broker_answers(args.url)
    if why:
        p.error('RabbitMQ: %s' % why)
    from oslo_config import cfg
    cfg.CONF([], project='bench')
    result = {}
    for size, data, copies in (
            ('big', big_report(args.big_mb), args.copies),
            ('normal', normal_report(), args.normal_copies)):
        nbytes = len(json.dumps(data))
        print('%s unsigned report: %.2f MB of JSON, %d vCPU records on %d '
              'pCPUs' % (size, nbytes / 1e6, len(data['vcpus']),
                         data['pcpus']))
        runs = {k: [] for k in KINDS}
        for r in range(args.rounds):
            order = KINDS[r % len(KINDS):] + KINDS[:r % len(KINDS)]
            for k in order:
                runs[k].append(measure(k, data, copies, args.url, print))
        rows = {}
        for k in KINDS:
            ranked = sorted(runs[k], key=lambda x: x['cpu_ms_per_message'])
            rows[k] = dict(ranked[len(ranked) // 2],
                           rounds_cpu_ms=[round(x['cpu_ms_per_message'], 3)
                                          for x in runs[k]])
        bare = rows['bare']['cpu_ms_per_message']
        decoding = decode_ms(data, copies)
        print('  median of %d rounds, CPU ms per message: bare %.3f (of '
              'which the driver\'s JSON decoding %.3f), ' % (
                  args.rounds, bare, decoding) + ', '.join(
            '%s %.3f (%.3f in report_host_io)' % (
                k, rows[k]['cpu_ms_per_message'],
                rows[k]['endpoint_cpu_ms_per_message'])
            for k in KINDS[1:]))
        for k in KINDS[1:]:
            rows[k]['ratio_to_bare'] = (
                rows[k]['cpu_ms_per_message'] / bare if bare > 0 else None)
            print('  %s / bare: %.2fx' % (k, rows[k]['ratio_to_bare']))
        result[size] = dict(json_bytes=nbytes, vcpus=len(data['vcpus']),
                            pcpus=data['pcpus'], copies=copies,
                            rounds=args.rounds, json_decode_ms=decoding,
                            **rows)
    os.makedirs(args.output_dir, exist_ok=True)
    path = os.path.join(args.output_dir, 'reject_cost.json')
    with open(path, 'w') as fh:
        json.dump(result, fh, indent=2, sort_keys=True)
    print('wrote %s' % path)


if __name__ == '__main__':
    main()
