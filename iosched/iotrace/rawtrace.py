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
"""tracefs binary pages (``per_cpu/cpuN/trace_pipe_raw``) -> events.

Reading the binary ring-buffer pages costs the kernel a page copy; the
text ``trace_pipe`` makes it format every event. The layout is the one
``events/header_page`` and ``events/header_event`` describe:

* a page: u64 timestamp, u64 commit (bytes of data; bits 30-31 are
  "events were lost" flags), then the data;
* an event: a u32 header, ``type_len`` (5 bits) and ``time_delta`` (27
  bits); type_len 1..28: the payload is type_len x 4 bytes after the
  header; 0: the next u32 is the length (+4), payload after it; 29:
  padding (time_delta 0: the rest of the page); 30: time extend
  (delta += next u32 << 27); 31: an absolute time stamp;
* a payload: the event's fields at the offsets of its ``format`` file
  (common_type u16 first, common_pid i32 at 4).

``parse(pages, formats)`` yields the same ``tracelines.Event`` tuples as
the text parser, so the assembler does not care which was read.
"""

import os
import re
import struct

from iosched.iotrace import tracelines

PAGE_HDR = struct.Struct('<QQ')
U32 = struct.Struct('<I')
COMMIT_MASK = (1 << 30) - 1
MISSED = 1 << 31
TASK_REPORT_MAX = 0x100      # prev_state of a preempted task (R+)
_FIELD = re.compile(r'field:(.*?)\s+(\w+)(?:\[\d+\])?;\s*offset:(\d+);\s*'
                    r'size:(\d+);\s*signed:(\d)')


def read_format(root, sub, ev):
    """(id, {field: (offset, size, signed)}) of one event."""
    with open(os.path.join(root, 'events', sub, ev, 'format')) as fh:
        text = fh.read()
    eid = int(re.search(r'^ID:\s*(\d+)', text, re.M).group(1))
    fields = {m.group(2): (int(m.group(3)), int(m.group(4)),
                           m.group(5) == '1')
              for m in _FIELD.finditer(text)}
    return eid, fields


def formats(root, events):
    """{id: (name, fields)} for [(sub, event)]."""
    out = {}
    for sub, ev in events:
        eid, fields = read_format(root, sub, ev)
        out[eid] = (ev, fields)
    return out


def _int(buf, off, size, signed):
    return int.from_bytes(buf[off:off + size], 'little', signed=signed)


def _str(buf, off, size):
    return bytes(buf[off:off + size]).split(b'\0', 1)[0].decode(
        'ascii', 'replace')


class Decoder:
    def __init__(self, fmts):
        self.fmts = fmts
        self.lost_pages = 0

    def event(self, ts, p):
        eid = p[0] | (p[1] << 8)
        f = self.fmts.get(eid)
        if f is None:
            return None
        name, fl = f
        tid = _int(p, 4, 4, True)
        if name.startswith('block_'):
            dev = _int(p, *fl['dev'])
            return tracelines.Event(
                ts, name, tid, '%d,%d' % (dev >> 20, dev & 0xfffff),
                _str(p, fl['rwbs'][0], fl['rwbs'][1]),
                _int(p, *fl['sector']), _int(p, *fl['nr_sector']), None)
        if name == 'sched_switch':
            st = _int(p, *fl['prev_state'])
            state = 'R' if st == 0 or st & TASK_REPORT_MAX else 'S'
            return tracelines.Event(ts, name, tid, _int(p, *fl['prev_pid']),
                                    state, _int(p, *fl['next_pid']), None,
                                    None)
        if name == 'sched_wakeup':
            return tracelines.Event(ts, name, tid, _int(p, *fl['pid']),
                                    None, None, None, None)
        return None

    def page(self, page):
        """Events of one page, in order."""
        if len(page) < PAGE_HDR.size:
            return
        ts, commit = PAGE_HDR.unpack_from(page, 0)
        if commit & MISSED:
            self.lost_pages += 1
        end = PAGE_HDR.size + (commit & COMMIT_MASK)
        end = min(end, len(page))
        off = PAGE_HDR.size
        mv = memoryview(page)
        while off + 4 <= end:
            hdr = U32.unpack_from(page, off)[0]
            type_len, delta = hdr & 0x1f, hdr >> 5
            if type_len == 29:                     # padding
                if delta == 0:
                    return
                off += 4 + U32.unpack_from(page, off + 4)[0]
                continue
            if type_len == 30:                     # time extend
                ts += delta + (U32.unpack_from(page, off + 4)[0] << 27)
                off += 8
                continue
            if type_len == 31:                     # absolute time stamp
                ts = delta + (U32.unpack_from(page, off + 4)[0] << 27)
                off += 8
                continue
            ts += delta
            if type_len == 0:
                length = U32.unpack_from(page, off + 4)[0] - 4
                start = off + 8
            else:
                length = type_len * 4
                start = off + 4
            e = self.event(ts / 1e9, mv[start:start + length])
            if e is not None:
                yield e
            off = start + length


def parse(pages_per_cpu, fmts, page_size=4096):
    """Events of every CPU's pages, merged in time order."""
    dec = Decoder(fmts)
    out = []
    for data in pages_per_cpu:
        for i in range(0, len(data), page_size):
            out.extend(dec.page(data[i:i + page_size]))
    out.sort(key=lambda e: e.ts)
    return out, dec.lost_pages
