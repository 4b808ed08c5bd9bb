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
"""What the libvirt driver reads each tick through QEMU's monitor and
libvirt's stats, beside the inventory: the disks' latency histograms
(``qemu_histograms``, opt-in) and each domain's completed I/O requests
(``request_count`` over the standard stats, plus, opt-in, the other virtio
devices' virtqueues: ``virtio_queues``). ``MonitorReads`` is a mixin of
``driver.LibvirtDriver``; it only reads.
"""

from oslo_log import log as logging

try:
    import libvirt_qemu
except ImportError:   # the driver says why at from_conf
    libvirt_qemu = None

LOG = logging.getLogger(__name__)


def request_count(stats):
    """Completed requests in a getAllDomainStats dict: every disk's
    read/write/flush requests and every NIC's packets in and out.
    """
    total = 0
    for i in range(int(stats.get('block.count', 0))):
        for k in ('rd.reqs', 'wr.reqs', 'fl.reqs'):
            total += int(stats.get('block.%d.%s' % (i, k), 0))
    for i in range(int(stats.get('net.count', 0))):
        for k in ('rx.pkts', 'tx.pkts'):
            total += int(stats.get('net.%d.%s' % (i, k), 0))
    return total


class MonitorReads(object):
    """The driver's histogram and request-count refreshes."""

    def _refresh_histograms(self):
        self._hists = {}
        if self.histograms is None or libvirt_qemu is None:
            return
        for uuid, (parsed, _, _, dom, _) in self._info.items():
            aliases = {d.target: d.alias for d in parsed.disks if d.alias}
            if not aliases:
                continue

            def monitor(cmd, dom=dom):
                return libvirt_qemu.qemuMonitorCommand(dom, cmd, 0)
            try:
                self._hists[uuid] = self.histograms.read(uuid, monitor,
                                                         aliases)
            except Exception as e:  # a monitor problem must not stop listing
                self._raise_if_lost(e)
                LOG.warning('no latency histogram for %s (percentile SLOs '
                            'are judged on the mean): %s', parsed.name, e)

    def _refresh_requests(self):
        """Per domain, cumulative completed I/O requests: disks' and NICs'
        from the standard stats (``request_count``), plus, opt-in, the other
        virtio devices' virtqueues (``virtio_queues``, QMP).
        """
        self._requests = {}
        for uuid, (parsed, _, _, dom, _) in self._info.items():
            stats = self._stats.get(uuid)
            if stats is None:
                continue
            total = request_count(stats)
            if self.virtio is not None and libvirt_qemu is not None:
                def monitor(cmd, dom=dom):
                    return libvirt_qemu.qemuMonitorCommand(dom, cmd, 0)
                try:
                    total += self.virtio.read(uuid, monitor)
                except Exception as e:   # must not stop listing
                    self._raise_if_lost(e)
                    LOG.warning('no virtqueue request counts for %s (its '
                                'channel I/O is not seen): %s',
                                parsed.name, e)
                    continue
            self._requests[uuid] = total
