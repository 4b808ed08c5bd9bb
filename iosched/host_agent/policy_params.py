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
"""A policy's Params by name, from a configuration or the options' defaults.

A policy's ``Params`` restates no default: each field is the option of its
name in ``[host_agent_policy.<name>]`` (``iosched/host_agent/conf``), and
``policies.base.read_params`` builds it. The agent's policies read their
own configuration (``Policy.params``); tests, benches and the
reproductions call ``params_for`` here, which reads the same options,
registered and unset, through the same function. So a default is written
once, in its option, and a Params field without an option fails here.
"""

import dataclasses
import functools

from oslo_config import cfg

from iosched.host_agent.conf import opts
from iosched.host_agent import plugins
from iosched.host_agent.policies import base


@functools.lru_cache(maxsize=None)
def policy_class(name):
    """The policy class of entry point ``name`` (``setup.cfg``)."""
    return plugins.load_class(plugins.POLICIES, name)


@functools.lru_cache(maxsize=1)
def _defaults():
    """A configuration with every agent option registered and none set."""
    conf = cfg.ConfigOpts()
    opts.register_all(conf)
    return conf


def params_for(name, conf=None, **overrides):
    """Policy ``name``'s Params: from ``conf``'s ``[host_agent_policy.
    <name>]`` (default: the options' defaults), then ``overrides``
    (field=value).
    """
    params_cls = policy_class(name).Params
    params = base.read_params(
        (conf if conf is not None else _defaults())[base.GROUP_PREFIX + name],
        params_cls)
    fields = {f.name for f in dataclasses.fields(params_cls)}
    unknown = sorted(set(overrides) - fields)
    if unknown:
        raise ValueError('%s Params have no field %s; fields: %s' % (
            name, ', '.join(unknown), ', '.join(sorted(fields))))
    return dataclasses.replace(params, **overrides)
