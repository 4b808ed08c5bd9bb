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
"""Virtqueue request counts over QMP: replies, 16-bit wrap, active queues,
rescans, errors said once; the driver's block/net request count.
"""

import json

import pytest

from iosched.host_agent.drivers.libvirt import monitor_reads
from iosched.host_agent.drivers.libvirt import virtio_queues as vq

SERIAL = '/machine/peripheral/virtio-serial0/virtio-backend'
DISK = '/machine/peripheral/virtio-disk0/virtio-backend'


def ret(value):
    return json.dumps({'return': value, 'id': 'libvirt-7'})


class FakeQemu(object):
    """QEMU 7.2's replies for a virtio-serial and a virtio-blk device."""

    def __init__(self, used, nvqs=6, error=None):
        self.used = dict(used)     # queue -> used-idx
        self.nvqs = nvqs
        self.error = error
        self.calls = []

    def __call__(self, cmd):
        c = json.loads(cmd)
        self.calls.append((c['execute'], c.get('arguments', {}).get(
            'queue')))
        if self.error:
            return json.dumps({'error': {'class': 'CommandNotFound',
                                         'desc': self.error}})
        if c['execute'] == 'x-query-virtio':
            return ret([{'name': 'virtio-serial', 'path': SERIAL},
                        {'name': 'virtio-blk', 'path': DISK}])
        assert c['arguments']['path'] == SERIAL, 'a disk was queried'
        if c['execute'] == 'x-query-virtio-status':
            return ret({'name': 'virtio-serial', 'num-vqs': self.nvqs})
        q = c['arguments']['queue']
        return ret({'queue-index': q, 'used-idx': self.used.get(q, 0)})


@pytest.mark.parametrize('prev,cur,want', [
    (0, 0, 0), (10, 25, 15), (65530, 4, 10), (5, 5, 0), (0, 65535, 65535),
])
def test_advance_wraps_at_16_bits(prev, cur, want):
    assert vq.advance(prev, cur) == want


@pytest.mark.parametrize('reply,want', [
    (ret([{'name': 'virtio-serial', 'path': SERIAL},
          {'name': 'virtio-net', 'path': '/n'},
          {'name': 'virtio-blk', 'path': DISK}]),
     (('virtio-serial', SERIAL),)),
    (ret([]), ()),
    (ret([{'name': 'virtio-rng'}]), ()),      # no path: skipped
])
def test_parse_devices(reply, want):
    assert vq.parse_devices(reply) == want


@pytest.mark.parametrize('reply', [
    'not json',
    json.dumps({'error': {'class': 'CommandNotFound',
                          'desc': "The command x-query-virtio has not been "
                                  "found"}}),
])
def test_bad_replies_raise(reply):
    with pytest.raises(vq.VirtioQueueError):
        vq.parse_devices(reply)


def test_counts_completed_buffers_of_active_queues():
    qemu = FakeQemu({4: 100, 5: 100})
    r = vq.VirtioQueues(rescan_every=3)
    assert r.read('u', qemu) == 0                 # first sight: a base
    qemu.used = {4: 130, 5: 131}
    qemu.calls.clear()
    assert r.read('u', qemu) == 61
    # only the two active queues are read between rescans
    assert qemu.calls == [('x-query-virtio-queue-status', 4),
                          ('x-query-virtio-queue-status', 5)]
    qemu.used = {4: 130, 5: 131, 0: 2}            # a queue starts moving
    assert r.read('u', qemu) == 61                # not read: not active
    qemu.used = {4: 140, 5: 131, 0: 3}
    # rescan: queue 4 +10, queue 0 (seen at 0 by the first scan) +3
    assert r.read('u', qemu) == 74
    r.forget(['u'])
    assert r.read('u', qemu) == 0


def test_error_said_once_then_total_kept():
    qemu = FakeQemu({4: 1})
    r = vq.VirtioQueues()
    r.read('u', qemu)
    qemu.error = 'The command x-query-virtio has not been found'
    with pytest.raises(vq.VirtioQueueError):
        r.read('u', qemu)
    assert r.read('u', qemu) == 0                 # said once, total kept


@pytest.mark.parametrize('stats,want', [
    ({}, 0),
    ({'block.count': 1, 'block.0.rd.reqs': 5, 'block.0.wr.reqs': 7,
      'block.0.fl.reqs': 1}, 13),
    ({'block.count': 2, 'block.0.rd.reqs': 5, 'block.1.wr.reqs': 2,
      'net.count': 1, 'net.0.rx.pkts': 30, 'net.0.tx.pkts': 29}, 66),
])
def test_request_count_from_domain_stats(stats, want):
    assert monitor_reads.request_count(stats) == want


def test_a_port_that_only_sent_is_read_both_ways():
    qemu = FakeQemu({5: 1})                     # the guest's HELLO (tx)
    r = vq.VirtioQueues()
    r.read('u', qemu)
    qemu.used = {4: 50, 5: 51}                  # 50 requests in, 50 out
    qemu.calls.clear()
    assert r.read('u', qemu) == 100
    assert sorted(q for _, q in qemu.calls) == [4, 5]
