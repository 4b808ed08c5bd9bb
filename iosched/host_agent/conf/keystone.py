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
"""keystoneauth1 option groups for the OpenStack services the agent calls
(``[placement]``, ``[cinder]``): registration, sample-config listing, and
the Adapter built from them.

The adapter's ``version``/``min_version``/``max_version`` options are not
registered: the code knows the microversion it needs, and nova.conf
registers placeholders of its own under those names in the same groups,
so leaving them out lets the agent's and Nova's options live in one
process (the embedded default imports both). This module has no options
of its own (``list_opts`` is empty).
"""

from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import loading as ks_loading
from oslo_config import cfg

ADAPTER_VERSION_OPTS = ('version', 'min_version', 'max_version')


def adapter_opts(service_type):
    opts = [o for o in ks_loading.get_adapter_conf_options(
        include_deprecated=False) if o.dest not in ADAPTER_VERSION_OPTS]
    cfg.set_defaults(opts, valid_interfaces=['internal', 'public'],
                     service_type=service_type)
    return opts


def register_group(conf, group, title, help, service_type):
    conf.register_group(cfg.OptGroup(group, title=title, help=help))
    ks_loading.register_session_conf_options(conf, group)
    ks_loading.register_auth_conf_options(conf, group)
    conf.register_opts(adapter_opts(service_type), group=group)


def group_opts(service_type):
    """The group's options for oslo-config-generator."""
    return (ks_loading.get_session_conf_options()
            + ks_loading.get_auth_common_conf_options()
            + ks_loading.get_auth_plugin_conf_options('password')
            + ks_loading.get_auth_plugin_conf_options('v3password')
            + adapter_opts(service_type))


def load_adapter(conf, group, how, **kwargs):
    """A keystoneauth1 Adapter (answers not raised) from ``[group]``.

    Raises ValueError when no auth plugin is configured; ``how`` names
    where an operator copies the credentials from.
    """
    auth = ks_loading.load_auth_from_conf_options(conf, group)
    if auth is None:
        raise ValueError(
            '[%s] auth_type is not set: accepted are keystoneauth1 plugin '
            'names, e.g. "password" with auth_url, username, password, '
            'project_name, user_domain_name and project_domain_name, as in '
            '%s' % (group, how))
    session = ks_loading.load_session_from_conf_options(conf, group,
                                                         auth=auth)
    ks_loading.adapter.process_conf_options(_NoVersionOpts(conf[group]),
                                            kwargs)
    return ks_adapter.Adapter(session, auth=auth, raise_exc=False, **kwargs)


class _NoVersionOpts(object):
    """A conf group view answering None for the unregistered version opts."""

    def __init__(self, group):
        self._group = group

    def __getattr__(self, name):
        if name in ADAPTER_VERSION_OPTS:
            return None
        return getattr(self._group, name)


def register_opts(conf):
    pass


def list_opts():
    return []
