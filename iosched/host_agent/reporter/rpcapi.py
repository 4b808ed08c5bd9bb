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
"""The agent's RPC client: cast HostReports to every scheduler worker.

The API (namespace, method, versions and their history) is
``iosched.contract.rpc``; the server is ``iosched.nova_plugin.endpoint``.
Every report is fanout-cast as its head (RPC 1.3: the report without the
per-vCPU records and decisions, with their counts), which is all a
scheduler keeps; ``send_whole`` casts the whole report to one reader
(``iosched-status``, through the agent's ``send_report`` server).
"""

import oslo_messaging

from iosched.contract import rpc
from iosched.contract import signature as report_signature


class ReportAPI(object):
    """Agent side: cast HostReports to every scheduler worker."""

    def __init__(self, transport, topic, key=None, retry=None,
                 version_cap=None):
        """``key``: this host's report key (hex), or None to send unsigned.
        ``retry``: oslo.messaging's connection retries per cast (None:
        forever, blocking the caller while the broker is down; 1: one
        reconnection, then fail, for ``sender.BackgroundSender``; 0 never
        revives a closed pooled connection). ``version_cap``: the highest
        RPC version to cast (``[reporter] version_cap``); below 1.3 every
        scheduler gets the whole report, as before heads.
        """
        target = oslo_messaging.Target(topic=topic, namespace=rpc.NAMESPACE,
                                       version=rpc.REPORT_VERSION)
        self.client = oslo_messaging.get_rpc_client(transport, target,
                                                    version_cap=version_cap)
        self.key = key or None
        self.retry = retry

    def _signed(self, data):
        if self.key is None:
            return None
        return report_signature.sign(data, self.key,
                                     scheme=report_signature.SCHEME_V2)

    def report_host_io(self, report):
        """Fanout-cast a HostReport's head: every scheduler worker gets it.

        The signature (v2) is the whole report's: it covers the tail by
        its digest, so it verifies the head with ``tail_counts``.
        """
        if not self.client.can_send_version(rpc.REPORT_VERSION_HEAD):
            self.send_whole(report, fanout=True)
            return
        data = report.to_dict()
        head, counts = report_signature.split(data)
        kwargs = {'report': head, rpc.TAIL_COUNTS_ARG: counts}
        signature = self._signed(data)
        if signature is not None:
            kwargs['signature'] = signature
        cctxt = self.client.prepare(fanout=True,
                                    version=rpc.REPORT_VERSION_HEAD,
                                    retry=self.retry)
        cctxt.cast({}, rpc.REPORT_METHOD, **kwargs)

    def send_whole(self, report, server=None, fanout=False):
        """Cast the whole HostReport (vCPU records, decisions) to one
        listener, ``server`` on this topic, or with ``fanout`` to every
        scheduler (an agent capped below 1.3): RPC 1.0 unsigned, 1.2
        signed, as agents sent every report before 1.3. A cap of 1.0 sends
        unsigned: a 1.0 server takes no signature.
        """
        data = report.to_dict()
        signature = self._signed(data)
        where = {'fanout': True} if fanout else {'server': server}
        if signature is None or not self.client.can_send_version(
                rpc.REPORT_VERSION_SIGNED):
            cctxt = self.client.prepare(
                version=rpc.REPORT_VERSION_UNSIGNED, retry=self.retry,
                **where)
            cctxt.cast({}, rpc.REPORT_METHOD, report=data)
            return
        cctxt = self.client.prepare(version=rpc.REPORT_VERSION_SIGNED,
                                    retry=self.retry, **where)
        cctxt.cast({}, rpc.REPORT_METHOD, report=data, signature=signature)
