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
"""The testbed on real libvirt + QEMU (TCG): build, boot, workloads, pinning,
Nova metadata, teardown.

One module-scoped testbed boots four guests (rr, burn, disk, idle) in
parallel, all pinned to the last host CPU (the benchmark's layout); the
last test tears it down and checks nothing is left. Skips locally and
fails in CI (CI=true) when libvirt/QEMU/the build tools are missing.
"""

import json
import os
import struct
import xml.etree.ElementTree as ET

import pytest

from iosched.contract import stats
from iosched.testbed import cli
from iosched.testbed import daemons
from iosched.testbed import domxml
from iosched.testbed import rr_client
from iosched.testbed import spec as spec_mod
from tests.testbed import needs

PREFIX = 'iosched-tb-'
SPECS = ['lsvm:rr', 'cpu1:burn', 'db1:disk', 'idle1:idle']
PIN = (os.cpu_count() or 1) - 1


@pytest.fixture(scope='module')
def bed():
    tb, started = needs.start_testbed(PREFIX)
    tb.down()
    try:
        manifest = tb.build()
        guests = tb.up([spec_mod.parse_guest(s) for s in SPECS], pin=PIN)
        yield tb, manifest, {g.name: g for g in guests}
    finally:
        tb.down()
        tb.close()
        if started:
            daemons.stop_libvirtd()


def _is_static(path):
    with open(path, 'rb') as fh:
        data = fh.read()
    phoff, = struct.unpack_from('<Q', data, 0x20)
    phentsize, phnum = struct.unpack_from('<HH', data, 0x36)
    types = [struct.unpack_from('<I', data, phoff + i * phentsize)[0]
             for i in range(phnum)]
    return data[:4] == b'\x7fELF' and 3 not in types       # no PT_INTERP


def test_build_outputs(bed):
    tb, manifest, _ = bed
    sizes = manifest['sizes']
    assert 4 * 2**20 < sizes['vmlinuz'] < 32 * 2**20
    assert 256 * 1024 < sizes['initrd.gz'] < 16 * 2**20
    assert _is_static(os.path.join(tb.workdir, 'iosched-guest'))
    for name, size in sizes.items():
        assert os.path.getsize(os.path.join(tb.workdir, name)) == size
    assert manifest['modules'][-2:] == ['virtio_blk', 'virtio_console']
    assert set(manifest['modules']) >= set(
        ['virtio_ring', 'virtio', 'virtio_pci'])
    again = tb.build()
    assert again['cached'] and again['key'] == manifest['key']


def test_guests_boot_to_hello(bed):
    tb, _, guests = bed
    for text in SPECS:
        name, mode = text.split(':')
        g = guests[name]
        assert g.hello['mode'] == mode
        assert 0 < g.boot_s < 180
    rows = {r['name']: r for r in tb.status()}
    assert set(rows) == {PREFIX + s.split(':')[0] for s in SPECS}
    for r in rows.values():
        assert r['state'] == 'running' and r['pid'] > 1
        assert os.path.exists('/proc/%d' % r['pid'])


def test_rr_rtts(bed):
    lsvm = bed[2]['lsvm']
    rtts = lsvm.rr(60, rate_per_s=40, burst_us=200)
    assert len(rtts) == 60 and min(rtts) > 0
    assert stats.percentile(rtts, 0.5) <= stats.percentile(rtts, 0.99)
    fixed = lsvm.rr(5, rate_per_s=20, burst_us=0, poisson=False, spin='time')
    assert len(fixed) == 5 and min(fixed) > 0


@pytest.mark.parametrize('policy', ['fifo', 'other'])
def test_rr_client_in_its_own_process(bed, policy):
    """The benches' separate client takes the channel, answers, and
    hands it back: the parent's next request works.
    """
    lsvm = bed[2]['lsvm']
    rtts = rr_client.run(lsvm, 40, 40, 200, policy)
    assert len(rtts) == 40 and min(rtts) > 0
    assert lsvm.ping() > 0


def test_burn_rate(bed):
    assert bed[2]['cpu1'].burn_rate() > 0


def test_disk_rate(bed):
    db = bed[2]['db1']
    assert db.disk_rate() > 0
    rd_req = db.domain.blockStats('vda')[0]
    assert rd_req > 0                       # the reads reach the host


def test_pinning_visible(bed):
    tb, _, guests = bed
    want = [i == PIN for i in range(os.cpu_count())]
    for g in guests.values():
        assert [list(m) for m in g.domain.vcpuPinInfo(0)] == [want]
        assert list(g.domain.emulatorPinInfo(0)) == want
    for row in tb.status():
        assert row['vcpu_pins'] == [[PIN]] and row['emulator_pin'] == [PIN]


def test_nova_metadata_and_sidecar(bed):
    tb, _, guests = bed
    lsvm = guests['lsvm']
    xml = lsvm.domain.XMLDesc(0)
    assert lsvm.domain.UUIDString() == lsvm.uuid
    name, flavor, specs = domxml.read_nova_metadata(xml)
    assert (name, flavor) == ('lsvm', 'lsvm.small')
    assert specs['iosched:latency_sensitive'] == 'true'
    side = tb.sidecar(lsvm.uuid)
    assert side['flavor'] == 'lsvm.small' and side['extra_specs'] == specs
    root = ET.fromstring(xml)
    assert root.get('type') == 'qemu'
    assert root.findtext('devices/disk/serial') == side['volumes'][0]['serial']
    assert root.find('devices/channel/target').get('name') == 'iosched.0'
    tap = root.find('devices/interface/target').get('dev')
    assert tap == side['tap'] and os.path.exists('/sys/class/net/' + tap)


def test_cli_status_json(bed, capsys):
    assert cli.main(['--prefix', PREFIX, 'status', '--json']) == 0
    rows = json.loads(capsys.readouterr().out)
    assert sorted(r['mode'] for r in rows) == ['burn', 'disk', 'idle', 'rr']


def test_down_leaves_nothing(bed):
    tb, _, guests = bed
    pids = [r['pid'] for r in tb.status()]
    taps = [tb.sidecar(g.uuid)['tap'] for g in guests.values()]
    removed = tb.down()
    assert sorted(removed) == sorted(PREFIX + s.split(':')[0] for s in SPECS)
    assert not [d for d in tb.conn.listAllDomains()
                if d.name().startswith(PREFIX)]
    for sub in ('disks', 'run'):
        assert not [f for f in os.listdir(os.path.join(tb.workdir, sub))
                    if f.startswith(PREFIX)], sub
    assert not [g for g in guests.values() if tb.sidecar(g.uuid)]
    for g in guests.values():
        assert not os.path.exists(g.console_log)
    assert not [t for t in taps if os.path.exists('/sys/class/net/' + t)]
    assert not [p for p in pids if os.path.exists('/proc/%d' % p)]
    assert tb.down() == []                   # idempotent
