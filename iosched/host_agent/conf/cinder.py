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
"""Options of the agent's Cinder lookups: ``[volume_slo]`` and ``[cinder]``.

``[volume_slo]`` says whether the agent reads attached volumes' SLOs from
Cinder and how long it trusts an answer (``iosched/host_agent/cinder_slo.py``).
``[cinder]`` holds the keystoneauth1 session, auth and adapter options used
to reach the Block Storage API; the session and auth options have the names
and defaults of nova.conf's ``[cinder]`` section, so nova-compute's
credentials can be copied (they must be allowed to read any project's
volumes, volume types and QoS specs: an admin role, or a role the
operator grants those three read rules).
"""

from oslo_config import cfg

from iosched.host_agent.conf import keystone

CINDER_GROUP = 'cinder'
SERVICE_TYPE = 'block-storage'

SLO_GROUP = cfg.OptGroup(
    'volume_slo', title='SLOs of attached volumes from Cinder',
    help='The agent looks up each attached disk\'s volume (its <serial>) in '
         'Cinder, then the volume type and its QoS spec, whose iosched:* '
         'keys are the SLO the slo policy defends. Needs [cinder] '
         'credentials.')

SLO_OPTS = [
    cfg.BoolOpt('from_cinder', default=None, help="""
Read attached volumes' QoS specs (their SLOs and static ceilings) from the
Cinder API.

On a real host this is how the agent learns a volume's SLO: Nova copies
only the front-end keys of the volume's QoS spec into the disk's
``<iotune>``, never the ``iosched:*`` keys, so the agent looks the volume
(the disk's ``<serial>``) up in Cinder, then its type and QoS spec.

Unset (default): on when ``[cinder] auth_type`` is set, off otherwise.
``true``: on (a missing ``[cinder]`` auth is then logged as a Cinder
outage); ``false``: off. Without Cinder and without ``[host_agent]
volume_qos_file`` the agent knows no SLO: the ``slo`` policy has nothing
to defend (one WARNING at start) and ``disk.reserved_iops`` counts each
volume's ceiling from ``<iotune>`` (``disk.slo_source`` = iotune in the
report). A volume in ``volume_qos_file`` is taken from the file, every
other disk with a ``<serial>`` from Cinder.

Related options:

* ``[cinder]``: how to reach and authenticate to Cinder (copy
  nova-compute's ``[cinder]`` credentials).
* ``[host_agent] volume_qos_file``
"""),
    cfg.FloatOpt('cache_ttl', default=60.0, min=1.0, help="""
Seconds an answer from Cinder is used before it is asked again. A retype
or a QoS spec change reaches the agent within this time. While Cinder
cannot be reached, the last known answer is kept (one warning per outage).
"""),
    cfg.FloatOpt('timeout', default=5.0, min=0.1, help="""
Seconds one Cinder request may take before it counts as a failure (the
agent's tick waits for it).
"""),
]


def register_opts(conf):
    conf.register_group(SLO_GROUP)
    conf.register_opts(SLO_OPTS, group=SLO_GROUP)
    keystone.register_group(
        conf, CINDER_GROUP, 'Block Storage Service Options',
        'How the agent reaches the Cinder API (keystoneauth1).',
        SERVICE_TYPE)


def list_opts():
    return [
        (SLO_GROUP, SLO_OPTS),
        (CINDER_GROUP, keystone.group_opts(SERVICE_TYPE)),
    ]
