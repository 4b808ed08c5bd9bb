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
"""Nova API validators for the ``iosched:*`` flavor extra specs.

Description:
    nova-api loads this module through the stevedore entry point group
    ``nova.api.extra_spec_validators`` (entry ``iosched``, see setup.cfg) and
    calls ``register()``. From API microversion 2.86 on, Nova then answers
    ``PUT``/``POST /flavors/{id}/os-extra_specs`` with 400 and our message
    when an ``iosched:*`` value is bad or an ``iosched:*`` key is unknown.

Requirements:
    The iosched package installed in nova-api's environment (the entry
    point is read when ``nova.api.validation.extra_specs.validators`` is
    first imported, i.e. when nova-api starts). The table of keys and
    accepted values is ``iosched.contract.flavor.SPECS``.

Limitations:
    Below microversion 2.86 Nova validates nothing: any value is stored and
    every reader (scheduler, agent, Placement sizing) reads an invalid one
    as unset (``iosched.contract.flavor.read``). Flavors set before the
    validators were installed are not re-checked. Nova checks only the
    namespaces it knows: ``IOSCHED:latency_ms`` (any case but ``iosched``)
    is stored, and ignored by every reader.

Spec URL:
    docs/nova.md, section "Flavor extra specs".
"""

import dataclasses
import typing as ty

from nova.api.validation.extra_specs import base
from nova import exception

from iosched.contract import flavor


@dataclasses.dataclass
class IoschedValidator(base.ExtraSpecValidator):
    """Nova's validator with iosched's parsing and messages.

    Nova's own messages do not name the key nor, for integers and
    booleans, what is accepted; ``validate`` therefore runs
    ``flavor.check`` and raises its message.
    """

    check: ty.Callable = None

    def validate(self, name, value):
        try:
            self.check(name, value)
        except ValueError as err:
            raise exception.ValidationError(
                'Validation failed; %s.' % (err,))


# Nova's description of a value, by kind of the contract's table (Nova
# documents the validators with it; the check is always flavor's).
def nova_value(kind):
    if isinstance(kind, flavor.Choice):
        return {'type': str, 'enum': list(kind.choices)}
    if isinstance(kind, flavor.Boolean):
        return {'type': bool}
    if isinstance(kind, flavor.Integer):
        return {'type': int, 'min': kind.minimum, 'max': kind.maximum}
    raise TypeError('no Nova value type for %r' % (kind,))


def _for_spec(spec):
    return IoschedValidator(
        name=spec.key,
        description=spec.description,
        value=dict(nova_value(spec.kind), description=spec.kind.accepted()),
        check=lambda name, value: spec.check(value))


# Nova looks a key up by name first, then tries every validator's name
# pattern; this one matches any other iosched:* key. Delegating to
# flavor.check keeps it right even when Nova tries it before a row's own
# validator.
UNKNOWN_KEY = IoschedValidator(
    name=flavor.PREFIX + '{key}',
    description=('Any other key in the %s namespace is rejected with the '
                 'list of accepted keys.' % flavor.NAMESPACE),
    value={'type': str, 'description': 'none: the key is unknown'},
    parameters=[{'name': 'key', 'pattern': r'.+',
                 'description': 'an unknown iosched key'}],
    check=flavor.check)

EXTRA_SPEC_VALIDATORS = [_for_spec(spec) for spec in flavor.SPECS]
EXTRA_SPEC_VALIDATORS.append(UNKNOWN_KEY)


def register():
    """Entry point of ``nova.api.extra_spec_validators``."""
    return EXTRA_SPEC_VALIDATORS
