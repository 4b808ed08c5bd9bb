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
"""``[iosched]`` options of ``SloCapacityFilter``: the share of a disk's
measured capacity SLO floors may take, what a failed SLO lookup does, and
the per-worker cache of those lookups.
"""

from oslo_config import cfg

from iosched.contract import opt_types
from iosched.nova_plugin import conf as plugin_conf

OPTS = [
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
    cfg.StrOpt('slo_unknown_source_policy',
        default='trust',
        choices=[
            ('trust', 'A host whose agent cannot know its SLO '
                      'reservations is judged on what it reports '
                      '(logged at WARNING once per host)'),
            ('reject', 'A host whose agent cannot know its SLO '
                       'reservations takes no SLO volume'),
        ],
        help="""
What ``SloCapacityFilter`` does with a host whose agent cannot know the
SLO floors of the volumes attached there.

An agent reports where it reads SLOs (``disk.slo_source``): ``cinder``,
``file``, ``driver`` and ``iotune`` (each volume counted at its
``<iotune>`` ceiling, an upper bound; a volume retyped in use is missed)
count the SLO volumes attached there;
``none`` (no Cinder credentials, no ``volume_qos_file`` and a driver that
reads no ``<iotune>``) and a report older than 1.5 cannot, and their
``disk.reserved_iops`` of 0 may hide attached floors. Requests without SLO
volumes are never affected.

Possible values:

* ``trust`` (default): judge such a host on its reported figures, as
  before 1.5, with one WARNING per host naming what to configure on its
  agent (a rolling upgrade keeps placing SLO volumes).
* ``reject``: such a host takes no SLO volume (its explanation says why).

Related options:

* ``slo_capacity_fraction``
* On the compute node: ``[cinder]`` credentials and ``[volume_slo]
  from_cinder`` of the host agent.
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
