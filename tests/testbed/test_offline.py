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
"""Testbed parts that need no libvirt: guest specs, the domain XML and its
Nova metadata (checked against Nova's own config classes), the cpio
writer, the CLI's argument handling.
"""

import gzip
import json
import os
import shutil
import subprocess
import xml.etree.ElementTree as ET

import pytest

from iosched.testbed import cli
from iosched.testbed import domxml
from iosched.testbed import guest as guest_mod
from iosched.testbed import initramfs
from iosched.testbed import rr_client
from iosched.testbed import spec as spec_mod
from iosched.testbed import testbed as testbed_mod
from tests import fixtures

VOL = '22222222-2222-4222-8222-222222222222'
PORT = '33333333-3333-4333-8333-333333333333'


def test_parse_guest():
    s = spec_mod.parse_guest('db:disk:pattern=seq,write_pct=30')
    assert (s.name, s.mode, s.flavor_name) == ('db', 'disk', 'io.small')
    assert s.opts_string == 'pattern=seq,write_pct=30'
    assert spec_mod.parse_guest('lsvm:rr').flavor_extra_specs[
        'iosched:latency_sensitive'] == 'true'
    for bad in ('x', 'x:nope', 'BAD:rr', 'x:rr:colour=red', 'x:rr:k'):
        with pytest.raises(spec_mod.SpecError):
            spec_mod.parse_guest(bad)
    with pytest.raises(spec_mod.SpecError):
        spec_mod.check_unique([spec_mod.parse_guest('a:rr')] * 2)


def test_load_file(tmp_path):
    path = tmp_path / 'g.json'
    path.write_text(json.dumps({'guests': [
        {'name': 'lsvm', 'mode': 'rr', 'flavor': 'gold',
         'extra_specs': {'iosched:latency_ms': 1}},
        {'name': 'cpu1', 'mode': 'burn', 'memory_mib': 256}]}))
    lsvm, cpu1 = spec_mod.load_file(str(path))
    assert lsvm.flavor_name == 'gold'
    assert lsvm.flavor_extra_specs == {'iosched:latency_ms': '1'}
    assert cpu1.memory_mib == 256
    ypath = tmp_path / 'g.yaml'
    ypath.write_text('- {name: a, mode: idle}\n')
    assert spec_mod.load_file(str(ypath))[0].mode == 'idle'


def test_nova_metadata_matches_nova():
    config = pytest.importorskip('nova.virt.libvirt.config')
    spec = spec_mod.parse_guest('lsvm:rr')
    ours = domxml.nova_instance(spec, VOL, PORT, creation_time=1234567890)
    meta = config.LibvirtConfigGuestMetaNovaInstance()
    meta.package, meta.name = domxml.NOVA_PACKAGE, 'lsvm'
    meta.creationTime, meta.roottype, meta.rootid = 1234567890, 'volume', VOL
    flavor = config.LibvirtConfigGuestMetaNovaFlavor()
    flavor.name = flavor.id = 'lsvm.small'
    flavor.memory, flavor.disk, flavor.swap = 128, 1, 0
    flavor.ephemeral, flavor.vcpus = 0, 1
    flavor.extra_specs = dict(sorted(spec.flavor_extra_specs.items()))
    meta.flavor = flavor
    meta.image = config.LibvirtConfigGuestMetaImage()
    owner = config.LibvirtConfigGuestMetaNovaOwner()
    owner.userid, owner.username = domxml.FAKE_USER
    owner.projectid, owner.projectname = domxml.FAKE_PROJECT
    meta.owner = owner
    meta.ports = config.LibvirtConfigGuestMetaNovaPorts(
        [config.LibvirtConfigGuestMetaNovaPort(PORT)])
    canon = lambda x: ET.canonicalize(x, strip_text=True)  # noqa: E731
    assert canon(ET.tostring(ours)) == canon(meta.to_xml())


def test_domain_xml_shape():
    spec = spec_mod.parse_guest('db:disk:write_pct=10')
    xml = domxml.domain_xml(
        spec, domain_name='iosched-tb-db', uuid='u', volume_id=VOL,
        port_id=PORT, kernel='/k', initrd='/i', disk='/d', socket_path='/s',
        console_log='/c', tap='iotb0', pin=1)
    root = ET.fromstring(xml)
    assert root.get('type') == 'qemu'
    assert 'iosched.mode=disk iosched.opts=write_pct=10' in root.findtext(
        'os/cmdline')
    drv = root.find('devices/disk/driver')
    assert (drv.get('cache'), drv.get('io')) == ('none', 'native')
    assert root.find('devices/memballoon').get('model') == 'none'
    assert root.find('cputune/vcpupin').get('cpuset') == '1'
    assert root.find('cputune/emulatorpin').get('cpuset') == '1'
    assert domxml.read_nova_metadata(xml)[:2] == ('db', 'io.small')


def test_initramfs_is_valid_cpio(tmp_path):
    fixtures.require('cpio', shutil.which('cpio'),
                     'the cpio command is not installed')
    for name in ('bb', 'guest', 'm.ko'):
        (tmp_path / name).write_bytes(b'x' * 37)
    out = tmp_path / 'initrd.gz'
    names = initramfs.make_initramfs(str(out), str(tmp_path / 'bb'),
                                     str(tmp_path / 'guest'),
                                     [('m', str(tmp_path / 'm.ko'))])
    listing = subprocess.run(['cpio', '-it', '--quiet'],
                             input=gzip.decompress(out.read_bytes()),
                             capture_output=True, check=True).stdout.decode()
    assert listing.split() == names
    assert {'init', 'dev/console', 'bin/iosched-guest',
            'lib/modules/m.ko'} <= set(names)


def test_disk_report_percentile_from_its_histogram():
    # buckets 10 = [12, 14) us and 12 = [16, 20) us, 5 requests each
    r = guest_mod.DiskReport(ts=0.0, ops=10, interval_us=10**6, reads=10,
                             writes=0, hist={10: 5, 12: 5})
    assert r.latency_quantile_us(0.5) == 14.0   # rank 5: the top of [12, 14)
    assert r.latency_quantile_us(0.9) == pytest.approx(19.2)  # 16 + 4*4/5
    assert r.latency_quantile_us(1.0) == 20.0
    empty = guest_mod.DiskReport(0.0, 0, 10**6, 0, 0)
    assert empty.latency_quantile_us(0.99) is None


def test_cli_args(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(['--help'])
    assert exc.value.code == 0
    assert 'lsvm:rr' in capsys.readouterr().out
    assert cli.main(['up']) == 1
    assert 'no guests' in capsys.readouterr().err


def test_threads_leave_sched_deadline_before_destroy():
    """Testbed's down moves QEMU's threads to SCHED_OTHER first: a throttled
    SCHED_DEADLINE main thread was seen never to finish exiting here.
    """
    fixtures.require('root and chrt', os.geteuid() == 0 and
                     shutil.which('chrt'), 'SCHED_DEADLINE needs root')
    p = subprocess.Popen(['sleep', '60'])
    try:
        subprocess.run(['chrt', '-d', '--sched-runtime', '1000000',
                        '--sched-deadline', '4000000', '--sched-period',
                        '4000000', '-p', '0', str(p.pid)], check=True)
        assert os.sched_getscheduler(p.pid) == 6          # SCHED_DEADLINE
        testbed_mod._fair_class(p.pid)
        assert os.sched_getscheduler(p.pid) == os.SCHED_OTHER
        testbed_mod._fair_class(None)                     # no pidfile
    finally:
        p.kill()
        p.wait()


@pytest.mark.parametrize('text,want', [
    ('/run/x/lsvm.sock', '/run/x/lsvm.sock'),
    ('127.0.0.1:4555', ('127.0.0.1', 4555)),
    ('::1:4555', ('::1', 4555)),
    ('/tmp/a:1', '/tmp/a:1'),
])
def test_rr_client_target(text, want):
    assert rr_client._target(text) == want


def test_rr_client_refuses_what_it_cannot_do():
    g = guest_mod.Guest('b', 'b', None, 'burn', '/nonexist', None)
    with pytest.raises(guest_mod.GuestError, match='an rr or hybrid guest'):
        rr_client.run(g, 1, 1, 0, 'fifo')
    with pytest.raises(ValueError, match='accepted: fifo, other, inline'):
        rr_client.run(g, 1, 1, 0, 'rt')
