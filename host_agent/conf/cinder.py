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
Cinder and how long it trusts an answer (``host_agent/cinder_slo.py``).
``[cinder]`` holds the keystoneauth1 session, auth and adapter options used
to reach the Block Storage API; the session and auth options have the names
and defaults of nova.conf's ``[cinder]`` section, so nova-compute's
credentials can be copied (they must be allowed to read any project's
volumes, volume types and QoS specs: an admin role, or a role the
operator grants those three read rules).
"""

from keystoneauth1 import loading as ks_loading
from oslo_config import cfg

CINDER_GROUP = 'cinder'
SERVICE_TYPE = 'block-storage'
# Version options are left out as for [placement]: the code asks for the
# microversion it needs, and nova.conf may register [cinder] in the same
# process (the embedded default).
ADAPTER_VERSION_OPTS = ('version', 'min_version', 'max_version')

SLO_GROUP = cfg.OptGroup(
    'volume_slo', title='SLOs of attached volumes from Cinder',
    help='The agent looks up each attached disk\'s volume (its <serial>) in '
         'Cinder, then the volume type and its QoS spec, whose iosched:* '
         'keys are the SLO the slo policy defends. Needs [cinder] '
         'credentials.')

SLO_OPTS = [
    cfg.BoolOpt('from_cinder', default=False, help="""
Read attached volumes' QoS specs (their SLOs and static ceilings) from the
Cinder API.

Off by default: an agent without Cinder credentials would only log
warnings. When on, a volume in ``[host_agent] volume_qos_file`` is taken
from the file, every other disk with a ``<serial>`` from Cinder.

Related options:

* ``[cinder]``: how to reach and authenticate to Cinder.
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


def _adapter_opts():
    opts = [o for o in ks_loading.get_adapter_conf_options(
        include_deprecated=False) if o.dest not in ADAPTER_VERSION_OPTS]
    cfg.set_defaults(opts, valid_interfaces=['internal', 'public'],
                     service_type=SERVICE_TYPE)
    return opts


def register_opts(conf):
    conf.register_group(SLO_GROUP)
    conf.register_opts(SLO_OPTS, group=SLO_GROUP)
    conf.register_group(cfg.OptGroup(
        CINDER_GROUP, title='Block Storage Service Options',
        help='How the agent reaches the Cinder API (keystoneauth1).'))
    ks_loading.register_session_conf_options(conf, CINDER_GROUP)
    ks_loading.register_auth_conf_options(conf, CINDER_GROUP)
    conf.register_opts(_adapter_opts(), group=CINDER_GROUP)


def list_opts():
    return [
        (SLO_GROUP, SLO_OPTS),
        (CINDER_GROUP,
         ks_loading.get_session_conf_options()
         + ks_loading.get_auth_common_conf_options()
         + ks_loading.get_auth_plugin_conf_options('password')
         + ks_loading.get_auth_plugin_conf_options('v3password')
         + _adapter_opts()),
    ]
