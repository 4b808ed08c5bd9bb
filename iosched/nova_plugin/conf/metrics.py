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
"""``[iosched_metrics]``: the Prometheus endpoint of each scheduler worker
(``iosched.nova_plugin.metrics``).
"""

from oslo_config import cfg

from iosched.contract import opt_types

GROUP = 'iosched_metrics'

group = cfg.OptGroup(
    GROUP,
    title='iosched scheduler metrics',
    help="""
Prometheus counters of the plugin in each nova-scheduler worker (reports
received and dropped, hosts held and stale, rejections per filter),
served by ``iosched.nova_plugin.metrics``. Each worker process serves its own
endpoint on the first free port of ``port`` .. ``port + max_workers - 1``
(docs/metrics.md: the multi-worker scheme and a scrape configuration).
""")

OPTS = [
    cfg.BoolOpt('enabled',
        default=False,
        help="""
Serve the plugin's Prometheus metrics from every scheduler worker.

Off by default: it opens ports in nova-scheduler, which the operator
should choose (and firewall) knowingly. The agents' endpoint is on by
default.

Possible values:

* False (default): counters are kept but not served.
* True: every worker serves ``GET /metrics``.

Related options:

* ``bind_host``, ``port``, ``max_workers``
"""),
    cfg.HostAddressOpt('bind_host',
        default='127.0.0.1',
        help="""
Address the workers' metrics endpoints listen on.

Possible values:

* ``127.0.0.1`` (default), the controller's management address, or
  ``0.0.0.0``; there is no authentication: firewall the ports.

Related options:

* ``port``
"""),
    cfg.PortOpt('port',
        default=9488,
        help="""
First port of the workers' metrics endpoints.

A worker binds the first free port from ``port`` to ``port +
max_workers - 1``; scrape them all (an unused port reads as a target
that is down). 9488 follows the agent's 9487 in the exporter range of
the Prometheus project.

Possible values:

* A port number; 0 gives each worker a random free port (tests).

Related options:

* ``max_workers``, ``bind_host``
"""),
    cfg.IntOpt('max_workers',
        default=16,
        min=1,
        max=256,
        help="""
How many consecutive ports, from ``port``, the workers may take.

A worker that finds all of them taken logs an error and schedules
without metrics.

Possible values:

* At least ``[scheduler] workers`` of nova.conf.

Related options:

* ``port``
"""),
]

# No NaN, infinite or silently empty numbers; every refusal quotes the
# value and the accepted range.
opt_types.harden(OPTS)


def register_opts(conf):
    """Register ``[iosched_metrics]`` on ``conf`` (idempotent)."""
    conf.register_group(group)
    conf.register_opts(OPTS, group=group)


def list_opts():
    """This module's options, by group."""
    return [(GROUP, OPTS)]
