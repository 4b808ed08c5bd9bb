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
"""The agent's resync server: re-send the latest report when asked.

A scheduler worker whose report listener has just started fanout-casts
``resync(requester)`` to ``[reporter] resync_topic`` (client:
``rpcapi.AgentAPI``; API version history there). ``ResyncEndpoint``
answers by calling ``Agent.resend_last_report()``, coalesced: at most one
re-send per ``[reporter] resync_min_interval`` (1 s) however many workers
ask. A request inside the interval is not dropped (that worker may have
bound its queue after the previous re-send) but answered by one deferred
re-send at the end of the interval, shared by every request meanwhile.

``send_report(requester, reply_to)`` (Agent API 1.1, a cast to this agent
alone) asks for the latest *whole* report, per-vCPU records and decisions
included, which the fanout no longer carries (RPC 1.3 heads):
``iosched-status`` sends it on each head it hears and listens as server
``reply_to`` on the report topic. The agent casts the report there only
(``ReportAPI.send_whole``), at most once per ``reply_to`` per
``resync_min_interval`` (a repeat inside it is dropped: that reader
has it) and to at most ``MAX_WHOLE_PER_INTERVAL`` readers per interval.

``ResyncService`` runs the RPC server. ``start()`` returns at once: the
server connects in a thread, so a broker that is down never holds up the
agent's control loop (oslo.messaging retries the connection by itself).
``stop()`` stops the server and cancels a pending re-send (on SIGTERM).
"""

import threading
import time

from oslo_log import log as logging
import oslo_messaging

from iosched.contract import rpc

LOG = logging.getLogger(__name__)


def _timer(delay, fn):
    t = threading.Timer(delay, fn)
    t.daemon = True
    t.start()
    return t


class Coalescer(object):
    """Call ``fn`` at most once per ``min_interval`` seconds.

    ``request()`` calls it now if the last call is at least
    ``min_interval`` ago, else schedules one call at the end of the
    interval (unless one is scheduled already). ``clock`` and ``schedule``
    (``schedule(delay, fn)`` returning an object with ``cancel()``) are
    injectable for tests.
    """

    def __init__(self, fn, min_interval=1.0, clock=time.monotonic,
                 schedule=_timer):
        self.fn = fn
        self.min_interval = float(min_interval)
        self._clock = clock
        self._schedule = schedule
        self._lock = threading.Lock()
        self._last = None
        self._pending = None
        self._stopped = False
        self.counts = {'requests': 0, 'sent': 0, 'coalesced': 0,
                       'failed': 0}

    def request(self):
        """Ask for a call; returns 'sent', 'scheduled' or 'coalesced'."""
        with self._lock:
            self.counts['requests'] += 1
            if self._stopped:
                self.counts['coalesced'] += 1
                return 'coalesced'
            if self._pending is not None:
                self.counts['coalesced'] += 1
                return 'coalesced'
            now = self._clock()
            wait = (0.0 if self._last is None
                    else self._last + self.min_interval - now)
            if wait > 0:
                self._pending = self._schedule(wait, self._fire)
                return 'scheduled'
            self._last = now
        self._call()
        return 'sent'

    def _fire(self):
        with self._lock:
            if self._stopped:
                return
            self._pending = None
            self._last = self._clock()
        self._call()

    def _call(self):
        try:
            self.fn()
        except Exception:
            with self._lock:
                self.counts['failed'] += 1
            LOG.exception('re-sending the latest report failed')
            return
        with self._lock:
            self.counts['sent'] += 1

    def stop(self):
        """Cancel a scheduled call; later requests do nothing."""
        with self._lock:
            self._stopped = True
            pending, self._pending = self._pending, None
        if pending is not None:
            pending.cancel()


# The readers send_report remembers (for its per-reader interval).
MAX_READERS = 256
# Whole reports sent per resync_min_interval, all readers together: a bus
# client naming a new reader each time gets no more than this.
MAX_WHOLE_PER_INTERVAL = 8


class ResyncEndpoint(object):
    """RPC endpoint: ``resync(requester)`` re-sends the agent's report;
    ``send_report(requester, reply_to)`` casts the whole one to a reader.
    """

    target = oslo_messaging.Target(namespace=rpc.NAMESPACE,
                                   version=rpc.AGENT_VERSION)

    def __init__(self, agent, min_interval=1.0, clock=time.monotonic,
                 schedule=_timer, details=None):
        """``details``: the client with ``send_whole(report, server)``
        (the agent's ``ReportAPI``; None: ``send_report`` is refused).
        """
        self.agent = agent
        self.details = details
        self.resent = 0         # reports actually re-sent
        self.whole_sent = 0     # whole reports sent to readers
        self.min_interval = float(min_interval)
        self._clock = clock
        self._readers = {}      # reply_to -> when last answered
        self._lock = threading.Lock()
        self.coalescer = Coalescer(self._resend, min_interval, clock,
                                   schedule)

    def _resend(self):
        if self.agent.resend_last_report():
            self.resent += 1
            LOG.info('re-sent report %d of %s (resync)',
                     self.agent.last_report.seq, self.agent.host)
        else:
            LOG.info('resync asked, but no report is built yet; the first '
                     'one goes out at the next report interval')

    def resync(self, ctxt, requester):
        """A scheduler worker asks for the latest report."""
        outcome = self.coalescer.request()
        LOG.debug('resync requested by %(requester)s: %(outcome)s',
                  {'requester': requester, 'outcome': outcome})

    def _due(self, reply_to):
        """True (and noted) unless ``reply_to`` was answered within
        ``min_interval``, or MAX_WHOLE_PER_INTERVAL readers were.
        """
        now = self._clock()
        with self._lock:
            last = self._readers.get(reply_to)
            if last is not None and now - last < self.min_interval:
                return False
            recent = sum(1 for t in self._readers.values()
                         if now - t < self.min_interval)
            if recent >= MAX_WHOLE_PER_INTERVAL:
                return False
            self._readers.pop(reply_to, None)
            self._readers[reply_to] = now
            while len(self._readers) > MAX_READERS:
                self._readers.pop(next(iter(self._readers)))
            return True

    def send_report(self, ctxt, requester, reply_to):
        """A reader (``iosched-status``) asks for the whole latest report,
        cast to server ``reply_to`` on the report topic.
        """
        report = self.agent.last_report
        if (self.details is None or report is None or
                not isinstance(reply_to, str) or not reply_to):
            LOG.debug('whole report asked by %(requester)s: none to send',
                      {'requester': requester})
            return
        if not self._due(reply_to):
            LOG.debug('whole report asked again by %(requester)s within '
                      '%(interval).1f s: not re-sent',
                      {'requester': requester,
                       'interval': self.min_interval})
            return
        self.details.send_whole(report, reply_to)
        self.whole_sent += 1
        LOG.info('sent whole report %(seq)d to %(reply_to)s (asked by '
                 '%(requester)s)', {'seq': report.seq, 'reply_to': reply_to,
                                    'requester': requester})


class ResyncService(object):
    """The agent's resync RPC server, started in the background.

    :param conf: ConfigOpts with ``[reporter]``.
    :param agent: the ``iosched.host_agent.agent.Agent``
    (``resend_last_report``). :param transport: the reporter's oslo.messaging
    transport.
    """

    def __init__(self, conf, agent, transport, clock=time.monotonic,
                 schedule=_timer, details=None):
        self.conf = conf
        self.agent = agent
        self.transport = transport
        self.endpoint = ResyncEndpoint(agent,
                                       conf.reporter.resync_min_interval,
                                       clock, schedule, details=details)
        self.server = None
        self.listening = threading.Event()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = None

    def start(self):
        """Connect and serve in a thread; returns at once."""
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name='iosched-resync-server')
        self._thread.start()
        return self

    def _run(self):
        topic = self.conf.reporter.resync_topic
        target = oslo_messaging.Target(topic=topic, server=self.agent.host)
        try:
            server = oslo_messaging.get_rpc_server(
                self.transport, target, [self.endpoint],
                executor='threading',
                access_policy=oslo_messaging.DefaultRPCAccessPolicy)
            server.start()
        except Exception:
            LOG.exception('resync server not started: new scheduler workers '
                          'learn this host at its next report')
            return
        with self._lock:
            if self._stop.is_set():
                stop_now = True
            else:
                stop_now = False
                self.server = server
        if stop_now:
            server.stop()
            server.wait()
            return
        self.listening.set()
        LOG.info('answering scheduler resync requests on topic %s', topic)

    def stop(self):
        """Stop serving and cancel a pending re-send."""
        self._stop.set()
        self.endpoint.coalescer.stop()
        with self._lock:
            server, self.server = self.server, None
        if server is not None:
            server.stop()
            server.wait()
        # A thread still connecting (broker down) is a daemon: not waited
        # for; it stops the server itself if it ever starts one.
        self.listening.clear()


def start_from_conf(conf, agent, transport, details=None):
    """A started ResyncService, or None when reports or resync are off.

    ``details``: what answers ``send_report`` (the agent's ``ReportAPI``;
    default ``agent.reporter`` when it has ``send_whole``).
    """
    if agent.reporter is None or not conf.reporter.listen_for_resync:
        return None
    if details is None and hasattr(agent.reporter, 'send_whole'):
        details = agent.reporter
    return ResyncService(conf, agent, transport, details=details).start()
