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
* 1.3 - ``report_host_io(report, signature=None, tail_counts=None)``: with
  ``tail_counts`` the report is its head only, without the per-vCPU
  records and the decisions (``signature.TAIL``), which no scheduler keeps;
  ``tail_counts`` gives their lengths (``{"vcpus": 32, "decisions": 50}``,
  ``signature.split``), so the store still derives the non-LSVM vCPU count
  and a v2 signature (which carries the tail's digest) still verifies.
  What every agent fanout-casts now, signed or not (1.3 alike): 1.3 KB
  instead of 20 KB per report for 32 vCPUs and 50 decisions. Whole
  reports (1.0 unsigned, 1.2 signed) still go to a reader that asks for
  them (``send_report`` below) and come from agents not yet upgraded,
  which a 1.3 server takes as before. Upgrade the schedulers (and the
  hosts running ``iosched-status``) first: a 1.2 server refuses a 1.3
  cast.

Scheduler worker -> agents, on ``[iosched] agents_topic``
(``[reporter] resync_topic``), a fanout cast to every agent.
API version history:

* 1.0 - Initial version: ``resync(requester)``, a fanout cast a worker
  sends once its report listener is up; every agent re-sends its latest
  report (at most one re-send per ``[reporter] resync_min_interval``).
  Agents without the server never answer.
* 1.1 - ``send_report(requester, reply_to)``: a cast to one agent
  (``server`` = its host), not fanout; the agent casts its latest *whole*
  report (``report_host_io`` 1.0 unsigned, 1.2 signed: vCPU records and
  decisions included) to server ``reply_to`` only, on its own
  ``[reporter] topic``: how ``iosched-status`` gets the tail the fanout
  no longer carries. Sent only to an agent whose 1.3 head it received (an
  older agent's fanout is whole already), so a 1.0 agent never gets it.
  At most one answer per ``reply_to``, and to at most 8 readers, per
  ``[reporter] resync_min_interval``.
"""

#: oslo.messaging namespace of both APIs.
NAMESPACE = 'iosched'

#: Report API (agent -> schedulers): the newest version a server accepts.
REPORT_VERSION = '1.3'
#: a whole report from an agent without a report key (unsigned).
REPORT_VERSION_UNSIGNED = '1.0'
#: a whole report from a signing agent (signature scheme v2).
REPORT_VERSION_SIGNED = '1.2'
#: what every agent fanout-casts: the head and ``tail_counts``.
REPORT_VERSION_HEAD = '1.3'
#: the report method's name.
REPORT_METHOD = 'report_host_io'
#: its argument carrying a head-only report's tail counts (1.3).
TAIL_COUNTS_ARG = 'tail_counts'

#: Agent API (scheduler worker / CLIs -> agents): the newest version.
AGENT_VERSION = '1.1'
#: what ``resync`` is cast as (understood by every agent).
RESYNC_VERSION = '1.0'
#: the resync method's name.
RESYNC_METHOD = 'resync'
#: what ``send_report`` is cast as.
SEND_REPORT_VERSION = '1.1'
#: the method asking one agent for its whole latest report.
SEND_REPORT_METHOD = 'send_report'
