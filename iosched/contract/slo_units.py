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

"""Quantities with units for SLO text: ``500iops``, ``40MB/s``, ``10ms``.

Numbers are read as ``decimal.Decimal`` and scaled exactly, so ``1.1s``
becomes 1100 ms and not 1100.0000000000002. Unit names are matched without
regard to case, but ``KB`` (1000) and ``KiB`` (1024) stay distinct. Every
error is an ``SLOError`` that quotes the field and the text and lists what is
accepted::

    latency '10 parsecs': unknown unit 'parsecs'; accepted: ms, us, s
"""

import decimal
import re


class SLOError(ValueError):
    """An SLO (text, spec dict or field) is malformed or infeasible."""


# Bandwidth units as written in messages, and bytes per second per unit.
BANDWIDTH_NAMES = ('B/s', 'KB/s', 'MB/s', 'GB/s', 'KiB/s', 'MiB/s', 'GiB/s')
BANDWIDTH_UNITS = dict(zip(
    (n.lower() for n in BANDWIDTH_NAMES),
    (1, 1000, 1000 ** 2, 1000 ** 3, 1024, 1024 ** 2, 1024 ** 3)))
THROUGHPUT_ACCEPTED = ', '.join('<n>' + u for u in ('iops',)
                                + BANDWIDTH_NAMES)
# Time units, milliseconds per unit.
TIME_UNITS = {'ms': decimal.Decimal(1), 'us': decimal.Decimal('0.001'),
              'µs': decimal.Decimal('0.001'), 's': decimal.Decimal(1000)}
TIME_ACCEPTED = 'ms, us, s'
# Size units, bytes per unit.
SIZE_UNITS = {'b': 1, 'kb': 1000, 'kib': 1024, 'mb': 1000 ** 2,
              'mib': 1024 ** 2}
SIZE_ACCEPTED = 'B, KB, KiB, MB, MiB'

_NUMBER = r'[-+]?(?:\d+(?:\.\d*)?|\.\d+)'
_QUANTITY_RE = re.compile(r'^(%s)\s*(\S*)$' % _NUMBER)
NUMBER_RE = re.compile(r'^%s$' % _NUMBER)


SHORTEN_AT = 80    # characters of a bad value quoted in a message


def shorten(raw, limit=SHORTEN_AT):
    """``str(raw)``, cut to ``limit`` characters with the length said."""
    try:
        text = str(raw)
    except ValueError:          # an int of more digits than str() makes
        return '<a number of more than 4300 digits>'
    if len(text) <= limit:
        return text
    return '%s...(%d characters)' % (text[:limit], len(text))


def fail(field, raw, problem, accepted=None):
    """Raise SLOError "<field> '<raw>': <problem>[; accepted: ...]"."""
    msg = "%s '%s': %s" % (shorten(field), shorten(raw), problem)
    if accepted:
        msg += '; accepted: %s' % accepted
    raise SLOError(msg)


def split(field, raw, accepted):
    """Split ``raw`` into (Decimal number, unit as written)."""
    m = _QUANTITY_RE.match(str(raw).strip())
    if not m:
        fail(field, raw, 'not a number followed by a unit', accepted)
    return decimal.Decimal(m.group(1)), m.group(2)


def positive(field, raw, number, accepted=None):
    """Fail unless ``number`` > 0."""
    if number <= 0:
        fail(field, raw, 'must be greater than 0',
             'a number > 0 with a unit: %s' % accepted if accepted else None)
    return number


def throughput(field, raw):
    """Return (iops or None, bytes_per_sec or None) for '<n>iops|<n>MB/s'."""
    number, unit = split(field, raw, THROUGHPUT_ACCEPTED)
    if unit.lower() == 'iops':
        return float(positive(field, raw, number, THROUGHPUT_ACCEPTED)), None
    if not unit:
        fail(field, raw, 'missing unit', THROUGHPUT_ACCEPTED)
    if unit.lower() not in BANDWIDTH_UNITS:
        fail(field, raw, "unknown unit '%s'" % shorten(unit, 20),
             THROUGHPUT_ACCEPTED)
    positive(field, raw, number, THROUGHPUT_ACCEPTED)
    return None, float(number * BANDWIDTH_UNITS[unit.lower()])


def duration_ms(field, raw, per=1):
    """Return a '<n>ms|us|s' duration in milliseconds / ``per`` (> 0)."""
    number, unit = split(field, raw, TIME_ACCEPTED)
    if not unit:
        fail(field, raw, 'missing unit', TIME_ACCEPTED)
    if unit.lower() not in TIME_UNITS:
        fail(field, raw, "unknown unit '%s'" % shorten(unit, 20),
             TIME_ACCEPTED)
    positive(field, raw, number, TIME_ACCEPTED)
    return float(number * TIME_UNITS[unit.lower()] / per)


def size_bytes(field, raw):
    """Return a '<n>B|KB|KiB|MB|MiB' size as a whole number of bytes."""
    number, unit = split(field, raw, SIZE_ACCEPTED)
    if unit.lower() not in SIZE_UNITS and unit:
        fail(field, raw, "unknown unit '%s'" % shorten(unit, 20),
             SIZE_ACCEPTED)
    value = (positive(field, raw, number, SIZE_ACCEPTED)
             * SIZE_UNITS[unit.lower() or 'b'])
    if value > 2 ** 63:
        fail(field, raw, 'too large', SIZE_ACCEPTED)
    if value != value.to_integral_value():
        fail(field, raw, 'not a whole number of bytes', SIZE_ACCEPTED)
    return int(value)


def whole(field, raw, minimum=1):
    """Return a whole number >= ``minimum`` written without a unit."""
    text = str(raw).strip()
    if not re.match(r'^[-+]?\d+$', text):
        fail(field, raw, 'not a whole number', 'an integer >= %d' % minimum)
    if len(text.lstrip('+-').lstrip('0')) > 18:   # int() refuses 4300+
        fail(field, raw, 'too large', 'an integer >= %d' % minimum)
    value = int(text)
    if value < minimum:
        fail(field, raw, 'must be at least %d' % minimum,
             'an integer >= %d' % minimum)
    return value


def fraction(field, raw):
    """Return '0.05' or '5%' as a float in [0, 1)."""
    accepted = 'a fraction in [0, 1) such as 0.05, or a percentage like 5%'
    text = str(raw).strip()
    scale = decimal.Decimal(1)
    if text.endswith('%'):
        text, scale = text[:-1].strip(), decimal.Decimal('0.01')
    if not NUMBER_RE.match(text):
        fail(field, raw, 'not a number', accepted)
    value = decimal.Decimal(text) * scale
    if not 0 <= value < 1:
        fail(field, raw, 'out of range', accepted)
    return float(value)


def number(field, raw):
    """Return a plain decimal number (no unit) as a float."""
    text = str(raw).strip()
    if not NUMBER_RE.match(text):
        fail(field, raw, 'not a number', 'a decimal number such as 12.5')
    return float(decimal.Decimal(text))


def fmt(value):
    """Format a number so that ``float(fmt(x)) == x``, without exponent.

    Whole numbers lose their '.0' (``500.0`` -> ``'500'``).
    """
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    value = float(value)
    if value.is_integer() and abs(value) < 1e16:
        return str(int(value))
    text = repr(value)
    if 'e' in text or 'E' in text:
        text = format(decimal.Decimal(text), 'f')
    return text
