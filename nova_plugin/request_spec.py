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
"""

from nova_plugin import scoring


def _field(obj, name, default=None):
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


def to_request(spec_obj):
    """The ``scoring.Request`` for the flavor of ``spec_obj``."""
    flavor = _field(spec_obj, 'flavor')
    return scoring.Request.from_extra_specs(
        _field(flavor, 'vcpus', 0), _field(flavor, 'extra_specs', {}))


def label(spec_obj):
    """A short name for the request: instance uuid, else flavor name."""
    uuid = _field(spec_obj, 'instance_uuid')
    if uuid:
        return str(uuid)
    name = _field(_field(spec_obj, 'flavor'), 'name')
    return 'flavor:%s' % name if name else 'unknown'
