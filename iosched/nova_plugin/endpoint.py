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
"""The message endpoint that feeds the report store, and its RPC server.

Agents cast every report to every scheduler worker (fanout)::

    client = oslo_messaging.get_rpc_client(transport, oslo_messaging.Target(
        topic='iosched-reports', namespace='iosched', version='1.0'))
    client.prepare(fanout=True).cast({}, 'report_host_io',
                                     report=report.to_dict())

and each worker runs one RPC server on that topic whose
``ReportEndpoint.report_host_io`` stores the report. A malformed report is
dropped and logged at WARNING with the reason the parser gives, naming the
field; so is an implausible one (``implausible``: beyond
``iosched.contract.payload_bounds``, checked first, before the signature).
A report the store refuses as replayed (``replayed``: not newer than the
newest one taken from its host, which is stale) or too old (``too_old``:
``[iosched] report_max_age``) is logged at WARNING with the host and the
report's age (see ``iosched.nova_plugin.store``).

Parsed once, only what is kept: a store that keeps slim entries (the
scheduler's, ``keeps_records`` False) gets ``HostReport.head_from_dict``,
which checks every field the filters, the weigher and the CLIs read, with
``from_dict``'s messages, and counts the per-vCPU records without parsing
them or the decisions; any other store (``iosched-status``'s) gets the
whole ``from_dict``.

Head-only reports (RPC 1.3, what agents fanout-cast now): ``report`` is
the head and ``tail_counts`` the tail's lengths; the signature is checked
over the head and the counts (``signature.verify(..., counts=...)``), the
head parsed with ``head_from_dict(report, counts)`` whatever the store.
The store's ``admit(report, tail_counts)`` learns which it got (None: a
whole report), so ``iosched-status`` can ask the agent for the rest.

Sender binding (``[iosched] report_auth``): with ``hmac`` a report naming
host X is taken only with a valid signature under X's key
(``iosched.contract.signature``); anything else is dropped before it is
parsed, as ``unauthenticated``, and logged at WARNING. With ``none`` (the
default, for upgrades) any report is taken as its named host's; the
listener says so at WARNING when it starts.

``start_listener(conf, store, ...)`` starts that server synchronously and
returns the ``oslo_messaging`` server (tests, the demo, a benchmark, the
CLIs). Inside nova-scheduler each worker's ``iosched.nova_plugin.state.
SchedulerState`` runs it through ``iosched.nova_plugin.listener.
BackgroundListener``: in a background thread, in every forked worker,
with a resync request to the agents. Counts go to ``metrics`` (a
``metrics.SchedulerMetrics``) when one is given.

API version history of the ``iosched`` namespace on ``report_topic``
(this server's):

* 1.0 - ``report_host_io(report)``
* 1.1 - ``report_host_io(report, signature=None)``: a signed report
* 1.2 - ``signature`` may also be ``hmac-sha256-v2`` (the tail of per-vCPU
  records and decisions covered by its digest), which a scheduler checks
  without re-encoding the whole report; 1.1 signatures are still taken.
  Agents send 1.2 when they sign: upgrade the schedulers first (a 1.1
  server refuses a 1.2 cast), as for 1.1.
* 1.3 - ``report_host_io(report, signature=None, tail_counts=None)``: with
  ``tail_counts``, ``report`` is the head only (``iosched.contract.rpc``).
  Whole reports (1.0 - 1.2, from agents not yet upgraded) are still taken.

No nova import: this module runs (and is tested) without Nova.
"""

import socket
import threading

from oslo_config import cfg
from oslo_log import log as logging
import oslo_messaging

from iosched.contract import payload
from iosched.contract import payload_bounds
from iosched.contract import payload_check
from iosched.contract import rpc
from iosched.contract import signature as report_signature
from iosched.nova_plugin import conf as iosched_conf
from iosched.nova_plugin import metrics
from iosched.nova_plugin import store as report_store

LOG = logging.getLogger(__name__)

AUTH_NONE = 'none'
AUTH_HMAC = 'hmac'


class ReportEndpoint(object):
    """RPC endpoint: validate a HostReport dict and store it."""

    target = oslo_messaging.Target(namespace=rpc.NAMESPACE,
                                   version=rpc.REPORT_VERSION)

    def __init__(self, store, auth=AUTH_NONE, master_key=None, metrics=None):
        """``auth``: ``none`` or ``hmac`` (then ``master_key`` is needed);
        ``metrics``: the ``metrics.SchedulerMetrics`` to count into.
        """
        if auth not in (AUTH_NONE, AUTH_HMAC):
            raise ValueError('[iosched] report_auth must be none or hmac; '
                             'got %r' % (auth,))
        if auth == AUTH_HMAC:
            try:
                master_key = report_signature.check_master_key(master_key)
            except report_signature.BadKey as e:
                raise ValueError('[iosched] report_auth = hmac: %s' % e)
        self.store = store
        self.metrics = metrics
        # Parse (and check the signature of) only what the store keeps.
        self._whole = getattr(store, 'keeps_records', True)
        self._parse = (payload.HostReport.from_dict if self._whole
                       else payload.HostReport.head_from_dict)
        self.auth = auth
        self._master_key = master_key
        self.counts = {'stored': 0, 'ignored': 0, 'dropped': 0}
        self._lock = threading.Lock()

    def _count(self, what):
        with self._lock:
            self.counts[what] += 1

    def _note(self, dropped=None):
        if self.metrics is not None:
            self.metrics.note_report(dropped)

    def _drop(self, report, reason, why, counted=False):
        self._count('dropped')
        if not counted:     # the store counts what it refused itself
            self.store.note_dropped()
        self._note(reason)
        host = report.get('host') if isinstance(report, dict) else None
        LOG.warning('Dropped a host report claiming to be from %(host)s: '
                    '%(why)s', {'host': (host[:payload_bounds.MAX_HOST_CHARS]
                                         if isinstance(host, str)
                                         else '<unknown>'), 'why': why})

    def _malformed(self, report, error):
        self._count('dropped')
        self.store.note_dropped()
        self._note(metrics.drop_reason(error))
        host = report.get('host') if isinstance(report, dict) else None
        LOG.warning('Dropped %(what)s host report from %(host)s: '
                    '%(reason)s', {
                        'what': ('an implausible' if isinstance(
                            error, payload_check.Implausible)
                            else 'a malformed'),
                        'host': (host[:payload_bounds.MAX_HOST_CHARS]
                                 if isinstance(host, str) and host
                                 else '<unknown>'),
                        'reason': error})

    def report_host_io(self, ctxt, report, signature=None,
                       tail_counts=None):
        """Take one report (a dict, ``HostReport.to_dict()``, or with
        ``tail_counts`` its head, RPC 1.3).

        Cheapest refusals first: the bounds (a few lengths), then the
        signature (the head's HMAC), then the parse, then the store's
        order, age and replay rules.
        """
        counts = tail_counts if isinstance(tail_counts, dict) else None
        try:
            payload_bounds.check(report, counts)
        except payload_check.Implausible as e:
            self._malformed(report, e)
            return
        if self.auth == AUTH_HMAC:
            why = report_signature.why_rejected(report, signature,
                                                self._master_key,
                                                whole=self._whole,
                                                counts=counts)
            if why is not None:
                self._drop(report, metrics.DROP_UNAUTHENTICATED, why)
                return
        try:
            parsed = (self._parse(report) if tail_counts is None else
                      payload.HostReport.head_from_dict(report, tail_counts))
        except payload_check.PayloadError as e:
            self._malformed(report, e)
            return
        admitted = self.store.admit(parsed, tail_counts)
        if admitted == report_store.FUTURE:
            self._drop(report, metrics.DROP_FUTURE,
                       'stamped %.0f s ahead of this scheduler\'s clock '
                       '(more than [iosched] report_max_clock_skew)' % (
                           parsed.ts - self.store.now()), counted=True)
            return
        if admitted == report_store.TOO_OLD:
            self._drop(report, metrics.DROP_TOO_OLD,
                       'stamped %.0f s ago, more than the %.0f s this '
                       'scheduler accepts ([iosched] report_max_age): a '
                       'replayed copy, or the agent\'s clock is behind' % (
                           self.store.now() - parsed.ts,
                           self.store.age_limit(parsed)), counted=True)
            return
        if admitted == report_store.REPLAYED:
            held = self.store.high_water(parsed.host) or (parsed.ts,
                                                          parsed.seq)
            self._drop(report, metrics.DROP_REPLAYED,
                       'stamped %.0f s ago (seq %d), not newer than the '
                       'newest report taken from this host (seq %d, %.0f s '
                       'ago), which is stale: a replayed copy, or the '
                       'agent\'s clock stepped back (refused until it '
                       'passes that report\'s time)' % (
                           self.store.now() - parsed.ts, parsed.seq,
                           held[1], self.store.now() - held[0]),
                       counted=True)
            return
        if admitted == report_store.REFUSED:
            self._drop(report, metrics.DROP_REFUSED,
                       'a new host the filters never asked about, and the '
                       'store is full of hosts they did ([iosched] '
                       'store_max_hosts)', counted=True)
            return
        if admitted == report_store.STORED:
            self._note()
            self._count('stored')
            LOG.debug('Stored the report of %(host)s (seq %(seq)d, '
                      'ts %(ts).3f): %(io_vcpus)d I/O vCPUs, I/O strength '
                      '%(strength).3f on %(pcpus)d pCPUs',
                      {'host': parsed.host, 'seq': parsed.seq,
                       'ts': parsed.ts, 'io_vcpus': parsed.io_vcpus,
                       'strength': parsed.io_strength_total,
                       'pcpus': parsed.pcpus})
        else:
            self._note(metrics.DROP_OUT_OF_ORDER)
            self._count('ignored')
            LOG.debug('Ignored an out-of-order report of %(host)s '
                      '(seq %(seq)d, ts %(ts).3f)',
                      {'host': parsed.host, 'seq': parsed.seq,
                       'ts': parsed.ts})


def _server_name(conf, host):
    if host is None:
        host = getattr(conf, 'host', None) or socket.gethostname()
    return host


def start_listener(conf, store, transport_url=None, host=None,
                   transport=None, metrics=None):
    """Start and return an RPC server that feeds ``store``.

    Synchronous: with a broker down, oslo.messaging's rabbit driver retries
    inside this call. A scheduler worker runs it through
    ``listener.BackgroundListener``.

    :param conf: the ConfigOpts holding ``[iosched]`` (registered here).
    :param store: the ReportStore to feed.
    :param transport_url: overrides ``[DEFAULT] transport_url``; the
        transport is always built on the global ``cfg.CONF``, which is the
        only ConfigOpts oslo.messaging 18 fully registers its options on.
    :param host: the server name; default ``conf.host`` (Nova's) or the
        host name. Fanout casts reach every server whatever its name.
    :param transport: an existing transport to listen on instead (an
        in-process ``fake:/`` bus is private to its transport object, so a
        demo shares one between the agents' clients and this server).
    :param metrics: the ``metrics.SchedulerMetrics`` counting the reports
        (None: not counted).

    Stop it with ``server.stop(); server.wait()``; the transport is
    ``server.transport``.
    """
    iosched_conf.register_opts(conf)
    host = _server_name(conf, host)
    if transport is None:
        transport = oslo_messaging.get_rpc_transport(cfg.CONF,
                                                     url=transport_url)
    target = oslo_messaging.Target(topic=conf.iosched.report_topic,
                                   server=host)
    # NOTE(iosched): oslo.messaging 18 deprecates the executor argument
    # (threading is the future only model), but without it a process that
    # eventlet monkey-patched gets the deprecated eventlet executor. Drop the
    # argument once oslo.messaging removes the eventlet executor.
    endpoint = ReportEndpoint(store, auth=conf.iosched.report_auth,
                              master_key=conf.iosched.report_master_key,
                              metrics=metrics)
    if endpoint.auth == AUTH_NONE:
        # once per listener: a worker starts one (again only when eventlet
        # dropped the first with its hub)
        LOG.warning('[iosched] report_auth = none: any client of the '
                    'message bus can report for any host; see the operator '
                    'guide, "Signed reports"')
    server = oslo_messaging.get_rpc_server(
        transport, target, [endpoint], executor='threading',
        access_policy=oslo_messaging.DefaultRPCAccessPolicy)
    server.start()
    LOG.info('Listening for iosched host reports on topic %(topic)s as '
             '%(server)s', {'topic': target.topic, 'server': host})
    return server
