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
"""Every policy's Params come from its options, defaults written once.

For each policy of the ``iosched.host_agent.policies`` entry points: every
Params field is an option of its group and has no default of its own; the
group's other options are listed here with who reads them; the Params of
the options' defaults (``policy_params.params_for``) hold exactly those
defaults, each of its field's type.
"""

import dataclasses
from importlib import metadata
import types

import pytest

from iosched.host_agent.conf import opts
from iosched.host_agent.policies import base
from iosched.host_agent.policies import vaio
from iosched.host_agent import policy_params

NAMES = sorted(e.name for e in metadata.entry_points(
    group='iosched.host_agent.policies'))
# Options of a policy's group that are no Params field, and who reads them.
# iosched.host_agent.lsvm_mechanism reads them (the self-test), at start
# and on a re-test: the conf's own list of them.
NOT_PARAMS = {
    'vslicer': set(opts.READ_AT_START['host_agent_policy.vslicer']),
}


def group_opts(name):
    (found,) = [o for group, o in opts.list_opts()
                if group == base.GROUP_PREFIX + name]
    return {o.name: o for o in found}


def test_every_policy_is_checked():
    assert NAMES == ['ibalancer', 'isacs', 'slo', 'vaio', 'vslicer',
                     'vturbo']


@pytest.mark.parametrize('name', NAMES)
def test_params_fields_are_its_options_without_defaults(name):
    fields = dataclasses.fields(policy_params.policy_class(name).Params)
    restated = [f.name for f in fields
                if f.default is not dataclasses.MISSING
                or f.default_factory is not dataclasses.MISSING]
    assert not restated, 'defaults belong to the options: %s' % restated
    options = set(group_opts(name))
    names = {f.name for f in fields}
    assert not names - options, 'Params fields without an option'
    assert options - names == NOT_PARAMS.get(name, set())


@pytest.mark.parametrize('name', NAMES)
def test_params_for_holds_the_options_defaults(name):
    params = policy_params.params_for(name)
    for field in dataclasses.fields(params):
        default = group_opts(name)[field.name].default
        if isinstance(default, list):
            default = tuple(default)
        value = getattr(params, field.name)
        assert value == default, field.name
        assert type(value) is field.type, (field.name, type(value))


def test_overrides_are_checked_and_applied():
    assert policy_params.params_for('vaio', weight=500).weight == 500
    with pytest.raises(ValueError, match='no field slice_idle_us; fields: '
                       'bfq_slice_idle_us, min_vms'):
        policy_params.params_for('vaio', slice_idle_us=0)


def test_a_field_without_an_option_is_named():
    group = types.SimpleNamespace(weight=100, min_vms=2,
                                  switch_scheduler=False)
    with pytest.raises(LookupError, match="no option 'bfq_slice_idle_us'"):
        base.read_params(group, vaio.Params)


def test_a_list_option_becomes_a_tuple():
    group = types.SimpleNamespace(turbo_pcpus=[3, 7], turbo_slice_us=100,
                                  pin_regular_vcpus=True, charge_turbo=True,
                                  vm_weight=100)
    got = base.read_params(group, policy_params.policy_class(
        'vturbo').Params)
    assert got.turbo_pcpus == (3, 7)
