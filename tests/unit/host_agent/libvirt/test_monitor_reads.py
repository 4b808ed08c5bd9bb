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
"""The disks' latency histograms are read through QMP only when a disk of
the domain completed requests since the last read (monitor_reads).
"""

import types

import pytest

from iosched.host_agent.drivers.libvirt import driver
from iosched.host_agent.drivers.libvirt import monitor_reads


class FakeHistograms(object):
    def __init__(self):
        self.reads = 0

    def read(self, uuid, monitor, aliases):
        self.reads += 1
        return {'vda': (self.reads,)}


class Driver(monitor_reads.MonitorReads):
    def __init__(self):
        self.histograms = FakeHistograms()
        self._hists = {}
        disk = types.SimpleNamespace(target='vda', alias='virtio-disk0')
        self._parsed = types.SimpleNamespace(name='vm', disks=[disk])

    def tick(self, dom_id, reqs, disks=('vda',)):
        self._info = {'u': (self._parsed, 1, {}, None, dom_id)}
        self._stats = {} if reqs is None else {'u': dict(
            [('block.count', len(disks))]
            + [('block.%d.name' % i, d) for i, d in enumerate(disks)]
            + [('block.%d.%s' % (i, k), v) for i in range(len(disks))
               for k, v in zip(('rd.reqs', 'wr.reqs', 'fl.reqs'), reqs)])}
        self._rows = {u: monitor_reads.disk_rows(s)
                      for u, s in self._stats.items()}
        before = self.histograms.reads
        self._refresh_histograms()
        return self.histograms.reads > before, self._hists['u']['vda'][0]


# name, ticks (domain id, (reads, writes, flushes) or None: no stats,
# disks), whether each tick asked QEMU
TICKS = [
    ('first tick reads', [(1, (0, 0, 0), ('vda',))], [True]),
    ('idle disk: read once, kept',
     [(1, (5, 5, 0), ('vda',))] * 3, [True, False, False]),
    ('reads moved', [(1, (5, 5, 0), ('vda',)), (1, (6, 5, 0), ('vda',))],
     [True, True]),
    ('a flush moved', [(1, (5, 5, 0), ('vda',)), (1, (5, 5, 1), ('vda',))],
     [True, True]),
    ('the domain restarted with the same counts',
     [(1, (0, 0, 0), ('vda',)), (2, (0, 0, 0), ('vda',))], [True, True]),
    ('a disk attached', [(1, (3, 0, 0), ('vda',)),
                         (1, (3, 0, 0), ('vda', 'vdb'))], [True, True]),
    ('no stats this tick', [(1, (3, 0, 0), ('vda',)), (1, None, ('vda',)),
                            (1, (3, 0, 0), ('vda',))], [True, True, True]),
]


@pytest.mark.parametrize('name,ticks,want', TICKS, ids=[t[0] for t in TICKS])
def test_histograms_are_read_when_requests_completed(monkeypatch, name,
                                                     ticks, want):
    monkeypatch.setattr(monitor_reads, 'libvirt_qemu', object())
    d = Driver()
    got = [d.tick(*t) for t in ticks]
    assert [g[0] for g in got] == want
    # a tick that did not ask hands on the bins it last read
    for (asked, bins), (_, last) in zip(got[1:], got):
        if not asked:
            assert bins == last


# name, getAllDomainStats dict, disk_rows
DISK_ROWS = [
    ('no disks', {}, ()),
    ('one disk, all counters', {
        'block.count': 1, 'block.0.name': 'vda', 'block.0.rd.reqs': 5,
        'block.0.wr.reqs': 7, 'block.0.fl.reqs': 1, 'block.0.rd.bytes': 512,
        'block.0.wr.bytes': 1024, 'block.0.rd.times': 30,
        'block.0.wr.times': 40}, (('vda', 5, 7, 1, 512, 1024, 30, 40),)),
    ('missing counters are 0, a nameless disk kept', {
        'block.count': 2, 'block.1.name': 'vdb', 'block.1.wr.reqs': 2},
     ((None, 0, 0, 0, 0, 0, 0, 0), ('vdb', 0, 2, 0, 0, 0, 0, 0))),
]


@pytest.mark.parametrize('name,stats,want', DISK_ROWS,
                         ids=[r[0] for r in DISK_ROWS])
def test_disk_rows(name, stats, want):
    rows = monitor_reads.disk_rows(stats)
    assert rows == want
    assert monitor_reads.block_requests(stats) == tuple(r[:4] for r in want)
    assert monitor_reads.request_count(stats, rows) == sum(
        r[1] + r[2] + r[3] for r in want)


def test_disk_samples_from_the_rows():
    d = object.__new__(driver.LibvirtDriver)
    stats = dict(DISK_ROWS[1][1], **{'block.count': 2, 'block.1.name': ''})
    d._rows = {'u': monitor_reads.disk_rows(stats)}
    d._hists = {'u': {'vda': (1, 2)}}
    inst = types.SimpleNamespace(uuid='u')
    (s,) = d.disk_samples(inst)              # the nameless disk left out
    assert (s.target, s.rd_reqs, s.wr_reqs, s.rd_bytes, s.wr_bytes,
            s.total_time_ns, s.latency_hist) == ('vda', 5, 7, 512, 1024,
                                                  70, (1, 2))
