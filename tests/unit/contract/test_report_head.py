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
"""The head/tail split of a report (RPC 1.3) and the v2 signature of a
head-only message: the whole report's signature verifies its head with
the tail counts, and nothing else does.
"""

import json

import pytest

from iosched.contract import payload
from iosched.contract import payload_check
from iosched.contract import payload_sections
from iosched.contract import signature

HOST = 'compute-1'
MASTER = 'c0ffee' * 8
KEY = signature.derive_host_key(MASTER, HOST)


def _whole(vcpus=32, decisions=50, drop=()):
    """An agent's whole report dict: ``vcpus`` records, 1 LSVM vCPU."""
    records = tuple(payload_sections.VcpuEntry(
        instance_uuid='00000000-0000-0000-0000-%012d' % (i // 4),
        vcpu=i % 4, pcpu=i % 8, io_strength=0.125, klass='io',
        run_share=0.5) for i in range(vcpus))
    decided = tuple(payload_sections.DecisionEntry(
        kind='vcpu_slice', instance_uuid=records[0].instance_uuid
        if records else 'u', target=str(i % 4), before=3000, after=1000,
        rule='vslicer.lsvm_microslice', reason='L=2ms, k=%d' % i,
        ts=99.0 + i) for i in range(decisions))
    report = payload.HostReport(
        host=HOST, ts=1000.0, seq=7, report_interval=10.0, pcpus=8,
        vcpus=records, io_vcpus=vcpus, io_strength_total=0.125 * vcpus,
        io_strength_per_pcpu=0.125 * vcpus / 8,
        lsvm=payload_sections.LsvmState(True, 1, 0.125, 23, 2.0),
        decisions=decided)
    data = report.to_dict()
    for name in drop:
        del data[name]
    # as the broker delivers it
    return json.loads(json.dumps(data))


SPLITS = [
    # (case, whole report, counts expected)
    ('32 vCPUs, 50 decisions', _whole(), {'vcpus': 32, 'decisions': 50}),
    ('no vCPUs, no decisions', _whole(vcpus=0, decisions=0),
     {'vcpus': 0, 'decisions': 0}),
    ('1.0 report: no decisions field', _whole(drop=('decisions',)),
     {'vcpus': 32}),
]


@pytest.mark.parametrize('whole, counts', [c[1:] for c in SPLITS],
                         ids=[c[0] for c in SPLITS])
def test_split_leaves_the_head_and_counts_the_tail(whole, counts):
    head, got = signature.split(whole)
    assert got == counts
    assert not set(signature.TAIL) & set(head)
    assert dict(head, **{k: whole[k] for k in counts}) == whole
    # the head is what the scheduler parses: equal to the whole's head
    assert payload.HostReport.head_from_dict(head, got) == \
        payload.HostReport.head_from_dict(whole)
    assert len(json.dumps(head)) < len(json.dumps(whole)) or not any(
        counts.values())


def _case(change):
    """(head, signature, counts) of the agent's report, then ``change``d."""
    whole = _whole()
    sig = signature.sign(whole, KEY, scheme=signature.SCHEME_V2)
    head, counts = signature.split(whole)
    msg = {'head': head, 'sig': sig, 'counts': counts, 'whole': whole}
    change(msg)
    return msg


def _set(**kw):
    return lambda m: m.update(kw)


def _counts(**kw):
    return lambda m: m['counts'].update(kw)


def _head(**kw):
    return lambda m: m['head'].update(kw)


def _other_digest(m):
    scheme, digest, mac = m['sig'].split(':')
    flipped = ('0' if digest[0] != '0' else '1') + digest[1:]
    m['sig'] = ':'.join((scheme, flipped, mac))


VERIFY = [
    # (case, change to the message, verifies)
    ('as the agent sent it', lambda m: None, True),
    ('one vCPU record more claimed', _counts(vcpus=33), False),
    ('one vCPU record fewer claimed', _counts(vcpus=31), False),
    ('decisions count changed', _counts(decisions=49), False),
    ('decisions count left out', lambda m: m['counts'].pop('decisions'),
     False),
    ('a count as a string', _counts(vcpus='32'), False),
    ('a count as true', _counts(decisions=True), False),
    ('counts not an object', _set(counts=[32, 50]), False),
    ('head field changed', _head(io_vcpus=0), False),
    ('head field added', _head(extra=1), False),
    ('the tail put back into the head',
     lambda m: m['head'].update(vcpus=m['whole']['vcpus']), False),
    ('another host in the head', _head(host='compute-2'), False),
    ('another tail digest in the signature', _other_digest, False),
    ('v1 signature of the whole report',
     lambda m: m.update(sig=signature.sign(m['whole'], KEY)), False),
    ('v1 signature of the head',
     lambda m: m.update(sig=signature.sign(m['head'], KEY)), False),
    ('signed with another host\'s key',
     lambda m: m.update(sig=signature.sign(
         m['whole'], signature.derive_host_key(MASTER, 'other'),
         scheme=signature.SCHEME_V2)), False),
    ('no signature', _set(sig=None), False),
]


@pytest.mark.parametrize('change, ok', [c[1:] for c in VERIFY],
                         ids=[c[0] for c in VERIFY])
def test_head_only_verification(change, ok):
    m = _case(change)
    assert signature.verify(m['head'], m['sig'], KEY,
                            counts=m['counts']) is ok
    why = signature.why_rejected(m['head'], m['sig'], MASTER,
                                 counts=m['counts'])
    assert (why is None) is ok


WHOLE = [
    # (case, change, verifies whole=True, verifies whole=False)
    ('the same signature verifies the whole report', lambda m: None,
     True, True),
    ('a changed vCPU record: only the digest tells',
     lambda m: m['whole']['vcpus'][0].update(klass='idle'), False, True),
    ('a vCPU record dropped: the counts tell',
     lambda m: m['whole']['vcpus'].pop(), False, False),
]


@pytest.mark.parametrize('change, whole_ok, head_ok',
                         [c[1:] for c in WHOLE], ids=[c[0] for c in WHOLE])
def test_one_signature_for_the_head_and_the_whole(change, whole_ok, head_ok):
    m = _case(change)
    assert signature.verify(m['whole'], m['sig'], KEY) is whole_ok
    assert signature.verify(m['whole'], m['sig'], KEY,
                            whole=False) is head_ok


def test_a_whole_report_is_not_a_head():
    m = _case(lambda m: None)
    # tail counts given with the tail still in: neither form
    assert not signature.verify(m['whole'], m['sig'], KEY,
                                counts=m['counts'])


PARSE = [
    # (case, head change, counts, field named, or None: parsed)
    ('as sent', None, {'vcpus': 32, 'decisions': 50}, None),
    ('no decisions count (a 1.0 report)', None, {'vcpus': 32}, None),
    ('no vCPU count', None, {'decisions': 50}, 'tail_counts.vcpus'),
    ('negative vCPU count', None, {'vcpus': -1}, 'tail_counts.vcpus'),
    ('vCPU count as a number string', None, {'vcpus': '3'},
     'tail_counts.vcpus'),
    ('too many decisions', None,
     {'vcpus': 1, 'decisions': payload.MAX_DECISIONS + 1},
     'tail_counts.decisions'),
    ('counts not an object', None, [32, 50], 'tail_counts'),
    ('the records still in the head', {'vcpus': []}, {'vcpus': 0},
     'vcpus'),
    ('the decisions still in the head', {'decisions': []}, {'vcpus': 0},
     'decisions'),
    ('more vCPUs than the bound', None, {'vcpus': 10 ** 6}, 'vcpus'),
]


@pytest.mark.parametrize('change, counts, field', [c[1:] for c in PARSE],
                         ids=[c[0] for c in PARSE])
def test_head_parse_checks_the_counts(change, counts, field):
    head, _ = signature.split(_whole())
    head.update(change or {})
    if field is None:
        got = payload.HostReport.head_from_dict(head, counts)
        assert got.vcpus == () and got.decisions == ()
        return
    with pytest.raises(payload_check.PayloadError) as caught:
        payload.HostReport.head_from_dict(head, counts)
    assert caught.value.field == field


@pytest.mark.parametrize('records', [0, 5, 32])
def test_non_lsvm_vcpus_come_from_the_vcpu_count(records):
    whole = _whole(vcpus=records)
    whole['lsvm'].pop('nlsvm_vcpus', None)     # as an agent before 1.2
    head, counts = signature.split(whole)
    got = payload.HostReport.head_from_dict(head, counts).lsvm.nlsvm_vcpus
    assert got == payload.HostReport.head_from_dict(whole).lsvm.nlsvm_vcpus
    assert got == (max(0, records - whole['lsvm']['count'])
                   if records else None)
