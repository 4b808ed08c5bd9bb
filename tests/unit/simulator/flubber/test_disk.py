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
"""Flubber's disk model: seek curve and service times."""

import random

import pytest

from iosched.simulator.flubber import disk
from iosched.simulator.flubber import layout
from iosched.simulator.flubber import request

C = disk.CAPACITY


@pytest.mark.parametrize('d,lo,hi', [
    (0, 0.0, 0.0),
    (1, 0.8, 0.81),                # track to track
    (C // 3, 8.9, 9.1),            # the "average seek"
    (C, 16.9, 17.1),               # full stroke
    (-C // 3, 8.9, 9.1),           # direction does not matter
])
def test_seek_curve(d, lo, hi):
    assert lo <= disk.seek_ms(d) <= hi


def test_seek_is_monotonic_and_continuous_at_the_knee():
    pts = [int(C * f) for f in (1e-6, 1e-4, 0.01, 0.0999, 0.1, 0.1001, 0.5)]
    ts = [disk.seek_ms(d) for d in pts]
    assert ts == sorted(ts)
    assert disk.seek_ms(int(C * 0.1)) == pytest.approx(
        disk.seek_ms(int(C * 0.0999999)), abs=0.01)


def _r(lba, n=88, write=False):
    return request.Req('A', lba, n, write)


def test_sequential_read_pays_transfer_only_then_hits_the_track_buffer():
    h = disk.Hdd()
    rng = random.Random(1)
    h.head = 1000
    t = h.service(_r(1000), rng)
    assert t == pytest.approx(disk.CMD_MS + disk.transfer_ms(88))
    h.head = 10 ** 8                     # the head went elsewhere
    t = h.service(_r(1088), rng)         # still in the cached track
    assert t == pytest.approx(disk.CMD_MS + disk.transfer_ms(88, 300.0))
    assert h.head == 10 ** 8


def test_random_read_costs_seek_plus_rotation():
    h = disk.Hdd()
    rng = random.Random(3)
    ts = []
    for _ in range(2000):
        h.head = 0
        h.cache = []
        ts.append(h.service(_r(layout.STRIDE), rng))
    seek = disk.seek_ms(layout.STRIDE)
    base = disk.CMD_MS + seek + disk.transfer_ms(88)
    assert min(ts) >= base and max(ts) <= base + disk.ROT_MS
    assert sum(ts) / len(ts) == pytest.approx(base + disk.ROT_MS / 2,
                                              rel=0.05)


def test_short_forward_skip_rotates_over_the_gap():
    h = disk.Hdd()
    h.head = 0
    t = h.service(_r(disk.TRACK // 2), random.Random(1))
    assert t == pytest.approx(disk.CMD_MS + disk.ROT_MS / 2 +
                              disk.transfer_ms(88))


def test_writes_pay_a_fraction_of_the_positioning():
    h = disk.Hdd(write_pos_frac=0.15)
    h.head = 0
    rng = random.Random(5)
    t = h.service(_r(layout.STRIDE, 32, write=True), rng)
    pos = t - disk.CMD_MS - disk.transfer_ms(32)
    assert 0.15 * disk.seek_ms(layout.STRIDE) <= pos <= 0.15 * (
        disk.seek_ms(layout.STRIDE) + disk.ROT_MS)


def test_ssd_has_no_seek():
    s = disk.Ssd()
    rng = random.Random(1)
    a = s.service(_r(0), rng)
    b = s.service(_r(C - 100), rng)
    assert a == b == pytest.approx(0.06 + disk.transfer_ms(88, 450.0))


@pytest.mark.parametrize('d,want', [
    (0, 'zero'), (1, 'near'), (-50_000_000, 'near'), (50_000_001, 'far'),
    (-60_000_000, 'far'),
])
def test_table6_bins(d, want):
    assert layout.seek_bin(d) == want


def test_images_are_farther_apart_than_the_bin():
    assert layout.file_start(1) - layout.file_start(0) > 50_000_000
