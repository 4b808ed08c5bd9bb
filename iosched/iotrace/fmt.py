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
a different ``version`` is refused, and so is a value the analysis could
not use (``read``: times NaN, infinite or outside 0..MAX_SECONDS, counts
that are not whole numbers in range, an unhashable ``rid``, ill-typed
header fields), in one ``TraceError`` line saying where.
"""

import collections
import gzip
import json
import math
import zlib

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


# Bounds a reader holds every line to (a recording lasts at most a day;
# a week leaves room), so that no value makes the analysis divide by NaN,
# allocate for ever or overflow a float.
MAX_SECONDS = 7 * 86400.0
MAX_BYTES = 1 << 40             # one request
MAX_INDEX = 1 << 63             # sectors, request ids
MAX_VCPUS = 4096
MAX_NAME = 256                  # VM names


def _show(v, limit=60):
    """``repr(v)``, cut to ``limit`` characters with the length said."""
    text = repr(v)
    if len(text) > limit:
        text = '%s...(%d characters)' % (text[:limit], len(text))
    return text


def _num(v, what, where):
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise TraceError('%s: %s must be a number, got %s'
                         % (where, what, _show(v)))
    return v


def _time(v, what, where):
    """A time in seconds from the start: finite, 0..MAX_SECONDS."""
    _num(v, what, where)
    if not 0 <= v <= MAX_SECONDS:      # also NaN, infinity, huge ints
        raise TraceError('%s: %s %s; accepted: seconds from the start of '
                         'the trace, 0 to %d' % (where, what, _show(v),
                                                 MAX_SECONDS))
    return float(v)


def _count(v, what, where, hi):
    """A whole number 0 <= v < hi (an integral float is taken)."""
    _num(v, what, where)
    whole = isinstance(v, int) or (math.isfinite(v) and v == int(v))
    if not whole or not 0 <= v < hi:
        raise TraceError('%s: %s %s; accepted: a whole number from 0 to %d'
                         % (where, what, _show(v), hi - 1))
    return int(v)


def _name(v, what, where):
    if not isinstance(v, str) or not v or len(v) > MAX_NAME:
        raise TraceError('%s: %s %s; accepted: a text of 1 to %d characters'
                         % (where, what, _show(v), MAX_NAME))
    return v


def _rid(v, where):
    if isinstance(v, str) and len(v) <= MAX_NAME:
        return v
    if isinstance(v, int) and not isinstance(v, bool) and (
            -MAX_INDEX < v < MAX_INDEX):
        return v
    raise TraceError('%s: rid %s; accepted: an integer or a text naming '
                     'the request' % (where, _show(v)))


def check_header(hdr, where):
    """Refuse header fields the tools use with the wrong type."""
    vms = hdr.get('vms')
    if vms is not None:
        if not isinstance(vms, list):
            raise TraceError('%s: vms %s; accepted: a list of VM names'
                             % (where, _show(vms)))
        for vm in vms:
            _name(vm, 'VM name in vms', where)
    layers = hdr.get('layers')
    if layers is not None and not isinstance(layers, list):
        raise TraceError('%s: layers %s; accepted: a list of %s'
                         % (where, _show(layers), ' '.join(LAYERS)))
    sources = hdr.get('sources')
    if sources is not None and not (isinstance(sources, dict) and all(
            isinstance(x, str) for x in sources.values())):
        raise TraceError('%s: sources %s; accepted: {layer: text}'
                         % (where, _show(sources)))
    source = hdr.get('source')
    if source is not None and not isinstance(source, str):
        raise TraceError('%s: source %s; accepted: a text' % (
            where, _show(source)))


def parse_line(rec, where):
    """One data line (a list) as an ``Io``, a ``Span``, a ('finish', vm,
    ts) tuple or None (unknown kind).
    """
    if not isinstance(rec, list) or not rec:
        raise TraceError('%s: want a JSON array, got %s' % (where,
                                                             _show(rec)))
    kind = rec[0]
    if kind == 'io':
        if len(rec) != 9:
            raise TraceError('%s: an io line has 9 items, got %d'
                             % (where, len(rec)))
        _, ts, vm, layer, op, sync, nbytes, sector, rid = rec
        if layer not in LAYERS:
            raise TraceError('%s: layer %s, accepted: %s'
                             % (where, _show(layer), ' '.join(LAYERS)))
        if op not in OPS:
            raise TraceError('%s: op %s, accepted: R W' % (where, _show(op)))
        if sync not in (0, 1) or isinstance(sync, float):
            raise TraceError('%s: sync %s, accepted: 1 or 0'
                             % (where, _show(sync)))
        return Io(_time(ts, 'ts', where), _name(vm, 'vm', where), layer,
                  op, bool(sync), _count(nbytes, 'bytes', where, MAX_BYTES),
                  _count(sector, 'sector', where, MAX_INDEX),
                  _rid(rid, where))
    if kind == 'vcpu':
        if len(rec) != 6:
            raise TraceError('%s: a vcpu line has 6 items, got %d'
                             % (where, len(rec)))
        _, vm, vcpu, state, start, end = rec
        if state not in STATES:
            raise TraceError('%s: vCPU state %s, accepted: %s'
                             % (where, _show(state), ' '.join(STATES)))
        start = _time(start, 'start', where)
        end = _time(end, 'end', where)
        if end < start:
            raise TraceError('%s: span ends (%s) before it starts (%s)'
                             % (where, end, start))
        return Span(_name(vm, 'vm', where),
                    _count(vcpu, 'vcpu', where, MAX_VCPUS), state,
                    start, end)
    if kind == 'finish':
        if len(rec) != 3:
            raise TraceError('%s: a finish line has 3 items' % where)
        return ('finish', _name(rec[1], 'vm', where),
                _time(rec[2], 'ts', where))
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
        except (OSError, EOFError, UnicodeDecodeError, zlib.error) as e:
            raise TraceError('%s: not a readable trace: %s' % (path, e))
        try:
            hdr = json.loads(first)
        except (ValueError, RecursionError):
            raise TraceError('%s:1: the first line is not a JSON header '
                             '(is this an iotrace file?)' % path)
        if not isinstance(hdr, dict) or hdr.get('format') != FORMAT:
            raise TraceError('%s:1: not an %s header' % (path, FORMAT))
        version = hdr.get('version')
        if version != VERSION or isinstance(version, bool):
            raise TraceError('%s:1: trace version %s, this tool reads '
                             'version %d' % (path, _show(version), VERSION))
        check_header(hdr, '%s:1' % path)
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
                except RecursionError:
                    raise TraceError('%s: not a trace line: JSON nested too '
                                     'deeply' % where)
                got = parse_line(rec, where)
                if isinstance(got, Io):
                    t.io.append(got)
                elif isinstance(got, Span):
                    t.vcpu.append(got)
                elif got is not None:
                    t.finish[got[1]] = got[2]
        except (OSError, EOFError, UnicodeDecodeError, zlib.error) as e:
            raise TraceError('%s: truncated or corrupt: %s' % (path, e))
    t.io.sort(key=lambda e: e.ts)
    return t
