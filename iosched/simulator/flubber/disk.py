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
"""Disk service models: a rotational HDD and an SSD, queue depth 1.

``Hdd.service(req, rng)`` returns the milliseconds one request occupies
the disk, given the head position left by the previous one:

* d = req.lba - head (sectors). d = 0 is a sequential continuation: no
  seek, no rotation, transfer only. 0 < d < one track forward: the head
  stays, the platter turns over the gap (no random rotation).
* otherwise a seek, ``seek_ms(|d|)``: a + b*sqrt(f) for short seeks
  (f = d / capacity), linear for long ones (knee at f = 0.1), 0.8 ms
  track-to-track, 9 ms at a third of the disk (the "average seek"), 17 ms
  full stroke; plus a rotational latency uniform in [0, 8.33) ms (7200
  rpm).
* transfer at 118 MB/s from the media (a 2010 1 TB 7200 rpm drive
  in its outer zones, where the images sit; with dom0's 128 KiB merges
  the highest rate at which base CFQ's and CFQ + priority's read pair
  keep the paper's times), one track per revolution (1,920 sectors).
* reads: a track buffer. Every read leaves ``readahead`` sectors ahead of
  its end (default one track) in a segment cache of ``segments`` entries;
  a read wholly inside a cached range costs the command overhead plus the
  interface transfer (300 MB/s), no media access, and leaves the head
  where it was. ``readahead=0``: no free prefetch (only re-reads hit).
* writes: the drive's write cache (on by default on SATA drives; RHEL5's
  ext3 mounts without barriers, so fsync does not flush it) completes a
  write after the interface transfer and destages it later, reordered;
  we charge ``write_pos_frac`` (0.15) of the seek and rotational cost a
  read would pay, plus the media transfer.

``Ssd``: no seek, a fixed cost plus per-byte transfer.
"""

import math

SECTOR = 512
CAPACITY = 1_953_525_168          # 1 TB in sectors
ROT_MS = 60_000.0 / 7200          # 8.33 ms per revolution
MEDIA_MB_S = 118.0
TRACK = int(MEDIA_MB_S * 1e6 / SECTOR / 120)   # sectors per track (1920)
IFACE_MB_S = 300.0
CMD_MS = 0.05
KNEE = 0.1


def seek_ms(d, capacity=CAPACITY):
    """Seek time for a move of |d| sectors (0 for d = 0)."""
    d = abs(d)
    if d == 0:
        return 0.0
    f = d / capacity
    if f < KNEE:
        return 0.8 + 17.08 * math.sqrt(f)
    return 5.0 + 12.0 * f


def transfer_ms(nsect, mb_s=MEDIA_MB_S):
    return nsect * SECTOR / (mb_s * 1000.0)


class Hdd:
    rotational = True

    def __init__(self, segments=8, write_pos_frac=0.15, readahead=TRACK):
        self.head = 0
        self.readahead = readahead
        self.segments = segments
        self.cache = []            # [(start, end)], most recent last
        self.write_pos_frac = write_pos_frac

    def _cached(self, lba, end):
        for i, (s, e) in enumerate(self.cache):
            if s <= lba and end <= e:
                return i
        return -1

    def _remember(self, start, end):
        self.cache.append((start, end))
        if len(self.cache) > self.segments:
            del self.cache[0]

    def position_ms(self, d, rng):
        """Seek plus rotation for a move of d sectors from the head."""
        if d == 0:
            return 0.0
        if 0 < d < TRACK:
            return ROT_MS * d / TRACK
        return seek_ms(d) + rng.random() * ROT_MS

    def service(self, req, rng):
        lba, end = req.lba, req.lba + req.nsect
        d = lba - self.head
        if not req.write:
            i = self._cached(lba, end)
            if i >= 0:
                # the head does not move; the segment stays
                return CMD_MS + transfer_ms(req.nsect, IFACE_MB_S)
            t = CMD_MS + self.position_ms(d, rng) + transfer_ms(req.nsect)
            self.head = end
            self._remember(lba, end + self.readahead)
            return t
        pos = self.position_ms(d, rng)
        if d != 0 and not 0 < d < TRACK:
            pos *= self.write_pos_frac
        self.head = end
        # a write over a cached range invalidates it
        self.cache = [(s, e) for s, e in self.cache if e <= lba or s >= end]
        return CMD_MS + pos + transfer_ms(req.nsect)


class Ssd:
    rotational = False

    def __init__(self, fixed_ms=0.06, mb_s=450.0):
        self.head = 0
        self.fixed_ms = fixed_ms
        self.mb_s = mb_s

    def service(self, req, rng):
        self.head = req.lba + req.nsect
        return self.fixed_ms + transfer_ms(req.nsect, self.mb_s)
