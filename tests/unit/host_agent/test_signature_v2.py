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
"""Signature scheme ``hmac-sha256-v2``: the head (every field but the
per-vCPU records and the decisions) and the tail's lengths under the MAC,
the tail through its digest; a scheduler (``whole=False``) checks the head
only, a reader that keeps the tail checks its digest too.
"""

import copy
import json

import pytest

from bench.nova_scale import reports as fake_reports
from iosched.contract import signature
from tests import fixtures

KEY = signature.derive_host_key('m' * 40, 'compute-00002')


def _data():
    return json.loads(json.dumps(fake_reports.report_dict(
        2, vcpus=6, decisions=3)))


def _set(path, value):
    """A change: the report with the item at ``path`` set (or deleted)."""
    return lambda data: fixtures.mutated(data, path, value)


# (change after signing, verifies whole, verifies head only)
CHANGES = [
    (lambda d: d, True, True),
    (lambda d: dict(reversed(list(d.items()))), True, True),  # key order
    (_set(('io_vcpus',), 9), False, False),
    (_set(('ts',), 1e12), False, False),
    (_set(('seq',), 99), False, False),
    (_set(('host',), 'compute-00003'), False, False),
    (_set(('lsvm', 'count'), 17), False, False),
    (_set(('disk', 'reserved_iops'), 12345.0), False, False),
    (_set(('extra',), 1), False, False),
    (_set(('version',), KeyError), False, False),
    # the tail: its content is the digest's, its length the MAC's
    (_set(('vcpus', 0, 'klass'), 'idle'), False, True),
    (_set(('decisions', 1, 'reason'), 'forged'), False, True),
    (lambda d: dict(d, vcpus=d['vcpus'][1:]), False, False),
    (lambda d: dict(d, vcpus=d['vcpus'] + d['vcpus'][:1]), False, False),
    (lambda d: dict(d, vcpus=len(d['vcpus'])), False, False),
    (lambda d: dict(d, decisions=d['decisions'][:2]), False, False),
    (_set(('decisions',), KeyError), False, False),
]


@pytest.mark.parametrize('change, whole, head', CHANGES)
def test_v2_covers_the_head_and_the_tail_length(change, whole, head):
    data = _data()
    sig = signature.sign(data, KEY, scheme=signature.SCHEME_V2)
    changed = change(copy.deepcopy(data))
    assert signature.verify(changed, sig, KEY) is whole
    assert signature.verify(changed, sig, KEY, whole=False) is head


@pytest.mark.parametrize('change, whole, head', CHANGES)
def test_v1_always_covers_the_whole_report(change, whole, head):
    data = _data()
    sig = signature.sign(data, KEY)
    changed = change(copy.deepcopy(data))
    assert signature.verify(changed, sig, KEY) is whole
    assert signature.verify(changed, sig, KEY, whole=False) is whole


def test_the_digest_in_the_signature_is_under_the_mac():
    data = _data()
    sig = signature.sign(data, KEY, scheme=signature.SCHEME_V2)
    scheme, digest, mac = sig.split(':')
    assert scheme == signature.SCHEME_V2
    assert digest == signature.tail_digest(data)
    other = signature.tail_digest(dict(data, vcpus=[]))
    for forged in (other, '0' * 64):
        assert not signature.verify(data, '%s:%s:%s' % (scheme, forged, mac),
                                    KEY, whole=False)


def test_another_key_does_not_verify():
    data = _data()
    sig = signature.sign(data, signature.derive_host_key('m' * 40, 'x'),
                         scheme=signature.SCHEME_V2)
    assert not signature.verify(data, sig, KEY, whole=False)


@pytest.mark.parametrize('text', [
    'hmac-sha256-v2:', 'hmac-sha256-v2:' + '0' * 64,
    'hmac-sha256-v2:%s:%s' % ('g' * 64, '0' * 64),
    'hmac-sha256-v2:%s:%s' % ('0' * 64, 'A' * 64),
    'hmac-sha256-v2:%s:%s:' % ('0' * 64, '0' * 64),
    'hmac-sha256-v2:%s:%s' % ('0' * 63, '0' * 65),
    'hmac-sha256-v2:\u00e9:\ud800', 'hmac-sha256-v3:00:00',
])
def test_malformed_v2_signatures_do_not_verify(text):
    for whole in (True, False):
        assert not signature.verify(_data(), text, KEY, whole=whole)


@pytest.mark.parametrize('report', [
    {'host': 'c1', 'x': object()}, {'host': 'c1', 'vcpus': [object()]},
    {1: 'x', 'host': 'c1'}, ['not', 'a', 'dict'],
])
def test_unencodable_payloads_do_not_verify(report):
    sig = 'hmac-sha256-v2:%s:%s' % ('0' * 64, '0' * 64)
    for whole in (True, False):
        assert not signature.verify(report, sig, KEY, whole=whole)


def test_an_unknown_scheme_is_refused_naming_the_accepted_ones():
    with pytest.raises(ValueError) as e:
        signature.sign(_data(), KEY, scheme='md5')
    assert 'hmac-sha256, hmac-sha256-v2' in str(e.value)


@pytest.mark.parametrize('host, why', [
    (None, 'no host'), ('', 'no host'), (7, 'no host'),
    ('\ud800', 'not valid Unicode'),
])
def test_why_rejected_names_a_host_it_cannot_check(host, why):
    data = dict(_data(), host=host)
    assert why in signature.why_rejected(data, 'hmac-sha256-v2:0:0',
                                         'm' * 40, whole=False)
