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
"""QEMU-like block I/O throttling (libvirt ``<iotune>``) for one guest disk.

Keys are libvirt/QEMU iotune names: ``{total,read,write}_{bytes,iops}_sec``
(average rate), the ``*_max`` burst rates, the ``*_max_length`` burst
lengths in seconds, and ``size_iops_sec`` (a request of x > S bytes counts
as x / S operations). 0 or absent means unlimited. ``validate`` applies
QEMU's consistency rules (``throttle_is_valid``).

The buckets follow QEMU's ``util/throttle.c`` leaky buckets: a bucket's
level leaks at ``avg`` per second; a request may start when every bucket
it touches has ``level <= size`` (total + read, or total + write), then
its bytes or ops are added. Without ``*_max`` the size is ``avg / 10``
(100 ms of burst), with it ``max * max_length``; for ``max_length > 1`` a
second burst level, leaking at ``max``, caps the burst rate. Changing the
configuration resets the levels, as QEMU does.
"""

import math

from iosched.contract import qos_keys

# QEMU's keys: Nova's front-end keys (the rates, their bursts, the operation
# size) and the burst lengths, which Nova does not pass on.
KEYS = (qos_keys.FRONTEND_KEYS
        + tuple(k + '_max_length' for k in qos_keys.RATE_KEYS))


def validate(iotune, field='iotune'):
    """Check an iotune dict; return it normalized (ints, zeros dropped)."""
    if not hasattr(iotune, 'items'):
        raise ValueError('%s: %r is invalid; accepted: a dict of iotune '
                         'keys (%s)' % (field, iotune, ', '.join(KEYS)))
    out = {}
    for key, value in iotune.items():
        if key not in KEYS:
            raise ValueError('%s: unknown key %r; accepted keys: %s'
                             % (field, key, ', '.join(KEYS)))
        number = value
        if isinstance(value, str):
            try:
                number = float(value.strip())
            except ValueError:
                number = None
        if (isinstance(number, bool) or not isinstance(number, (int, float))
                or not math.isfinite(number) or number < 0
                or number != int(number)):
            raise ValueError('%s.%s: %r is invalid; accepted: an integer >= '
                             '0 (0 = unlimited)' % (field, key, value))
        if number:
            out[key] = int(number)
    for kind in ('bytes', 'iops'):
        total = out.get('total_%s_sec' % kind)
        if total and (out.get('read_%s_sec' % kind)
                      or out.get('write_%s_sec' % kind)):
            raise ValueError(
                '%s: total_%s_sec cannot be combined with read_%s_sec or '
                'write_%s_sec' % (field, kind, kind, kind))
    for key in qos_keys.RATE_KEYS:
        avg, mx = out.get(key), out.get(key + '_max')
        length = out.get(key + '_max_length')
        if mx and not avg:
            raise ValueError('%s.%s_max: %d requires %s to be set'
                             % (field, key, mx, key))
        if mx and mx < avg:
            raise ValueError('%s.%s_max: %d is invalid; accepted: >= %s '
                             '(%d)' % (field, key, mx, key, avg))
        if length and length > 1 and not mx:
            raise ValueError('%s.%s_max_length: %d requires %s_max to be set'
                             % (field, key, length, key))
    return out


class _Bucket:
    __slots__ = ('avg', 'max', 'length', 'level', 'burst_level')

    def __init__(self, avg, mx, length):
        self.avg = float(avg)
        self.max = float(mx)
        self.length = length
        self.level = 0.0
        self.burst_level = 0.0

    def leak(self, dt_us):
        self.level = max(self.level - self.avg * dt_us / 1e6, 0.0)
        if self.length > 1:
            self.burst_level = max(
                self.burst_level - self.max * dt_us / 1e6, 0.0)

    def wait_us(self):
        """Microseconds until this bucket admits a request (0 = now)."""
        if not self.max:
            size = self.avg / 10
            extra = self.level - size
            if extra > 0:
                return math.ceil(extra * 1e6 / self.avg)
            return 0
        extra = self.level - self.max * self.length
        if extra > 0:
            return math.ceil(extra * 1e6 / self.avg)
        if self.length > 1:
            extra = self.burst_level - self.max / 10
            if extra > 0:
                return math.ceil(extra * 1e6 / self.max)
        return 0

    def add(self, amount):
        self.level += amount
        if self.length > 1:
            self.burst_level += amount


class Throttle:
    """The buckets of one validated, non-empty iotune configuration."""
    __slots__ = ('buckets', 'op_size', 'last_us', 'touched')

    def __init__(self, iotune, now_us):
        self.op_size = iotune.get(qos_keys.SIZE_IOPS_SEC, 0)
        self.last_us = now_us
        self.buckets = []
        named = {}
        for key in qos_keys.RATE_KEYS:
            avg = iotune.get(key)
            if avg:
                named[key] = _Bucket(avg, iotune.get(key + '_max', 0),
                                     iotune.get(key + '_max_length', 1) or 1)
                self.buckets.append(named[key])
        # per direction (read, write): [(counts bytes?, bucket)]
        self.touched = tuple(
            [(kind == 'bytes', named[key])
             for prefix in ('total', direction) for kind in ('bytes', 'iops')
             for key in ('%s_%s_sec' % (prefix, kind),) if key in named]
            for direction in ('read', 'write'))

    def wait_us(self, is_write, now_us):
        """Microseconds before a request in this direction may start."""
        dt = now_us - self.last_us
        if dt > 0:
            self.last_us = now_us
            for bkt in self.buckets:
                bkt.leak(dt)
        wait = 0
        for _, bkt in self.touched[is_write]:
            w = bkt.wait_us()
            if w > wait:
                wait = w
        return wait

    def account(self, is_write, nbytes):
        units = 1.0
        if self.op_size and nbytes > self.op_size:
            units = nbytes / self.op_size
        for is_bytes, bkt in self.touched[is_write]:
            bkt.add(nbytes if is_bytes else units)
