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
"""Read a Nova RequestSpec into a ``scoring.Request`` (no nova import).

Used by the filter and the weigher. Duck-typed: it reads ``flavor.vcpus``,
``flavor.extra_specs``, ``flavor.name`` and ``instance_uuid`` and treats an
unset field of a Nova object as absent instead of lazy-loading it.

Every filter and the weigher read the same RequestSpec (once per request
each, in ``filter_all``/``weigh_objects``; once per host through
``host_passes``), so a worker keeps the last request read (``LastRead``,
in its ``iosched.nova_plugin.state.SchedulerState``: one slot per thread,
checked by object identity, the instance uuid and the flavor object): reading a
versioned object's fields costs more than the rules themselves
(bench/nova_scale).

A flavor extra spec every reader ignores (``iosched.contract.flavor``) is
warned about here, once per flavor, key and value per process.
"""

import threading

from iosched.contract import flavor as flavor_contract
from iosched.contract import flavor_warnings
from iosched.nova_plugin import scoring


def field(obj, name, default=None):
    """``obj.name`` if set, else ``default`` (never lazy-loads)."""
    if obj is None:
        return default
    is_set = getattr(obj, 'obj_attr_is_set', None)
    if is_set is not None:
        try:
            if not is_set(name):
                return default
        except AttributeError:      # not a field of this object
            return default
    return getattr(obj, name, default)


def stored(obj, name, default=None):
    """``field(obj, name, default)`` without the versioned-object
    machinery.

    oslo.versionedobjects keeps a set field ``name`` in the instance
    attribute ``_obj_<name>`` (``obj_attr_is_set`` tests just that);
    anything else (a duck-typed fake, an unset field) goes through
    ``field``.
    """
    try:
        return vars(obj)['_obj_' + name]
    except (TypeError, KeyError):
        return field(obj, name, default)


def read(spec_obj):
    """``(scoring.Request, label)`` of ``spec_obj``, read now."""
    flavor = stored(spec_obj, 'flavor')
    flavor_name = stored(flavor, 'name')
    specs = flavor_contract.read(stored(flavor, 'extra_specs', {}))
    flavor_warnings.warn_ignored(flavor_name, specs)
    request = scoring.Request.from_flavor_specs(stored(flavor, 'vcpus', 0),
                                                specs)
    uuid = stored(spec_obj, 'instance_uuid')
    if uuid:
        name = str(uuid)
    else:
        name = 'flavor:%s' % flavor_name if flavor_name else 'unknown'
    return request, name


class LastRead(object):
    """``read(spec_obj)``, keeping the last spec read per thread."""

    def __init__(self):
        self._local = threading.local()

    def read(self, spec_obj):
        """(request, label) of ``spec_obj``; the last one per thread is
        kept.

        The key holds a reference to the spec and its flavor, so neither
        can be freed and its id reused while it is the key. Nova sets a new
        ``instance_uuid`` on the same spec for each instance of a
        multi-create request, and a resize sets a new flavor: both are part
        of the key.
        """
        key = (spec_obj, stored(spec_obj, 'instance_uuid'),
               stored(spec_obj, 'flavor'))
        held = getattr(self._local, 'slot', None)
        if (held is not None and held[0][0] is key[0] and
                held[0][1] == key[1] and held[0][2] is key[2]):
            return held[1]
        value = read(spec_obj)
        self._local.slot = (key, value)
        return value


def to_request(spec_obj):
    """The ``scoring.Request`` for the flavor of ``spec_obj``."""
    return read(spec_obj)[0]


def label(spec_obj):
    """A short name for the request: instance uuid, else flavor name."""
    return read(spec_obj)[1]
