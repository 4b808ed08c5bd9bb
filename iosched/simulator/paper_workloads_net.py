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
"""The papers' network sources: ping-like echoes and iperf-like streams.

Both talk to one guest vCPU (an ``IoVcpuW``) through the host's backend
(``iosched.simulator.backend``). The external client or sender has a pCPU of
its own and is modelled only by a fixed round trip ``wire_us``: ``wire_us //
2`` on the way in, the rest on the way out. Every item the backend hands
to the guest is an I/O response event (``sched.io_event``) followed by
interrupt-level work on the vCPU (``IoVcpuW.deliver_irq``).
"""

import array
import collections
import math


def split_wire(wire_us):
    """(inbound, outbound) one-way delays of a round trip wire_us."""
    w_in = wire_us // 2
    return w_in, wire_us - w_in


class PingSource:
    """client -> wire -> backend -> guest (burst) -> backend -> wire."""
    __slots__ = ('owner', 'backend', 'interval', 'burst', 'nbytes', 'mode',
                 'jitter', 'count', 'w_in', 'w_out', 'sent', 'rtt_t',
                 'rtt_v', '_send_cb', '_arrive_cb', '_to_guest_cb',
                 '_replied_cb', '_reply_out_cb', '_client_cb')
    kind = 'ping'

    def __init__(self, owner, wl, backend):
        self.owner = owner
        self.backend = backend
        self.interval = wl.interval_us
        self.burst = wl.burst_us
        self.nbytes = wl.nbytes
        self.mode = wl.mode
        self.jitter = wl.jitter
        self.count = wl.count
        self.w_in, self.w_out = split_wire(wl.wire_us)
        self.sent = 0
        self.rtt_t = array.array('q')     # reply arrival times
        self.rtt_v = array.array('q')     # round-trip times
        self._send_cb = self._send
        self._arrive_cb = self._arrive
        self._to_guest_cb = self._to_guest
        self._replied_cb = self._replied
        self._reply_out_cb = self._reply_out
        self._client_cb = self._at_client

    def start(self, now):
        rng = self.owner.rng
        if self.mode == 'fixed':
            first = rng.randrange(self.interval)     # random phase
        else:
            first = self._gap()
        self.owner.loop.at(now + first, self._send_cb)

    # Gap to the next echo: 'poisson' exponential with mean interval;
    # 'fixed' interval * U[1 - jitter, 1 + jitter] (exactly interval when
    # jitter is 0).
    def _gap(self):
        rng = self.owner.rng
        if self.mode == 'poisson':
            return int(rng.expovariate(1.0 / self.interval) + 0.5)
        if not self.jitter:
            return self.interval
        j = self.jitter
        return max(1, int(self.interval * rng.uniform(1 - j, 1 + j) + 0.5))

    def _send(self, _a, _b):
        owner = self.owner
        if not owner.ent.alive or (self.count and self.sent >= self.count):
            return
        now = owner.loop.now
        self.sent += 1
        owner.loop.at(now + self.w_in, self._arrive_cb, now)
        if not self.count or self.sent < self.count:
            owner.loop.at(now + self._gap(), self._send_cb)

    def _arrive(self, t0, _b):
        self.backend.submit(self.nbytes, self._to_guest_cb, t0)

    def _to_guest(self, t0, now):
        owner = self.owner
        if not owner.ent.alive:
            return
        owner.sched.io_event(owner.ent, now)
        owner.deliver_irq(self.burst, self._replied_cb, t0, now)

    def _replied(self, t0, now):
        self.backend.submit(self.nbytes, self._reply_out_cb, t0)

    def _reply_out(self, t0, now):
        self.owner.loop.at(now + self.w_out, self._client_cb, t0)

    def _at_client(self, t0, _b):
        owner = self.owner
        now = owner.loop.now
        rtt = now - t0
        self.rtt_t.append(now)
        self.rtt_v.append(rtt)
        owner.vm.record_latency(now, rtt)

    def stats(self):
        return {'kind': self.kind, 'sent': self.sent,
                'received': len(self.rtt_v), 'rtt_us': list(self.rtt_v),
                'rtt_at_us': list(self.rtt_t)}


class StreamSource:
    """Sender -> wire -> backend -> ring -> guest (-> app vCPU); see Stream."""
    __slots__ = ('owner', 'backend', 'tcp', 'seg', 'gap', 'slots', 'window',
                 'cpu', 'w_in', 'w_out', 'app_index', 'app_owner', 'app_cpu',
                 'sockbuf', 'ack_irq', 'inflight', 'next_free', 'pace_armed',
                 'ring_used', 'ring_wait', 'sock_used', 'sent', 'delivered',
                 'drops', 'sock_drops', 'bytes', 'segments', 'lat_sum',
                 'lat_max', 'last_lat', 'jitter', 'max_ring',
                 '_pace_cb', '_arrive_cb', '_to_ring_cb', '_irq_done_cb',
                 '_app_done_cb', '_ack_out_cb', '_ack_in_cb')
    kind = 'stream'

    def __init__(self, owner, wl, backend):
        self.owner = owner
        self.backend = backend
        self.tcp = wl.mode == 'tcp'
        self.seg = wl.segment_bytes
        # Sender pacing: one segment every segment_bytes / rate seconds.
        self.gap = wl.segment_bytes * 1e6 / wl.rate_bytes_per_s
        self.slots = wl.ring_slots
        self.window = wl.window
        self.cpu = wl.cpu_per_segment_us
        self.w_in, self.w_out = split_wire(wl.wire_us)
        self.app_index = wl.app_vcpu
        self.app_owner = None
        self.app_cpu = wl.app_cpu_per_segment_us
        self.sockbuf = wl.sockbuf_segments
        self.ack_irq = wl.ack_at == 'irq' or wl.app_vcpu is None
        self.inflight = 0           # TCP: sent, not yet ACKed at the sender
        self.next_free = 0.0        # earliest time the link takes a segment
        self.pace_armed = False
        self.ring_used = 0
        self.ring_wait = collections.deque()  # TCP: held for a ring slot
        self.sock_used = 0
        self.sent = self.delivered = self.drops = self.sock_drops = 0
        self.bytes = self.segments = 0
        self.lat_sum = self.lat_max = 0
        self.last_lat = None
        self.jitter = 0.0
        self.max_ring = 0
        self._pace_cb = self._on_pace
        self._arrive_cb = self._arrive
        self._to_ring_cb = self._to_ring
        self._irq_done_cb = self._irq_done
        self._app_done_cb = self._app_done
        self._ack_out_cb = self._ack_out
        self._ack_in_cb = self._ack_in

    def start(self, now):
        if self.app_index is not None:
            self.app_owner = self.owner.vm.ents[self.app_index].wl
        self.next_free = float(now)
        self._pump(now)

    # -- sender ---------------------------------------------------------------
    def _can_send(self):
        if not self.tcp:
            return True
        if self.inflight >= self.window:
            return False
        # The advertised window is the free socket buffer (the sender sees
        # it at once): segments in flight plus those already ACKed but not
        # yet read by the application fit in sockbuf_segments.
        if self.app_owner is None:
            return True
        acked = self.sock_used if self.ack_irq else 0
        return self.inflight + acked < self.sockbuf

    def _pump(self, now):
        """Send what the window and the link rate allow; arm the pacer."""
        loop = self.owner.loop
        while self._can_send():
            # Within 1 us of the pacing time counts as due (event times
            # are whole microseconds; the fraction is kept, no drift).
            if self.next_free > now + 1e-9:
                if not self.pace_armed:
                    self.pace_armed = True
                    loop.at(int(math.ceil(self.next_free)), self._pace_cb)
                return
            if self.next_free < now - 1:
                self.next_free = float(now)     # the link was idle
            self.next_free += self.gap
            self.sent += 1
            if self.tcp:
                self.inflight += 1
            loop.at(now + self.w_in, self._arrive_cb, now)

    def _on_pace(self, _a, _b):
        self.pace_armed = False
        if self.owner.ent.alive:
            self._pump(self.owner.loop.now)

    def _arrive(self, t_send, _b):
        self.backend.submit(self.seg, self._to_ring_cb, t_send)

    # -- receiver -------------------------------------------------------------
    def _to_ring(self, t_send, now):
        owner = self.owner
        if not owner.ent.alive:
            return
        if self.ring_used >= self.slots:
            if self.tcp:
                self.ring_wait.append(t_send)   # netback holds it
            else:
                self.drops += 1
            return
        self._into_ring(t_send, now)

    def _into_ring(self, t_send, now):
        owner = self.owner
        self.ring_used += 1
        if self.ring_used > self.max_ring:
            self.max_ring = self.ring_used
        self.delivered += 1
        owner.sched.io_event(owner.ent, now)
        owner.deliver_irq(self.cpu, self._irq_done_cb, t_send, now)

    def _irq_done(self, t_send, now):
        self.ring_used -= 1
        if self.ring_wait:
            self._into_ring(self.ring_wait.popleft(), now)
        app = self.app_owner
        if app is None:
            self._consumed(t_send, now)
        elif self.sock_used < self.sockbuf:
            self.sock_used += 1
            app.deliver_app(self.app_cpu, self._app_done_cb, t_send, now)
        else:
            self.sock_drops += 1        # UDP only: TCP's window prevents it
            return
        if self.tcp and self.ack_irq:
            self._send_ack(now, True)

    def _app_done(self, t_send, now):
        full = self.inflight + self.sock_used >= self.sockbuf
        self.sock_used -= 1
        self._consumed(t_send, now)
        if self.tcp:
            if not self.ack_irq:
                self._send_ack(now, True)
            elif full:
                self._send_ack(now, False)  # window update: space again

    # Per consumed segment: latency = consumption - send time; jitter as
    # RFC 3550: J += (|D| - J) / 16, D = difference of consecutive
    # latencies.
    def _consumed(self, t_send, now):
        self.segments += 1
        self.bytes += self.seg
        lat = now - t_send
        self.lat_sum += lat
        if lat > self.lat_max:
            self.lat_max = lat
        if self.last_lat is not None:
            self.jitter += (abs(lat - self.last_lat) - self.jitter) / 16
        self.last_lat = lat

    def _send_ack(self, now, release):
        self.backend.submit(0, self._ack_out_cb, release)

    def _ack_out(self, release, now):
        self.owner.loop.at(now + self.w_out, self._ack_in_cb, release)

    def _ack_in(self, release, _b):
        if release:
            self.inflight -= 1
        if self.owner.ent.alive:
            self._pump(self.owner.loop.now)

    def stats(self):
        n = self.segments
        return {'kind': self.kind, 'mode': 'tcp' if self.tcp else 'udp',
                'sent': self.sent, 'delivered': self.delivered,
                'segments': n, 'bytes': self.bytes, 'drops': self.drops,
                'sock_drops': self.sock_drops,
                'mean_latency_us': self.lat_sum / n if n else 0.0,
                'max_latency_us': self.lat_max, 'jitter_us': self.jitter,
                'max_ring_used': self.max_ring}
