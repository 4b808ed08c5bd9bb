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
"""The iotrace file format, version 1: JSON lines, gzip when the name
ends in ``.gz``.

Line 1 is the header object::

    {"format": "iosched-iotrace", "version": 1, "source": "simulator",
     "vms": ["VM1", ...], "layers": [...], "sources": {layer: text},
     "meta": {...}}

Every further line is one JSON array whose first item says its kind
(times in seconds from the start of the trace, floats):

* ``["io", ts, vm, layer, op, sync, bytes, sector, rid]``: one request
  reaching one layer. ``layer`` is one of ``req que dis com rsp``
  (Request, Queuing, Dispatch, Completion, Response); ``op`` "R" or "W";
  ``sync`` 1 or 0; ``sector`` in 512-byte units on the traced device;
  ``rid`` an integer naming the request, the same on all its layers.
* ``["vcpu", vm, vcpu, state, start, end]``: a vCPU state span; state
  one of ``running runnable idle inactive`` (inactive: idle for more
  than 30 ms, Xen credit's rule).
* ``["finish", vm, ts]``: when the VM's workload finished (absent: the
  analyzer takes the VM's last Response).

Unknown kinds are skipped by readers of version 1 (room to grow);
a different ``version`` is refused.
"""

import collections
import gzip
import json

FORMAT = 'iosched-iotrace'
VERSION = 1
LAYERS = ('req', 'que', 'dis', 'com', 'rsp')
LAYER_NAMES = {'req': 'Request', 'que': 'Queuing', 'dis': 'Dispatch',
               'com': 'Completion', 'rsp': 'Response'}
STATES = ('running', 'runnable', 'idle', 'inactive')
OPS = ('R', 'W')

Io = collections.namedtuple(
    'Io', 'ts vm layer op sync bytes sector rid')
Span = collections.namedtuple('Span', 'vm vcpu state start end')


class TraceError(ValueError):
    """A trace file that cannot be read: says where and why."""


class Trace:
    """A trace in memory: ``header`` (dict), ``io`` [Io], ``vcpu``
    [Span], ``finish`` {vm: s}.
    """

    def __init__(self, header=None, io=None, vcpu=None, finish=None):
        self.header = dict(header or {})
        self.header.setdefault('format', FORMAT)
        self.header.setdefault('version', VERSION)
        self.header.setdefault('layers', list(LAYERS))
        self.io = list(io or [])
        self.vcpu = list(vcpu or [])
        self.finish = dict(finish or {})

    @property
    def vms(self):
        listed = list(self.header.get('vms') or [])
        seen = set(listed)
        for e in self.io:
            if e.vm not in seen:
                seen.add(e.vm)
                listed.append(e.vm)
        return listed

    @property
    def end(self):
        ends = [e.ts for e in self.io] + [s.end for s in self.vcpu]
        return max(ends) if ends else 0.0


def _open(path, mode):
    if str(path).endswith('.gz'):
        return gzip.open(path, mode + 't', encoding='utf-8')
    return open(path, mode, encoding='utf-8')


def write(trace, path):
    with _open(path, 'w') as fh:
        hdr = dict(trace.header)
        hdr['vms'] = trace.vms
        fh.write(json.dumps(hdr, sort_keys=True) + '\n')
        for e in trace.io:
            fh.write(json.dumps(['io', round(e.ts, 7), e.vm, e.layer, e.op,
                                 int(bool(e.sync)), int(e.bytes),
                                 int(e.sector), e.rid]) + '\n')
        for s in trace.vcpu:
            fh.write(json.dumps(['vcpu', s.vm, s.vcpu, s.state,
                                 round(s.start, 7), round(s.end, 7)]) + '\n')
        for vm in sorted(trace.finish):
            fh.write(json.dumps(['finish', vm,
                                 round(trace.finish[vm], 7)]) + '\n')


def _num(v, what, where):
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise TraceError('%s: %s must be a number, got %r' % (where, what, v))
    return v


def parse_line(rec, where):
    """One data line (a list) as an ``Io``, a ``Span``, a ('finish', vm,
    ts) tuple or None (unknown kind).
    """
    if not isinstance(rec, list) or not rec:
        raise TraceError('%s: want a JSON array, got %r' % (where, rec))
    kind = rec[0]
    if kind == 'io':
        if len(rec) != 9:
            raise TraceError('%s: an io line has 9 items, got %d'
                             % (where, len(rec)))
        _, ts, vm, layer, op, sync, nbytes, sector, rid = rec
        if layer not in LAYERS:
            raise TraceError('%s: layer %r, accepted: %s'
                             % (where, layer, ' '.join(LAYERS)))
        if op not in OPS:
            raise TraceError('%s: op %r, accepted: R W' % (where, op))
        return Io(float(_num(ts, 'ts', where)), str(vm), layer, op,
                  bool(sync), int(_num(nbytes, 'bytes', where)),
                  int(_num(sector, 'sector', where)), rid)
    if kind == 'vcpu':
        if len(rec) != 6:
            raise TraceError('%s: a vcpu line has 6 items, got %d'
                             % (where, len(rec)))
        _, vm, vcpu, state, start, end = rec
        if state not in STATES:
            raise TraceError('%s: vCPU state %r, accepted: %s'
                             % (where, state, ' '.join(STATES)))
        start = float(_num(start, 'start', where))
        end = float(_num(end, 'end', where))
        if end < start:
            raise TraceError('%s: span ends (%s) before it starts (%s)'
                             % (where, end, start))
        return Span(str(vm), int(_num(vcpu, 'vcpu', where)), state,
                    start, end)
    if kind == 'finish':
        if len(rec) != 3:
            raise TraceError('%s: a finish line has 3 items' % where)
        return ('finish', str(rec[1]), float(_num(rec[2], 'ts', where)))
    return None


def read(path):
    """The ``Trace`` in ``path``; TraceError on anything malformed."""
    try:
        fh = _open(path, 'r')
    except OSError as e:
        raise TraceError('cannot open trace %s: %s' % (path, e))
    t = Trace()
    with fh:
        try:
            first = fh.readline()
        except (OSError, EOFError, UnicodeDecodeError) as e:
            raise TraceError('%s: not a readable trace: %s' % (path, e))
        try:
            hdr = json.loads(first)
        except ValueError:
            raise TraceError('%s:1: the first line is not a JSON header '
                             '(is this an iotrace file?)' % path)
        if not isinstance(hdr, dict) or hdr.get('format') != FORMAT:
            raise TraceError('%s:1: not an %s header' % (path, FORMAT))
        if hdr.get('version') != VERSION:
            raise TraceError('%s:1: trace version %r, this tool reads '
                             'version %d' % (path, hdr.get('version'),
                                             VERSION))
        t.header = hdr
        try:
            for n, line in enumerate(fh, 2):
                if not line.strip():
                    continue
                where = '%s:%d' % (path, n)
                try:
                    rec = json.loads(line)
                except ValueError as e:
                    raise TraceError('%s: not JSON: %s' % (where, e))
                got = parse_line(rec, where)
                if isinstance(got, Io):
                    t.io.append(got)
                elif isinstance(got, Span):
                    t.vcpu.append(got)
                elif got is not None:
                    t.finish[got[1]] = got[2]
        except (OSError, EOFError, UnicodeDecodeError) as e:
            raise TraceError('%s: truncated or corrupt: %s' % (path, e))
    t.io.sort(key=lambda e: e.ts)
    return t
