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
"""QMP latency histograms: commands, replies, enable-once, errors."""

import json

import pytest

from iosched.contract import slo
from iosched.host_agent.drivers.libvirt import qemu_histograms as qh

N = len(slo.LATENCY_HIST_BOUNDS_NS) + 1


def blockstats(**devices):
    """A query-blockstats reply in QEMU's shape (libvirt -blockdev)."""
    out = []
    for dev, (rd, wr) in devices.items():
        stats = {'rd_operations': 1}
        if rd is not None:
            stats['rd_latency_histogram'] = {
                'boundaries': list(slo.LATENCY_HIST_BOUNDS_NS), 'bins': rd}
        if wr is not None:
            stats['wr_latency_histogram'] = {
                'boundaries': list(slo.LATENCY_HIST_BOUNDS_NS), 'bins': wr}
        out.append({'device': '', 'node-name': 'libvirt-1-format',
                    'qdev': '/machine/peripheral/%s/virtio-backend' % dev,
                    'stats': stats})
    return json.dumps({'return': out, 'id': 'libvirt-42'})


def test_set_command_names_the_device_and_the_bounds():
    cmd = json.loads(qh.set_command('virtio-disk0'))
    assert cmd['execute'] == 'block-latency-histogram-set'
    assert cmd['arguments']['id'] == 'virtio-disk0'
    assert cmd['arguments']['boundaries'][:2] == [50000, 62500]


def test_parse_sums_directions_and_skips_devices_without_one():
    rd, wr = [1] * N, [2] * N
    got = qh.parse_blockstats(blockstats(**{'virtio-disk0': (rd, wr),
                                            'virtio-disk1': (None, None)}))
    assert got == {'virtio-disk0': tuple([3] * N)}


def test_parse_ignores_a_histogram_with_other_bounds():
    got = qh.parse_blockstats(blockstats(**{'virtio-disk0': ([1, 2], None)}))
    assert got == {}


def test_error_reply_raises_with_qemus_words():
    with pytest.raises(qh.HistogramError, match='CommandNotFound'):
        qh.parse_blockstats(json.dumps({'error': {
            'class': 'CommandNotFound', 'desc': 'no such command'}}))


def test_enable_tries_the_virtio_backend_then_the_device():
    sent = []

    def monitor(cmd):
        ident = json.loads(cmd)['arguments']['id']
        sent.append(ident)
        if ident.endswith('/virtio-backend'):
            return json.dumps({'error': {'class': 'DeviceNotFound',
                                         'desc': 'no'}})
        return json.dumps({'return': {}})
    qh.enable(monitor, 'scsi0-0-0-0')
    assert sent == ['/machine/peripheral/scsi0-0-0-0/virtio-backend',
                    'scsi0-0-0-0']


def test_histograms_enable_once_then_read_per_target():
    sent = []

    def monitor(cmd):
        sent.append(json.loads(cmd)['execute'])
        if sent[-1] == 'query-blockstats':
            return blockstats(**{'virtio-disk0': ([5] * N, None)})
        return json.dumps({'return': {}})
    h = qh.Histograms()
    assert h.read('u', monitor, {'vda': 'virtio-disk0'}) == {
        'vda': tuple([5] * N)}
    h.read('u', monitor, {'vda': 'virtio-disk0'})
    assert sent.count('block-latency-histogram-set') == 1
    h.forget(['u'])
    h.read('u', monitor, {'vda': 'virtio-disk0'})
    assert sent.count('block-latency-histogram-set') == 2


def test_a_refusing_qemu_is_said_once():
    def monitor(cmd):
        return json.dumps({'error': {'class': 'GenericError',
                                     'desc': 'old QEMU'}})
    h = qh.Histograms()
    with pytest.raises(qh.HistogramError):
        h.read('u', monitor, {'vda': 'virtio-disk0'})
    assert h.read('u', monitor, {'vda': 'virtio-disk0'}) == {}
