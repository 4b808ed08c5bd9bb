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
"""Options of the LSVM placement trait: ``[lsvm_trait]`` and ``[placement]``.

``[lsvm_trait]`` says whether and what the agent publishes on its compute
node's resource provider (``iosched/host_agent/placement_trait.py``).
``[placement]`` holds the keystoneauth1 session, auth and adapter options
used to reach the Placement API (by the trait publisher and by the I/O
inventory publisher, ``[io_inventory]``), with the same names and defaults
as the ``[placement]`` section of nova.conf (a nova-compute's section can
be copied). The adapter's ``version``/``min_version``/``max_version``
options are not registered: the code knows the microversions it needs (1.6
for traits, 1.26 for inventories), and nova.conf registers placeholders of
its own under those names, so leaving them out lets the agent's and Nova's
options live in one process (the embedded default imports both).
"""

import re

from oslo_config import cfg
from oslo_config import types

from iosched.host_agent.conf import keystone

PLACEMENT_GROUP = 'placement'
SERVICE_TYPE = 'placement'
ADAPTER_VERSION_OPTS = keystone.ADAPTER_VERSION_OPTS

# Placement's own rule for custom trait names (it answers 400 otherwise).
CUSTOM_TRAIT_RE = re.compile(r'^CUSTOM_[A-Z0-9_]+$')
TRAIT_NAME_MAX = 255
DEFAULT_TRAIT = 'CUSTOM_IOSCHED_LSVM'


def validate_trait_name(value):
    """Return ``value`` if Placement accepts it as a custom trait name.

    Raises ValueError naming the value and what is accepted.
    """
    if (not isinstance(value, str) or len(value) > TRAIT_NAME_MAX
            or not CUSTOM_TRAIT_RE.match(value)):
        raise ValueError(
            'invalid trait name %r: accepted is a custom trait name, '
            '"CUSTOM_" followed by upper-case letters A-Z, digits 0-9 and '
            '"_", at most %d characters (e.g. %s)'
            % (value if len(str(value)) <= 300 else '%s...(%d characters)'
               % (str(value)[:300], len(str(value))),
               TRAIT_NAME_MAX, DEFAULT_TRAIT))
    return value


class TraitName(types.String):
    """A custom trait name (oslo.config type, checked when the file loads)."""

    def __init__(self):
        super().__init__(type_name='custom trait name')

    def __call__(self, value):
        return validate_trait_name(super().__call__(value))


TRAIT_GROUP = cfg.OptGroup(
    'lsvm_trait', title='LSVM placement trait',
    help="""
The agent can mark its compute node's resource provider in Placement with a
custom trait while this host can give latency-sensitive VMs (LSVMs) short
slices (the vslicer policy runs), so that LSVM flavors can require it
(flavor extra spec ``trait:CUSTOM_IOSCHED_LSVM=required``).
Needs the ``[placement]`` credentials.
""")

TRAIT_OPTS = [
    cfg.BoolOpt('publish', default=False,
                help="""
Publish the trait on this host's compute node resource provider.

Off by default: an agent without Placement credentials would only log
warnings. When on, the trait is added while the agent's reports say the
host supports LSVMs (the vslicer policy is enabled) and removed when they
say it does not. It is left in place when the agent stops cleanly (the
host's capability does not go away with the agent); remove it by hand with
``openstack resource provider trait`` if the host is retired from LSVMs.

Related options:

* ``[placement]``: how to reach and authenticate to Placement.
"""),
    cfg.Opt('trait_name', type=TraitName(), default=DEFAULT_TRAIT,
            help="""
Name of the trait. The agent creates it in Placement if it is missing.

Possible values:

* A custom trait name: ``CUSTOM_`` followed by upper-case letters, digits
  and ``_`` (Placement's rule), at most 255 characters.
"""),
    cfg.StrOpt('provider_name',
               help="""
Name of this host's compute node resource provider in Placement.

Nova names it after the compute node (``openstack hypervisor list`` shows
it, as "Hypervisor Hostname"). With the libvirt driver that is libvirt's
host name, often the fully qualified one, which can differ from
``[DEFAULT] host`` of nova-compute.

Possible values:

* A resource provider name. Empty (default) means the agent's host name
  (``[host_agent] host``, or this machine's hostname).
"""),
    cfg.FloatOpt('recheck_interval', default=300.0, min=1.0,
                 help="""
Seconds between checks that the trait is still as wanted once it was set
(someone may have removed it by hand). A change in the reports is acted on
at once, whatever this is.
"""),
    cfg.FloatOpt('retry_initial_interval', default=2.0, min=0.1,
                 help="""
Seconds to wait before the first retry after a failed attempt (Placement
unreachable, credentials refused, or the resource provider not created yet
because nova-compute has not started). Each further failure doubles the
wait, up to ``retry_max_interval``.
"""),
    cfg.FloatOpt('retry_max_interval', default=300.0, min=1.0,
                 help="""
Longest wait, in seconds, between retries after failed attempts.
"""),
]


def register_opts(conf):
    conf.register_group(TRAIT_GROUP)
    conf.register_opts(TRAIT_OPTS, group=TRAIT_GROUP)
    keystone.register_group(
        conf, PLACEMENT_GROUP, 'Placement Service Options',
        'How the agent reaches the Placement API (keystoneauth1).',
        SERVICE_TYPE)


def list_opts():
    return [
        (TRAIT_GROUP, TRAIT_OPTS),
        (PLACEMENT_GROUP, keystone.group_opts(SERVICE_TYPE)),
    ]
