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
"""The two iosched RPC APIs: namespace, methods, versions and their history.

Standard library only. The clients are
``iosched.host_agent.reporter.rpcapi.ReportAPI`` (agent -> schedulers) and
``iosched.nova_plugin.rpcapi.AgentAPI`` (scheduler worker
-> agents); the servers are ``iosched.nova_plugin.endpoint.ReportEndpoint`` and
``iosched.host_agent.reporter.resync.ResyncEndpoint``. Both sides take their
oslo.messaging ``Target`` figures from here.

Agent -> schedulers, on ``[reporter] topic`` (``[iosched] report_topic``),
a fanout cast to every scheduler worker. API version history:

* 1.0 - Initial version: ``report_host_io(report)``, a fanout cast of
  ``payload.HostReport.to_dict()`` to every scheduler worker.
* 1.1 - ``report_host_io(report, signature)``: the report signed with the
  host's key (``signature``); sent only by an agent that has a
  ``[reporter] report_key``, so schedulers must be upgraded first.
* 1.2 - ``signature`` in scheme ``hmac-sha256-v2``
  (``iosched.contract.signature``): the per-vCPU records and decisions
  covered by their digest, so a scheduler checks it without re-encoding
  them. Sent by a signing agent; schedulers must be upgraded first.

Scheduler worker -> agents, on ``[iosched] agents_topic``
(``[reporter] resync_topic``), a fanout cast to every agent.
API version history:

* 1.0 - Initial version: ``resync(requester)``, a fanout cast a worker
  sends once its report listener is up; every agent re-sends its latest
  report (at most one re-send per ``[reporter] resync_min_interval``).
  Agents without the server never answer.
"""

#: oslo.messaging namespace of both APIs.
NAMESPACE = 'iosched'

#: Report API (agent -> schedulers): the newest version a server accepts.
REPORT_VERSION = '1.2'
#: what an agent without a report key casts (unsigned).
REPORT_VERSION_UNSIGNED = '1.0'
#: what a signing agent casts (signature scheme v2).
REPORT_VERSION_SIGNED = '1.2'
#: the report method's name.
REPORT_METHOD = 'report_host_io'

#: Agent API (scheduler worker -> agents).
AGENT_VERSION = '1.0'
#: the resync method's name.
RESYNC_METHOD = 'resync'
