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
