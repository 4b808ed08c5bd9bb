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
"""Options of the iosched Nova plugin, in the ``[iosched]`` group.

The plugin runs inside nova-scheduler, so its options live in nova.conf::

    [iosched]
    listen_for_reports = true
    report_topic = iosched-reports
    report_ttl_intervals = 3.0
    missing_report_policy = pass
    missing_report_weight = lowest
    max_io_vcpus_per_pcpu = 1.0
    io_strength_weight_multiplier = 1.0

``list_opts()`` feeds oslo-config-generator (entry point
``oslo.config.opts: nova_plugin = nova_plugin.conf:list_opts``).
This module imports oslo.config (and ``iosched.contract.opt_types``, which
imports only oslo.config), never nova.
"""

from oslo_config import cfg

from iosched.contract import opt_types

GROUP = 'iosched'

iosched_group = cfg.OptGroup(
    GROUP,
    title='iosched Nova plugin options',
    help="""
Options of the iosched filter (``IoDensityFilter``), weigher
(``IoStrengthWeigher``) and the report listener that feeds them with the
``HostReport`` of every compute host.
""")

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

When enabled, the first use of ``IoDensityFilter`` or ``IoStrengthWeigher``
in a scheduler worker process starts an oslo.messaging server on
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
    cfg.FloatOpt('slo_capacity_fraction',
        default=1.0,
        min=0.0,
        max=1.0,
        help="""
Share of a host's measured disk capacity that SLO floors may reserve.

``SloCapacityFilter`` rejects a host if the throughput floors B
(``iosched:min_iops``) of the SLO volumes already attached there (the
agent's ``disk.reserved_iops``), plus the request's, would exceed this
fraction of the host's ``disk.capacity_iops`` (``[host_agent]
disk_capacity_iops`` on the compute node). A host whose capacity is unknown
(0) is handled like a host without a fresh report.

Possible values:

* A fraction from 0 to 1; 1 (default) lets floors fill the measured
  capacity, 0 admits no SLO volume.

Related options:

* ``missing_report_policy``
* ``[filter_scheduler] enabled_filters`` must list ``SloCapacityFilter``.
"""),
    cfg.StrOpt('slo_lookup_failure_policy',
        default='pass',
        choices=[
            ('pass', 'A request whose SLO floors cannot be read passes '
                     '(logged at WARNING)'),
            ('reject', 'A request whose SLO floors cannot be read is '
                       'rejected by every host'),
        ],
        help="""
What ``SloCapacityFilter`` does when it cannot read a request's SLO floors.

The filter reads the request's block device mappings (the BuildRequest, or
the instance's mappings in its cell) and asks Cinder for the volume types
and their QoS specs. When that fails (Cinder unreachable, a volume or type
not found, a malformed ``iosched:min_iops``), ``pass`` places the request as
if it had no SLO volume and logs a WARNING; ``reject`` lets no host take it
(the server goes to ERROR with NoValidHost).

Possible values:

* ``pass`` (default)
* ``reject``

Related options:

* ``[cinder]`` authentication options: the filter reads volume types and
  QoS specs with Nova's admin credentials for Cinder.
"""),
    cfg.IntOpt('slo_cache_seconds',
        default=60,
        min=0,
        help="""
Seconds a scheduler worker keeps what it read from Cinder.

``SloCapacityFilter`` caches the throughput floor of each volume type and
the floors of each request, so one scheduling request asks Cinder once,
not once per host. A change of a type's QoS spec is seen after at most
this long.

Possible values:

* A number of seconds; 0 reads again for every host.

Related options:

* ``slo_cache_max_entries``
"""),
    cfg.IntOpt('slo_cache_max_entries',
        default=1000,
        min=1,
        help="""
Maximum number of volume types and of requests each cache of
``SloCapacityFilter`` holds per scheduler worker.

Beyond it the least recently used entry is evicted.

Possible values:

* A number of entries, at least 1.

Related options:

* ``slo_cache_seconds``
"""),
]


METRICS_GROUP = 'iosched_metrics'

metrics_group = cfg.OptGroup(
    METRICS_GROUP,
    title='iosched scheduler metrics',
    help="""
Prometheus counters of the plugin in each nova-scheduler worker (reports
received and dropped, hosts held and stale, rejections per filter),
served by ``nova_plugin.metrics``. Each worker process serves its own
endpoint on the first free port of ``port`` .. ``port + max_workers - 1``
(docs/metrics.md: the multi-worker scheme and a scrape configuration).
""")

METRICS_OPTS = [
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
opt_types.harden(METRICS_OPTS)


def register_opts(conf):
    """Register the ``[iosched]`` and ``[iosched_metrics]`` options on
    ``conf`` (idempotent)."""
    conf.register_group(iosched_group)
    conf.register_opts(OPTS, group=iosched_group)
    conf.register_group(metrics_group)
    conf.register_opts(METRICS_OPTS, group=metrics_group)


def list_opts():
    """oslo-config-generator hook: ``[iosched]`` and ``[iosched_metrics]``."""
    return [(GROUP, OPTS), (METRICS_GROUP, METRICS_OPTS)]
