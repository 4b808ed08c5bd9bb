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
"""``[iosched]`` options of the filters' and the weigher's rules and of the
report store they read: when a report is missing, what a host without one
gets, the I/O density bound, the weight multiplier, how placements since a
report count, and how many hosts a worker keeps.
"""

from oslo_config import cfg

from iosched.contract import opt_types
from iosched.nova_plugin import conf as plugin_conf

OPTS = [
    cfg.FloatOpt('report_ttl_intervals',
        default=3.0,
        min=1.0,
        help="""
Age, in report intervals, after which a host report counts as missing.

A report is stale when the scheduler has not received a newer one from the
same host for this many of the host's own ``report_interval`` seconds. A
stale report is handled like a missing one.

Possible values:

* A number of report intervals, at least 1.

Related options:

* ``missing_report_policy``
* ``missing_report_weight``
"""),
    cfg.StrOpt('missing_report_policy',
        default='pass',
        choices=[
            ('pass', 'A host without a fresh report passes the filter'),
            ('reject', 'A host without a fresh report is filtered out'),
        ],
        help="""
What ``IoDensityFilter`` and ``LsvmFilter`` do with a host that has no
fresh report.

``pass`` keeps such hosts schedulable (a broken agent does not take the
host out of the cloud); ``reject`` places requests that depend on the agent
(I/O vCPUs, or ``iosched:latency_sensitive=true``) only on hosts with a
fresh report. Other requests always pass.

Possible values:

* ``pass`` (default)
* ``reject``

Related options:

* ``report_ttl_intervals``
* ``missing_report_weight``
"""),
    cfg.StrOpt('missing_report_weight',
        default='lowest',
        choices=[
            ('lowest', 'Below every host that has a fresh report'),
            ('neutral', 'Midway between the best and the worst reported '
                        'host'),
        ],
        help="""
The ``IoStrengthWeigher`` value of a host that has no fresh report.

``lowest`` gives such a host a weight strictly below every host with a fresh
report, whatever the sign of the multiplier, without flattening the spread
among the reported hosts. ``neutral`` puts it midway between the best and
the worst reported host.

Possible values:

* ``lowest`` (default)
* ``neutral``

Related options:

* ``report_ttl_intervals``
* ``io_strength_weight_multiplier``
"""),
    cfg.FloatOpt('max_io_vcpus_per_pcpu',
        default=1.0,
        min=0.0,
        help="""
Upper bound on I/O-intensive vCPUs per pCPU after placement.

``IoDensityFilter`` rejects a host if its I/O vCPUs (reported, plus
placements made since its last report, plus the request's) divided by its
guest-usable pCPUs would exceed this bound. Requests with no I/O vCPUs
(``iosched:io_profile`` unset or ``cpu``) are never rejected.

Possible values:

* A number of vCPUs per pCPU, 0 or more; 0 admits no I/O-intensive request.

Related options:

* ``[filter_scheduler] enabled_filters`` must list ``IoDensityFilter``.
"""),
    cfg.FloatOpt('io_strength_weight_multiplier',
        default=1.0,
        help="""
I/O strength weight multiplier ratio.

The ``IoStrengthWeigher`` rates a host by the I/O strength per pCPU it would
carry after placement. Positive values prefer hosts with less I/O strength
(spread I/O-bound vCPUs across hosts); negative values pack them. The
absolute value sets how strong this weigher is relative to the others. An
aggregate's ``io_strength_weight_multiplier`` metadata overrides it.

Possible values:

* A float, the multiplier ratio for this weigher.

Related options:

* ``[filter_scheduler] weight_classes``
"""),
    cfg.StrOpt('inflight_vcpu_profile',
        default='mixed',
        choices=[
            ('mixed', 'Count them as I/O vCPUs with 0.5 I/O strength each'),
            ('io', 'Count them as I/O vCPUs with 1.0 I/O strength each '
                   '(worst case)'),
            ('cpu', 'Ignore them for I/O density and strength'),
        ],
        help="""
How the plugin counts vCPUs placed on a host since its last report whose
flavor this scheduler worker does not know.

Nova's ``HostState`` of a host grows by the flavor's vCPUs each time the
scheduler places a VM there; the plugin takes it at the first look after
each new report and counts the growth as pending placements until the next
report. Their vCPUs count as I/O vCPUs (``IoDensityFilter``) and I/O
strength (``IoStrengthWeigher``) as this option says, and as non-LSVM vCPUs
for ``LsvmFilter``; never as LSVM vCPUs.

Possible values:

* ``mixed`` (default): I/O vCPUs, 0.5 of I/O strength each.
* ``io``: I/O vCPUs, 1.0 each (the worst case).
* ``cpu``: not I/O at all.

Related options:

* ``max_io_vcpus_per_pcpu``
* ``io_strength_weight_multiplier``
"""),
    cfg.IntOpt('store_max_hosts',
        default=100000,
        min=1,
        help="""
Maximum number of hosts whose report a scheduler worker keeps.

Bounds the memory of the report store. Beyond it, the host whose report
was received longest ago *among the hosts Nova has not asked about* is
evicted; hosts this worker's filters have asked about (hosts Nova knows)
are kept, and a report from a new host that would need one of them
evicted is refused. So a flood of invented host names cannot push real
hosts out.

Possible values:

* A number of hosts, at least 1; above the number of compute hosts.

Related options:

* ``report_auth``: with ``hmac`` invented hosts cannot report at all.
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
