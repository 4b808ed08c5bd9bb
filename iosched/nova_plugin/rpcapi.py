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
"""The RPC client to the agents: ask every agent for its latest report
(a scheduler worker, the CLIs), or one agent for its whole report
(``iosched-status``).

The API (namespace, method, versions and their history) is
``iosched.contract.rpc``; the server is ``iosched.host_agent.reporter.resync``.
"""

import oslo_messaging

from iosched.contract import rpc


class AgentAPI(object):
    """Scheduler side: ask every agent for its latest report."""

    def __init__(self, transport, topic):
        target = oslo_messaging.Target(topic=topic, namespace=rpc.NAMESPACE,
                                       version=rpc.AGENT_VERSION)
        self.client = oslo_messaging.get_rpc_client(transport, target)

    def resync(self, requester):
        """Fanout-cast ``resync``: every listening agent re-sends its report.

        :param requester: who asks (``host:pid`` of the worker), for logs.
        """
        cctxt = self.client.prepare(fanout=True, version=rpc.RESYNC_VERSION)
        cctxt.cast({}, rpc.RESYNC_METHOD, requester=str(requester))

    def send_report(self, host, requester, reply_to):
        """Cast ``send_report`` to ``host``'s agent alone: it casts its
        whole latest report to server ``reply_to`` on the report topic.
        Only for an agent that sent a 1.3 head (it has the method).
        """
        cctxt = self.client.prepare(server=host,
                                    version=rpc.SEND_REPORT_VERSION)
        cctxt.cast({}, rpc.SEND_REPORT_METHOD, requester=str(requester),
                   reply_to=str(reply_to))
