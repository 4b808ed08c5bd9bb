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
"""The flavor extra specs iosched reads: keys, parsers, meanings, one reading.

Description:
    One ``Spec`` row per extra spec iosched reads: the ``iosched:*`` keys a
    tenant sets (``SPECS``, validated by the Nova API through
    ``iosched.nova_plugin.validators``) and Nova's own ``hw:cpu_policy``
    (``CPU_POLICY_SPEC``, validated by Nova). ``check()`` is the strict
    reading of one ``iosched:*`` key (the API validators); ``read()`` is the
    tolerant reading of a whole flavor that the scheduler
    (``iosched.nova_plugin.scoring``), the host agent
    (``iosched.host_agent.model``) and Placement sizing
    (``iosched.nova_plugin.placement_resources``) all use: a value ``check()``
    refuses is unset, and listed in ``FlavorSpecs.ignored``.
    ``iosched.contract.flavor_warnings`` logs one warning per (flavor, key,
    value) per process for those; ``check_specs()`` raises the first one (tools
    that write flavors: the Ansible filter, the flavor audit, the demo's
    scenarios).

Requirements:
    Standard library only. A new key is one more ``Spec`` row in ``SPECS``
    and one more ``FlavorSpecs`` field.

Limitations:
    Nova validates one key at a time and only from API microversion 2.86,
    so values stored earlier (or below 2.86, or before the plugin was
    installed) reach the readers unchecked: hence the one tolerant reading.

Spec URL:
    docs/nova.md, section "Flavor extra specs".

Decision (issue 24: the readers disagreed on values stored unchecked): the
tolerant reading accepts exactly what ``check()`` accepts; anything else is
unset for every reader, with one warning. Rows of the decision (tests:
tests/unit/contract/test_flavor.py ``STORED``):

* ``iosched:latency_ms``: ASCII digits only, 1..10000, surrounding
  whitespace (``str.strip()``) ignored. ``0.5``, ``2.5``, ``1e1``, ``+3``,
  ``1_000``, Unicode digits (``\\u0663``), ``10001`` and numbers with more
  digits than ``int()`` converts are unset: the host's
  ``default_latency_ms`` (2 ms) for the scheduler and the agent alike. (The
  agent read ``0.5`` as 0.5 ms, ``2.5`` as 2.5 ms, ``1e1`` as 10 ms; the
  scheduler read ``+3``, ``1_000``, ``\\u0663``, ``10001`` with ``int()``.)
  A fraction is refused rather than rounded: the API never accepted one,
  and 1 ms is the finest bound the agent's slices serve.
* Booleans (``latency_sensitive``, ``turbo``): ``TRUE_SPELLINGS`` /
  ``FALSE_SPELLINGS``, any case, whitespace stripped; Nova's one-letter
  ``t``/``f``/``y``/``n`` and anything else are unset (false).
* ``iosched:io_profile``: ``io``, ``cpu``, ``mixed``, any case, stripped.
* ``hw:cpu_policy``: Nova's reading, exact and case-sensitive (Nova's
  ``CPUAllocationPolicy``): only ``dedicated`` is dedicated. ``Dedicated``
  or `` dedicated`` Nova itself refuses when it builds the instance; both
  sides read it as not dedicated (the scheduler read ``Dedicated`` as
  dedicated, the agent did not).
* Keys are exact and case-sensitive, as Nova reads every extra spec:
  ``IOSCHED:latency_sensitive`` (which Nova's API accepts, the namespace
  being unknown to it), `` iosched:latency_ms`` and unknown ``iosched:*``
  keys are ignored by every reader, with the key they look like in the
  warning.
"""

import dataclasses
import re

NAMESPACE = 'iosched'
PREFIX = NAMESPACE + ':'

IO_PROFILE = PREFIX + 'io_profile'
LATENCY_SENSITIVE = PREFIX + 'latency_sensitive'
LATENCY_MS = PREFIX + 'latency_ms'
TURBO = PREFIX + 'turbo'
CPU_POLICY = 'hw:cpu_policy'            # Nova's key; Nova validates it

# Booleans: Nova's spellings (oslo_utils.strutils) without the one-letter
# 't', 'f', 'y', 'n'. The only spelling list of iosched's flavor booleans.
TRUE_SPELLINGS = ('true', '1', 'yes', 'on')
FALSE_SPELLINGS = ('false', '0', 'no', 'off')

# What an io_profile means: estimated I/O strength per vCPU of a VM not
# yet measured; a profile with a positive strength counts every vCPU as an
# I/O vCPU (IoDensityFilter, CUSTOM_IOSCHED_IO_VCPU).
IO_PROFILES = ('io', 'cpu', 'mixed')
IO_STRENGTH_PER_VCPU = {'io': 1.0, 'mixed': 0.5, 'cpu': 0.0}

# latency_ms: 1 ms is the finest bound the host agent's slices serve;
# 10000 ms (10 s) is far beyond any latency bound worth scheduling for, so
# a larger number is taken for a unit mistake (us, or s * 1000000).
LATENCY_MS_MIN = 1
LATENCY_MS_MAX = 10000

# hw:cpu_policy values (nova.objects.fields.CPUAllocationPolicy.ALL).
CPU_POLICIES = ('dedicated', 'shared', 'mixed')
DEDICATED = 'dedicated'

SHORTEN_AT = 80     # characters of a key or value quoted in a message
_DIGITS = re.compile(r'[0-9]+')


# A key or value quoted in a message is shortened when huge (a 1 MB value
# is not quoted whole in an API answer or a log line).
def shorten(text):
    text = str(text)
    if len(text) <= SHORTEN_AT:
        return text
    return '%s...(%d characters)' % (text[:SHORTEN_AT], len(text))


class InvalidExtraSpec(ValueError):
    """A bad value of a flavor extra spec; says what is accepted."""

    MESSAGE = "invalid value %(value)s for flavor extra spec '%(key)s': " \
              "accepted: %(accepted)s"

    def __init__(self, key, value, accepted):
        self.key, self.value, self.accepted = key, value, accepted
        super(InvalidExtraSpec, self).__init__(self.MESSAGE % {
            'key': shorten(key), 'value': shorten(repr(value)),
            'accepted': accepted, 'namespace': NAMESPACE})


class UnknownExtraSpec(InvalidExtraSpec):
    """A key in the ``iosched:`` namespace that no ``Spec`` row defines."""

    MESSAGE = "unknown flavor extra spec '%(key)s' (value %(value)s) in " \
              "the '%(namespace)s' namespace: accepted keys: %(accepted)s"


class MiscasedExtraSpec(InvalidExtraSpec):
    """A key that is an ``iosched:*`` key but for case or whitespace."""

    MESSAGE = "flavor extra spec '%(key)s' (value %(value)s) is not read: " \
              "keys are case-sensitive, accepted: %(accepted)s"


# Every kind parses str(value) (Nova stores text); parse() returns the
# Python value or raises ValueError; accepted() says in words what it takes.

@dataclasses.dataclass(frozen=True)
class Choice:
    """One word out of a fixed list; ``exact``: as is (Nova's own keys),
    else case-insensitive with surrounding whitespace ignored.
    """

    choices: tuple
    exact: bool = False

    # parse(v) := v                    if exact and v in choices
    #          := lower(strip(v))      if not exact and that is in choices
    def parse(self, value):
        word = str(value)
        if not self.exact:
            word = word.strip().lower()
        if word not in self.choices:
            raise ValueError(value)
        return word

    def accepted(self):
        return 'one of %s (%s)' % (', '.join(self.choices), (
            'exactly, case-sensitive' if self.exact else 'case-insensitive'))


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


@dataclasses.dataclass(frozen=True)
class Spec:
    """One flavor extra spec: its key, parser, ``FlavorSpecs`` field, what
    it means, and what unset means.
    """

    key: str
    kind: object            # Choice | Boolean | Integer
    field: str              # the FlavorSpecs field it fills
    description: str
    unset: str              # what a reader does when it is unset

    def check(self, value):
        """Parsed value, or ``InvalidExtraSpec`` saying what is accepted."""
        try:
            return self.kind.parse(value)
        except ValueError:
            raise InvalidExtraSpec(self.key, value, self.kind.accepted())


# The iosched:* table (validated by iosched.nova_plugin.validators).
SPECS = (
    Spec(IO_PROFILE, Choice(IO_PROFILES), 'io_profile',
         "Expected I/O intensity of the VM's vCPUs before any measurement: "
         "'io' counts every vCPU as I/O-intensive (1.0 of I/O strength), "
         "'mixed' counts every vCPU as I/O-intensive with 0.5 of I/O "
         "strength, 'cpu' (or unset) counts none.",
         'no I/O vCPUs'),
    Spec(LATENCY_SENSITIVE, Boolean(), 'latency_sensitive',
         'Whether the VM is latency-sensitive (an LSVM): the host agent '
         'gives its vCPUs short, frequent slices, and the scheduler treats '
         'the request as needing a live agent report.',
         'not latency-sensitive'),
    Spec(LATENCY_MS, Integer(LATENCY_MS_MIN, LATENCY_MS_MAX, 'milliseconds'),
         'latency_ms',
         "The LSVM's scheduling latency bound in milliseconds, carried to "
         'the host agent.',
         "the host's default_latency_ms"),
    Spec(TURBO, Boolean(), 'turbo',
         "Whether the host agent's vturbo policy (when enabled) runs the "
         "VM's I/O threads on the turbo pCPUs, as it does for LSVM "
         'flavors. Not read by the scheduler.',
         'not turbo (unless latency-sensitive)'),
)
# Nova's key, read by the agent (never re-pin) and the scheduler (no
# SCHED_DEADLINE host): Nova's exact reading.
CPU_POLICY_SPEC = Spec(
    CPU_POLICY, Choice(CPU_POLICIES, exact=True), 'cpu_policy',
    "Nova's CPU policy: 'dedicated' vCPUs are pinned by Nova, one pCPU "
    'each; iosched never re-pins them and never gives them SCHED_DEADLINE.',
    'not dedicated')

BY_KEY = {spec.key: spec for spec in SPECS}
READ = dict(BY_KEY, **{CPU_POLICY: CPU_POLICY_SPEC})


def in_namespace(key):
    """Whether ``key`` is an ``iosched:*`` extra spec key."""
    return str(key).startswith(PREFIX)


def looks_like_namespace(key):
    """Whether ``key`` is ``iosched:*`` but for case or whitespace."""
    return str(key).strip().lower().startswith(PREFIX)


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
    raise ValueError("'%s' is not an '%s' flavor extra spec" % (
        shorten(key), PREFIX))


@dataclasses.dataclass(frozen=True)
class Ignored:
    """A stored extra spec every reader ignores, and why."""

    key: str
    value: object
    error: InvalidExtraSpec     # what check_specs() raises for it
    unset: str                  # what the readers do instead


@dataclasses.dataclass(frozen=True)
class FlavorSpecs:
    """What a flavor's extra specs mean, to every reader."""

    io_profile: object = None           # 'io' | 'cpu' | 'mixed' | None
    latency_sensitive: bool = False
    latency_ms: object = None           # int 1..10000 or None (default)
    turbo: bool = False
    cpu_policy: object = None           # a CPU_POLICIES word or None
    ignored: tuple = ()                 # tuple[Ignored]

    @property
    def dedicated(self):
        return self.cpu_policy == DEDICATED

    @property
    def io_strength_per_vcpu(self):
        return IO_STRENGTH_PER_VCPU.get(self.io_profile, 0.0)

    @property
    def has_io_vcpus(self):
        """Whether every vCPU counts as an I/O vCPU."""
        return self.io_strength_per_vcpu > 0


UNSET = FlavorSpecs()


def _ignored(key, value):
    """The ``Ignored`` entry of a key no row reads, or None if not ours."""
    if in_namespace(key):
        return Ignored(key, value, UnknownExtraSpec(
            key, value, ', '.join(sorted(BY_KEY))), 'ignored')
    if looks_like_namespace(key):
        meant = PREFIX + str(key).strip().lower()[len(PREFIX):]
        accepted = ("'%s'" % meant if meant in BY_KEY
                    else ', '.join(sorted(BY_KEY)))
        return Ignored(key, value, MiscasedExtraSpec(key, value, accepted),
                       'ignored')
    return None


# read(specs) := for each Spec row r: r.kind.parse(specs[r.key]) if that
#                parses, else unset (and an Ignored entry when present);
#                every other iosched-like key: an Ignored entry.
def read(extra_specs):
    """The tolerant reading of a flavor's extra specs (never raises)."""
    if not extra_specs:
        return UNSET
    values = {}
    ignored = []
    for key, value in extra_specs.items():
        spec = READ.get(key)
        if spec is None:
            entry = _ignored(key, value)
            if entry is not None:
                ignored.append(entry)
            continue
        try:
            values[spec.field] = spec.kind.parse(value)
        except ValueError:
            ignored.append(Ignored(key, value, InvalidExtraSpec(
                key, value, spec.kind.accepted()), spec.unset))
    if not values and not ignored:
        return UNSET
    ignored.sort(key=lambda i: str(i.key))
    return FlavorSpecs(ignored=tuple(ignored), **values)


def check_specs(extra_specs):
    """The reading of ``extra_specs``; raises the ``InvalidExtraSpec`` of
    the first (by key) value ``read`` would ignore.
    """
    reading = read(extra_specs)
    if reading.ignored:
        raise reading.ignored[0].error
    return reading
