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
"""The engine: dom0's back merges of queued requests (an option)."""

import pytest

from iosched.simulator.flubber import elevators
from iosched.simulator.flubber import engine as fengine
from iosched.simulator.flubber import request


class _Disk:
    """1 ms per request, whatever its size."""

    def service(self, req, rng):
        return 1.0


def _req(vm, lba, n=88, write=False, bg=False):
    return request.Req(vm, lba, n, write, bg=bg,
                       proc=None if vm else 'backup')


# (requests submitted while the first one is on the disk, merge_max)
# -> dispatches after the first, sectors of the first of them
@pytest.mark.parametrize('reqs, merge_max, dispatches, first_nsect', [
    # off: every request is dispatched on its own
    ([('A', 1000), ('A', 1088)], 0, 2, 88),
    # a back merge: the second continues the first queued request
    ([('A', 1000), ('A', 1088)], 256, 1, 176),
    # three in a row, capped at 256 sectors: 176 + 88 > 256
    ([('A', 1000), ('A', 1088), ('A', 1176)], 256, 2, 176),
    ([('A', 1000), ('A', 1088), ('A', 1176)], 1024, 1, 264),
    # another VM, or a write after a read, or a gap: no merge
    ([('A', 1000), ('B', 1088)], 256, 2, 88),
    ([('A', 1000), ('A', 1088, 'w')], 256, 2, 88),
    ([('A', 1000), ('A', 1096)], 256, 2, 88),
    # a front merge is not made (only back merges)
    ([('A', 1088), ('A', 1000)], 256, 2, 88),
])
def test_back_merges(reqs, merge_max, dispatches, first_nsect):
    low = elevators.Noop()
    eng = fengine.Engine(_Disk(), low, merge_max=merge_max)
    sizes = []
    done = []
    orig = eng.disk.service

    def service(req, rng):
        sizes.append(req.nsect)
        return orig(req, rng)
    eng.disk.service = service
    eng.submit(_req('A', 0))               # on the disk
    subs = []
    for spec in reqs:
        r = _req(spec[0], spec[1], write=len(spec) > 2)
        r.done = lambda q: done.append((id(q), q.nsect))
        subs.append(r)
        eng.submit(r)
    eng.run(100.0)
    assert len(sizes) - 1 == dispatches
    assert sizes[1] == first_nsect
    # each request completes once, as itself (its own sectors)
    assert sorted(done) == sorted((id(r), 88) for r in subs)
    assert sum(len(v) for v in eng.metrics.done.values()) == len(reqs) + 1


def test_the_dispatched_extent_is_what_the_next_seek_starts_from():
    eng = fengine.Engine(_Disk(), elevators.Noop(), merge_max=256)
    eng.submit(_req('A', 0))
    eng.submit(_req('A', 1000))
    eng.submit(_req('A', 1088))
    eng.run(1.5)                           # the merged one is on the disk
    eng.submit(_req('A', 1176))            # continues the merged extent
    eng.run(100.0)
    assert eng.metrics.bins['zero'] == 1


def test_image_changes_count_dispatches_from_another_process():
    eng = fengine.Engine(_Disk(), elevators.Noop())
    for vm, lba in (('A', 0), ('A', 5000), ('B', 9000), ('B', 100),
                    (None, 50), ('A', 7000)):
        eng.submit(_req(vm, lba))
    eng.run(100.0)
    # A A | B B | backup | A: three changes in six dispatches
    assert eng.metrics.dispatched == 6 and eng.metrics.changes == 3
