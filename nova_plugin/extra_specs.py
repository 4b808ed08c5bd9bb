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
"""The table of iosched's flavor extra specs: keys, accepted values, parsing.

Description:
    One ``Spec`` row per ``iosched:*`` flavor extra spec: its key, the kind
    of value it takes (``Choice``, ``Boolean``, ``Integer``) and what it
    means. ``check()`` is the strict reading the Nova API validators
    (``nova_plugin.validators``) apply when a flavor is set; ``read()`` is
    the tolerant reading (an invalid value counts as unset) for flavors
    created before the validators.

Requirements:
    None: no nova, no I/O, no clock. A new key is one more ``Spec`` row in
    ``SPECS``; the validators and the docs table follow from it.

Limitations:
    Nova validates one key at a time, so a rule across keys (for example
    ``latency_ms`` without ``latency_sensitive=true``) cannot be enforced
    here. Nova validates only at API microversion 2.86 and later.

Spec URL:
    docs/nova.md, section "Flavor extra specs".

Accepted spellings are exactly those ``nova_plugin.scoring`` reads the same
way (tests/unit/nova_plugin/test_extra_specs_table.py checks this row by
row): a value the API accepts never silently means "unset" in the scheduler.
"""

import dataclasses
import re

NAMESPACE = 'iosched'
PREFIX = NAMESPACE + ':'

# Booleans: Nova's spellings (oslo_utils.strutils) without the one-letter
# 't', 'f', 'y', 'n', which nova_plugin.scoring does not read as booleans.
TRUE_SPELLINGS = ('true', '1', 'yes', 'on')
FALSE_SPELLINGS = ('false', '0', 'no', 'off')

_DIGITS = re.compile(r'[0-9]+')


class InvalidExtraSpec(ValueError):
    """A bad ``iosched:*`` value; the message says what is accepted."""

    MESSAGE = "invalid value %(value)r for flavor extra spec '%(key)s': " \
              "accepted: %(accepted)s"

    def __init__(self, key, value, accepted):
        self.key = key
        self.value = value
        self.accepted = accepted
        super(InvalidExtraSpec, self).__init__(self.MESSAGE % {
            'key': _short(key), 'value': _Short(value), 'accepted': accepted,
            'namespace': NAMESPACE})


SHORTEN_AT = 80     # characters of a key or value quoted in a message


def _short(text):
    text = str(text)
    if len(text) <= SHORTEN_AT:
        return text
    return '%s...(%d characters)' % (text[:SHORTEN_AT], len(text))


class _Short(object):
    """``%r`` of a value, shortened when huge (a 1 MB value is not quoted
    whole in an API answer or a log line)."""

    def __init__(self, value):
        self.value = value

    def __repr__(self):
        text = repr(self.value)
        if len(text) <= SHORTEN_AT:
            return text
        return '%s...(%d characters)' % (text[:SHORTEN_AT], len(text))


class UnknownExtraSpec(InvalidExtraSpec):
    """A key in the ``iosched:`` namespace that no ``Spec`` row defines."""

    MESSAGE = "unknown flavor extra spec '%(key)s' (value %(value)r) in " \
              "the '%(namespace)s' namespace: accepted keys: %(accepted)s"


# Every kind normalises a value the way nova_plugin.scoring does:
# str(value).strip(), then lower() for words. parse() returns the Python
# value or raises ValueError; accepted() says in words what parse() takes.

@dataclasses.dataclass(frozen=True)
class Choice:
    """One word out of a fixed list, case-insensitive."""

    choices: tuple

    # parse(v) := lower(strip(v))  if it is one of choices, else invalid
    def parse(self, value):
        word = str(value).strip().lower()
        if word not in self.choices:
            raise ValueError(value)
        return word

    def accepted(self):
        return 'one of %s (case-insensitive)' % ', '.join(self.choices)

    def nova_value(self):
        return {'type': str, 'enum': list(self.choices)}


@dataclasses.dataclass(frozen=True)
class Boolean:
    """A boolean word, case-insensitive."""

    # parse(v) := True  if lower(strip(v)) in TRUE_SPELLINGS
    #          := False if lower(strip(v)) in FALSE_SPELLINGS, else invalid
    def parse(self, value):
        word = str(value).strip().lower()
        if word in TRUE_SPELLINGS:
            return True
        if word in FALSE_SPELLINGS:
            return False
        raise ValueError(value)

    def accepted(self):
        return 'true (%s) or false (%s), case-insensitive' % (
            ', '.join(TRUE_SPELLINGS), ', '.join(FALSE_SPELLINGS))

    def nova_value(self):
        return {'type': bool}


@dataclasses.dataclass(frozen=True)
class Integer:
    """A decimal integer (ASCII digits, no sign) within [minimum, maximum]."""

    minimum: int
    maximum: int
    unit: str = ''

    # parse(v) := int(strip(v))  if strip(v) is ASCII digits and
    #                            minimum <= int(strip(v)) <= maximum
    def parse(self, value):
        text = str(value).strip()
        if not _DIGITS.fullmatch(text):
            raise ValueError(value)
        try:
            number = int(text)
        except ValueError:      # more digits than int() converts
            raise ValueError(value)
        if not self.minimum <= number <= self.maximum:
            raise ValueError(value)
        return number

    def accepted(self):
        unit = ' (%s)' % self.unit if self.unit else ''
        return 'an integer from %d to %d%s' % (self.minimum, self.maximum,
                                               unit)

    def nova_value(self):
        return {'type': int, 'min': self.minimum, 'max': self.maximum}


@dataclasses.dataclass(frozen=True)
class Spec:
    """One ``iosched:*`` flavor extra spec."""

    key: str
    kind: object            # Choice | Boolean | Integer
    description: str

    def check(self, value):
        """Parsed value, or ``InvalidExtraSpec`` saying what is accepted."""
        try:
            return self.kind.parse(value)
        except ValueError:
            raise InvalidExtraSpec(self.key, value, self.kind.accepted())


IO_PROFILE = PREFIX + 'io_profile'
LATENCY_SENSITIVE = PREFIX + 'latency_sensitive'
LATENCY_MS = PREFIX + 'latency_ms'
TURBO = PREFIX + 'turbo'

# The table. latency_ms: 1 ms is the finest bound the host agent's slices
# serve; 10000 ms (10 s) is far beyond any latency bound worth scheduling
# for, so a larger number is taken for a unit mistake (us, or s * 1000000).
SPECS = (
    Spec(IO_PROFILE, Choice(('io', 'cpu', 'mixed')),
         "Expected I/O intensity of the VM's vCPUs before any measurement: "
         "'io' counts every vCPU as I/O-intensive (1.0 of I/O strength), "
         "'mixed' counts every vCPU as I/O-intensive with 0.5 of I/O "
         "strength, 'cpu' (or unset) counts none."),
    Spec(LATENCY_SENSITIVE, Boolean(),
         'Whether the VM is latency-sensitive (an LSVM): the host agent '
         'gives its vCPUs short, frequent slices, and the scheduler treats '
         'the request as needing a live agent report.'),
    Spec(LATENCY_MS, Integer(1, 10000, 'milliseconds'),
         "The LSVM's scheduling latency bound in milliseconds, carried to "
         'the host agent.'),
    Spec(TURBO, Boolean(),
         "Whether the host agent's vturbo policy (when enabled) runs the "
         "VM's I/O threads on the turbo pCPUs, as it does for LSVM "
         'flavors. Not read by the scheduler.'),
)

BY_KEY = {spec.key: spec for spec in SPECS}


def in_namespace(key):
    """Whether ``key`` is an ``iosched:*`` extra spec key."""
    return str(key).startswith(PREFIX)


def check(key, value):
    """Strictly parse one ``iosched:*`` extra spec.

    Returns the parsed value; raises ``UnknownExtraSpec`` for a key in the
    namespace that ``SPECS`` does not define, ``InvalidExtraSpec`` for a bad
    value, and ``ValueError`` for a key outside the namespace.
    """
    spec = BY_KEY.get(key)
    if spec is not None:
        return spec.check(value)
    if in_namespace(key):
        raise UnknownExtraSpec(key, value, ', '.join(sorted(BY_KEY)))
    raise ValueError("'%s' is not an '%s' flavor extra spec" % (_short(key),
                                                                 PREFIX))


def read(extra_specs, key):
    """Tolerant reading: the parsed value, or None if unset or invalid."""
    specs = extra_specs or {}
    if key not in specs:
        return None
    try:
        return BY_KEY[key].check(specs[key])
    except InvalidExtraSpec:
        return None
