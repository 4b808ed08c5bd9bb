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
"""Table tests of nova_plugin.extra_specs, and its agreement with scoring.

``GOOD`` and ``BAD`` are also the rows of tests/nova/test_validators.py,
which runs them through Nova's validator registry and API. The agreement
tests hold the rule "a value the API accepts is read the same way by the
scheduler" (``scoring.Request.from_extra_specs``).
"""

import pytest

from nova_plugin import extra_specs
from nova_plugin import scoring

IO = 'iosched:io_profile'
LS = 'iosched:latency_sensitive'
MS = 'iosched:latency_ms'

# (key, value as a tenant sets it, parsed value)
GOOD = [
    (IO, 'io', 'io'),
    (IO, 'cpu', 'cpu'),
    (IO, 'mixed', 'mixed'),
    (IO, 'IO', 'io'),
    (IO, ' Mixed ', 'mixed'),
    (LS, 'true', True),
    (LS, 'True', True),
    (LS, 'TRUE', True),
    (LS, '1', True),
    (LS, 'yes', True),
    (LS, 'on', True),
    (LS, 'false', False),
    (LS, 'False', False),
    (LS, '0', False),
    (LS, 'no', False),
    (LS, 'off', False),
    (MS, '1', 1),
    (MS, '2', 2),
    (MS, '10000', 10000),
    (MS, '007', 7),
    (MS, ' 50 ', 50),
    (MS, 5, 5),             # a JSON number; nova-api turns it into '5'
]

# (key, bad value, a fragment of what the message says is accepted)
ACCEPTED_PROFILE = 'one of io, cpu, mixed'
ACCEPTED_BOOL = 'true (true, 1, yes, on) or false (false, 0, no, off)'
ACCEPTED_MS = 'an integer from 1 to 10000 (milliseconds)'
BAD = [
    (IO, 'disk', ACCEPTED_PROFILE),
    (IO, '', ACCEPTED_PROFILE),
    (IO, 'io,cpu', ACCEPTED_PROFILE),
    (IO, 'i/o', ACCEPTED_PROFILE),
    (LS, 'maybe', ACCEPTED_BOOL),
    (LS, '', ACCEPTED_BOOL),
    (LS, 't', ACCEPTED_BOOL),     # Nova's bool; the scheduler reads False
    (LS, 'y', ACCEPTED_BOOL),
    (LS, 'f', ACCEPTED_BOOL),
    (LS, '2', ACCEPTED_BOOL),
    (MS, '0', ACCEPTED_MS),
    (MS, '-3', ACCEPTED_MS),
    (MS, '+3', ACCEPTED_MS),
    (MS, '2.5', ACCEPTED_MS),
    (MS, '2ms', ACCEPTED_MS),
    (MS, '1e3', ACCEPTED_MS),
    (MS, '1_000', ACCEPTED_MS),
    (MS, '10001', ACCEPTED_MS),
    (MS, '', ACCEPTED_MS),
    (MS, 'fast', ACCEPTED_MS),
    (MS, '\u0663', ACCEPTED_MS),     # ARABIC-INDIC DIGIT THREE
]

# unknown keys of the namespace: (key, value)
UNKNOWN = [
    ('iosched:nonsense', 'x'),
    ('iosched:io_profil', 'io'),
    ('iosched:IO_PROFILE', 'io'),
    ('iosched:latency_ms ', '2'),
]
ACCEPTED_KEYS = ('iosched:io_profile, iosched:latency_ms, '
                 'iosched:latency_sensitive, iosched:turbo')

# How scoring.Request exposes each key. Every row of extra_specs.SPECS must
# be listed here or in NOT_READ_BY_SCORING (decide when adding a key).
SCORING_FIELD = {IO: 'io_profile', LS: 'latency_sensitive', MS: 'latency_ms'}
NOT_READ_BY_SCORING = {'iosched:turbo'}   # the agent's vturbo reads it
# What scoring.Request holds when the key is unset.
SCORING_UNSET = {IO: None, LS: False, MS: None}


@pytest.mark.parametrize('key, value, want', GOOD)
def test_check_accepts(key, value, want):
    assert extra_specs.check(key, value) == want
    assert extra_specs.read({key: value}, key) == want


@pytest.mark.parametrize('key, value, accepted', BAD)
def test_check_rejects_with_the_key_value_and_what_is_accepted(
        key, value, accepted):
    with pytest.raises(extra_specs.InvalidExtraSpec) as info:
        extra_specs.check(key, value)
    err = info.value
    assert (err.key, err.value) == (key, value)
    msg = str(err)
    assert "'%s'" % key in msg
    assert repr(value) in msg
    assert accepted in msg
    assert extra_specs.read({key: value}, key) is None


@pytest.mark.parametrize('key, value', UNKNOWN)
def test_check_rejects_an_unknown_key_listing_the_known_ones(key, value):
    with pytest.raises(extra_specs.UnknownExtraSpec) as info:
        extra_specs.check(key, value)
    msg = str(info.value)
    assert "'%s'" % key in msg
    assert repr(value) in msg
    assert 'accepted keys: ' + ACCEPTED_KEYS in msg


@pytest.mark.parametrize('key', ['hw:cpu_policy', 'io_profile', 'iosched'])
def test_check_refuses_a_key_outside_the_namespace(key):
    with pytest.raises(ValueError, match='is not an .iosched:. flavor'):
        extra_specs.check(key, 'io')


@pytest.mark.parametrize('specs', [None, {}, {'hw:cpu_policy': 'shared'}])
def test_read_unset_is_none(specs):
    assert extra_specs.read(specs, IO) is None


def test_the_table_keys_are_the_ones_scoring_reads():
    assert extra_specs.IO_PROFILE == scoring.IO_PROFILE
    assert extra_specs.LATENCY_SENSITIVE == scoring.LATENCY_SENSITIVE
    assert extra_specs.LATENCY_MS == scoring.LATENCY_MS
    assert (extra_specs.BY_KEY[IO].kind.choices
            == tuple(scoring.IO_PROFILES))
    assert set(extra_specs.BY_KEY) == (set(SCORING_FIELD)
                                       | NOT_READ_BY_SCORING)
    assert [s.key for s in extra_specs.SPECS] == list(extra_specs.BY_KEY)
    assert all(extra_specs.in_namespace(k) for k in extra_specs.BY_KEY)


@pytest.mark.parametrize('key, value, want', GOOD)
def test_the_scheduler_reads_an_accepted_value_the_same_way(key, value,
                                                             want):
    request = scoring.Request.from_extra_specs(2, {key: value})
    assert getattr(request, SCORING_FIELD[key]) == want


# Every spelling Nova's own booleans accept (oslo_utils.strutils), in three
# cases and padded: those the validator accepts read the same in scoring.
_NOVA_BOOLS = ('1', 't', 'true', 'on', 'y', 'yes',
               '0', 'f', 'false', 'off', 'n', 'no')


@pytest.mark.parametrize('value', [
    form for word in _NOVA_BOOLS
    for form in (word, word.upper(), word.capitalize(), ' %s ' % word)])
def test_boolean_spellings_agree_with_scoring(value):
    try:
        parsed = extra_specs.check(LS, value)
    except extra_specs.InvalidExtraSpec:
        # rejected: only the one-letter forms, whose reading differs
        assert value.strip().lower() in ('t', 'f', 'y', 'n')
        return
    assert scoring.Request.from_extra_specs(
        1, {LS: value}).latency_sensitive is parsed


@pytest.mark.parametrize('key, value, accepted', BAD)
def test_a_rejected_value_is_unset_or_out_of_bounds_for_scoring(
        key, value, accepted):
    # Not a rule of the validator, a record of what the scheduler does with
    # a bad value stored before the validators (or below microversion 2.86).
    request = scoring.Request.from_extra_specs(2, {key: value})
    got = getattr(request, SCORING_FIELD[key])
    if (key, value) in ((MS, '+3'), (MS, '1_000'), (MS, '10001'),
                        (MS, '\u0663')):
        # int() in scoring reads these; the validator is stricter.
        assert got == int(value)
    else:
        assert got == SCORING_UNSET[key]
