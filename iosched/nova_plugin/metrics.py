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
"""Prometheus counters of the scheduler plugin, one endpoint per worker.

Config (nova.conf)::

    [iosched_metrics]
    enabled = true
    bind_host = 127.0.0.1
    port = 9488
    max_workers = 16

``SchedulerMetrics`` is one worker's: its own ``registry`` (never
prometheus_client's default one), its counters and its endpoint; the
worker's ``iosched.nova_plugin.state.SchedulerState`` holds it. Counted where
it happens: ``note_report`` (the report endpoint: received, dropped by
reason), ``note_filter`` (every host a filter judged, and the cause of a
rejection; ``note_filters`` counts a whole request's hosts at once),
``note_weigher``. Read at scrape time from the worker's report store
(``StoreCollector``): hosts held, stale hosts (by name), the oldest
report's age, evictions.

Multi-worker scheme. nova-scheduler forks workers, and each holds its own
state (every report reaches every worker: fanout) and judges its own
share of the requests. ``SchedulerMetrics.ensure_exporter(conf)``, called
when a worker's report listener is up, serves the worker's registry on
the first free port of ``port`` .. ``port + max_workers - 1``. Prometheus
scrapes every port of the range; a worker is one target. Sum rejections
across workers; take the max of per-store gauges (every worker sees the
same reports). Chosen over prometheus_client's multiprocess mode, which
needs PROMETHEUS_MULTIPROC_DIR set before nova-scheduler starts, a server
in the parent (which runs no plugin code after the fork) and cannot serve
the scrape-time store collector.

No nova import.
"""

import os
import threading

from oslo_log import log as logging
import prometheus_client
from prometheus_client import core

from iosched.contract import payload_check
from iosched.nova_plugin import conf as iosched_conf

LOG = logging.getLogger(__name__)

PREFIX = 'iosched_scheduler_'

# Why a report is dropped (not stored).
DROP_MALFORMED = 'malformed'
DROP_VERSION = 'unsupported_version'
DROP_OUT_OF_ORDER = 'out_of_order'      # older than (or a copy of) the held
DROP_UNAUTHENTICATED = 'unauthenticated'  # report_auth=hmac, bad signature
DROP_FUTURE = 'future'                  # ts beyond report_max_clock_skew
DROP_REFUSED = 'refused'                # unknown host, store full of known
DROP_REPLAYED = 'replayed'      # not newer than the held one, which is stale
DROP_TOO_OLD = 'too_old'                # ts older than report_max_age
DROP_IMPLAUSIBLE = 'implausible'        # beyond payload_bounds (contract)
# Why a filter rejected a host.
CAUSE_RULE = 'rule'                     # the host's report says no
CAUSE_NO_REPORT = 'no_report'           # missing_report_policy=reject
CAUSE_SLO_LOOKUP = 'slo_lookup_failed'  # slo_lookup_failure_policy=reject


def drop_reason(error):
    """The drop reason of a ``payload_check.PayloadError``."""
    if isinstance(error, payload_check.Implausible):
        return DROP_IMPLAUSIBLE
    return (DROP_VERSION if getattr(error, 'field', None) == 'version'
            else DROP_MALFORMED)


class SchedulerMetrics(object):
    """One worker's counters in its own ``registry``, the gauges of its
    report ``store`` (None: none) and its ``GET /metrics`` endpoint.
    """

    def __init__(self, store=None):
        self.registry = registry = prometheus_client.CollectorRegistry()
        self.received = prometheus_client.Counter(
            PREFIX + 'reports_received', 'HostReports this worker received.',
            registry=registry)
        self.dropped = prometheus_client.Counter(
            PREFIX + 'reports_dropped', 'Received reports not stored, by '
            'reason: malformed, unsupported_version, out_of_order (older '
            'than or a copy of the held one, e.g. a resync), '
            'unauthenticated (report_auth=hmac), future (stamped beyond '
            'report_max_clock_skew), refused (an unknown host while the '
            'store is full of known ones), replayed (not newer than the '
            'held report, which is stale), too_old (stamped before '
            'report_max_age), implausible (beyond the contract\'s bounds: '
            'report_interval, pCPUs, vCPUs per pCPU, host name length).',
            ('reason',), registry=registry)
        self.checks = prometheus_client.Counter(
            PREFIX + 'filter_checks', 'Hosts a filter judged, by filter and '
            'result (passed, rejected).', ('filter', 'result'),
            registry=registry)
        self.rejections = prometheus_client.Counter(
            PREFIX + 'filter_rejections', 'Hosts a filter rejected, by '
            'filter and cause: rule, no_report, slo_lookup_failed.',
            ('filter', 'cause'), registry=registry)
        self.weighings = prometheus_client.Counter(
            PREFIX + 'weigher_invocations', 'Requests a weigher weighed '
            'hosts for.', ('weigher',), registry=registry)
        self.weighed_missing = prometheus_client.Counter(
            PREFIX + 'weigher_missing_reports', 'Hosts a weigher weighed '
            'without a fresh report (missing_report_weight applied).',
            ('weigher',), registry=registry)
        if store is not None:
            registry.register(StoreCollector(store))
        self.exporter = None
        self._exporter_pid = None
        self._lock = threading.Lock()
        # (counter, labels) -> its child: prometheus_client's labels()
        # takes a lock and checks the labels at every call
        self._children = {}

    def _child(self, counter, *labels):
        key = (counter, labels)
        child = self._children.get(key)
        if child is None:
            child = self._children.setdefault(key, counter.labels(*labels))
        return child

    def note_report(self, dropped=None):
        """One report received; ``dropped``: why it was not stored."""
        self.received.inc()
        if dropped is not None:
            self.dropped.labels(dropped).inc()

    def note_filter(self, name, passed, cause=CAUSE_RULE):
        """A filter judged one host."""
        self._child(self.checks, name,
                    'passed' if passed else 'rejected').inc()
        if not passed:
            self._child(self.rejections, name, cause).inc()

    def note_filters(self, name, passed=0, rejected=None):
        """A filter judged many hosts: ``passed`` passed, ``rejected``
        maps a cause to the hosts rejected for it (the sums of
        ``note_filter``).
        """
        if passed:
            self._child(self.checks, name, 'passed').inc(passed)
        if rejected:
            total = 0
            for cause, count in rejected.items():
                if count:
                    self._child(self.rejections, name, cause).inc(count)
                    total += count
            if total:
                self._child(self.checks, name, 'rejected').inc(total)

    def note_weigher(self, name, hosts_missing=0):
        self._child(self.weighings, name).inc()
        if hosts_missing:
            self._child(self.weighed_missing, name).inc(hosts_missing)

    def ensure_exporter(self, conf):
        """Serve the registry once, if ``[iosched_metrics] enabled``.

        Cheap after the first call. Returns the Exporter, or None
        (disabled, or no free port: logged once). A green endpoint whose
        eventlet hub was replaced (oslo.service's eventlet launcher, after
        fork) is bound again.
        """
        iosched_conf.register_opts(conf)
        if not conf.iosched_metrics.enabled:
            return None
        pid = os.getpid()
        exporter = self.exporter
        if self._exporter_pid == pid and (exporter is None or
                                          exporter.alive()):
            return exporter
        with self._lock:
            stale = self.exporter
            if self._exporter_pid == pid and (stale is None or
                                              stale.alive()):
                return stale
            if (stale is not None and stale.pid == pid and
                    isinstance(stale, GreenExporter)):
                stale.sock.close()  # its green thread died with its hub
            exporter = _bind(conf, self.registry)
            self.exporter, self._exporter_pid = exporter, pid
            if exporter is not None:
                LOG.info('iosched scheduler metrics of worker %(pid)d on '
                         'http://%(h)s:%(p)d/metrics',
                         {'pid': pid, 'h': conf.iosched_metrics.bind_host,
                          'p': exporter.port})
            return exporter

    def release_exporter(self):
        """Forget this process's endpoint and return it (None if none),
        for the caller to stop; the next ``ensure_exporter`` binds anew.
        """
        with self._lock:
            exporter, self.exporter = self.exporter, None
            self._exporter_pid = None
        if exporter is not None and exporter.pid == os.getpid():
            return exporter
        return None

    def stop_exporter(self):
        """Stop the endpoint (tests, shutdown)."""
        exporter = self.release_exporter()
        if exporter is not None:
            exporter.stop()


class StoreCollector(object):
    """Gauges of a report store, read at scrape time."""

    def __init__(self, store):
        self._store = store

    def describe(self):
        return []

    def collect(self):
        stats = self._store.stats()
        hosts = core.GaugeMetricFamily(
            PREFIX + 'hosts', 'Hosts whose latest report this worker '
            'holds, by state (fresh, stale).', labels=('state',))
        hosts.add_metric(('fresh',), stats['fresh'])
        hosts.add_metric(('stale',), stats['stale'])
        stale = core.GaugeMetricFamily(
            PREFIX + 'stale_hosts', 'Hosts whose latest report is older '
            'than report_ttl_intervals report intervals (filters treat them '
            'as missing).')
        stale.add_metric((), stats['stale'])
        named = core.GaugeMetricFamily(
            PREFIX + 'stale_host', '1 for each stale host, by name.',
            labels=('host',))
        for host in stats['stale_hosts']:
            named.add_metric((host,), 1)
        oldest = core.GaugeMetricFamily(
            PREFIX + 'oldest_report_age_seconds', 'Age of the least '
            'recently received report held (0 with none).')
        oldest.add_metric((), stats['oldest_age'] or 0.0)
        pending = core.GaugeMetricFamily(
            PREFIX + 'pending_hosts', 'Hosts with placements made since '
            'their last report (in-flight estimate).')
        pending.add_metric((), stats['pending_hosts'])
        evicted = core.CounterMetricFamily(
            PREFIX + 'hosts_evicted', 'Hosts dropped from the store beyond '
            'store_max_hosts.')
        evicted.add_metric((), stats['evicted'])
        return [hosts, stale, named, oldest, pending, evicted]


class Exporter(object):
    """``GET /metrics`` of ``registry`` in a daemon thread."""

    def __init__(self, registry, host, port):
        self.pid = os.getpid()
        self.server, self.thread = prometheus_client.start_http_server(
            port, addr=host, registry=registry)

    @property
    def port(self):
        return self.server.server_port

    def alive(self):
        return self.pid == os.getpid() and self.thread.is_alive()

    def stop(self):
        if self.thread.is_alive():
            self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


class GreenExporter(object):
    """The same under eventlet's monkey-patching (nova-scheduler before
    2025.2, Nova's test suite): prometheus_client's server thread would
    be a green thread blocking the whole process in the stdlib's
    ``select``; eventlet's own WSGI server serves in a green thread. A
    hub replaced after fork (oslo.service's eventlet launcher) drops it:
    ``alive()`` is False then, and the next ``ensure_exporter`` rebinds.
    """

    def __init__(self, registry, host, port):
        import eventlet
        from eventlet import hubs
        from eventlet import wsgi
        self.pid = os.getpid()
        self.hub = hubs.get_hub()
        self.sock = eventlet.listen((host, port))
        self.thread = eventlet.spawn(
            wsgi.server, self.sock, prometheus_client.make_wsgi_app(registry),
            log_output=False)

    @property
    def port(self):
        return self.sock.getsockname()[1]

    def alive(self):
        from eventlet import hubs
        return (self.pid == os.getpid() and not self.thread.dead and
                hubs.get_hub() is self.hub)

    def stop(self):
        if not self.thread.dead:
            self.thread.kill()
        self.sock.close()


def _exporter_class():
    try:
        from eventlet import patcher
    except ImportError:
        return Exporter
    return GreenExporter if patcher.is_monkey_patched('thread') else Exporter


def _bind(conf, registry):
    c = conf.iosched_metrics
    ports = ([0] if c.port == 0 else
             range(c.port, min(c.port + c.max_workers, 65536)))
    errors = []
    cls = _exporter_class()
    for port in ports:
        try:
            return cls(registry, c.bind_host, port)
        except OSError as e:
            errors.append('%s: %s' % (port, e.strerror or e))
    LOG.error('iosched metrics not served: no free port on %(h)s from '
              '%(p)d (max_workers %(n)d): %(e)s', {
                  'h': c.bind_host, 'p': c.port, 'n': c.max_workers,
                  'e': '; '.join(errors[-3:])})
    return None
