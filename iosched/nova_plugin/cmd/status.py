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
"""``iosched-status``: which agents report, and what they say.

Joins the reports fanout (``report_host_io`` casts on the report topic)
with a private RPC server, asks every agent to re-send its latest report
(``resync`` on the agents' topic), and each agent whose head it hears for
its whole report (``send_report``, cast to that agent; the whole report
comes to this server alone: ``status_collect``), collects for ``--wait``
seconds and
prints one row per host: report age, health, vCPUs, LSVMs, the policies
and knobs seen in its decisions. ``--host X`` (repeatable) stops as soon
as every named host has reported: exit 0, or 1 after ``--wait`` with a
message naming the missing hosts. The health check of the Ansible role
and the operator guide's "no reports" troubleshooting use it. No nova
import.
"""

import argparse
import json
import logging
import os
import socket
import sys
import threading
import time

from oslo_config import cfg

from iosched.nova_plugin.cmd import clip
from iosched.nova_plugin.cmd import placement_sources as sources
from iosched.nova_plugin.cmd import report_files
from iosched.nova_plugin.cmd import status_clock
from iosched.nova_plugin.cmd import status_collect
from iosched.nova_plugin import conf as iosched_conf
from iosched.nova_plugin import endpoint
from iosched.nova_plugin import listener
from iosched.nova_plugin import rpcapi

PROG = 'iosched-status'
EXIT_OK = 0
EXIT_MISSING = 1
EXIT_BAD_INPUT = 2
DEFAULT_CONFIGS = ('/etc/iosched/host-agent.conf', '/etc/nova/nova.conf')
DEFAULT_TOPIC = 'iosched-reports'
DEFAULT_AGENTS_TOPIC = 'iosched-agents'

EPILOG = """\
Where it listens: --transport-url, else [reporter] transport_url, else
[DEFAULT] transport_url of the --config-file (an agent's host-agent.conf
or nova-scheduler's nova.conf; default: the first of %s that exists).
Topics: --topic / --agents-topic, else [reporter] topic / resync_topic
(host-agent.conf), else [iosched] report_topic / agents_topic (nova.conf).

examples:
  # every agent on the bus, as a table (JSON with --json)
  iosched-status --config-file /etc/nova/nova.conf --wait 5
  # health check: has compute-3's agent reported? (exit 0 / 1)
  iosched-status --config-file /etc/iosched/host-agent.conf \\
      --host compute-3 --wait 60
  # save every host's report for iosched-explain / iosched-placement --report
  iosched-status --config-file /etc/nova/nova.conf --save /tmp/reports

columns: AGE seconds since the report was measured (agent clock), SEQ its
sequence number (restarts at 0 with the agent), EVERY the report interval,
VCPUS all / I/O-bound, LSVM LSVM vCPUs and the mechanism, POLICIES and
KNOBS the policies and knobs applied in the report's decisions (at most
[reporter] max_decisions of them: a lower bound; ? when the agent did not
send its whole report), SLO met / volumes.

agents cast only the head of each report to the schedulers; this command
asks each agent it hears from for its whole report (vCPU records and
decisions), sent to this command alone.

exit status: 0 every --host reported (without --host: at least one host
did), 1 a --host did not report within --wait (without --host: no host
did), 2 bad input (configuration, URL, broker not reachable).""" % (
    ' or '.join(DEFAULT_CONFIGS))


Collector = status_collect.Collector
# With --host: how long to wait for the whole reports (vCPU records,
# decisions) once every named host's head is in.
DETAILS_WAIT = 3.0


def row(report, received_at, now, tail_counts=None):
    """A JSON-able summary of one host's report (``tail_counts``: only
    its head came; policies and knobs are then unknown, None).
    """
    applied = [d for d in report.decisions if d.applied]
    head = tail_counts is not None
    return {
        'host': report.host,
        'age_s': round(now - report.ts, 1),
        'received_s_ago': round(now - received_at, 1),
        'seq': report.seq,
        'report_interval': report.report_interval,
        'status': report.health.status,
        'errors': list(report.health.errors),
        'pcpus': report.pcpus,
        'vcpus': (tail_counts.get('vcpus', 0) if head
                  else len(report.vcpus)),
        'whole': not head,
        'io_vcpus': report.io_vcpus,
        'io_strength_total': round(report.io_strength_total, 3),
        'lsvm': {'count': report.lsvm.count,
                 'mechanism': (report.lsvm.mechanism
                               if report.lsvm.supported else None),
                 'latency_bound_ms': report.lsvm.latency_bound_ms},
        'policies': (None if head else
                     sorted({d.rule.split('.', 1)[0] for d in applied})),
        'knobs': (None if head else
                  len({(d.kind, d.instance_uuid, d.target)
                       for d in applied})),
        'knob_kinds': None if head else sorted({d.kind for d in applied}),
        'slo': {'volumes': report.disk.slo_volumes,
                'met': report.disk.slo_met,
                'missed': report.disk.slo_missed,
                'reserved_iops': report.disk.reserved_iops,
                # where the agent reads SLOs; '' (a report older than 1.5)
                # is shown as unknown
                'source': report.disk.slo_source or 'unknown'},
        'version': report.version,
    }


COLUMNS = (('HOST', lambda r: r['host']),
           ('AGE', lambda r: '%.1fs' % r['age_s']),
           ('SEQ', lambda r: str(r['seq'])),
           ('EVERY', lambda r: '%gs' % r['report_interval']),
           ('STATUS', lambda r: r['status']),
           ('PCPUS', lambda r: str(r['pcpus'])),
           ('VCPUS', lambda r: '%d/%d io' % (r['vcpus'], r['io_vcpus'])),
           ('LSVM', lambda r: ('%d %s' % (r['lsvm']['count'],
                                          r['lsvm']['mechanism'])
                               if r['lsvm']['mechanism'] else '-')),
           ('POLICIES', lambda r: ('?' if r['policies'] is None
                                   else ','.join(r['policies']) or '-')),
           ('KNOBS', lambda r: '?' if r['knobs'] is None
            else str(r['knobs'])),
           ('SLO', lambda r: '%d/%d' % (r['slo']['met'],
                                        r['slo']['volumes'])),
           ('SLO-SOURCE', lambda r: r['slo']['source']))


def table(rows):
    cells = [[h for h, _ in COLUMNS]] + [[f(r) for _, f in COLUMNS]
                                         for r in rows]
    widths = [max(len(c[i]) for c in cells) for i in range(len(COLUMNS))]
    lines = ['  '.join(c.ljust(w) for c, w in zip(line, widths)).rstrip()
             for line in cells]
    for r in rows:
        for e in r['errors']:
            lines.append('%s: %s' % (r['host'], e))
    return lines


def parser():
    p = argparse.ArgumentParser(
        prog=PROG,
        description=__doc__.split('\n\n')[0].split(': ', 1)[1].capitalize(),
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('--config-file', action='append', default=[],
                   metavar='PATH', help='host-agent.conf or nova.conf '
                   '(repeatable): transport URL and topics')
    p.add_argument('--transport-url', help='oslo.messaging URL of the bus '
                   'the agents report to, e.g. rabbit://USER:PASS@HOST:5672/')
    p.add_argument('--topic', help='report topic (default: from the '
                   'configuration, else %s)' % DEFAULT_TOPIC)
    p.add_argument('--agents-topic', help="agents' resync topic (default: "
                   'from the configuration, else %s)' % DEFAULT_AGENTS_TOPIC)
    p.add_argument('--host', action='append', default=[],
                   help='stop as soon as this host reported (repeatable); '
                   'exit 1 if it has not within --wait')
    p.add_argument('--max-age', type=float, metavar='SECONDS',
                   help='with --host: a report measured longer ago than '
                   'this does not count')
    p.add_argument('--wait', type=float, default=5.0, metavar='SECONDS',
                   help='how long to collect reports (default 5)')
    p.add_argument('--no-resync', action='store_true',
                   help='do not ask the agents to re-send their report: '
                   'wait for their periodic reports')
    p.add_argument('--json', action='store_true', help='print JSON')
    p.add_argument('--save', metavar='DIR',
                   help="write each host's newest report, whole, to "
                   'DIR/<host>.json (created if missing): the files '
                   "iosched-explain --report and iosched-placement "
                   '--report read')
    return p


def load_conf(paths):
    """(private ConfigOpts, files read, url, topic, agents topic)."""
    conf = cfg.ConfigOpts()
    iosched_conf.register_opts(conf)
    conf.register_opt(cfg.StrOpt('transport_url', secret=True))
    conf.register_opts([cfg.StrOpt('transport_url', secret=True),
                        cfg.StrOpt('topic'), cfg.StrOpt('resync_topic')],
                       group='reporter')
    if not paths:
        paths = [p for p in DEFAULT_CONFIGS if os.path.isfile(p)][:1]
    for path in paths:
        if not os.path.isfile(path):
            raise sources.BadInput(
                'no configuration file at %s (--config-file: accepted: a '
                'readable host-agent.conf or nova.conf)' % path)
    try:
        conf([], project='iosched', default_config_files=list(paths))
        url = conf.reporter.transport_url or conf.transport_url
        topic = conf.reporter.topic or conf.iosched.report_topic
        agents = conf.reporter.resync_topic or conf.iosched.agents_topic
        # every [iosched] option once: a bad value is said here, by name,
        # not when the listener or the clock rules first read it
        for name in conf.iosched:
            getattr(conf.iosched, name)
    except (cfg.Error, OSError, ValueError) as e:
        raise sources.BadInput('cannot read the configuration %s: %s' % (
            ', '.join(paths) or '(defaults)', e))
    return conf, list(paths), url, topic, agents


def collect(conf, url, collector, wait, resync=True, progress=None,
            listen=endpoint.start_listener,
            request_resync=listener.request_resync,
            probe=listener.probe_broker, agent_api=rpcapi.AgentAPI):
    """Listen on ``[iosched] report_topic`` until ``collector.done`` (or
    ``DETAILS_WAIT`` after ``collector.heard``) or ``wait`` seconds;
    returns the seconds listened. Each head-only report makes the command
    ask that agent for its whole report (``agent_api.send_report``).
    """
    name = '%s-%s-%d' % (PROG, socket.gethostname(), os.getpid())
    server = sources.open_listener(
        conf, url, collector, name, listen, probe,
        'no transport URL: give --transport-url '
        'rabbit://USER:PASS@HOST:5672/ or a --config-file with [reporter] '
        'or [DEFAULT] transport_url (the bus the agents report to)')
    start = time.monotonic()
    agents = []     # the client, made when the first head asks for it

    def ask(host):
        try:
            if not agents:
                agents.append(agent_api(server.transport,
                                        conf.iosched.agents_topic))
            agents[0].send_report(host, name, name)
        except Exception as e:     # its head still shows
            if progress:
                progress('asking %s for its whole report failed (%s)'
                         % (host, e))
    collector.ask = ask
    try:
        if resync:
            try:
                request_resync(conf, server.transport, name)
            except Exception as e:  # the periodic reports still come
                if progress:
                    progress('resync request failed (%s): waiting for the '
                             'periodic reports' % e)
        if collector.watch and collector.heard.wait(wait):
            collector.done.wait(max(0.0, min(
                DETAILS_WAIT, wait - (time.monotonic() - start))))
        else:
            collector.done.wait(wait)
    finally:
        collector.ask = None
        collector.ended_at = time.time()
        # Stopping a rabbit server takes seconds: do not make a health
        # check wait for it longer than needed.
        stopper = threading.Thread(target=_stop, args=(server,), daemon=True)
        stopper.start()
        stopper.join(10)
    return time.monotonic() - start


def _saved(directory, collector, say):
    """``--save``: False (said why) when a report could not be written."""
    try:
        for path in report_files.save(collector.whole(), directory):
            say('saved %s' % path)
        for host in collector.heads_only():
            say('not saved %s: its whole report did not come (only the '
                'head the schedulers get)' % host)
    except report_files.SaveError as e:
        say('error: %s' % e)
        return False
    return True


def _notes(rows, collector, say):
    """What the table cannot say: clocks, missing whole reports, drops."""
    for r in rows:
        if r['clock_problem']:
            say('%s: %s' % (r['host'], r['clock_problem']))
    if collector.heads_only():
        say('no whole report (vCPU records, decisions) from %s: only the '
            'head the schedulers get. Is [reporter] listen_for_resync on '
            'there?' % ', '.join(collector.heads_only()))
    if collector.dropped:
        say('%d malformed report(s) dropped (an agent of another version? '
            'see the scheduler log for the reason)' % collector.dropped)


def _stop(server):
    server.stop()
    server.wait()


def main(argv=None, out=None, err=None):
    out = out or sys.stdout
    err = err or sys.stderr
    args = parser().parse_args(sys.argv[1:] if argv is None else argv)

    def say(text):
        print(clip('%s: %s' % (PROG, text)), file=err, flush=True)

    try:
        if not 0 < args.wait <= threading.TIMEOUT_MAX:
            raise sources.BadInput(
                '--wait %s: accepted: seconds > 0, at most %d'
                % (args.wait, threading.TIMEOUT_MAX))
        if args.max_age is not None and not args.max_age >= 0:
            raise sources.BadInput(
                '--max-age %s: accepted: seconds >= 0' % args.max_age)
        conf, paths, url, topic, agents = load_conf(args.config_file)
        url = args.transport_url or url
        topic = args.topic or topic
        agents = args.agents_topic or agents
        not_before = (time.time() - args.max_age
                      if args.max_age is not None else None)
        collector = Collector(watch=args.host, not_before=not_before)
        amqp_log = logging.getLogger('amqp')
        level = amqp_log.level
        amqp_log.setLevel(logging.ERROR)   # harmless close-time warnings
        # NOTE(iosched): the [iosched] OptGroup object is shared by every
        # ConfigOpts that registers it, overrides included: clear them, or
        # a later listener in this process (tests) would use our topics.
        conf.set_override('report_topic', topic, 'iosched')
        conf.set_override('agents_topic', agents, 'iosched')
        try:
            listened = collect(conf, url, collector, args.wait,
                               resync=not args.no_resync, progress=say)
        finally:
            amqp_log.setLevel(level)
            conf.clear_override('report_topic', 'iosched')
            conf.clear_override('agents_topic', 'iosched')
    except sources.BadInput as e:
        say('error: %s' % e)
        return EXIT_BAD_INPUT
    if args.save and not _saved(args.save, collector, say):
        return EXIT_BAD_INPUT
    now = collector.ended_at or time.time()
    rows = [dict(row(rep, at, now, collector.tails.get(host)),
                 clock_problem=status_clock.clock_problem(rep, at, conf))
            for host, (rep, at) in sorted(collector.reports.items())]
    missing = collector.missing()
    if args.json:
        json.dump({'topic': topic, 'agents_topic': agents,
                   'config_files': paths,
                   'listened_s': round(listened, 3),
                   'hosts': rows, 'missing': missing,
                   'dropped': collector.dropped}, out, indent=2,
                  sort_keys=True)
        out.write('\n')
    elif rows:
        out.write('\n'.join(table(rows)) + '\n')
    _notes(rows, collector, say)
    if missing:
        say('error: no report from %s within %g s on topic %s (%s); '
            'heard from: %s. Is io-host-agent running there (systemctl '
            'status io-host-agent, journalctl -u io-host-agent), with '
            '[reporter] transport_url and topic pointing here?' % (
                ', '.join(missing), args.wait, topic,
                sources._redacted(url),
                ', '.join(sorted(collector.reports)) or 'nobody'))
        return EXIT_MISSING
    if not rows:
        say('error: no host reported within %g s on topic %s (%s): are the '
            'agents running, reporting to this broker and topic ([reporter] '
            'transport_url, topic)?' % (args.wait, topic,
                                        sources._redacted(url)))
        return EXIT_MISSING
    return EXIT_OK


if __name__ == '__main__':
    sys.exit(main())
