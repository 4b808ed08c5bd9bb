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
"""The agent's Prometheus metrics: a collector over its state, and the
HTTP endpoint that serves it. Config::

    [metrics]
    enabled = true
    bind_host = 127.0.0.1
    port = 9487

Two halves, one ``CollectorRegistry`` per agent (never the process-wide
default, so two agents or two tests never share a series):

* ``AgentMetrics.tick_done(agent, seconds)``, called by ``Agent.tick``
  after every tick, keeps what only exists at tick time: the tick
  duration histogram, the decisions made (new ``model.Decision`` objects
  in the actuator's book since the previous tick), the SLO windows met
  and missed, and reports that failed to build (due, but the agent's
  ``seq`` did not move). ``attach()`` makes the agent call it and wraps
  the agent's reporter to count the casts that went out or raised.
* ``AgentMetrics.collect()`` reads the rest at scrape time from the
  agent's latest state: per-vCPU I/O strength from the last snapshot,
  knobs held from the journal, decisions held by kind and status, the age
  of the last report.

VM instances are labelled ``instance_uuid``, never ``instance``: that
label is Prometheus's own (the scrape target). docs/metrics.md lists
every metric.
"""

import os
import threading
import time

from oslo_log import log as logging
import prometheus_client
from prometheus_client import core

LOG = logging.getLogger(__name__)

PREFIX = 'iosched_agent_'
# Ticks run for milliseconds on a small host, up to seconds on a large
# one with the wake-up self-test or a slow libvirt.
TICK_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                1.0, 2.5, 5.0, 10.0)
SLO_VERDICTS = ('met', 'missed', 'idle')


def _fmt(value):
    return '' if value is None else str(value)


class AgentMetrics(object):
    """The agent's metrics: fed by ``tick_done``, read by a scrape."""

    def __init__(self, agent, registry=None, clock=time.time):
        self.agent = agent
        self.registry = (registry if registry is not None
                         else prometheus_client.CollectorRegistry())
        self._clock = clock
        self._lock = threading.Lock()
        self.started = clock()
        self.tick_seconds = prometheus_client.Histogram(
            PREFIX + 'tick_duration_seconds',
            'Wall time of one control tick (measure, decide, act and, '
            'every report_every_ticks, report).',
            buckets=TICK_BUCKETS, registry=self.registry)
        self.decisions = {}     # (policy, rule, status) -> count
        self.slo_windows = {}   # (uuid, target, volume) -> {verdict: n}
        self.slo_ind = {}       # (uuid, target, volume) -> last judged Ind
        self.reports = 0
        self.report_failures = 0
        self.last_report_wall = None
        self._seen = dict(self._book())
        self._seq = getattr(agent, 'seq', 0)
        self._plan = getattr(agent, 'last_plan', None)
        self.registry.register(self)

    def attach(self):
        """Be told every tick of the agent and see its reports go out."""
        self.agent.observer = self
        if self.agent.reporter is not None:
            self.agent.reporter = _CountingReporter(self.agent.reporter, self)
        return self

    def report_sent(self, ok):
        """A cast went out (ok) or raised (from the reporter proxy)."""
        with self._lock:
            if ok:
                self.reports += 1
                self.last_report_wall = self._clock()
            else:
                self.report_failures += 1

    def _book(self):
        decisions = getattr(self.agent.actuator, 'decisions', None)
        return decisions() if decisions is not None else {}

    # -- tick time (the control loop's thread) ---------------------------
    def tick_done(self, agent, seconds):
        """Account for the tick that just ended. Never raises."""
        try:
            self.tick_seconds.observe(seconds)
            book = self._book()
            new = [d for k, d in book.items() if self._seen.get(k) is not d]
            self._seen = book
            with self._lock:
                for d in new:
                    key = (d.policy, d.rule, d.status)
                    self.decisions[key] = self.decisions.get(key, 0) + 1
                self._slo(agent)
                self._report(agent)
        except Exception:   # metrics must never stop regulation
            LOG.exception('metrics: tick %d not accounted', agent.ticks)

    def _slo(self, agent):
        plan = agent.last_plan
        if plan is None or plan is self._plan:
            return          # no plan this tick (it failed early)
        self._plan = plan
        facts = plan.facts.get('slo')
        snapshot = agent.last_snapshot
        volumes = [v for v in (facts.volumes if facts is not None else ())
                   if v.slo is not None]
        keys = set()
        for v in volumes:
            key = (v.instance_uuid, v.target,
                   _serial(snapshot, v.instance_uuid, v.target))
            keys.add(key)
            counts = self.slo_windows.setdefault(
                key, dict.fromkeys(SLO_VERDICTS, 0))
            verdict = v.verdict if v.verdict in counts else 'idle'
            counts[verdict] += 1
            if v.ind is not None:
                self.slo_ind[key] = v.ind
        for key in [k for k in self.slo_windows if k not in keys]:
            del self.slo_windows[key]       # detached or deleted
            self.slo_ind.pop(key, None)

    def _report(self, agent):
        every = agent.conf.host_agent.report_every_ticks
        if agent.ticks % every or agent.last_snapshot is None:
            return          # no report was due (or nothing to report)
        if agent.seq == self._seq:
            self.report_failures += 1   # not even built (a cast that
        self._seq = agent.seq           # raised was counted by the proxy)

    # -- scrape time (the HTTP server's threads) -------------------------
    def describe(self):
        return []       # names are dynamic; skip the registry's check

    def collect(self):
        with self._lock:
            decisions = dict(self.decisions)
            windows = {k: dict(v) for k, v in self.slo_windows.items()}
            ind = dict(self.slo_ind)
            reports, failures = self.reports, self.report_failures
            last = self.last_report_wall
        agent = self.agent
        yield self._info(agent)
        yield from self._vcpus(agent.last_snapshot)
        yield from self._knobs(agent.actuator)
        c = core.CounterMetricFamily(
            PREFIX + 'decisions', 'Knob decisions made (a new value, rule, '
            'reason or outcome for a knob), by policy, rule and status '
            '(applied, failed, dry-run).',
            labels=('policy', 'rule', 'status'))
        for (policy, rule, status), n in sorted(decisions.items()):
            c.add_metric((policy, rule, status), n)
        yield c
        yield from self._slo_families(windows, ind)
        yield from self._report_families(agent, reports, failures, last)

    def _info(self, agent):
        sched = getattr(agent, 'host_sched', None)
        info = core.InfoMetricFamily(
            PREFIX + 'build', 'The agent: host name, policies, actuator '
            'and the LSVM mechanism in force.')
        info.add_metric((), {
            'host': _fmt(agent.host),
            'policies': ','.join(p.name for p in agent.policies),
            'actuator': _fmt(getattr(agent.actuator, 'name', '')),
            'mechanism': _fmt(getattr(sched, 'mechanism', ''))})
        return info

    @staticmethod
    def _vcpus(snapshot):
        vcpus = snapshot.vcpus if snapshot is not None else ()
        strength = core.GaugeMetricFamily(
            PREFIX + 'vcpu_io_strength', 'I/O strength of a vCPU over the '
            'last tick (events x mean gap / window, about 0..1).',
            labels=('instance_uuid', 'vcpu'))
        share = core.GaugeMetricFamily(
            PREFIX + 'vcpu_run_share', 'Share of the last tick a vCPU ran '
            'on a pCPU, 0..1.', labels=('instance_uuid', 'vcpu'))
        klass = {}
        for v in vcpus:
            labels = (v.instance_uuid, str(v.vcpu))
            strength.add_metric(labels, v.io_strength)
            share.add_metric(labels, v.run_share)
            klass[v.klass] = klass.get(v.klass, 0) + 1
        by_class = core.GaugeMetricFamily(
            PREFIX + 'vcpus', 'vCPUs by class in the last tick (io, cpu, '
            'mixed, idle).', labels=('class',))
        for name, n in sorted(klass.items()):
            by_class.add_metric((name,), n)
        return strength, share, by_class

    @staticmethod
    def _knobs(actuator):
        journal = getattr(actuator, 'journal', None)
        held = core.GaugeMetricFamily(
            PREFIX + 'knobs_held', 'Knobs the agent changed and will '
            'restore on stop (journal entries), by kind.', labels=('kind',))
        kinds = {}
        for kind, _, _ in (journal.pending() if journal is not None else ()):
            kinds[kind] = kinds.get(kind, 0) + 1
        for kind, n in sorted(kinds.items()):
            held.add_metric((kind,), n)
        yield held
        book = core.GaugeMetricFamily(
            PREFIX + 'knob_decisions', 'Knobs with a current decision, by '
            'kind and status (applied, failed, dry-run).',
            labels=('kind', 'status'))
        counts = {}
        decisions = getattr(actuator, 'decisions', None)
        for d in (decisions().values() if decisions is not None else ()):
            counts[(d.kind, d.status)] = counts.get((d.kind, d.status), 0) + 1
        for key, n in sorted(counts.items()):
            book.add_metric(key, n)
        yield book
        path = getattr(journal, 'path', None)
        if path:
            size = core.GaugeMetricFamily(
                PREFIX + 'journal_size_bytes', 'Size of the change journal '
                'file (it grows until every knob is restored).')
            try:
                size.add_metric((), os.path.getsize(path))
            except OSError:
                pass
            yield size

    @staticmethod
    def _slo_families(windows, ind):
        labels = ('instance_uuid', 'target', 'volume')
        count = core.CounterMetricFamily(
            PREFIX + 'slo_windows', 'Windows (ticks) of an SLO volume by '
            "verdict: met, missed, idle (no request completed: not judged).",
            labels=labels + ('verdict',))
        met = core.GaugeMetricFamily(
            PREFIX + 'slo_met', '1 if the SLO volume met its SLO in the last '
            'judged window, 0 if it missed.', labels=labels)
        indicator = core.GaugeMetricFamily(
            PREFIX + 'slo_indicator', "Flubber's Ind of the last judged "
            'window: max of throughput shortfall and latency excess '
            '(relative); > 0 missed, <= 0 met.', labels=labels)
        for key in sorted(windows):
            for verdict in SLO_VERDICTS:
                count.add_metric(key + (verdict,), windows[key][verdict])
            if key in ind:
                met.add_metric(key, 1.0 if ind[key] <= 0 else 0.0)
                indicator.add_metric(key, ind[key])
        return count, met, indicator

    def _report_families(self, agent, reports, failures, last):
        sent = core.CounterMetricFamily(
            PREFIX + 'reports', 'HostReports cast to the schedulers '
            '(periodic ones and resync re-sends).')
        sent.add_metric((), reports)
        failed = core.CounterMetricFamily(
            PREFIX + 'report_failures', 'Reports not sent: the build or '
            'the cast failed (the next one goes at the next interval).')
        failed.add_metric((), failures)
        age = core.GaugeMetricFamily(
            PREFIX + 'report_age_seconds', 'Seconds since the last report '
            'was sent (since the agent started, before the first).')
        age.add_metric((), self._clock() - (last or self.started))
        interval = core.GaugeMetricFamily(
            PREFIX + 'report_interval_seconds', 'Seconds between two '
            'reports (tick_interval x report_every_ticks).')
        interval.add_metric((), agent.report_interval)
        yield from (sent, failed, age, interval)
        if last is not None:
            ts = core.GaugeMetricFamily(
                PREFIX + 'last_report_timestamp_seconds', 'When the last '
                'report was sent, seconds since the epoch.')
            ts.add_metric((), last)
            yield ts


class _CountingReporter(object):
    """The agent's reporter, counting casts that went out or raised."""

    def __init__(self, reporter, metrics):
        self._reporter = reporter
        self._metrics = metrics

    def __getattr__(self, name):
        return getattr(self._reporter, name)

    def report_host_io(self, report):
        try:
            result = self._reporter.report_host_io(report)
        except Exception:
            self._metrics.report_sent(False)
            raise
        self._metrics.report_sent(True)
        return result


def _serial(snapshot, uuid, target):
    """The Cinder volume id of a disk ('' for a local disk)."""
    inst = snapshot.instances.get(uuid) if snapshot is not None else None
    for disk in (inst.disks if inst is not None else ()):
        if disk.target == target:
            return disk.serial
    return ''


class Exporter(object):
    """``GET /metrics`` of one registry, in a daemon thread; ``stop()``
    closes the socket (the agent's shutdown).
    """

    def __init__(self, registry, host, port):
        self.server, self.thread = prometheus_client.start_http_server(
            port, addr=host, registry=registry)

    @property
    def port(self):
        return self.server.server_port

    def stop(self):
        if self.thread.is_alive():
            self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


def start_from_conf(conf, agent):
    """Serve ``agent``'s metrics per ``[metrics]``; the Exporter or None.

    None when disabled, and when the port cannot be bound (logged): the
    agent then regulates without metrics rather than not at all.
    """
    c = conf.metrics
    if not c.enabled:
        return None
    metrics = AgentMetrics(agent)
    try:
        exporter = Exporter(metrics.registry, c.bind_host, c.port)
    except OSError as e:
        LOG.error('metrics endpoint not started on %(h)s:%(p)s: %(e)s; '
                  'running without metrics', {'h': c.bind_host, 'p': c.port,
                                              'e': e})
        return None
    exporter.metrics = metrics.attach()
    LOG.info('Prometheus metrics on http://%(h)s:%(p)d/metrics',
             {'h': c.bind_host, 'p': exporter.port})
    return exporter
