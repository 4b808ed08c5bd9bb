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
"""The scheduler worker's RPC client: ask every agent for its latest report.

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
        cctxt = self.client.prepare(fanout=True, version=rpc.AGENT_VERSION)
        cctxt.cast({}, rpc.RESYNC_METHOD, requester=str(requester))
