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
"""The LBA map: VM images, the files inside them, host metadata, backup.

Each VM's virtual disk is one contiguous image of ``IMAGE`` sectors
(23.8 GiB, the +-5e7 span Table 6 bins by); image i starts at
``BASE + i * STRIDE`` (6e7 apart, so a move between two images is always
outside +-5e7, as the paper's prose reads its table). Inside an image:
the guest journal (ext3, 32 MiB) at +1e6 sectors and the benchmark's
files from +1e7 (128 files back to back: one range). Host file-system
metadata of the image files (dom0's inodes and journal) lives near LBA 0;
the backup reads a 12 GB image elsewhere and writes its copy further on.
"""

IMAGE = 50_000_000
STRIDE = 60_000_000
BASE = 100_000_000
JOURNAL_OFF = 1_000_000
JOURNAL_SECT = 65_536
FILE_OFF = 10_000_000
HOST_META = (2048, 100_000)        # [start, length) near LBA 0
BACKUP_SRC = 1_200_000_000
BACKUP_DST = 1_500_000_000
GB = 1_000_000_000 // 512          # sectors in 10^9 bytes
GIB = (1 << 30) // 512


def image_start(index):
    return BASE + index * STRIDE


def file_start(index):
    return image_start(index) + FILE_OFF


def journal_start(index):
    return image_start(index) + JOURNAL_OFF


def seek_bin(d, span=50_000_000):
    """Table 6's bins: 'zero', 'near' (0 < |d| <= span) or 'far'."""
    if d == 0:
        return 'zero'
    return 'near' if abs(d) <= span else 'far'
