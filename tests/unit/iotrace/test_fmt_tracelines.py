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
"""The trace format (round trip, bad files) and the tracefs line parser
and assembler of the real-host recorder, on recorded-shape lines.
"""

import gzip
import json

import pytest

from iosched.iotrace import cli
from iosched.iotrace import fmt
from iosched.iotrace import tracelines


def _sample():
    return fmt.Trace(
        {'source': 'test', 'vms': ['a', 'b']},
        [fmt.Io(0.5, 'a', 'req', 'R', True, 4096, 8, 1),
         fmt.Io(0.75, 'a', 'dis', 'R', True, 4096, 8, 1),
         fmt.Io(1.0, 'b', 'que', 'W', False, 512, 99, 2)],
        [fmt.Span('a', 0, 'inactive', 0.1, 0.4)], {'a': 2.0})


@pytest.mark.parametrize('name', ['t.jsonl', 't.jsonl.gz'])
def test_round_trip(tmp_path, name):
    path = str(tmp_path / name)
    fmt.write(_sample(), path)
    t = fmt.read(path)
    assert t.header['version'] == fmt.VERSION
    assert t.vms == ['a', 'b']
    assert t.io == _sample().io
    assert t.vcpu == _sample().vcpu
    assert t.finish == {'a': 2.0}
    if name.endswith('.gz'):
        with gzip.open(path, 'rt') as fh:
            assert json.loads(fh.readline())['format'] == fmt.FORMAT


@pytest.mark.parametrize('lines,match', [
    (['not json'], 'not a JSON header'),
    (['{"format": "other"}'], 'not an iosched-iotrace header'),
    (['{"format": "iosched-iotrace", "version": 9}'], 'version 9'),
    (['{"format": "iosched-iotrace", "version": 1}',
      '["io", 0.1, "a", "xyz", "R", 1, 1, 1, 1]'], "layer 'xyz'"),
    (['{"format": "iosched-iotrace", "version": 1}',
      '["io", 0.1, "a", "que", "T", 1, 1, 1, 1]'], "op 'T'"),
    (['{"format": "iosched-iotrace", "version": 1}',
      '["vcpu", "a", 0, "asleep", 0, 1]'], "state 'asleep'"),
    (['{"format": "iosched-iotrace", "version": 1}',
      '["vcpu", "a", 0, "idle", 2, 1]'], 'ends'),
    (['{"format": "iosched-iotrace", "version": 1}',
      '["io", "x", "a", "que", "R", 1, 1, 1, 1]'], 'ts must be a number'),
])
def test_bad_files_say_where_and_why(tmp_path, lines, match):
    path = tmp_path / 'bad.jsonl'
    path.write_text('\n'.join(lines) + '\n')
    with pytest.raises(fmt.TraceError, match=match):
        fmt.read(str(path))


def test_unknown_line_kinds_are_skipped(tmp_path):
    path = tmp_path / 't.jsonl'
    path.write_text('{"format": "iosched-iotrace", "version": 1}\n'
                    '["future", 1, 2]\n')
    assert fmt.read(str(path)).io == []


def test_cli_bad_trace_exits_2(tmp_path, capsys):
    path = tmp_path / 'bad.jsonl'
    path.write_text('hello\n')
    assert cli.main(['analyze', str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith('iosched-iotrace: ') and 'bad.jsonl:1' in err


LINES = """\
 CPU 0/TCG-101 [000] d..2. 10.000100: sched_switch: prev_comm=CPU 0/TCG \
prev_pid=101 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 \
next_prio=120
 CPU 0/TCG-101 [000] ..... 10.000000: block_bio_queue: 7,0 RS 2048 + 32 [q]
 CPU 0/TCG-101 [000] ...1. 10.000010: block_rq_insert: 7,0 RS 16384 () \
2048 + 32 be,0,4 [q]
 CPU 0/TCG-101 [000] ..... 10.000020: block_bio_queue: 7,0 RS 2080 + 32 [q]
 kworker/0:1-50 [000] ..... 10.000500: block_rq_issue: 7,0 RS 32768 () \
2048 + 64 be,0,4 [kworker]
 kworker/1:2-51 [001] ..... 10.001000: block_bio_queue: 7,0 WS 9000 + 8 [k]
 kworker/1:2-51 [001] ..... 10.001100: block_rq_issue: 7,0 WS 4096 () \
9000 + 8 be,0,4 [k]
 <idle>-0 [001] ..s1. 10.002000: block_rq_complete: 7,0 RS () 2048 + 64 \
be,0,4 [0]
 <idle>-0 [001] ..s1. 10.002100: block_rq_complete: 7,0 WS () 9000 + 8 \
be,0,4 [0]
 <idle>-0 [001] d..3. 10.002200: sched_wakeup: comm=qemu-system-x86 \
pid=100 prio=120 target_cpu=001
 <idle>-0 [001] d..3. 10.002300: sched_wakeup: comm=qemu-system-x86 \
pid=200 prio=120 target_cpu=001
 <idle>-0 [000] d..3. 10.200100: sched_wakeup: comm=CPU 0/TCG pid=101 \
prio=120 target_cpu=000
 <idle>-0 [000] d..2. 10.200200: sched_switch: prev_comm=swapper/0 \
prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=CPU 0/TCG next_pid=101 \
next_prio=120
"""


def _assembled():
    events = sorted(tracelines.parse(LINES), key=lambda e: e.ts)
    asm = tracelines.Assembler(
        tid_vm={100: 'a', 101: 'a', 200: 'b'}, vcpu_tid={101: ('a', 0)},
        resp_tid={100: 'a', 200: 'b'},
        sector_vm=lambda s: 'a' if s < 4096 else 'b', t0=10.0)
    for e in events:
        asm.feed(e)
    asm.finish(10.3)
    return asm


def test_parse_every_kind():
    evs = list(tracelines.parse(LINES))
    assert [e.ev for e in evs][:3] == ['sched_switch', 'block_bio_queue',
                                       'block_rq_insert']
    assert evs[1] == tracelines.Event(10.0, 'block_bio_queue', 101, '7,0',
                                      'RS', 2048, 32, None)
    assert evs[0].a == 101 and evs[0].b == 'S' and evs[0].c == 0


@pytest.mark.parametrize('rwbs,want', [
    ('R', ('R', True)), ('RA', ('R', True)), ('W', ('W', False)),
    ('WS', ('W', True)), ('FWS', ('W', True)), ('N', None), ('D', None)])
def test_op_sync(rwbs, want):
    assert tracelines.op_sync(rwbs) == want


def test_assembler_layers_merge_and_attribution():
    asm = _assembled()
    by = {}
    for e in asm.io:
        by.setdefault(e.rid, {})[e.layer] = e
    assert len(by) == 3
    r1, r2, w = by[1], by[2], by[3]
    # the first bio: queued by a's vCPU thread, inserted, merged issue
    assert r1['req'].vm == 'a' and r1['req'].ts == pytest.approx(0.0)
    assert r1['que'].ts == pytest.approx(0.00001)
    assert r1['dis'].ts == pytest.approx(0.0005)
    # the back-merged bio shares the dispatch; never inserted: Queuing
    # = its Request time
    assert r2['que'].ts == pytest.approx(0.00002)
    assert r2['dis'].ts == r1['dis'].ts and r2['com'].ts == r1['com'].ts
    # a's completions answered by a's main-loop wake-up, b's by b's
    assert r1['rsp'].ts == pytest.approx(0.0022)
    assert w['rsp'].ts == pytest.approx(0.0023)
    # the kworker write: by sector, to b; sync flag from WS
    assert w['req'].vm == 'b' and w['req'].op == 'W' and w['req'].sync
    assert asm.counts['attr_tid'] == 2 and asm.counts['attr_sector'] == 1


def test_assembler_vcpu_spans_inactive_after_30ms():
    spans = _assembled().spans
    got = [(s.state, round(s.start, 4), round(s.end, 4)) for s in spans]
    assert got == [('running', 0.0, 0.0001),
                   ('idle', 0.0001, 0.0301),
                   ('inactive', 0.0301, 0.2001),
                   ('runnable', 0.2001, 0.2002),
                   ('running', 0.2002, 0.3)]


def _rb_page(ts0, events, page_size=4096):
    """A ring-buffer page: header, then (delta, payload) events; a delta
    above 2**27 - 1 gets a time-extend record first.
    """
    import struct
    data = b''
    for delta, payload in events:
        if delta >= 1 << 27:
            data += struct.pack('<II', 30 | ((delta & ((1 << 27) - 1)) << 5),
                                delta >> 27)
            delta = 0
        pad = (-len(payload)) % 4
        payload += b'\0' * pad
        n = len(payload) // 4
        if n <= 28:
            data += struct.pack('<I', n | (delta << 5)) + payload
        else:
            data += struct.pack('<II', 0 | (delta << 5),
                                len(payload) + 4) + payload
    page = struct.pack('<QQ', ts0, len(data)) + data
    return page + b'\0' * (page_size - len(page))


def _payload(eid, pid, fields, size):
    import struct
    buf = bytearray(size)
    struct.pack_into('<HBBi', buf, 0, eid, 0, 0, pid)
    for off, fmt_, value in fields:
        struct.pack_into(fmt_, buf, off, value)
    return bytes(buf)


def test_raw_pages_decode_like_text():
    from iosched.iotrace import rawtrace
    fmts = {
        7: ('block_rq_issue', {'dev': (8, 4, False), 'sector': (16, 8, False),
                               'nr_sector': (24, 4, False),
                               'rwbs': (34, 10, False)}),
        9: ('sched_switch', {'prev_pid': (24, 4, True),
                             'prev_state': (32, 8, True),
                             'next_pid': (56, 4, True)}),
        11: ('sched_wakeup', {'pid': (24, 4, True)}),
    }
    issue = _payload(7, 42, [(8, '<I', (7 << 20) | 1), (16, '<Q', 2048),
                             (24, '<I', 64), (34, '10s', b'RS')], 64)
    switch = _payload(9, 42, [(24, '<i', 42), (32, '<q', 0x100),
                              (56, '<i', 0)], 64)
    sleep = _payload(9, 42, [(24, '<i', 42), (32, '<q', 1), (56, '<i', 0)],
                     64)
    wake = _payload(11, 0, [(24, '<i', 42)], 40)
    unknown = _payload(99, 1, [], 200)           # a long (type_len 0) one
    cpu0 = _rb_page(10_000_000_000, [(500, issue), (3 << 27, switch),
                                     (100, unknown)])
    cpu1 = _rb_page(10_000_000_100, [(0, wake), (50, sleep)])
    evs, lost = rawtrace.parse([cpu0, cpu1], fmts)
    assert lost == 0
    assert [e.ev for e in evs] == ['sched_wakeup', 'sched_switch',
                                   'block_rq_issue', 'sched_switch']
    assert evs[0] == tracelines.Event(10.0000001, 'sched_wakeup', 0, 42,
                                      None, None, None, None)
    assert evs[1].b == 'S'                        # state 1: sleeping
    assert evs[2] == tracelines.Event(10.0000005, 'block_rq_issue', 42,
                                      '7,1', 'RS', 2048, 64, None)
    assert evs[3].b == 'R'                        # preempted (R+)
    assert evs[3].ts == pytest.approx(10.0000005 + (3 << 27) / 1e9)


SPLIT = """\
 w-7 [000] ..... 1.000000: block_bio_queue: 7,0 R 1000 + 512 [w]
 w-7 [000] ..... 1.000100: block_rq_issue: 7,0 R 131072 () 1000 + 256 x [w]
 w-7 [000] ..... 1.000200: block_rq_issue: 7,0 R 131072 () 1256 + 256 x [w]
 <idle>-0 [001] ..s1. 1.001000: block_rq_complete: 7,0 R () 1000 + 256 x [0]
 <idle>-0 [001] ..s1. 1.002000: block_rq_complete: 7,0 R () 1256 + 256 x [0]
"""


def test_a_split_bio_keeps_its_rid_and_bytes():
    asm = tracelines.Assembler({7: 'a'}, {}, {}, t0=1.0)
    for e in tracelines.parse(SPLIT):
        asm.feed(e)
    assert {e.rid for e in asm.io} == {1}
    by = {}
    for e in asm.io:
        by.setdefault(e.layer, []).append(e.bytes)
    assert by == {'req': [262144], 'que': [262144], 'dis': [131072, 131072],
                  'com': [131072, 131072]}
    assert asm.counts['split_pieces'] == 1
    assert 'seen_first_at_issue' not in asm.counts
