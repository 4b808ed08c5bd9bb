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
"""Completed requests per guest from QEMU's virtqueues (QMP), read only.

ISACS's I/O signal without vCPU wake-ups (issue 28): a vCPU that never
sleeps (the hybrid I/O+CPU guest) takes its I/O completions without a
wake-up, so the wake-up counter sees no I/O. A virtqueue's ``used-idx``
(QMP ``x-query-virtio-queue-status``, QEMU >= 7.2) advances by one per
buffer the device hands back to the guest: a request completed (tx) or a
message delivered (rx), whichever way it goes.

Standard, non-tainting counters cover disks (libvirt block stats
``rd/wr/fl.reqs``) and NICs (interface ``rx/tx.pkts``); the driver uses
those, and this module reads only the other virtio devices
(``SKIP_NAMES``): the virtio-serial channel the testbed's rr workload
uses, a balloon, an RNG. QMP goes through libvirt's monitor passthrough,
which marks the domain "tainted: custom-monitor" in its log (nothing
changes in the guest): hence the opt-in ``[libvirt]
virtio_request_counts``.

``used-idx`` is 16 bits: counted modulo 2**16 between reads, so a queue
must not complete 65536 buffers within one tick. A device has up to 64
queues (virtio-serial: 2 per port, 2 control); only the queues whose index
was non-zero at the last full scan, and their pair (virtio-serial and
virtio-net queues come in receive/transmit pairs 2k, 2k+1: a port that has
only sent so far will also receive), are read every tick, and every
``RESCAN_EVERY`` reads all of them again (a port opened since is counted
from then). ``monitor(command_json) ->
reply_json`` is the driver's (as in ``qemu_histograms``).
"""

import json

from iosched.host_agent.drivers.libvirt import qmp

# Devices whose requests the non-tainting libvirt stats already count.
SKIP_NAMES = ('virtio-blk', 'virtio-net')
RESCAN_EVERY = 60
USED_IDX_MOD = 1 << 16

LIST = json.dumps({'execute': 'x-query-virtio'})


class VirtioQueueError(Exception):
    pass


def status_command(path):
    return json.dumps({'execute': 'x-query-virtio-status',
                       'arguments': {'path': path}})


def queue_command(path, queue):
    return json.dumps({'execute': 'x-query-virtio-queue-status',
                       'arguments': {'path': path, 'queue': int(queue)}})


def _reply(text):
    return qmp.reply(text, VirtioQueueError)


def parse_devices(text, skip=SKIP_NAMES):
    """((name, QOM path), ...) of the virtio devices not in ``skip``."""
    out = []
    for dev in _reply(text) or ():
        name, path = dev.get('name', ''), dev.get('path')
        if path and name not in skip:
            out.append((name, path))
    return tuple(sorted(out, key=lambda d: d[1]))


def parse_num_vqs(text):
    return int((_reply(text) or {}).get('num-vqs', 0))


def parse_used_idx(text):
    return int((_reply(text) or {}).get('used-idx', 0)) % USED_IDX_MOD


def advance(prev, cur):
    """Buffers completed between two ``used-idx`` reads (mod 2**16)."""
    return (cur - prev) % USED_IDX_MOD


class _Domain(object):
    def __init__(self):
        self.queues = {}      # (path, q) -> last used-idx
        self.active = ()      # (path, q) read every tick
        self.reads = 0
        self.total = 0        # cumulative completed buffers


class VirtioQueues(object):
    """Per domain: a cumulative count of completed virtqueue buffers of
    its non-disk, non-NIC virtio devices; a domain whose QEMU refuses is
    said once and counted as 0 new requests.
    """

    def __init__(self, skip=SKIP_NAMES, rescan_every=RESCAN_EVERY):
        self.skip = tuple(skip)
        self.rescan_every = max(1, int(rescan_every))
        self._doms = {}       # uuid -> _Domain
        self._failed = {}     # uuid -> error said

    def _scan(self, dom, monitor):
        keys = []
        for _, path in parse_devices(monitor(LIST), self.skip):
            for q in range(parse_num_vqs(monitor(status_command(path)))):
                keys.append((path, q))
        return keys

    def read(self, uuid, monitor):
        """The domain's cumulative completed buffers (int)."""
        dom = self._doms.setdefault(uuid, _Domain())
        try:
            full = dom.reads % self.rescan_every == 0
            keys = self._scan(dom, monitor) if full else dom.active
            active = []
            for key in keys:
                idx = parse_used_idx(monitor(queue_command(*key)))
                prev = dom.queues.get(key)
                if prev is not None:
                    dom.total += advance(prev, idx)
                dom.queues[key] = idx
                if idx or (prev is not None and prev != idx):
                    active.append(key)
            if full:
                paired = set(active) | {(p, q ^ 1) for p, q in active}
                dom.active = tuple(sorted(k for k in paired
                                          if k in set(keys)))
            dom.reads += 1
        except VirtioQueueError as e:
            if self._failed.get(uuid) != str(e):
                self._failed[uuid] = str(e)
                raise
            return dom.total
        self._failed.pop(uuid, None)
        return dom.total

    def forget(self, uuids):
        for u in uuids:
            self._doms.pop(u, None)
            self._failed.pop(u, None)
