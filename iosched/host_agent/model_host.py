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
"""The host agent's types for the host's block devices and the VMs'
I/O-path threads (re-exported by ``model``): what the driver reads of
them and the rates the collectors make of it.
"""

import dataclasses


@dataclasses.dataclass(frozen=True)
class BlockDevice:
    """A host block device under guest disks, and its I/O scheduler (the
    driver's ``block_devices()``; read by the vaio policy).
    """
    name: str                        # kernel name: 'loop3', 'sda'
    devno: str = ''                  # 'major:minor'
    scheduler: str = ''              # in force: 'bfq', 'none'; '' unknown
    schedulers: tuple = ()           # the ones the kernel offers for it
    disks: tuple = ()                # ((instance_uuid, target), ...) on it


@dataclasses.dataclass(frozen=True)
class IoThreadSample:
    """Cumulative CPU time (ns) of one VM's I/O-path threads (the QEMU
    emulator/main loop and its I/O threads: not its vCPUs) at ``ts``.
    """
    instance_uuid: str
    ts: float
    run_ns: int


@dataclasses.dataclass(frozen=True)
class IoThreadRates:
    """One VM's I/O-path threads over one window: CPUs used (CPU seconds
    per second), vTurbo's turbo-pool use while they are on turbo pCPUs.
    """
    instance_uuid: str
    cpu_share: float
    window_s: float
