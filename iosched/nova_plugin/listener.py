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
"""The report listener of a scheduler worker: background start, resync.

``BackgroundListener(conf, store=..., metrics=...).start()`` never blocks:
it starts a thread (around ``endpoint.start_listener``) and returns at
once; a request sees what the store holds at that moment. The thread
checks that a broker of the transport URL accepts TCP connections before
handing over to oslo.messaging (whose rabbit driver would otherwise retry
inside ``server.start()`` and log an ERROR per attempt); while none does,
it retries with a doubling delay capped at ``[iosched]
listener_retry_interval_max`` and logs one WARNING per outage, however
many requests come meanwhile. Once the server runs, oslo.messaging
reconnects by itself after a broker restart. Once listening it serves the
worker's metrics (``SchedulerMetrics.ensure_exporter``).

Which process starts one, when (at plugin load, again in every forked
worker, again when eventlet dropped its green threads: ``lost()``) is
``iosched.nova_plugin.state``'s business: each worker's ``SchedulerState``
holds its listener.

Resync. Once its server is listening, a worker (when
``[iosched] resync_on_start`` is set) fanout-casts ``resync(requester)``
to the agents' topic (``[iosched] agents_topic``, client
``iosched.nova_plugin.rpcapi.AgentAPI``, server
``iosched.host_agent.reporter.resync``): every agent re-sends its latest report
at once, so a new worker holds every host within a second or so instead of
one report interval. Agents without the resync server (older agents, or
``[reporter] listen_for_resync = false``) never answer; their hosts appear
at their next periodic report.

No nova import: this module runs (and is tested) without Nova.
"""

import os
import socket
import sys
import threading

from oslo_config import cfg
from oslo_log import log as logging
import oslo_messaging

from iosched.nova_plugin import conf as iosched_conf
from iosched.nova_plugin import endpoint
from iosched.nova_plugin import rpcapi

LOG = logging.getLogger(__name__)

# First retry delay of the background listener; doubles up to
# [iosched] listener_retry_interval_max.
RETRY_INITIAL = 0.5
# Brokers this transport drivers name, and their default port.
_PROBED_DRIVERS = {'rabbit': 5672, 'amqp': 5672, 'kombu': 5672}
PROBE_TIMEOUT = 2.0


def request_resync(conf, transport, requester):
    """Ask every agent on ``[iosched] agents_topic`` to re-send its report."""
    iosched_conf.register_opts(conf)
    rpcapi.AgentAPI(transport, conf.iosched.agents_topic).resync(requester)
    LOG.info('Asked the iosched agents on topic %(topic)s for their latest '
             'reports (resync from %(requester)s)',
             {'topic': conf.iosched.agents_topic, 'requester': requester})


def broker_addresses(transport_url=None):
    """(host, port) of each broker in the URL; [] if not a probed driver.

    ``transport_url`` None means ``[DEFAULT] transport_url`` of ``cfg.CONF``.
    Raises ``oslo_messaging.InvalidTransportURL`` for a malformed URL.
    """
    url = oslo_messaging.TransportURL.parse(cfg.CONF, transport_url)
    port = _PROBED_DRIVERS.get(url.transport)
    if port is None:
        return []
    return [(h.hostname or 'localhost', h.port or port) for h in url.hosts]


def probe_broker(transport_url=None, timeout=PROBE_TIMEOUT):
    """None if a broker of the URL accepts a TCP connection, else why not."""
    addresses = broker_addresses(transport_url)
    errors = []
    for host, port in addresses:
        try:
            socket.create_connection((host, port), timeout=timeout).close()
            return None
        except OSError as e:
            errors.append('%s:%s: %s' % (host, port, e))
    return '; '.join(errors) or None


def backoff(initial, cap):
    """Retry delays: ``initial``, doubling, capped at ``cap``, forever."""
    delay = min(initial, cap)
    while True:
        yield delay
        delay = min(delay * 2, cap)


def _eventlet_hub():
    """The running eventlet hub if threads are green, else None."""
    patcher = sys.modules.get('eventlet.patcher')
    if patcher is None or not patcher.is_monkey_patched('thread'):
        return None
    from eventlet import hubs
    return hubs.get_hub()


class BackgroundListener(object):
    """Start a report listener in a thread, retrying while the bus is down.

    It feeds ``store`` and counts into ``metrics`` (a
    ``metrics.SchedulerMetrics``, whose endpoint it starts once listening;
    None: neither). ``state`` is ``new``, ``connecting`` (probing or
    starting the server), ``waiting`` (the broker did not answer; retrying
    after a delay), ``listening`` or ``stopped``. ``attempts``, ``outages``
    and ``resyncs`` count what the thread did; ``server`` is the
    ``oslo_messaging`` server once listening.
    """

    def __init__(self, conf, store, transport_url=None, metrics=None,
                 host=None, probe=probe_broker, start=endpoint.start_listener,
                 wait=None):
        iosched_conf.register_opts(conf)
        self.conf = conf
        self.transport_url = transport_url
        self.store = store
        self.metrics = metrics
        self.host = endpoint._server_name(conf, host)
        self.requester = '%s:%d' % (self.host, os.getpid())
        self.pid = os.getpid()
        self.state = 'new'
        self.attempts = 0
        self.outages = 0
        self.resyncs = 0
        self.last_error = None
        self.server = None
        self.began = threading.Event()
        self.listening = threading.Event()
        self._stop = threading.Event()
        self._probe = probe
        self._start = start
        self._wait = wait or self._stop.wait
        self.delays = []            # the waits between attempts, in order
        self._hub = None
        self._thread = None

    def start(self):
        """Start the thread and return at once."""
        self._hub = _eventlet_hub()
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name='iosched-report-listener')
        self._thread.start()
        return self

    def lost(self):
        """True if its green threads died with a replaced eventlet hub.

        oslo.service's eventlet launcher replaces the hub after forking a
        worker (``eventlet.hubs.use_hub()``). Green threads spawned on the
        old hub (this one, which green ``Thread.start()`` runs up to its
        first I/O, and the RPC server's) are never resumed again.
        """
        return self._hub is not None and _eventlet_hub() is not self._hub

    def _connect(self):
        """The running server, or None after logging why not."""
        self.state = 'connecting'
        self.attempts += 1
        try:
            why = self._probe(self.transport_url)
            if why is None:
                return self._start(self.conf,
                                   transport_url=self.transport_url,
                                   store=self.store, host=self.host,
                                   metrics=self.metrics)
        except Exception as e:   # a bad URL, an auth failure, ...
            why = '%s: %s' % (type(e).__name__, e)
        self.last_error = why
        return None

    def _run(self):
        self.began.set()
        delays = backoff(RETRY_INITIAL, self._max_delay())
        in_outage = False
        server = None
        while not self._stop.is_set():
            server = self._connect()
            if server is not None:
                break
            if not in_outage:
                in_outage = True
                self.outages += 1
                LOG.warning('iosched report listener: no message broker at '
                            '%(url)s (%(why)s); scheduling goes on with the '
                            'reports held (%(hosts)d hosts) and the listener '
                            'retries in the background every %(max)g s at '
                            'most', {
                                'url': self._safe_url(), 'why':
                                self.last_error, 'max': self._max_delay(),
                                'hosts': len(self.store.hosts())})
            self.state = 'waiting'
            delay = next(delays)
            self.delays.append(delay)
            self._wait(delay)
        if server is None:
            self.state = 'stopped'
            return
        if self._stop.is_set():
            self._stop_server(server)
            return
        if in_outage:
            LOG.warning('iosched report listener: broker reachable again '
                        'after %d attempts; listening', self.attempts)
        self.server = server
        self.state = 'listening'
        if self.metrics is not None:
            # [iosched_metrics]: this worker's endpoint, with its listener.
            self.metrics.ensure_exporter(self.conf)
        if self.conf.iosched.resync_on_start:
            self.resync()
        # Set last: whoever waits on ``listening`` sees the resync asked.
        self.listening.set()

    def resync(self):
        """Ask every agent for its latest report; False if that failed."""
        try:
            request_resync(self.conf, self.server.transport, self.requester)
        except Exception:
            LOG.warning('iosched report listener: resync request failed; '
                        'hosts appear at their next report', exc_info=True)
            return False
        self.resyncs += 1
        return True

    def _max_delay(self):
        return max(self.conf.iosched.listener_retry_interval_max,
                   RETRY_INITIAL)

    def _safe_url(self):
        try:
            addresses = broker_addresses(self.transport_url)
        except Exception:
            return '<invalid transport_url>'
        return ','.join('%s:%s' % a for a in addresses) or '<transport_url>'

    @staticmethod
    def _stop_server(server):
        server.stop()
        server.wait()
        server.transport.cleanup()

    def cancel(self):
        """Ask the thread to stop, without waiting: it stops retrying, and
        a server it is starting is stopped before it listens.
        """
        self._stop.set()

    def stop(self, timeout=30.0):
        """Stop retrying or listening (tests, shutdown); joins the thread."""
        self._stop.set()
        if self._thread is not None and self.began.is_set():
            self._thread.join(timeout)
        if self.server is not None:
            self._stop_server(self.server)
            self.server = None
        self.state = 'stopped'
        self.listening.clear()
