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
"""Host side of one testbed guest: a client of its virtio-serial socket, or
of a TCP serial port (a guest Nova created with ``[serial_console]
enabled``: ``serial_tcp_ports`` finds the ports in its domain XML).

QEMU accepts one client per channel socket or TCP serial port (a second
connection waits in the listen backlog until the first closes), so one
``Guest`` object (one process) talks to a guest at a time. A reader thread
parses the guest's lines (see ``guest/iosched_guest.c``): ``HELLO``, ``R``
(rr and hybrid responses), ``BURN`` (burn and hybrid), ``DISK``, ``IDLE``,
``DD`` and ``DDEND`` (dd: ``dd_start`` / ``dd_wait``, seed 004's dd test).
The guest drops its periodic reports while no client is connected (on a
serial tty it repeats ``HELLO`` for a client that connects late), and a
partial line after a reconnect is ignored.

``DISK`` lines carry the guest's own latency figures per report window
(``DiskReport``): count, sum and max of the request latencies and a
histogram with four buckets per power of two of microseconds
(``bucket_bounds``), enough for a window's percentiles within 25 %.
Every ``DISK`` report is also kept (``disk_reports``).
"""

import dataclasses
import random
import socket
import struct
import threading
import time

from iosched.contract import stats
from iosched.testbed import domxml

REQ = struct.Struct('<QII')           # seq, burst_us, flags
FLAG_TIME_SPIN = 1
RR_MODES = ('rr', 'hybrid')           # modes that answer requests
DD_FIELDS = ('seq', 'bytes', 'elapsed_us', 'reads', 'writes',
             'write_wait_sum_us', 'write_wait_max_us')
REPORT_MODES = {'BURN': ('burn', 'hybrid'), 'DISK': ('disk',),
                'IDLE': ('idle',)}


LAT_BUCKETS = 96
DISK_LOG_MAX = 100000


class GuestError(Exception):
    pass


def bucket_bounds(i):
    """[low, high) in µs of latency bucket ``i`` of a ``DISK`` report."""
    if i < 4:
        return i, i + 1
    shift = i // 4 - 1
    return (4 + i % 4) << shift, (5 + i % 4) << shift


def hist_buckets(hist):
    """A {bucket: count} histogram of a ``DISK`` report as the counts and
    upper bounds (µs) ``iosched.contract.stats.hist_quantile`` takes.
    """
    n = max(LAT_BUCKETS, max(hist, default=0) + 1)
    return ([hist.get(i, 0) for i in range(n)],
            [bucket_bounds(i)[1] for i in range(n)])


@dataclasses.dataclass(frozen=True)
class DiskReport:
    """One ``DISK`` report: ``ts`` (host ``time.monotonic()`` at arrival)
    and the guest's figures for the window of ``interval_us`` before it.
    Latency fields are None from a guest program older than them.
    """
    ts: float
    ops: int
    interval_us: int
    reads: int
    writes: int
    lat_sum_us: int = None
    lat_max_us: int = None
    dropped: int = 0
    hist: dict = dataclasses.field(default_factory=dict)

    @property
    def iops(self):
        return self.ops * 1e6 / max(1, self.interval_us)

    @property
    def mean_us(self):
        if self.lat_sum_us is None or not self.ops:
            return None
        return self.lat_sum_us / self.ops

    def latency_quantile_us(self, q):
        """The q-quantile (0..1) of the window's latencies in µs (nearest
        rank, placed linearly inside its bucket); None if none.
        """
        counts, bounds = hist_buckets(self.hist)
        return stats.hist_quantile(counts, q, bounds)

    @classmethod
    def parse(cls, ts, fields):
        ints, hist = [], {}
        for f in fields:
            if f.startswith('h='):
                for item in f[2:].split(','):
                    if item:
                        b, c = item.split(':')
                        hist[int(b)] = int(c)
            else:
                ints.append(int(f))
        if len(ints) < 4:
            raise ValueError('short DISK line')
        return cls(ts, *ints[:7], hist=hist)


# where a Nova-made domain's workload port is (the XML's concern)
serial_tcp_ports = domxml.serial_tcp_ports


class Guest:
    """One guest. ``name`` is the short name, ``domain_name`` the libvirt
    name, ``uuid`` the (fake) Nova instance uuid, ``domain`` the
    ``libvirt.virDomain`` (None when built without a connection).
    ``socket_path`` is the channel's unix socket path, or a ``(host,
    port)`` tuple: a TCP serial port (``serial_tcp_ports``) whose guest
    runs ``iosched.port=ttyS<N>``.
    """

    def __init__(self, name, domain_name, uuid, mode, socket_path,
                 console_log, domain=None):
        self.name, self.domain_name, self.uuid = name, domain_name, uuid
        self.mode, self.socket_path = mode, socket_path
        self.console_log, self.domain = console_log, domain
        self.hello = None              # the HELLO line's fields, once seen
        self.boot_s = None             # domain start -> HELLO, set by up()
        self._sock = None
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._latest = {}              # 'BURN'/'DISK'/'IDLE' -> (ts, fields)
        self._responses = {}           # seq -> (recv_ns, spun_us)
        self._disk_log = []            # DiskReport, oldest first
        self._dd = {}                  # seq -> (host ts, DDEND fields)
        self._dd_progress = None       # latest DD line's fields
        self._seq = int(time.time() * 1000) << 16
        self._reader = None

    def __repr__(self):
        return 'Guest(%s, mode=%s, uuid=%s)' % (self.domain_name, self.mode,
                                               self.uuid)

    # -- connection ---------------------------------------------------------
    def connect(self, timeout=30.0):
        """Connect to the channel socket or TCP serial port (retrying
        until it listens).
        """
        if self._sock is not None:
            return
        deadline = time.monotonic() + timeout
        tcp = isinstance(self.socket_path, (tuple, list))
        while True:
            if tcp:
                host, port = self.socket_path
                s = socket.socket(socket.AF_INET6 if ':' in host
                                  else socket.AF_INET, socket.SOCK_STREAM)
                # one small segment per request: no Nagle wait behind the
                # previous request's ACK
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                addr = (host, int(port))
            else:
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                addr = self.socket_path
            try:
                s.connect(addr)
                break
            except OSError as e:
                s.close()
                if time.monotonic() > deadline:
                    raise GuestError('%s: cannot connect to %s: %s' % (
                        self.name, self.socket_path, e))
                time.sleep(0.1)
        self._sock = s
        self._reader = threading.Thread(target=self._read_loop, args=(s,),
                                        name='iosched-tb-' + self.name,
                                        daemon=True)
        self._reader.start()

    def close(self):
        s, self._sock = self._sock, None
        if s is not None:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()
        if self._reader is not None:
            self._reader.join(timeout=2)
            self._reader = None

    def __enter__(self):
        self.connect()
        return self

    def __exit__(self, *exc):
        self.close()

    def _read_loop(self, sock):
        buf = b''
        quickack = sock.family != socket.AF_UNIX
        while True:
            try:
                data = sock.recv(65536)
                if quickack and data:
                    # ACK now: QEMU's TCP chardev sends the guest's UART
                    # bytes one write each with Nagle on, so each byte
                    # after the first waits for our ACK, which Linux
                    # would delay up to 40 ms (we send no reply to ride on)
                    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK,
                                    1)
            except OSError:
                data = b''
            now = time.perf_counter_ns()
            if not data:
                with self._cond:
                    self._cond.notify_all()
                return
            buf += data
            *lines, buf = buf.split(b'\n')
            with self._cond:
                for line in lines:
                    self._handle(line.decode('ascii', 'replace').split(), now)
                self._cond.notify_all()

    def _handle(self, f, now):
        try:
            if f[:2] == ['HELLO', 'iosched-guest']:
                self.hello = dict(x.split('=', 1) for x in f[3:] if '=' in x)
            elif f[0] == 'R' and len(f) == 3:
                self._responses[int(f[1])] = (now, int(f[2]))
            elif f[0] == 'DISK':
                rep = DiskReport.parse(time.monotonic(), f[1:])
                self._latest['DISK'] = (rep.ts, [rep.ops, rep.interval_us,
                                                 rep.reads, rep.writes])
                self._disk_log.append(rep)
                del self._disk_log[:-DISK_LOG_MAX]
            elif f[0] in ('DD', 'DDEND') and len(f) == 8:
                row = dict(zip(DD_FIELDS, (int(x) for x in f[1:])))
                if f[0] == 'DD':
                    self._dd_progress = row
                else:
                    self._dd[row['seq']] = (time.monotonic(), row)
            elif f[0] in ('BURN', 'IDLE'):
                vals = [int(x) for x in f[1:]]
                self._latest[f[0]] = (time.monotonic(), vals)
        except (IndexError, ValueError):
            pass                       # a partial line after a reconnect

    def _wait(self, pred, timeout, what):
        self.connect()
        with self._cond:
            if not self._cond.wait_for(pred, timeout):
                raise GuestError('%s: timed out after %.0f s waiting for %s'
                                 % (self.name, timeout, what))

    # -- workloads ----------------------------------------------------------
    def wait_hello(self, timeout=120.0):
        """Wait for the guest program's HELLO line; returns its fields."""
        self._wait(lambda: self.hello is not None, timeout, 'HELLO')
        return self.hello

    def rr(self, count, rate_per_s, burst_us, poisson=True, spin='work',
           timeout=None):
        """Open-loop request/response (``rr`` and ``hybrid`` guests): send
        ``count`` requests at ``rate_per_s`` (Poisson or fixed interval),
        each asking for ``burst_us`` of guest CPU (``spin='work'``: calibrated
        loop iterations, stretched when the vCPU is preempted; ``'time'``: by
        the guest clock). Returns the RTTs in µs, in send order.
        """
        if self.mode not in RR_MODES:
            raise GuestError('%s: rr() needs an rr or hybrid guest, not %s'
                             % (self.name, self.mode))
        self.connect()
        flags = FLAG_TIME_SPIN if spin == 'time' else 0
        rng = random.Random(self._seq)
        first = self._seq + 1
        seqs = list(range(first, first + count))
        self._seq += count
        sent = {}
        t_next = time.perf_counter()
        for seq in seqs:
            delay = t_next - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            sent[seq] = time.perf_counter_ns()
            self._sock.sendall(REQ.pack(seq, int(burst_us), flags))
            t_next += (rng.expovariate(rate_per_s) if poisson
                       else 1.0 / rate_per_s)
        if timeout is None:
            timeout = 10.0 + count * (burst_us / 1e6 + 0.01)
        self._wait(lambda: all(s in self._responses for s in seqs), timeout,
                   '%d rr responses' % count)
        with self._lock:
            got = [self._responses.pop(s) for s in seqs]
        return [(recv - sent[s]) / 1000.0 for s, (recv, _) in zip(seqs, got)]

    def _rate(self, kind, timeout, fresher_than):
        if self.mode not in REPORT_MODES[kind]:
            raise GuestError('%s: %s rate needs a %s guest, not %s' % (
                self.name, kind, ' or '.join(REPORT_MODES[kind]),
                self.mode))
        self._wait(lambda: kind in self._latest and
                   self._latest[kind][0] > fresher_than, timeout,
                   'a %s report' % kind)
        _, fields = self._latest[kind]
        return fields[0] * 1e6 / max(1, fields[1])

    def burn_rate(self, timeout=15.0, fresher_than=0.0):
        """Latest loop iterations per second of a ``burn`` guest or of a
        ``hybrid`` guest's burn thread (waits for a report newer than
        ``fresher_than``, a ``time.monotonic()``).
        """
        return self._rate('BURN', timeout, fresher_than)

    def disk_rate(self, timeout=15.0, fresher_than=0.0):
        """Latest I/O operations per second of a ``disk`` guest."""
        return self._rate('DISK', timeout, fresher_than)

    def disk_reports(self, since=0.0, until=None):
        """The ``DiskReport``s that arrived after ``since`` (and not after
        ``until``), ``time.monotonic()`` values, oldest first.
        """
        self.connect()
        with self._lock:
            return [r for r in self._disk_log if r.ts > since and
                    (until is None or r.ts <= until)]

    def latest_report(self):
        """{kind: (monotonic ts, [ints])} of the last reports seen."""
        self.connect()
        with self._lock:
            return dict(self._latest)

    def dd_start(self, seq, mib=0):
        """Start one dd trial (``dd`` guests): read ``mib`` MiB (0: the
        whole data area) with the journal writes; returns the host's
        ``time.monotonic()`` at the send.
        """
        if self.mode != 'dd':
            raise GuestError('%s: dd_start() needs a dd guest, not %s'
                             % (self.name, self.mode))
        self.connect()
        t = time.monotonic()
        self._sock.sendall(REQ.pack(int(seq), int(mib), 0))
        return t

    def dd_wait(self, seq, timeout=600.0):
        """(host monotonic arrival, fields) of trial ``seq``'s DDEND:
        bytes read, the guest's elapsed µs, reads, journal writes and the
        sum and max of the commits' durations (µs).
        """
        self._wait(lambda: seq in self._dd, timeout, 'DDEND %d' % seq)
        with self._lock:
            return self._dd.pop(seq)

    def dd_progress(self):
        """The latest ``DD`` progress line's fields, or None."""
        with self._lock:
            return self._dd_progress

    def ping(self, timeout=10.0):
        """RTT (µs) of one zero-burst request: the rr guest is alive."""
        return self.rr(1, 1000, 0, poisson=False, timeout=timeout)[0]
