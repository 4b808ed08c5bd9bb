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
"""The ``dd`` guest mode without libvirt: its spec and options, the host
side's parsing of ``DD``/``DDEND`` lines, and the guest program itself,
built and run on the host against a loop device of its own with a pty
as its channel (root; skipped without it): a trial reads the data area
and makes journal commits, a second trial reads the MiB asked for.
"""

import os
import pty
import select
import shutil
import struct
import subprocess
import time
import tty
import xml.etree.ElementTree as ET

import pytest

from iosched.testbed import build as build_mod
from iosched.testbed import domxml
from iosched.testbed import guest as guest_mod
from iosched.testbed import spec as spec_mod
from tests import fixtures


def test_dd_spec_and_options():
    s = spec_mod.parse_guest('vm1:dd:qd=3,journal_ms=1000')
    assert (s.mode, s.flavor_name) == ('dd', 'io.small')
    assert s.opts_string == 'journal_ms=1000,qd=3'
    assert spec_mod.parse_guest('x:dd:journal_ms=0').opts['journal_ms'] == '0'
    with pytest.raises(spec_mod.SpecError, match='journal_ms'):
        spec_mod.parse_guest('x:dd:journal_ms=-5')


@pytest.mark.parametrize('cache,aio', [('none', 'native'),
                                       ('directsync', 'native'),
                                       ('writeback', 'threads')])
def test_disk_cache_mode_in_the_domain_xml(cache, aio):
    s = spec_mod.GuestSpec('vm1', 'dd', disk_cache=cache,
                           disk_dev='/dev/loop3', disk_offset=2**20,
                           opts={'jsync': '1'})
    xml = domxml.domain_xml(
        s, domain_name='d', uuid='u', volume_id='v', port_id='p',
        kernel='/k', initrd='/i', disk='/d', socket_path='/s',
        console_log='/c', tap='iotb0')
    drv = ET.fromstring(xml).find('devices/disk/driver')
    assert (drv.get('cache'), drv.get('io')) == (cache, aio)
    with pytest.raises(spec_mod.SpecError, match='disk_cache'):
        spec_mod.GuestSpec('vm1', 'dd', disk_cache='unsafe-ish')
    with pytest.raises(spec_mod.SpecError, match='jsync'):
        spec_mod.parse_guest('x:dd:jsync=2')


def test_host_parses_dd_lines():
    g = guest_mod.Guest('a', 'tb-a', 'u', 'dd', '/nonexistent', '/dev/null')
    g._handle('DD 7 4505600 1000 100 2 900 500'.split(), 0)
    g._handle('DDEND 7 9011200 2000 200 4 1800 600'.split(), 0)
    g._handle('DDEND 8 1 2'.split(), 0)              # short: ignored
    assert g.dd_progress()['bytes'] == 4505600
    with g._lock:
        ts, row = g._dd[7]
    assert row == {'seq': 7, 'bytes': 9011200, 'elapsed_us': 2000,
                   'reads': 200, 'writes': 4, 'write_wait_sum_us': 1800,
                   'write_wait_max_us': 600}
    assert 8 not in g._dd
    with pytest.raises(guest_mod.GuestError, match='dd guest'):
        guest_mod.Guest('b', 'tb-b', 'u', 'rr', '/x', '/dev/null').dd_start(1)


def _lines(fd, until, timeout=30):
    buf, out, end = b'', [], time.monotonic() + timeout
    while time.monotonic() < end:
        r, _, _ = select.select([fd], [], [], 0.5)
        if r:
            buf += os.read(fd, 4096)
            while b'\n' in buf:
                line, buf = buf.split(b'\n', 1)
                out.append(line.decode())
                if line.startswith(until):
                    return out
    raise AssertionError('no %r in %s' % (until, out))


@pytest.fixture
def loopdev(tmp_path):
    ok = os.geteuid() == 0 and shutil.which('losetup') and shutil.which(
        'gcc')
    fixtures.require('root, losetup, gcc', ok, 'not root or no tools')
    img = tmp_path / 'dd.img'
    with open(img, 'wb') as fh:
        fh.write(b'\x5a' * (8 * 2**20))
    dev = subprocess.run(['losetup', '-f', '--show', str(img)],
                         capture_output=True, text=True,
                         check=True).stdout.strip()
    try:
        yield dev
    finally:
        subprocess.run(['losetup', '-d', dev], check=False)


def test_guest_program_dd_mode(tmp_path, loopdev):
    exe = str(tmp_path / 'iosched-guest')
    subprocess.run(['gcc', '-static', '-O2', '-Wall', '-Werror', '-o', exe,
                    build_mod.GUEST_SRC], check=True)
    master, slave = pty.openpty()
    tty.setraw(master)
    tty.setraw(slave)
    p = subprocess.Popen([exe, '--mode', 'dd', '--port', os.ttyname(slave),
                          '--opts', 'dev=%s,qd=2,journal_ms=1,report_ms=5'
                          % loopdev], stderr=subprocess.DEVNULL)
    try:
        assert 'mode=dd' in _lines(master, b'HELLO')[-1]
        os.write(master, struct.pack('<QII', 1, 0, 0))     # whole area
        end = _lines(master, b'DDEND')[-1].split()
        f = dict(zip(guest_mod.DD_FIELDS, map(int, end[1:])))
        assert f['seq'] == 1 and f['bytes'] == (7 * 2**20 // 45056) * 45056
        assert f['reads'] == f['bytes'] // 45056
        assert f['writes'] >= 2 and f['writes'] % 2 == 0
        assert 0 < f['write_wait_max_us'] <= f['write_wait_sum_us']
        os.write(master, struct.pack('<QII', 2, 2, 0))     # 2 MiB
        end = _lines(master, b'DDEND')[-1].split()
        assert int(end[1]) == 2 and int(end[2]) == (
            2 * 2**20 // 45056) * 45056
    finally:
        p.kill()
        p.wait()
        os.close(master)
        os.close(slave)
