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
"""Number options that refuse what oslo.config lets through, and say why.

oslo.config's ``Float`` and ``Integer`` types accept ``nan`` for any option
(every comparison with a bound is false, so NaN passes ``min`` and
``max``), ``inf`` where no ``max`` is set, and an empty value as None
whatever the option's default; and a range error does not quote the value
("Should be less than or equal to 60"). ``harden(opts)`` gives every
``FloatOpt`` and ``IntOpt`` of a list a subclass of its type that refuses
these and words every refusal as ``'<value>': <problem>; accepted: <what>``,
which oslo puts after the option's name and file when the option is read::

    Value for option tick_interval from LocationInfo(..., detail='/etc/
    iosched/host-agent.conf') is not valid: 'nan': not a finite number;
    accepted: a number from 0.05 to 60

Type names and bounds are unchanged, so are the generated samples.
Used by the option modules of ``host_agent``, ``nova_plugin`` and
``cinder_qos``; it imports only oslo.config, so it lives in the contract.
"""

import math

from oslo_config import types

SHORTEN_AT = 80
# a bigger int is no count or size, and overflows float() where code mixes the
# two
INT_MAX = 2 ** 63 - 1


def _short(value):
    text = repr(value) if not isinstance(value, str) else "'%s'" % value
    if len(text) <= SHORTEN_AT:
        return text
    return '%s...(%d characters)' % (text[:SHORTEN_AT], len(text))


def accepted(kind):
    """What a number type accepts, in words."""
    word = 'a number' if isinstance(kind, types.Float) else 'an integer'
    if kind.choices:
        return 'one of %s' % ', '.join('%g' % c for c in kind.choices)
    low, high = kind.min, kind.max
    if low is not None and high is not None:
        return '%s from %g to %g' % (word, low, high)
    if low is not None:
        return '%s >= %g' % (word, low)
    if high is not None:
        return '%s <= %g' % (word, high)
    return word


class _Checked(object):
    """The checks; mixed in before oslo's Float or Integer."""

    allow_empty = False     # True only for options whose default is None

    def __call__(self, value):
        if isinstance(value, str) and not value.strip():
            if self.allow_empty:
                return None
            raise ValueError("empty value; accepted: %s" % accepted(self))
        try:
            number = super(_Checked, self).__call__(value)
        except (ValueError, OverflowError) as e:
            raise ValueError('%s: %s; accepted: %s' % (
                _short(value), str(e)[:2 * SHORTEN_AT], accepted(self)))
        if isinstance(number, float) and not math.isfinite(number):
            raise ValueError('%s: not a finite number; accepted: %s' % (
                _short(value), accepted(self)))
        if isinstance(number, int) and abs(number) > INT_MAX:
            raise ValueError('%s: too large; accepted: %s, at most %d' % (
                _short(value), accepted(self), INT_MAX))
        return number


class CheckedBoolean(types.Boolean):
    """oslo's Boolean, saying the accepted words and shortening the value."""

    def __call__(self, value):
        try:
            return super(CheckedBoolean, self).__call__(value)
        except ValueError:
            raise ValueError('%s: not a boolean; accepted: %s' % (
                _short(value), ', '.join(
                    '%s/%s' % pair for pair in zip(
                        types.Boolean.TRUE_VALUES,
                        types.Boolean.FALSE_VALUES))))


class CheckedChoice(types.String):
    """oslo's String with choices, shortening the value it quotes."""

    def __call__(self, value):
        try:
            return super(CheckedChoice, self).__call__(value)
        except ValueError:
            raise ValueError('%s: not one of the choices; accepted: %s' % (
                _short(value), ', '.join(str(c) for c in self.choices)))


class CheckedList(types.List):
    """oslo's List of numbers, quoting the whole value in a refusal."""

    def __call__(self, value):
        try:
            return super(CheckedList, self).__call__(value)
        except ValueError as e:
            raise ValueError('%s: %s; accepted: a comma-separated list, '
                             'each item %s' % (
                                 _short(value), str(e)[:2 * SHORTEN_AT],
                                 accepted(self.item_type)))


class FiniteFloat(_Checked, types.Float):
    """oslo's Float without NaN, infinities nor silent empty values."""


class CheckedInteger(_Checked, types.Integer):
    """oslo's Integer with the value and the range in every refusal."""


class CheckedPort(_Checked, types.Port):
    """oslo's Port with the value and the range in every refusal."""


class CheckedHostAddress(types.HostAddress):
    """oslo's HostAddress, saying what is accepted."""

    def __call__(self, value):
        try:
            return super(CheckedHostAddress, self).__call__(value)
        except ValueError:
            raise ValueError('%s: not an IP address nor a host name; '
                             'accepted: an IPv4 or IPv6 address, or a host '
                             'name' % _short(value))


_HARDENED = {types.Float: FiniteFloat, types.Integer: CheckedInteger,
             types.Port: CheckedPort}


def harden(opts):
    """Give the number, boolean and choice options of ``opts`` the checked
    types, in place (before the options are registered); returns
    ``opts``.
    """
    for opt in opts:
        old = opt.type
        if type(old) is types.Boolean:
            opt.type = CheckedBoolean()
            continue
        if type(old) is types.String and old.choices:
            opt.type = CheckedChoice(
                choices=list(old.choices.items()), quotes=old.quotes,
                regex=old.regex, ignore_case=old.ignore_case,
                max_length=old.max_length, type_name=old.type_name)
            continue
        if type(old) is types.List and type(old.item_type) in _HARDENED:
            opt.type = CheckedList(
                item_type=_checked(old.item_type, False), bounds=old.bounds,
                type_name=old.type_name, min_length=old.min_length)
            continue
        if type(old) is types.HostAddress:
            opt.type = CheckedHostAddress(
                version={'_check_ipv4': 4, '_check_ipv6': 6}.get(
                    old.ip_address.version_checker.__name__),
                type_name=old.type_name)
            continue
        if type(old) in _HARDENED:
            opt.type = _checked(old, opt.default is None)
    return opts


def _checked(old, allow_empty):
    """The checked twin of number type ``old``."""
    kind = _HARDENED[type(old)]
    kwargs = dict(min=old.min, max=old.max, type_name=old.type_name)
    if kind is not FiniteFloat and old.choices:
        kwargs['choices'] = list(old.choices.items())
    if kind is CheckedInteger:
        kwargs.update(sample_min=old.sample_min, sample_max=old.sample_max)
    new = kind(**kwargs)
    new.allow_empty = allow_empty
    return new
