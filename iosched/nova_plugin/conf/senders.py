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
"""``[iosched]`` options on who may send a report and what it may claim: the
sender binding (signed reports, the master key) and the clock skew a
report's timestamp may have.
"""

from oslo_config import cfg

from iosched.contract import opt_types
from iosched.nova_plugin import conf as plugin_conf

OPTS = [
    cfg.StrOpt('report_auth',
        default='none',
        choices=[
            ('none', 'Accept any well-formed report for any host (a '
                     'WARNING at start says so).'),
            ('hmac', 'Accept a report for host X only if it is signed '
                     'with X\'s key, derived from report_master_key.'),
        ],
        help="""
How a report is bound to the host that sent it.

Any client of the message bus can cast a report. With ``none`` a report
naming host X is taken as X's. With ``hmac`` each agent signs its
reports with its host key (``[reporter] report_key`` in its config,
printed by ``iosched-report-key --host X`` from this configuration), and
a report whose signature does not match the host it names is dropped
and counted (reason ``unauthenticated``).

Possible values:

* ``none`` (default, for upgrades): trust the bus; a WARNING at start.
* ``hmac``: signed reports only; set ``report_master_key`` and give
  every agent its host key before switching.

Related options:

* ``report_master_key``
* ``[reporter] report_key`` in each agent's configuration.
"""),
    cfg.StrOpt('report_master_key',
        secret=True,
        help="""
The secret the host keys are derived from (``report_auth = hmac``).
The same on every scheduler node; never on compute nodes.

Possible values:

* At least 32 characters, e.g. the output of ``openssl rand -hex 32``.

Related options:

* ``report_auth``
"""),
    cfg.FloatOpt('report_max_clock_skew',
        default=300.0,
        min=0.0,
        help="""
Seconds a report's own timestamp may be ahead of this scheduler's clock.

Reports of one host are ordered by the time the agent measured them, so
that a late copy never replaces a newer report. A report stamped further
in the future than this is dropped (reason ``future``): it would
otherwise hide the host's genuine reports until that time.

Possible values:

* Seconds; keep it above the clocks' worst disagreement (NTP keeps
  them within a second).

Related options:

* ``report_ttl_intervals``: a stale report is replaced by any newer one.
* ``report_max_age``: how far behind a report's timestamp may be.
"""),
    cfg.FloatOpt('report_max_age',
        default=0.0,
        min=0.0,
        help="""
Seconds a report's own timestamp may be behind this scheduler's clock.

A signed report captured off the message bus stays validly signed: re-sent
later, it would make its host look alive with old figures. A worker
refuses any report older than the newest one it accepted from the host
(also once that one is stale), and any report older than this bound
(reason ``too_old``), the only protection in a worker that holds nothing
of the host yet (just started, or the host was evicted).

The default, 0, is each report's own time to live plus the clock skew:
``report_ttl_intervals`` x its ``report_interval`` +
``report_max_clock_skew`` (3 x 10 s + 300 s = 330 s for the agent's
default interval). A genuine report is younger: it is sent when measured,
and a resync answer is the agent's latest report, at most one interval
old; an agent whose clock is behind by less than the skew still gets in.
An older report would say nothing the filters could still trust, so a
replay can keep a silent host schedulable for at most this bound plus one
time to live.

Possible values:

* 0 (default): per report, as above.
* Seconds: one bound for every host; keep it above the longest report
  interval of any agent plus the clocks' disagreement, or that agent's
  reports (and resync answers) are refused.

Related options:

* ``report_max_clock_skew``, ``report_ttl_intervals``
* ``[host_agent] tick_interval`` x ``report_every_ticks`` in the agents'
  configuration: their report interval.
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
