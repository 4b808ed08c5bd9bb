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
"""Client sides of the two iosched RPC APIs (namespace ``iosched``).

Agent -> schedulers, on ``[reporter] topic`` (``[iosched] report_topic``),
server ``nova_plugin.endpoint.ReportEndpoint`` in every scheduler worker.
API version history:

* 1.0 - Initial version: ``report_host_io(report)``, a fanout cast of
  ``payload.HostReport.to_dict()`` to every scheduler worker.
* 1.1 - ``report_host_io(report, signature)``: the report signed with the
  host's key (``signature``); sent only by an agent that has a
  ``[reporter] report_key``, so schedulers must be upgraded first.
* 1.2 - ``signature`` in scheme ``hmac-sha256-v2``
  (``host_agent.reporter.signature``): the per-vCPU records and decisions
  covered by their digest, so a scheduler checks it without re-encoding
  them. Sent by a signing agent; schedulers must be upgraded first.

Scheduler worker -> agents, on ``[iosched] agents_topic``
(``[reporter] resync_topic``), server
``host_agent.reporter.resync.ResyncEndpoint`` in every agent.
API version history:

* 1.0 - Initial version: ``resync(requester)``, a fanout cast a worker
  sends once its report listener is up; every agent re-sends its latest
  report (at most one re-send per ``[reporter] resync_min_interval``).
  Agents without the server never answer.
"""

import oslo_messaging

from host_agent.reporter import signature as report_signature

NAMESPACE = 'iosched'
VERSION = '1.2'
AGENT_VERSION = '1.0'


class ReportAPI(object):
    """Agent side: cast HostReports to every scheduler worker."""

    def __init__(self, transport, topic, key=None, retry=None):
        """``key``: this host's report key (hex), or None to send unsigned.
        ``retry``: oslo.messaging's connection retries per cast (None:
        forever, blocking the caller while the broker is down; 1: one
        reconnection, then fail, for ``sender.BackgroundSender``; 0 never
        revives a closed pooled connection)."""
        target = oslo_messaging.Target(topic=topic, namespace=NAMESPACE,
                                       version=VERSION)
        self.client = oslo_messaging.get_rpc_client(transport, target)
        self.key = key or None
        self.retry = retry

    def report_host_io(self, report):
        """Fanout-cast a HostReport: every scheduler worker gets it."""
        data = report.to_dict()
        if self.key is None:
            cctxt = self.client.prepare(fanout=True, version='1.0',
                                        retry=self.retry)
            cctxt.cast({}, 'report_host_io', report=data)
            return
        cctxt = self.client.prepare(fanout=True, version='1.2',
                                    retry=self.retry)
        cctxt.cast({}, 'report_host_io', report=data,
                   signature=report_signature.sign(
                       data, self.key, scheme=report_signature.SCHEME_V2))


class AgentAPI(object):
    """Scheduler side: ask every agent for its latest report."""

    def __init__(self, transport, topic):
        target = oslo_messaging.Target(topic=topic, namespace=NAMESPACE,
                                       version=AGENT_VERSION)
        self.client = oslo_messaging.get_rpc_client(transport, target)

    def resync(self, requester):
        """Fanout-cast ``resync``: every listening agent re-sends its report.

        :param requester: who asks (``host:pid`` of the worker), for logs.
        """
        cctxt = self.client.prepare(fanout=True, version='1.0')
        cctxt.cast({}, 'resync', requester=str(requester))
