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
"""``[iosched]`` options of the report listener: the topics, when it starts,
how it retries and whether it asks the agents for a resync.
"""

from oslo_config import cfg

from iosched.contract import opt_types
from iosched.nova_plugin import conf as plugin_conf

OPTS = [
    cfg.StrOpt('report_topic',
        default='iosched-reports',
        help="""
Message topic the iosched host agents cast their reports to.

Every scheduler worker listens on this topic with a fanout consumer, so
each worker holds the latest report of every compute host.

Possible values:

* A topic name; it must match the agents' reporter topic.

Related options:

* ``[DEFAULT] transport_url``
"""),
    cfg.StrOpt('agents_topic',
        default='iosched-agents',
        help="""
Message topic the iosched host agents listen on for resync requests.

When a scheduler worker's report listener is up it fanout-casts
``resync`` to this topic, and every agent re-sends its latest report, so
a new worker holds every host at once instead of after one report
interval. Agents that do not listen never answer; their hosts appear at
their next report.

Possible values:

* A topic name; it must match the agents' ``[reporter] resync_topic``.

Related options:

* ``resync_on_start``
"""),
    cfg.BoolOpt('resync_on_start',
        default=True,
        help="""
Ask every agent for its latest report when a worker's listener starts.

Possible values:

* True (default): cast ``resync`` to ``agents_topic`` once listening.
* False: wait for the agents' periodic reports.

Related options:

* ``agents_topic``
* ``listen_for_reports``
"""),
    cfg.FloatOpt('listener_retry_interval_max',
        default=30.0,
        min=0.5,
        help="""
Longest wait, in seconds, between attempts to reach the message broker.

The report listener starts in the background and never delays a
scheduling request. While no broker of ``[DEFAULT] transport_url``
accepts a connection it retries after 0.5 s, then doubles the wait up
to this value, and logs one WARNING per outage. Meanwhile requests are
scheduled with the reports held (none, right after a worker starts).

Possible values:

* Seconds, at least 0.5.

Related options:

* ``listen_for_reports``
"""),
    cfg.BoolOpt('listen_for_reports',
        default=False,
        help="""
Start the report listener inside each nova-scheduler worker.

When enabled, loading the plugin's filters and weigher (nova-scheduler
does it when it starts) starts an oslo.messaging server on
``report_topic`` (on ``[DEFAULT] transport_url``) that feeds the worker's
report store; a forked worker starts its own. Leave it disabled when
something else feeds the store (the iosched demo, tests); then every host
counts as missing.

Possible values:

* True: listen (set this in nova.conf of nova-scheduler).
* False (default): do not listen.

Related options:

* ``report_topic``
* ``[DEFAULT] transport_url``
"""),
]

# No NaN, infinite or silently empty numbers; every refusal quotes the
# value and the accepted range.
opt_types.harden(OPTS)


def register_opts(conf):
    """Register these ``[iosched]`` options on ``conf`` (idempotent)."""
    conf.register_group(plugin_conf.iosched_group)
    conf.register_opts(OPTS, group=plugin_conf.iosched_group)


def list_opts():
    """This module's options, by group."""
    return [(plugin_conf.GROUP, OPTS)]
