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
"""Table tests of the strict reading the Nova API validators apply.

``iosched.contract.flavor.check`` (one ``iosched:*`` key). ``GOOD`` and
``BAD`` are also the rows of tests/nova/test_validators.py, which runs them
through Nova's validator registry and API. The rule "a value the API
accepts means the same to the scheduler, the agent and Placement sizing,
and a value it refuses is unset for all of them" is
tests/unit/contract/test_flavor.py.
"""

import pytest

from iosched.contract import flavor
from iosched.host_agent import model
from iosched.nova_plugin import placement_resources
from iosched.nova_plugin import scoring

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

# What each reader holds for each key (the FlavorSpecs field). Every row
# of flavor.SPECS is listed (decide when adding a key).
FIELD = {IO: 'io_profile', LS: 'latency_sensitive', MS: 'latency_ms',
         'iosched:turbo': 'turbo'}
UNSET = {IO: None, LS: False, MS: None, 'iosched:turbo': False}


def _readers(key, value):
    """{reader: what it holds for ``key``} when the flavor has key=value."""
    specs = {key: value}
    request = scoring.Request.from_extra_specs(2, specs)
    inst = model.InstanceInfo(uuid='u', name='d', vcpus=2, extra_specs=specs)
    placement = placement_resources.resources_for(2, specs)
    out = {'contract': getattr(flavor.read(specs), FIELD[key])}
    if key in (IO, LS, MS):
        out['scheduler'] = getattr(request, FIELD[key])
    if key in (LS, MS, 'iosched:turbo'):
        out['agent'] = getattr(inst, FIELD[key])
    if key == IO:
        out['placement'] = (placement.get(
            placement_resources.key(placement_resources.IO_VCPU)) == '2')
        out['contract'] = flavor.read(specs).has_io_vcpus
        out['scheduler'] = scoring.request_io_vcpus(request) == 2
    if key == LS:
        out['placement'] = placement_resources.key(
            placement_resources.LSVM_BW) in placement
    return out


@pytest.mark.parametrize('key, value, want', GOOD)
def test_check_accepts(key, value, want):
    assert flavor.check(key, value) == want
    assert getattr(flavor.read({key: value}), FIELD[key]) == want
    assert flavor.read({key: value}).ignored == ()


@pytest.mark.parametrize('key, value, accepted', BAD)
def test_check_rejects_with_the_key_value_and_what_is_accepted(
        key, value, accepted):
    with pytest.raises(flavor.InvalidExtraSpec) as info:
        flavor.check(key, value)
    err = info.value
    assert (err.key, err.value) == (key, value)
    msg = str(err)
    assert "'%s'" % key in msg
    assert repr(value) in msg
    assert accepted in msg
    reading = flavor.read({key: value})
    assert getattr(reading, FIELD[key]) == UNSET[key]
    assert [(i.key, str(i.error)) for i in reading.ignored] == [(key, msg)]


@pytest.mark.parametrize('key, value', UNKNOWN)
def test_check_rejects_an_unknown_key_listing_the_known_ones(key, value):
    with pytest.raises(flavor.UnknownExtraSpec) as info:
        flavor.check(key, value)
    msg = str(info.value)
    assert "'%s'" % key in msg
    assert repr(value) in msg
    assert 'accepted keys: ' + ACCEPTED_KEYS in msg


@pytest.mark.parametrize('key', ['hw:cpu_policy', 'io_profile', 'iosched'])
def test_check_refuses_a_key_outside_the_namespace(key):
    with pytest.raises(ValueError, match='is not an .iosched:. flavor'):
        flavor.check(key, 'io')


@pytest.mark.parametrize('specs', [None, {}, {'hw:cpu_policy': 'shared'}])
def test_read_unset_is_unset(specs):
    reading = flavor.read(specs)
    assert reading.io_profile is None and not reading.latency_sensitive
    assert reading.ignored == ()


def test_the_table_is_the_one_every_reader_reads():
    assert set(flavor.BY_KEY) == set(FIELD)
    assert [s.key for s in flavor.SPECS] == list(flavor.BY_KEY)
    assert all(flavor.in_namespace(k) for k in flavor.BY_KEY)
    assert flavor.BY_KEY[IO].kind.choices == flavor.IO_PROFILES
    assert set(flavor.IO_STRENGTH_PER_VCPU) == set(flavor.IO_PROFILES)
    fields = {f.name for f in flavor.FlavorSpecs.__dataclass_fields__
              .values()}
    assert {s.field for s in flavor.READ.values()} <= fields


@pytest.mark.parametrize('key, value, want', GOOD)
def test_every_reader_reads_an_accepted_value_the_same_way(key, value,
                                                            want):
    got = _readers(key, value)
    if key == IO:
        want = flavor.IO_STRENGTH_PER_VCPU[want] > 0
    assert set(got.values()) == {want}, got


# Every spelling Nova's own booleans accept (oslo_utils.strutils), in three
# cases and padded: the validator refuses only the one-letter forms, and
# every reader reads each the way the validator does (unset when refused).
_NOVA_BOOLS = ('1', 't', 'true', 'on', 'y', 'yes',
               '0', 'f', 'false', 'off', 'n', 'no')


@pytest.mark.parametrize('value', [
    form for word in _NOVA_BOOLS
    for form in (word, word.upper(), word.capitalize(), ' %s ' % word)])
def test_boolean_spellings_agree_with_every_reader(value):
    try:
        parsed = flavor.check(LS, value)
    except flavor.InvalidExtraSpec:
        assert value.strip().lower() in ('t', 'f', 'y', 'n')
        parsed = False
    assert set(_readers(LS, value).values()) == {parsed}


@pytest.mark.parametrize('key, value, accepted', BAD)
def test_a_rejected_value_is_unset_for_every_reader(key, value, accepted):
    # Values stored before the validators (or below microversion 2.86):
    # before issue 24 the scheduler read '+3', '1_000', '10001', '\u0663'
    # with int() and the agent '2.5' as 2.5 ms; now no reader does.
    want = UNSET[key]
    if key == IO:
        want = False
    assert set(_readers(key, value).values()) == {want}
