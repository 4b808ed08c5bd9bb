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
"""Shared settings and checks of the bad-input fuzz tests (issue 15).

``IOSCHED_INPUT_FUZZ_EXAMPLES`` sets hypothesis' examples per property
(default ``DEFAULT``, short for CI; ``make bench-faults`` runs ~10x).
``check_message`` holds what every refusal of user input must say: the
thing that was wrong, what is accepted, and no more than ``MAX_MESSAGE``
characters however large the input was.
"""

import os

from hypothesis import HealthCheck
from hypothesis import settings
from hypothesis import strategies as st

DEFAULT = 150
EXAMPLES = int(os.environ.get('IOSCHED_INPUT_FUZZ_EXAMPLES', DEFAULT))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, database=None,
                    suppress_health_check=list(HealthCheck))
MAX_MESSAGE = 1000      # a huge value must not give a huge message
HUGE = 'x' * 3000

# Text that tends to break parsers: signs, exponents, non-ASCII digits,
# NaN/inf spellings, more digits than int() converts, control characters.
NASTY_NUMBERS = ('0', '-0', '-1', '+1', '1.5', '.5', '5.', '1e3', '1E-3',
                 'nan', 'NaN', 'inf', '-inf', 'Infinity', '1_000', '0x10',
                 '\u0663', '\uff11', '9' * 5000, '0.' + '0' * 400 + '1',
                 '1' + '0' * 400, '', ' ', '\x00', '\n', 'None', 'true')
nasty_numbers = st.sampled_from(NASTY_NUMBERS)
numbers_text = (nasty_numbers
                | st.integers(-10 ** 6, 10 ** 12).map(str)
                | st.floats(allow_nan=True, allow_infinity=True).map(repr)
                | st.decimals(allow_nan=False, allow_infinity=False,
                              places=3).map(str))
junk_text = st.text(max_size=30) | st.just(HUGE) | st.binary(
    max_size=20).map(lambda b: b.decode('latin-1'))
# JSON/YAML-ish values of every type.
scalars = (st.none() | st.booleans() | st.integers()
           | st.floats(allow_nan=True, allow_infinity=True)
           | numbers_text | junk_text)
json_values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3)
                           | st.dictionaries(st.text(max_size=8), inner,
                                             max_size=3), max_leaves=8)


_SCRATCH = {}


def scratch(tmp_path_factory):
    """One directory per session for the files the properties write (a new
    directory per example costs more than the example).
    """
    if 'dir' not in _SCRATCH:
        _SCRATCH['dir'] = tmp_path_factory.mktemp('inputfuzz')
    return _SCRATCH['dir']


def check_message(msg, names, accepted_words=('accepted',)):
    """Assert the refusal ``msg`` names one of ``names``, says what is
    accepted and is short.
    """
    assert len(msg) <= MAX_MESSAGE, 'message of %d chars: %.200s...' % (
        len(msg), msg)
    assert any(n in msg for n in names), (msg, names)
    assert any(w in msg for w in accepted_words), msg
