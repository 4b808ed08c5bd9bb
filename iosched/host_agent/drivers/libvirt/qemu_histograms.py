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
"""QEMU's per-disk latency histograms (QMP), for percentile SLOs.

libvirt's block stats give counts and summed latency (the mean) only.
QEMU (>= 4.0) keeps a latency histogram per guest device once
``block-latency-histogram-set`` gave it bucket boundaries; ``query-
blockstats`` then returns cumulative bins per direction. The agent reaches
QMP through libvirt (``virDomainQemuMonitorCommand``), which marks the
domain "tainted: custom-monitor" in its log: the histograms change nothing
in the guest. This module builds the commands and parses the replies;
``monitor(command_json) -> reply_json`` is the driver's.

Boundaries are ``iosched.contract.slo.LATENCY_HIST_BOUNDS_NS``; QEMU's bins are
``[0, b0), [b0, b1), ..., [b_last, inf)``: the same layout as the
collector's buckets (an upper-closed vs. lower-closed edge is immaterial at
nanosecond resolution). A disk's histogram is read/write/flush summed.
"""

import json

from iosched.contract import slo
from iosched.host_agent.drivers.libvirt import qmp


class HistogramError(Exception):
    pass


def set_command(qdev_id, bounds_ns=slo.LATENCY_HIST_BOUNDS_NS):
    return json.dumps({'execute': 'block-latency-histogram-set',
                       'arguments': {'id': qdev_id,
                                     'boundaries': list(bounds_ns)}})


QUERY = json.dumps({'execute': 'query-blockstats'})


def _reply(text):
    return qmp.reply(text, HistogramError)


def enable(monitor, qdev_id, bounds_ns=slo.LATENCY_HIST_BOUNDS_NS):
    """Ask QEMU to keep a histogram for the guest device ``qdev_id``.

    A virtio-blk device's block backend is its ``virtio-backend`` child
    (QEMU 7.2 answers "Device does not have a block device backend" for
    the bare id, measured); other devices (SCSI disks) have it themselves.
    """
    try:
        _reply(monitor(set_command(
            '/machine/peripheral/%s/virtio-backend' % qdev_id, bounds_ns)))
    except HistogramError:
        _reply(monitor(set_command(qdev_id, bounds_ns)))


def _device_id(entry):
    """'virtio-disk0' from qdev '/machine/peripheral/virtio-disk0/virtio-
    backend' (or the old 'device' name).
    """
    qdev = entry.get('qdev') or ''
    parts = [p for p in qdev.split('/') if p]
    if len(parts) >= 3 and parts[1] == 'peripheral':
        return parts[2]
    return entry.get('device') or qdev


def parse_blockstats(text, nbins=len(slo.LATENCY_HIST_BOUNDS_NS) + 1):
    """{qdev id: cumulative bins (tuple)} of the devices with a histogram
    of ``nbins`` bins (read + write + flush).
    """
    out = {}
    for entry in _reply(text) or ():
        stats = entry.get('stats') or {}
        total = None
        for key in ('rd_latency_histogram', 'wr_latency_histogram',
                    'flush_latency_histogram'):
            hist = stats.get(key)
            if not hist:
                continue
            bins = hist.get('bins') or []
            if len(bins) != nbins:
                continue
            total = bins if total is None else [a + b for a, b in
                                                zip(total, bins)]
        if total is not None:
            out[_device_id(entry)] = tuple(int(b) for b in total)
    return out


class Histograms(object):
    """Per domain: enable once per device, read every tick; a domain whose
    QEMU refuses is said once and left without percentiles.
    """

    def __init__(self):
        self._enabled = {}      # uuid -> set of qdev ids
        self._failed = {}       # uuid -> error said

    def read(self, uuid, monitor, aliases):
        """{target: bins} for the ``aliases`` ({target: qdev id})."""
        try:
            done = self._enabled.setdefault(uuid, set())
            for alias in aliases.values():
                if alias and alias not in done:
                    enable(monitor, alias)
                    done.add(alias)
            bins = parse_blockstats(monitor(QUERY))
        except HistogramError as e:
            if self._failed.get(uuid) != str(e):
                self._failed[uuid] = str(e)
                raise
            return {}
        self._failed.pop(uuid, None)
        return {t: bins[a] for t, a in aliases.items() if a in bins}

    def forget(self, uuids):
        for u in uuids:
            self._enabled.pop(u, None)
            self._failed.pop(u, None)
