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
"""list_opts for oslo-config-generator: every conf module of the agent.

Each module in this package has ``register_opts(conf)`` and ``list_opts()``
(the nova/conf shape); this module finds them with pkgutil so no option can
go missing from the generated sample file. Every module-level list of
options gets ``iosched.contract.opt_types.harden`` (no NaN, infinite or
silently empty numbers; the value and the accepted range in every refusal)
before anything registers it.
"""

import importlib
import pkgutil

from oslo_config import cfg

from iosched.contract import opt_types
import iosched.host_agent.conf as conf_pkg

_SKIP = ('opts',)
# Groups whose every option is read anew at each use (a policy reads its
# Params every tick: ``policies.base.Policy.params``), so SIGHUP
# (``CONF.mutate_config_files()``) changes them in a running agent.
MUTABLE_GROUP_PREFIX = 'host_agent_policy.'
# ... but for these, read by the self-test (at start and on a re-test:
# ``iosched.host_agent.lsvm_mechanism``), not by the policy's Params.
READ_AT_START = {
    'host_agent_policy.vslicer': (
        'mechanism', 'selftest_target_us', 'selftest_wakes',
        'selftest_hogs_per_cpu', 'selftest_repeats', 'selftest_share_ms',
        'selftest_retest_min_interval', 'selftest_retest_load_delta',
        'selftest_retest_interval', 'weight_group', 'weight_group_weight'),
}


def _modules():
    for info in pkgutil.iter_modules(conf_pkg.__path__):
        if info.name not in _SKIP:
            module = importlib.import_module(
                'iosched.host_agent.conf.' + info.name)
            for value in list(vars(module).values()):
                if (isinstance(value, list) and value
                        and all(isinstance(o, cfg.Opt) for o in value)):
                    opt_types.harden(value)
            for group, group_opts in module.list_opts():
                name = group if isinstance(group, str) else group.name
                if name.startswith(MUTABLE_GROUP_PREFIX):
                    for opt in group_opts:
                        opt.mutable = opt.name not in READ_AT_START.get(
                            name, ())
            yield module


def list_opts():
    result = []
    for module in _modules():
        result.extend(module.list_opts())
    return [(group if isinstance(group, str) else group.name, opts)
            for group, opts in result]


def register_all(conf):
    for module in _modules():
        module.register_opts(conf)
