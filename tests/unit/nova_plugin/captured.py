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
"""Signed reports as captured off the bus: what the agent's own client
(``iosched.host_agent.reporter.rpcapi.ReportAPI``) casts, kept as sent.

``capture(report, master)`` runs the agent's real signing path on a
``HostReport`` and returns the ``report``/``signature`` arguments of its
cast, which a test (an attacker) re-sends as they are, later, to a
``ReportEndpoint`` or over a real broker.
"""

import json

from oslo_config import cfg
import oslo_messaging

from iosched.contract import payload
from iosched.contract import payload_sections
from iosched.contract import signature
from iosched.host_agent.reporter import rpcapi

MASTER = 'feedc0de' * 8
DAY = 86400.0


class _Recorder(object):
    """Stands for the oslo.messaging client: keeps each cast's kwargs."""

    def __init__(self):
        self.casts = []

    def can_send_version(self, version):
        return True                       # no [reporter] version_cap

    def prepare(self, **kwargs):
        return self

    def cast(self, ctxt, method, **kwargs):
        # as the broker carries it: JSON, decoded on the other side
        self.casts.append(json.loads(json.dumps(kwargs)))


_TRANSPORT = []


def agent_client(host, master=MASTER):
    """The agent's ReportAPI for ``host`` (its real key), recording."""
    if not _TRANSPORT:
        _TRANSPORT.append(oslo_messaging.get_rpc_transport(
            cfg.CONF, url='fake:/'))
    api = rpcapi.ReportAPI(_TRANSPORT[0], 'iosched-reports',
                           key=signature.derive_host_key(master, host))
    api.client = _Recorder()
    return api


def report(host, ts, seq, report_interval=10.0, pcpus=8, vcpus=4):
    """A HostReport of ``host`` measured at ``ts`` with ``vcpus`` records."""
    records = tuple(payload_sections.VcpuEntry(
        instance_uuid='00000000-0000-0000-0000-%012d' % (i // 2),
        vcpu=i % 2, pcpu=i % pcpus, io_strength=0.25, klass='io',
        run_share=0.5) for i in range(vcpus))
    return payload.HostReport(
        host=host, ts=ts, seq=seq, report_interval=report_interval,
        pcpus=pcpus, vcpus=records, io_vcpus=vcpus,
        io_strength_total=0.25 * vcpus,
        io_strength_per_pcpu=0.25 * vcpus / pcpus)


def capture(host, ts, seq, master=MASTER, whole=False, **kwargs):
    """``{'report': ..., 'signature': ..., 'tail_counts': ...}`` as the
    agent of ``host`` fanout-cast its report measured at ``ts`` (RPC 1.3,
    the head); ``whole``: ``{'report', 'signature'}`` of the whole report,
    as it casts it to a reader that asks (and agents before 1.3 did).
    """
    api = agent_client(host, master)
    if whole:
        api.send_whole(report(host, ts, seq, **kwargs), 'reader')
    else:
        api.report_host_io(report(host, ts, seq, **kwargs))
    (sent,) = api.client.casts
    assert sent['signature'].startswith(signature.SCHEME_V2 + ':')
    return sent
