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
"""Options of the agent's Prometheus endpoint
(``iosched.host_agent.metrics``)::

    [metrics]
    enabled = true
    bind_host = 127.0.0.1
    port = 9487
"""

from oslo_config import cfg

GROUP = cfg.OptGroup('metrics', title='Prometheus metrics',
                     help="""
The agent's Prometheus endpoint: per-vCPU I/O strength, knobs held,
decisions per policy and rule, SLO attainment per volume, tick duration
and report age (docs/metrics.md lists every metric).
""")

OPTS = [
    cfg.BoolOpt('enabled', default=True,
                help="""
Serve Prometheus metrics over HTTP (``GET /metrics``).

On by default, like a node exporter: the endpoint listens on the loopback
address only until ``bind_host`` says otherwise, and costs nothing between
scrapes but a few dictionary updates per tick. If the port cannot be
bound the agent logs an error and regulates without metrics.

Possible values:

* True (default): serve on ``bind_host``:``port``.
* False: no endpoint, no per-tick bookkeeping.

Related options:

* ``bind_host``, ``port``
"""),
    cfg.HostAddressOpt('bind_host', default='127.0.0.1',
                       help="""
Address the metrics endpoint listens on.

Possible values:

* ``127.0.0.1`` (default): only a Prometheus (or an agent such as
  Grafana Alloy) on the compute node itself can scrape.
* The compute node's management address, for a central Prometheus; the
  endpoint has no authentication, so firewall it to the monitoring hosts.
* ``0.0.0.0`` or ``::``: every address.

Related options:

* ``port``
"""),
    cfg.PortOpt('port', default=9487,
                help="""
TCP port of the metrics endpoint.

9487 is in the range the Prometheus project keeps for exporters
(9100-9999) and no OpenStack service listens on it by default; the Nova
plugin's per-worker ports start at 9488 (``[iosched_metrics] port`` in
nova.conf), so an all-in-one node can run both. Check that no other
exporter on your nodes took it.

Possible values:

* A port number; 0 picks a free port (tests; the log line says which).

Related options:

* ``bind_host``
"""),
]


def register_opts(conf):
    conf.register_group(GROUP)
    conf.register_opts(OPTS, group=GROUP)


def list_opts():
    return [(GROUP, OPTS)]
