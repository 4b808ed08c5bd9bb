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
"""Checking a HostReport payload field by field, and the error it raises.

``field`` fetches one field of a JSON object and checks its type and an
optional predicate; ``PayloadError`` names the field (its dotted path from
the report's root), what it got and what is accepted. ``is_json_value``
says whether a decision's knob value is one JSON carries. Standard library
only, as the rest of the payload (``iosched.contract.payload``).
"""

import dataclasses
import math


class PayloadError(ValueError):
    """A payload that does not match the HostReport schema."""

    def __init__(self, field, problem):
        self.field = field
        self.problem = problem
        super().__init__("invalid HostReport field '%s': %s"
                         % (field, problem))


class Implausible(PayloadError):
    """A well-typed field beyond what any agent sends
    (``iosched.contract.payload_bounds``).
    """


def field(data, name, path, kind, default=dataclasses.MISSING, check=None,
          accepted=None):
    """Fetch data[name], check its type (and an optional predicate).

    ``path`` is the dotted path of ``data`` (e.g. ``'lsvm.'``, ``''`` at
    the root); ``kind`` one of float, int, bool, str, dict, list; a missing
    name returns ``default`` (none given: required); ``check`` a predicate
    on the value, ``accepted`` what the error says it accepts.
    """
    where = path + name
    if name not in data:
        if default is dataclasses.MISSING:
            raise PayloadError(where, 'missing (required)')
        return default
    value = data[name]
    if kind is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        ok = ok and math.isfinite(value)
        value = float(value) if ok else value
        want = 'a finite number'
    elif kind is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
        want = 'an integer'
    elif kind is bool:
        ok = isinstance(value, bool)
        want = 'true or false'
    elif kind is str:
        ok = isinstance(value, str)
        want = 'a string'
    elif kind is dict:
        ok = isinstance(value, dict)
        want = 'an object'
    elif kind is list:
        ok = isinstance(value, (list, tuple))
        want = 'a list'
    else:  # pragma: no cover - programming error
        raise TypeError(kind)
    if value is None and default is None:
        return None
    if not ok:
        raise PayloadError(where, 'expected %s, got %r' % (want, value))
    if check is not None and not check(value):
        raise PayloadError(where, 'got %r, accepted: %s' % (value, accepted))
    return value


def nonneg(v):
    return v >= 0


def positive(v):
    return v > 0


def is_json_value(value):
    """A knob value as JSON carries it: null, bool, number, string, list
    or object (iotune keys).
    """
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, (list, tuple)):
        return all(is_json_value(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and is_json_value(v)
                   for k, v in value.items())
    return value is None or isinstance(value, (bool, int, str))
