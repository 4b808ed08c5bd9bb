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
"""A cheaper constructor for the frozen dataclasses a tick makes by the
hundred and drops the tick after (a sample, a strength, a credit per
vCPU; a change per write).

A frozen dataclass's generated ``__init__`` sets each field through
``object.__setattr__`` (the class's own ``__setattr__`` refuses): about
2 us for 17 fields, ~800 such records a tick at 200 vCPUs. ``quick_init``
gives the class an ``__init__`` with the same signature (names, order,
defaults) that fills the instance's ``__dict__`` in one call (about
1 us); everything else is the dataclass's: fields, ``__eq__``,
``__hash__``, ``__repr__``, ``dataclasses.replace``, and assignment still
raises ``FrozenInstanceError``. The price: that dict does not share its
keys with the class's other instances (~260 bytes more each), so the
records kept for long (actions, decisions) keep the dataclass's own.
Only for plain records: every field in ``__init__``, no
``default_factory``, no ``__post_init__``, no slots. Standard library
only.
"""

import dataclasses
import keyword


def quick_init(cls):
    """Class decorator, above ``@dataclasses.dataclass(frozen=True)``."""
    fields = dataclasses.fields(cls)
    if (hasattr(cls, '__post_init__') or hasattr(cls, '__slots__')
            or not fields):
        raise TypeError('%s: not a plain record' % cls.__name__)
    params, defaults = [], {}
    for f in fields:
        if (not f.init or f.default_factory is not dataclasses.MISSING
                or not f.name.isidentifier() or keyword.iskeyword(f.name)
                or f.name.startswith('_')):
            raise TypeError('%s.%s: not a plain field' % (cls.__name__,
                                                          f.name))
        if f.default is dataclasses.MISSING:
            params.append(f.name)
        else:
            defaults['_default_' + f.name] = f.default
            params.append('%s=_default_%s' % (f.name, f.name))
    # the names are the class's own field identifiers, checked above
    source = 'def __init__(self, %s):\n    self.__dict__.update(%s)\n' % (
        ', '.join(params), ', '.join('%s=%s' % (f.name, f.name)
                                     for f in fields))
    namespace = dict(defaults)
    exec(source, namespace)   # noqa: S102 (as dataclasses builds __init__)
    init = namespace['__init__']
    init.__qualname__ = '%s.__init__' % cls.__qualname__
    init.__doc__ = cls.__init__.__doc__
    cls.__init__ = init
    return cls
