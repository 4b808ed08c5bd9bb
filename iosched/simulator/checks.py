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
"""Argument checks shared by the simulator's specs and its host API.

Every check raises ``ValueError`` with a message that names the bad field,
shows the rejected value and says what is accepted, so a caller (the host
agent, a demo script, a test) can print the message as it is.
"""

import math

SLICE_MIN_US = 100          # EEVDF custom slice clamp (sched_setattr)
SLICE_MAX_US = 100000
WEIGHT_MIN = 1              # cgroup v2 cpu.weight range
WEIGHT_MAX = 10000
WEIGHT_DEFAULT = 100


def _fail(field, value, accepted):
    raise ValueError('%s: %r is invalid; accepted: %s'
                     % (field, value, accepted))


def int_range(field, value, lo, hi=None):
    """An int (not bool) in lo..hi (hi None: no upper bound)."""
    if hi is None:
        accepted = 'an integer >= %d' % lo
    else:
        accepted = 'an integer in %d..%d' % (lo, hi)
    if isinstance(value, bool) or not isinstance(value, int):
        _fail(field, value, accepted)
    if value < lo or (hi is not None and value > hi):
        _fail(field, value, accepted)
    return value


def number_range(field, value, lo, hi=None, lo_open=False):
    """A finite real number >= lo (or > lo when lo_open), <= hi."""
    op = '>' if lo_open else '>='
    accepted = 'a finite number %s %g' % (op, lo)
    if hi is not None:
        accepted += ' and <= %g' % hi
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        _fail(field, value, accepted)
    if not math.isfinite(value):
        _fail(field, value, accepted)
    if value < lo or (lo_open and value == lo):
        _fail(field, value, accepted)
    if hi is not None and value > hi:
        _fail(field, value, accepted)
    return value


def choice(field, value, accepted):
    """One of ``accepted`` (a tuple of names, or a dict's keys)."""
    if value not in accepted:
        _fail(field, value, ', '.join(accepted))
    return value


def name(field, value):
    """A non-empty string."""
    if not isinstance(value, str) or not value:
        _fail(field, value, 'a non-empty string')
    return value


def slice_us(value, field='slice_us'):
    return int_range(field, value, SLICE_MIN_US, SLICE_MAX_US)


def weight(value, field='weight'):
    return int_range(field, value, WEIGHT_MIN, WEIGHT_MAX)


def affinity(value, pcpus, field='affinity'):
    """None (all pCPUs) or a non-empty collection of pCPU ids.

    Returns None or a sorted tuple without duplicates.
    """
    if value is None:
        return None
    accepted = ('None (all pCPUs) or a non-empty tuple of pCPU ids in '
                '0..%d' % (pcpus - 1))
    if isinstance(value, (str, bytes)) or not hasattr(value, '__iter__'):
        _fail(field, value, accepted)
    ids = tuple(value)
    if not ids:
        _fail(field, value, accepted)
    for cpu in ids:
        if (isinstance(cpu, bool) or not isinstance(cpu, int)
                or not 0 <= cpu < pcpus):
            raise ValueError('%s: pCPU id %r out of range; accepted: %s'
                             % (field, cpu, accepted))
    return tuple(sorted(set(ids)))
