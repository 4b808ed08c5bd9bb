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
