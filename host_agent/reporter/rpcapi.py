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
"""Client side of the agent -> scheduler report API.

API version history:

* 1.0 - Initial version: ``report_host_io(report)``, a fanout cast of
  ``payload.HostReport.to_dict()`` to every scheduler worker.

The server side is ``nova_plugin.endpoint.ReportEndpoint``.
"""

import oslo_messaging

NAMESPACE = 'iosched'
VERSION = '1.0'


class ReportAPI(object):

    def __init__(self, transport, topic):
        target = oslo_messaging.Target(topic=topic, namespace=NAMESPACE,
                                       version=VERSION)
        self.client = oslo_messaging.get_rpc_client(transport, target)

    def report_host_io(self, report):
        """Fanout-cast a HostReport: every scheduler worker gets it."""
        cctxt = self.client.prepare(fanout=True, version='1.0')
        cctxt.cast({}, 'report_host_io', report=report.to_dict())
